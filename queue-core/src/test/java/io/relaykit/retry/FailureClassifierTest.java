package io.relaykit.retry;

import static io.relaykit.retry.FailureClassifier.Kind.PERMANENT;
import static io.relaykit.retry.FailureClassifier.Kind.RETRYABLE;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.FileNotFoundException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.SocketTimeoutException;
import java.util.concurrent.TimeoutException;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

class FailureClassifierTest {

  /** A subclass, to show that subtypes of PermanentFailureException are permanent too. */
  static final class UnknownCustomerException extends PermanentFailureException {
    private static final long serialVersionUID = 1L;

    UnknownCustomerException() {
      super("no such customer");
    }
  }

  @Test
  @DisplayName("defaults: PermanentFailureException and its subtypes are permanent, all else retryable")
  void defaults() {
    FailureClassifier c = FailureClassifier.defaults();
    assertThat(c.classify(new PermanentFailureException("bad"))).isEqualTo(PERMANENT);
    assertThat(c.classify(new UnknownCustomerException())).isEqualTo(PERMANENT);
    assertThat(c.classify(new IllegalArgumentException())).isEqualTo(RETRYABLE);
    assertThat(c.classify(new IOException())).isEqualTo(RETRYABLE);
    assertThat(c.classify(new OutOfMemoryError())).isEqualTo(RETRYABLE);
  }

  @Test
  @DisplayName("a failure without an exception (a timeout) is retryable")
  void nullFailure() {
    assertThat(FailureClassifier.defaults().classify(null)).isEqualTo(RETRYABLE);
  }

  @Test
  @DisplayName("registered permanent types match themselves and their subtypes")
  void permanentTypes() {
    FailureClassifier c = FailureClassifier.builder()
        .permanent(IllegalArgumentException.class)
        .permanent(IOException.class)
        .build();
    assertThat(c.classify(new IllegalArgumentException())).isEqualTo(PERMANENT);
    assertThat(c.classify(new NumberFormatException())).isEqualTo(PERMANENT);
    assertThat(c.classify(new FileNotFoundException())).isEqualTo(PERMANENT);
    assertThat(c.classify(new IllegalStateException())).isEqualTo(RETRYABLE);
    assertThat(c.classify(new PermanentFailureException("x"))).isEqualTo(PERMANENT);
  }

  @Test
  @DisplayName("a retryable carve-out wins over a permanent family it belongs to")
  void carveOut() {
    FailureClassifier c = FailureClassifier.builder()
        .permanent(IOException.class)
        .retryable(SocketTimeoutException.class)
        .build();
    assertThat(c.classify(new IOException())).isEqualTo(PERMANENT);
    assertThat(c.classify(new SocketTimeoutException())).isEqualTo(RETRYABLE);
    assertThat(c.classify(new TimeoutException())).isEqualTo(RETRYABLE);
  }

  @Test
  @DisplayName("a carve-out never makes a PermanentFailureException retryable")
  void carveOutCannotOverridePermanentFailure() {
    FailureClassifier c = FailureClassifier.builder()
        .retryable(RuntimeException.class)
        .build();
    assertThat(c.classify(new PermanentFailureException("rejected"))).isEqualTo(PERMANENT);
    assertThat(c.classify(new UnknownCustomerException())).isEqualTo(PERMANENT);
    assertThat(c.classify(new UncheckedIOException(new IOException()))).isEqualTo(RETRYABLE);
  }

  @Test
  @DisplayName("registering later does not change a classifier already built")
  void builtIsImmutable() {
    FailureClassifier.Builder builder = FailureClassifier.builder();
    FailureClassifier before = builder.build();
    builder.permanent(IllegalStateException.class);
    assertThat(before.classify(new IllegalStateException())).isEqualTo(RETRYABLE);
    assertThat(builder.build().classify(new IllegalStateException())).isEqualTo(PERMANENT);
  }

  @Test
  @DisplayName("a null type is rejected")
  void nullType() {
    assertThatThrownBy(() -> FailureClassifier.builder().permanent(null))
        .isInstanceOf(IllegalArgumentException.class).hasMessage("type must not be null");
    assertThatThrownBy(() -> FailureClassifier.builder().retryable(null))
        .isInstanceOf(IllegalArgumentException.class).hasMessage("type must not be null");
  }
}
