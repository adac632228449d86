package io.relaykit.trace;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.Optional;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** The W3C Trace Context recommendation's examples and rules, header by header. */
class TraceContextTest {
  private static final String SPEC_PARENT =
      "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

  @Test
  @DisplayName("the recommendation's traceparent example reads into its fields and writes back"
      + " unchanged")
  void specExample() {
    TraceContext.Read read = TraceContext.read(SPEC_PARENT, "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE");
    assertThat(read.anythingDropped()).isFalse();
    TraceContext c = read.context().orElseThrow();
    assertThat(c.traceId()).isEqualTo("4bf92f3577b34da6a3ce929d0e0e4736");
    assertThat(c.parentId()).isEqualTo("00f067aa0ba902b7");
    assertThat(c.sampled()).isTrue();
    assertThat(c.traceState()).isEqualTo("rojo=00f067aa0ba902b7,congo=t61rcWkgMzE");
    assertThat(c.traceparent()).isEqualTo(SPEC_PARENT);
    assertThat(TraceContext.read("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00", null)
        .context().orElseThrow().sampled()).as("the not-sampled example").isFalse();
  }

  @ParameterizedTest
  @ValueSource(strings = {
      "00-00000000000000000000000000000000-00f067aa0ba902b7-01", // all-zero trace id
      "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01", // all-zero parent id
      "00-4BF92F3577B34DA6A3CE929D0E0E4736-00F067AA0BA902B7-01", // uppercase
      "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", // forbidden version
      "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra", // 00 has no tail
      "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01", // short trace id
      "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-1", // short flags
      "00_4bf92f3577b34da6a3ce929d0e0e4736_00f067aa0ba902b7_01", // wrong separators
      "0g-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", // version not hex
      "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01x", // higher version, no dash
      "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0\ud800", // unpaired surrogate
      ""})
  @DisplayName("a malformed traceparent reads as no context, reported as malformed, never thrown")
  void malformedParent(String header) {
    TraceContext.Read read = TraceContext.read(header, "rojo=00f067aa0ba902b7");
    assertThat(read.context()).isEmpty();
    assertThat(read.malformedTraceparent()).isTrue();
    assertThat(read.anythingDropped()).isTrue();
  }

  @Test
  @DisplayName("a higher version is read by its version-00 prefix when a dash follows; absent"
      + " headers are neither a context nor malformed")
  void futureVersionAndAbsent() {
    TraceContext.Read future = TraceContext.read(
        "cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-what-the-future-holds", null);
    assertThat(future.context().map(TraceContext::traceId))
        .contains("4bf92f3577b34da6a3ce929d0e0e4736");
    assertThat(future.context().orElseThrow().traceparent()).isEqualTo(SPEC_PARENT);
    TraceContext.Read none = TraceContext.read(null, "rojo=1");
    assertThat(none.context()).isEmpty();
    assertThat(none.anythingDropped()).isFalse();
  }

  @ParameterizedTest
  @ValueSource(strings = {
      "Rojo=1", // uppercase key
      "rojo", // no value
      "rojo=1,rojo=2", // duplicate key
      "rojo=a=b", // '=' in value
      "1rojo=1", // simple key must start with a letter
      "tenant@Sys=1", // system id must be lowercase
      "rojo=bad\u0001value"})
  @DisplayName("a malformed tracestate is dropped whole and reported; the parent stays")
  void malformedState(String state) {
    TraceContext.Read read = TraceContext.read(SPEC_PARENT, state);
    assertThat(read.context().map(TraceContext::traceState)).contains("");
    assertThat(read.droppedTracestate()).isTrue();
    assertThat(read.malformedTraceparent()).isFalse();
  }

  @Test
  @DisplayName("tracestate: multi-tenant keys, spaces and empty members are fine; more than 32"
      + " members is malformed; over 512 characters is cut at a member boundary")
  void stateBounds() {
    assertThat(TraceContext.read(SPEC_PARENT, " fw529a3039@dt=ab , , congo=t61 rcWkgMzE")
        .context().map(TraceContext::traceState)).contains("fw529a3039@dt=ab,congo=t61 rcWkgMzE");
    String thirtyThree = IntStream.range(0, 33).mapToObj(i -> "k" + i + "=v")
        .collect(Collectors.joining(","));
    assertThat(TraceContext.read(SPEC_PARENT, thirtyThree).droppedTracestate()).isTrue();
    assertThat(TraceContext.read(SPEC_PARENT, "a=" + "v".repeat(40_000)).context()
        .map(TraceContext::traceState)).as("a huge header is dropped")
        .contains("");
    String value = "v".repeat(200);
    String long3 = "a=" + value + ",b=" + value + ",c=" + value;
    TraceContext.Read cut = TraceContext.read(SPEC_PARENT, long3);
    assertThat(cut.droppedTracestate()).as("reported as cut").isTrue();
    assertThat(cut.context().orElseThrow().traceState()).isEqualTo("a=" + value + ",b=" + value);
  }

  @Test
  @DisplayName("contexts built in code are validated, naming the field and the value")
  void builtInCode() {
    TraceContext c = TraceContext.of("4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7", true);
    assertThat(c.traceparent()).isEqualTo(SPEC_PARENT);
    assertThat(c.withParent("b7ad6b7169203331").traceparent())
        .isEqualTo("00-4bf92f3577b34da6a3ce929d0e0e4736-b7ad6b7169203331-01");
    assertThatThrownBy(() -> TraceContext.of("00000000000000000000000000000000",
        "00f067aa0ba902b7", true)).hasMessageContaining("traceId");
    assertThatThrownBy(() -> c.withParent("XYZ")).hasMessageContaining("parentId")
        .hasMessageContaining("XYZ");
    assertThatThrownBy(() -> new TraceContext(c.traceId(), c.parentId(), 256, ""))
        .hasMessageContaining("flags");
    assertThatThrownBy(() -> new TraceContext(c.traceId(), c.parentId(), 1, "Bad=1"))
        .hasMessageContaining("traceState");
    assertThat(Optional.of(c)).contains(TraceContext.read(SPEC_PARENT, "").context().orElseThrow());
  }
}
