package io.relaykit.queue;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

class IdIndexTest {

  /** {@code n} distinct keys with one hash code: "Aa" and "BB" hash alike, so do their strings. */
  private static List<String> colliding(String prefix, int n) {
    List<String> keys = new ArrayList<>();
    for (int i = 0; keys.size() < n; i++) {
      StringBuilder b = new StringBuilder(prefix);
      for (int bit = 0; bit < 12; bit++) {
        b.append((i >> bit & 1) == 0 ? "Aa" : "BB");
      }
      keys.add(b.toString());
    }
    assertThat(keys.stream().mapToInt(String::hashCode).distinct().count()).isEqualTo(1);
    return keys;
  }

  @Test
  @DisplayName("ids are found until forgotten; a released id stays known while it is in the window")
  void basics() {
    IdIndex<String> index = new IdIndex<>(4);
    int a = index.add("a", "A", 10, 0);
    int b = index.add("b", "B", 11, 0);
    assertThat(index.find("a")).isEqualTo(a);
    assertThat(index.find(new String("b"))).as("equal, not identical").isEqualTo(b);
    assertThat(index.find("c")).isZero();
    assertThat(index.value(a)).isEqualTo("A");
    assertThat(index.key(b)).isEqualTo("b");

    assertThat(index.release(a)).as("in the window: remembered").isTrue();
    assertThat(index.find("a")).isEqualTo(a);
    assertThat(index.value(a)).isNull();
    assertThat(index.windowSize()).isEqualTo(2);

    assertThat(index.trimHead()).as("a held nothing: forgotten").isEqualTo("a");
    assertThat(index.find("a")).isZero();
    assertThat(index.trimHead()).as("b is still held").isNull();
    assertThat(index.find("b")).isEqualTo(b);
    assertThat(index.inWindow(b)).isFalse();
    assertThat(index.windowSize()).isZero();
    assertThat(index.release(b)).as("outside the window: forgotten now").isFalse();
    assertThat(index.find("b")).isZero();
    assertThat(index.size()).isZero();
    assertThat(index.trimHead()).as("empty window").isNull();
  }

  @Test
  @DisplayName("a dropped id leaves a hole that the window skips and does not count")
  void holes() {
    IdIndex<String> index = new IdIndex<>(4);
    index.add("a", null, 1, 0);
    int b = index.add("b", "B", 2, 0);
    index.add("c", null, 3, 0);
    index.drop(b);
    assertThat(index.find("b")).isZero();
    assertThat(index.windowSize()).isEqualTo(2);
    assertThat(index.trimHead()).isEqualTo("a");
    assertThat(index.headOlderThan(5, 0, 2, 0)).as("head is c, seen at 3: 2 s old").isTrue();
    assertThat(index.headOlderThan(4, 999_999_999, 2, 0)).isFalse();
    assertThat(index.trimHead()).isEqualTo("c");
    assertThat(index.windowSize()).isZero();
    assertThat(index.headOlderThan(Long.MAX_VALUE / 2, 0, 0, 0)).as("empty").isFalse();
  }

  @Test
  @DisplayName("age compares seconds and nanos exactly, borrowing across the second")
  void age() {
    IdIndex<String> index = new IdIndex<>(4);
    index.add("a", null, 100, 900_000_000);
    // window 1.2 s: due at 102.1 s
    assertThat(index.headOlderThan(102, 99_999_999, 1, 200_000_000)).isFalse();
    assertThat(index.headOlderThan(102, 100_000_000, 1, 200_000_000)).isTrue();
    assertThat(index.headOlderThan(99, 0, 1, 0)).as("clock stepped back").isFalse();
  }

  /** {@code n} ids whose home is {@code slot} of {@code index}'s table. */
  private static List<String> homedAt(IdIndex<String> index, int slot, int n) {
    int slots = index.tableSlots();
    List<String> keys = new ArrayList<>();
    for (int p = 0; keys.size() < n; p++) {
      String candidate = "k" + slot + "-" + p;
      if ((index.hash(candidate) & (slots - 1)) == slot) {
        keys.add(candidate);
      }
    }
    return keys;
  }

  @Test
  @DisplayName("ids chosen to share one String.hashCode do not collide in the table: 4096 of them leave no long probe run")
  void hashFloodingResisted() {
    IdIndex<String> index = new IdIndex<>(8192);
    List<String> keys = colliding("flood", 4096);
    assertThat(keys.stream().map(String::hashCode).distinct()).as("one hash code").hasSize(1);
    Map<String, Integer> refs = new HashMap<>();
    for (String k : keys) {
      refs.put(k, index.add(k, k, 0, 0));
    }
    assertThat(index.longestRun()).as("longest probe run").isLessThan(64);
    refs.forEach((k, ref) -> assertThat(index.find(k)).isEqualTo(ref));
    assertThat(new IdIndex<String>(8).hash("same"))
        .as("each index has its own key").isNotEqualTo(new IdIndex<String>(8).hash("same"));
  }

  @Test
  @DisplayName("removing from a run of colliding ids that wraps around the table end keeps every id findable")
  void wrappingRun() {
    IdIndex<String> index = new IdIndex<>(8, 1, 2);
    int slots = index.tableSlots();
    // One id homed at the second-to-last slot, three at the last (the run wraps to 0 and 1), two
    // homed at 0 (pushed to 2 and 3).
    List<String> keys = new ArrayList<>(homedAt(index, slots - 2, 1));
    keys.addAll(homedAt(index, slots - 1, 3));
    keys.addAll(homedAt(index, 0, 2));
    Map<String, Integer> refs = new HashMap<>();
    for (String k : keys) {
      refs.put(k, index.add(k, k, 0, 0));
    }
    assertThat(index.tableSlots()).as("no growth: the run wraps").isEqualTo(slots);
    // Remove before the wrap (ids past it must stay behind their home), then in the wrapped part.
    for (String gone : List.of(keys.get(0), keys.get(2), keys.get(1), keys.get(4))) {
      index.drop(refs.remove(gone));
      assertThat(index.find(gone)).isZero();
      refs.forEach((k, ref) -> assertThat(index.find(k)).as(k).isEqualTo(ref));
    }
  }

  @Test
  @DisplayName("random operations agree with a plain map and queue, through table, ref and ring growth")
  void agreesWithModel() {
    SplittableRandom random = new SplittableRandom(42);
    IdIndex<String> index = new IdIndex<>(1);
    Map<String, Integer> refs = new HashMap<>();
    Map<String, String> held = new HashMap<>();
    ArrayDeque<String> window = new ArrayDeque<>();
    Map<String, Long> seenAt = new HashMap<>();
    List<String> pool = new ArrayList<>(colliding("x", 40));
    for (int i = 0; i < 1500; i++) {
      pool.add("id-" + i);
    }
    long clock = 0;
    for (int step = 0; step < 60_000; step++) {
      String key = pool.get(random.nextInt(pool.size()));
      int op = random.nextInt(10);
      if (op < 4) {
        if (refs.containsKey(key)) {
          continue;
        }
        boolean hold = random.nextBoolean();
        clock++;
        refs.put(key, index.add(key, hold ? "v" + key : null, clock, 0));
        if (hold) {
          held.put(key, "v" + key);
        }
        window.addLast(key);
        seenAt.put(key, clock);
      } else if (op < 6) {
        if (!held.containsKey(key)) {
          continue;
        }
        boolean inWindow = window.contains(key);
        assertThat(index.release(ref(index, key))).isEqualTo(inWindow);
        held.remove(key);
        if (!inWindow) {
          refs.remove(key);
        }
      } else if (op < 7) {
        if (!refs.containsKey(key)) {
          continue;
        }
        index.drop(ref(index, key));
        refs.remove(key);
        held.remove(key);
        window.remove(key);
      } else if (op < 9) {
        String head = window.peekFirst();
        if (head != null) {
          assertThat(index.headOlderThan(clock, 0, clock - seenAt.get(head), 0)).isTrue();
          assertThat(index.headOlderThan(clock, 0, clock - seenAt.get(head) + 1, 0)).isFalse();
        }
        String forgotten = index.trimHead();
        if (head == null) {
          assertThat(forgotten).isNull();
        } else {
          window.removeFirst();
          if (held.containsKey(head)) {
            assertThat(forgotten).isNull();
            assertThat(index.inWindow(ref(index, head))).isFalse();
          } else {
            assertThat(forgotten).isEqualTo(head);
            refs.remove(head);
          }
        }
      }
      assertThat(index.size()).isEqualTo(refs.size());
      assertThat(index.windowSize()).isEqualTo(window.size());
      if (step % 97 == 0) {
        for (String k : pool) {
          int ref = index.find(k);
          assertThat(ref != 0).as(k).isEqualTo(refs.containsKey(k));
          if (ref != 0) {
            assertThat(index.value(ref)).isEqualTo(held.get(k));
            assertThat(index.key(ref)).isEqualTo(k);
          }
        }
        for (String k : window) {
          assertThat(index.inWindow(ref(index, k))).isTrue();
        }
      }
    }
    assertThat(index.tableSlots()).as("grew").isGreaterThan(16);
    assertThat(index.ringSlots()).as("grew").isGreaterThan(256);
    // Drain: everything released and trimmed; the model still agrees, and memory came back.
    for (String k : new ArrayList<>(held.keySet())) {
      boolean inWindow = window.contains(k);
      assertThat(index.release(ref(index, k))).isEqualTo(inWindow);
      if (!inWindow) {
        refs.remove(k);
      }
    }
    while (index.windowSize() > 0) {
      assertThat(index.trimHead()).isEqualTo(window.removeFirst());
    }
    assertThat(index.size()).isZero();
    assertThat(index.tableSlots()).as("shrank back").isEqualTo(16);
    assertThat(index.ringSlots()).as("shrank back").isEqualTo(256);
    assertThat(index.refSlots()).as("shrank back").isEqualTo(256);
  }

  /** The current ref of a known {@code key} (compactions renumber refs). */
  private static int ref(IdIndex<?> index, String key) {
    int ref = index.find(key);
    assertThat(ref).as("known: " + key).isNotZero();
    return ref;
  }



  @Test
  @DisplayName("holes left by dropped ids do not grow the ring: one remembered id, then a million evictions, keep it small")
  void holesDoNotGrowTheRing() {
    IdIndex<String> index = new IdIndex<>(4);
    int acked = index.add("acked", null, 0, 0);
    int previous = index.add("e-0", "E", 1, 0);
    for (int i = 1; i <= 1_000_000; i++) {
      int next = index.add("e-" + i, "E", 1 + i, 0);
      index.drop(previous);
      previous = next;
    }
    assertThat(index.windowSize()).isEqualTo(2);
    assertThat(index.ringSlots()).as("proportional to the live window").isLessThanOrEqualTo(256);
    assertThat(index.inWindow(acked)).isTrue();
    assertThat(index.inWindow(previous)).isTrue();
    assertThat(index.trimHead()).as("order kept: the oldest first").isEqualTo("acked");
    assertThat(index.headOlderThan(1_000_001, 0, 0, 0)).as("the survivor's time kept").isTrue();
    assertThat(index.headOlderThan(1_000_000, 999_999_999, 0, 0)).isFalse();
    assertThat(index.trimHead()).as("still held").isNull();
    assertThat(index.windowSize()).isZero();
  }

  @Test
  @DisplayName("after a burst of 300 000 ids drained to none, table, per-id arrays and ring shrink back; held values hear their new refs")
  void memoryReturnsAfterBurst() {
    IdIndex<int[]> index = new IdIndex<>(1000);
    index.onMove((v, ref) -> v[0] = ref);
    int table0 = index.tableSlots();
    int refs0 = index.refSlots();
    int ring0 = index.ringSlots();
    List<int[]> held = new ArrayList<>();
    int n = 300_000;
    for (int i = 0; i < n; i++) {
      int[] v = new int[] {0, i};
      v[0] = index.add("burst-" + i, v, i, 0);
      held.add(v);
    }
    assertThat(index.tableSlots()).as("grew").isGreaterThanOrEqualTo(2 * n);
    assertThat(index.refSlots()).isGreaterThan(n);
    assertThat(index.ringSlots()).isGreaterThanOrEqualTo(n);
    // The window lets every id go while its event is still held, then the events leave, oldest
    // first, all but the last ten; refs held by the values follow every compaction.
    while (index.windowSize() > 0) {
      assertThat(index.trimHead()).isNull();
    }
    for (int i = 0; i < n - 10; i++) {
      int[] v = held.get(i);
      assertThat(index.key(v[0])).isEqualTo("burst-" + v[1]);
      assertThat(index.release(v[0])).isFalse();
    }
    assertThat(index.size()).isEqualTo(10);
    assertThat(index.tableSlots()).as("table back to its initial size").isEqualTo(table0);
    assertThat(index.refSlots()).as("per-id arrays back").isEqualTo(refs0);
    assertThat(index.ringSlots()).as("ring back").isEqualTo(ring0);
    for (int i = n - 10; i < n; i++) {
      int[] v = held.get(i);
      assertThat(index.find("burst-" + i)).isEqualTo(v[0]);
      assertThat(index.value(v[0])).isSameAs(v);
    }
    // Still fully usable: a second, smaller burst grows and shrinks again.
    for (int i = 0; i < 5000; i++) {
      index.add("again-" + i, null, n + i, 0);
    }
    while (index.trimHead() != null || index.windowSize() > 0) {
      // trims the 5000 remembered ids
    }
    assertThat(index.size()).isEqualTo(10);
    assertThat(index.refSlots()).isEqualTo(refs0);
    assertThat(index.tableSlots()).isEqualTo(table0);
    assertThat(index.ringSlots()).isEqualTo(ring0);
  }
}
