package io.relaykit.transport.kafka;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.stream.LongStream;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/** The commit metadata naming records finished past the position: round trip, cut, bad input. */
@DisplayName("FinishedAbove: records finished past a commit position, in commit metadata")
class FinishedAboveTest {

  @Test
  @DisplayName("round trip: every offset between base and end that is not open was finished")
  void roundTrip() {
    FinishedAbove done = FinishedAbove.of(100, 110, new long[] {100, 103, 104, 109}, null);
    FinishedAbove read = FinishedAbove.decode(done.encode(), 100);
    assertThat(read).isNotNull();
    assertThat(LongStream.range(95, 115).filter(read::finished).boxed())
        .containsExactly(101L, 102L, 105L, 106L, 107L, 108L);
  }

  @Test
  @DisplayName("nothing finished past the position: nothing to write")
  void nothingFinished() {
    assertThat(FinishedAbove.of(5, 8, new long[] {5, 6, 7}, null)).isNull();
    assertThat(FinishedAbove.of(5, 5, new long[0], null)).isNull();
  }

  @Test
  @DisplayName("what an earlier owner handed over past this member's reads is carried on")
  void carriesEarlier() {
    FinishedAbove earlier = FinishedAbove.of(0, 20, new long[] {0, 15}, null);
    FinishedAbove merged = FinishedAbove.of(10, 12, new long[] {10}, earlier);
    FinishedAbove read = FinishedAbove.decode(merged.encode(), 10);
    assertThat(LongStream.range(0, 25).filter(read::finished).boxed())
        .containsExactly(11L, 12L, 13L, 14L, 16L, 17L, 18L, 19L);
  }

  @Test
  @DisplayName("a list too long for the metadata is cut, claiming nothing past the cut")
  void cutClaimsNothingUnfinished() {
    long[] open = LongStream.range(0, 5000).map(i -> i * 1000).toArray();
    FinishedAbove done = FinishedAbove.of(0, 5_000_000, open, null);
    String text = done.encode();
    assertThat(text.length()).isLessThanOrEqualTo(FinishedAbove.MAX_CHARS);
    FinishedAbove read = FinishedAbove.decode(text, 0);
    assertThat(read).isNotNull();
    assertThat(read.end()).isLessThan(5_000_000);
    for (long o : open) {
      assertThat(read.finished(o)).as("open %d", o).isFalse();
    }
    assertThat(read.finished(read.end())).isFalse();
    assertThat(read.finished(1)).isTrue();
  }

  @Test
  @DisplayName("bad input is ignored: another base, foreign text, garbage, absurd spans, steps"
      + " back")
  void badInputIgnored() {
    String good = FinishedAbove.of(7, 9, new long[] {7}, null).encode();
    assertThat(FinishedAbove.decode(good, 8)).as("another base").isNull();
    assertThat(FinishedAbove.decode(null, 0)).isNull();
    assertThat(FinishedAbove.decode("", 0)).isNull();
    assertThat(FinishedAbove.decode("someone else's metadata", 0)).isNull();
    assertThat(FinishedAbove.decode(FinishedAbove.PREFIX + "0:zzzzzzzzzzzzzzzzzzzz:", 0))
        .as("overflow").isNull();
    assertThat(FinishedAbove.decode(FinishedAbove.PREFIX + "0:" + Long.toString(
        FinishedAbove.MAX_SPAN + 1, 36) + ":", 0)).as("absurd span").isNull();
    assertThat(FinishedAbove.decode(FinishedAbove.PREFIX + "0:a:1,0", 0)).as("repeat").isNull();
    assertThat(FinishedAbove.decode(FinishedAbove.PREFIX + "0:a:-1", 0)).as("step back")
        .isNull();
    assertThat(FinishedAbove.decode(FinishedAbove.PREFIX + "0:a:b", 0)).as("past end").isNull();
    assertThat(FinishedAbove.decode(FinishedAbove.PREFIX + "5:3:", 5)).as("end before base")
        .isNull();
    assertThat(FinishedAbove.decode(FinishedAbove.PREFIX + "0:a", 0)).as("parts").isNull();
    assertThat(FinishedAbove.decode(FinishedAbove.PREFIX + "0:a:1:2", 0)).as("parts").isNull();
    assertThat(FinishedAbove.decode(FinishedAbove.PREFIX + "x".repeat(5000), 0)).isNull();
  }

  @Test
  @DisplayName("a forged step that wraps round past Long.MAX_VALUE is refused: no open offset"
      + " reads as finished")
  void wrappedStepRefused() {
    // open 1, then steps that wrap to Long.MIN_VALUE, -1 and 5: unsorted, so a binary search
    // would miss the open offset 1 and report it finished (a record skipped, never handled)
    String forged = FinishedAbove.PREFIX + "0:a:1," + Long.toString(Long.MAX_VALUE, 36) + ","
        + Long.toString(Long.MAX_VALUE, 36) + ",6";
    FinishedAbove read = FinishedAbove.decode(forged, 0);
    if (read != null) {
      assertThat(read.finished(1)).as("offset 1 is listed open").isFalse();
    }
    assertThat(read).isNull();
  }

  @Test
  @DisplayName("the cut at every length near the limit claims no open offset, and keeps every"
      + " entry it wrote")
  void cutAtEveryBoundary() {
    java.util.Random random = new java.util.Random(42);
    for (int round = 0; round < 400; round++) {
      long base = random.nextInt(1 << 20);
      int n = 300 + random.nextInt(900);
      long[] open = new long[n];
      long o = base;
      for (int i = 0; i < n; i++) {
        open[i] = o;
        o += 1 + random.nextInt(i % 7 == 0 ? 40_000 : 3);
      }
      long end = o + random.nextInt(5);
      java.util.Set<Long> opens = new java.util.HashSet<>();
      for (long x : open) {
        opens.add(x);
      }
      FinishedAbove done = FinishedAbove.of(base, end, open, null);
      String text = done.encode();
      assertThat(text.length()).isLessThanOrEqualTo(FinishedAbove.MAX_CHARS);
      FinishedAbove read = FinishedAbove.decode(text, base);
      assertThat(read).as("round %d", round).isNotNull();
      assertThat(read.end()).isLessThanOrEqualTo(end);
      for (long x : open) {
        if (read.finished(x)) {
          assertThat(x).as("round %d: open offset read as finished", round).isNegative();
        }
      }
      for (long x = end; x < end + 3; x++) {
        assertThat(read.finished(x)).as("round %d offset %d past the end", round, x).isFalse();
      }
      for (long x = base; x < Math.min(read.end(), base + 2000); x++) {
        if (!opens.contains(x) && !read.finished(x)) {
          assertThat(x).as("round %d: finished offset %d before the cut lost", round, x)
              .isNegative();
        }
      }
      // the cut lands on an open offset (never inside a finished run it could have claimed)
      assertThat(read.end() == end || opens.contains(read.end())).isTrue();
    }
  }

  @Test
  @DisplayName("another member's or generation's metadata naming another base, a base below or"
      + " above the committed offset, is ignored")
  void otherBaseIgnored() {
    String text = FinishedAbove.of(50, 60, new long[] {50, 55}, null).encode();
    for (long committed : new long[] {0, 49, 51, 60, 61, Long.MAX_VALUE}) {
      assertThat(FinishedAbove.decode(text, committed)).as("committed %d", committed).isNull();
    }
    assertThat(FinishedAbove.decode(text.toUpperCase(java.util.Locale.ROOT), 50)).isNull();
    assertThat(FinishedAbove.decode(text + "\u0000", 50)).isNull();
    assertThat(FinishedAbove.decode(text.replace(":", "::"), 50)).isNull();
  }

  @Test
  @DisplayName("an earlier hand-over that does not join what this member tracked claims nothing"
      + " in the gap between them")
  void earlierPastAGapNotCarried() {
    FinishedAbove earlier = FinishedAbove.of(100, 200, new long[] {100}, null);
    FinishedAbove merged = FinishedAbove.of(0, 5, new long[] {0}, earlier);
    FinishedAbove read = FinishedAbove.decode(merged.encode(), 0);
    assertThat(read.finished(50)).as("never seen by either member").isFalse();
    assertThat(read.finished(100)).isFalse();
    assertThat(read.finished(3)).isTrue();
  }

  @Test
  @DisplayName("keys parked at the hand-over: round trip with any key text, written with nothing"
      + " finished, left out past the size limit, bad entries ignored")
  void parkedKeys() {
    var keys = java.util.List.of(new FinishedAbove.Parked(0, 7, "k"),
        new FinishedAbove.Parked(3, 123456, "a:b,c.d \u00e9"));
    FinishedAbove only = FinishedAbove.withParked(null, 40, keys);
    FinishedAbove read = FinishedAbove.decode(only.encode(), 40);
    assertThat(read).isNotNull();
    assertThat(read.parked()).containsExactlyElementsOf(keys);
    assertThat(LongStream.range(30, 50).filter(read::finished)).isEmpty();
    FinishedAbove both = FinishedAbove.withParked(
        FinishedAbove.of(100, 110, new long[] {100, 109}, null), 100, keys);
    FinishedAbove read2 = FinishedAbove.decode(both.encode(), 100);
    assertThat(read2.parked()).containsExactlyElementsOf(keys);
    assertThat(read2.finished(101)).isTrue();
    assertThat(read2.finished(109)).isFalse();
    var many = new java.util.ArrayList<FinishedAbove.Parked>();
    for (int i = 0; i < 500; i++) {
      many.add(new FinishedAbove.Parked(i, i, "key-" + "x".repeat(20) + i));
    }
    String text = FinishedAbove.withParked(null, 0, many).encode();
    assertThat(text.length()).isLessThanOrEqualTo(FinishedAbove.MAX_CHARS);
    FinishedAbove read3 = FinishedAbove.decode(text, 0);
    assertThat(read3.parked()).isNotEmpty().hasSizeLessThan(500);
    assertThat(many).containsAll(read3.parked());
    String head = FinishedAbove.PREFIX + "5:5::";
    assertThat(FinishedAbove.decode(FinishedAbove.PREFIX + "5:5:", 5)).as("no keys").isNull();
    assertThat(FinishedAbove.decode(head + "0.1", 5)).as("fields").isNull();
    assertThat(FinishedAbove.decode(head + "0.1.!!", 5)).as("not base64").isNull();
    assertThat(FinishedAbove.decode(head + "-1.1.aw", 5)).as("negative").isNull();
    assertThat(FinishedAbove.decode(head + "0.1.aw,", 5)).as("empty entry").isNull();
    assertThat(FinishedAbove.decode(head + "0.1.aw", 5).parked())
        .containsExactly(new FinishedAbove.Parked(0, 1, "k"));
  }
}
