package io.relaykit.queue;

import java.util.Arrays;

/**
 * Every event id a {@link ReportQueue} knows, and its dedupe window, laid out so that the hot path
 * costs a couple of random memory accesses and no allocation. Not thread-safe (the queue locks).
 *
 * <p>Each known id has a <em>ref</em>, a small integer naming its slot in parallel arrays: the id,
 * its hash, the queue's object for it ({@code V}; null once the id is only remembered, "gone"), and
 * its position in the window. Ids are found through an open-addressing hash table of {@code long}s,
 * each packing a hash and a ref, probed linearly and at most half full: a probe reads one array,
 * and the id itself only when the hashes match; removing a ref never reads its id, and deletion
 * shifts the following run back instead of leaving tombstones. The window is a ring of refs in
 * first-seen order with their first-seen times, trimmed from its head; an id that leaves the
 * ring while its value is still held (an event still pending, in flight or dead) stays known until
 * the value is released. Refs are reused last-freed first, so a window that turns over in order
 * walks the slot arrays in order too. {@link #prefetch} loads the slots an enqueue will touch
 * early, so that its random accesses overlap and happen outside the queue's lock.
 *
 * <p>Costs: {@link #find}, {@link #add}, {@link #release}, {@link #drop} and {@link #trimHead} are
 * O(1) expected; the arrays double when full (amortized O(1)). Memory: about 40 bytes per known id
 * beyond the id string, plus 16 to 32 per window slot (the ring is a power of two, and a full ring
 * that is at least half holes left by dropped ids is compacted instead of grown, so it stays
 * within four times the window's size).
 *
 * @param <V> the queue's per-event object
 */
final class IdIndex<V> {

  private static final int MIN_TABLE = 16;
  private static final int MAX_TABLE = 1 << 30;
  private static final int INITIAL_REFS = 256;

  // Hash table: slot = (hash << 32) | ref, 0 when empty (refs start at 1).
  private long[] table;
  private int tableMask;
  private int size;

  // Per ref (index 0 unused).
  private String[] keys;
  private int[] hashes;
  private Object[] values;
  /** Absolute window position of the ref's id, or -1 when it is not in the window. */
  private long[] positions;
  private int nextRef = 1;
  private int[] freeRefs;
  private int freeCount;

  // Window ring: ref (0 for a hole left by a dropped id) and first-seen time, per position.
  private int[] ringRefs;
  private long[] ringSeconds;
  private int[] ringNanos;
  private int ringMask;
  private long head;
  private long tail;
  private int windowSize;

  /**
   * An index whose table holds {@code expectedIds} ids before it grows (a table rehash touches
   * every slot, so the queue sizes it up front); the per-id arrays and the window ring start small
   * and double as needed (a copy, amortized O(1)).
   */
  IdIndex(int expectedIds) {
    int slots = MIN_TABLE;
    while (slots < MAX_TABLE && slots / 2 < expectedIds) {
      slots <<= 1;
    }
    table = new long[slots];
    tableMask = slots - 1;
    keys = new String[INITIAL_REFS];
    hashes = new int[INITIAL_REFS];
    values = new Object[INITIAL_REFS];
    positions = new long[INITIAL_REFS];
    freeRefs = new int[MIN_TABLE];
    ringRefs = new int[INITIAL_REFS];
    ringSeconds = new long[INITIAL_REFS];
    ringNanos = new int[INITIAL_REFS];
    ringMask = INITIAL_REFS - 1;
  }

  /** Spreads a hash code so that keys whose hash codes differ in a few bits land far apart. */
  static int mix(int hashCode) {
    int h = hashCode * 0x9E3779B9;
    return h ^ (h >>> 16);
  }

  /** Known ids. */
  int size() {
    return size;
  }

  /** Ids in the window. */
  int windowSize() {
    return windowSize;
  }

  /** The ref of {@code key}, or 0 when it is not known. */
  int find(String key) {
    int h = mix(key.hashCode());
    long[] t = table;
    int m = tableMask;
    for (int i = h & m; ; i = (i + 1) & m) {
      long slot = t[i];
      if (slot == 0) {
        return 0;
      }
      if ((int) (slot >>> 32) == h) {
        int ref = (int) slot;
        String k = keys[ref];
        if (k == key || k.equals(key)) {
          return ref;
        }
      }
    }
  }

  /** The value held for {@code ref}; null once released (the id is only remembered). */
  @SuppressWarnings("unchecked")
  V value(int ref) {
    return (V) values[ref];
  }

  /** The id of {@code ref}. */
  String key(int ref) {
    return keys[ref];
  }

  /** Whether the id of {@code ref} is in the window. */
  boolean inWindow(int ref) {
    return positions[ref] >= 0;
  }

  /**
   * Adds an id that is not known (the caller checked) at the window's tail, seen at {@code second}
   * and {@code nano}, holding {@code value} (null: only remembered). Returns its ref.
   */
  int add(String key, V value, long second, int nano) {
    int ref = allocateRef();
    int h = mix(key.hashCode());
    keys[ref] = key;
    hashes[ref] = h;
    values[ref] = value;
    if (size + 1 > (tableMask + 1) / 2 && table.length < MAX_TABLE) {
      growTable();
    }
    insert(table, tableMask, h, ref);
    size++;
    if (tail - head == ringRefs.length) {
      if (windowSize <= ringRefs.length / 2) {
        compactRing();
      } else {
        growRing();
      }
    }
    int at = (int) tail & ringMask;
    ringRefs[at] = ref;
    ringSeconds[at] = second;
    ringNanos[at] = nano;
    positions[ref] = tail++;
    windowSize++;
    return ref;
  }

  /** Holds {@code value} for a known id that was only remembered (a restored pending event). */
  void hold(int ref, V value) {
    values[ref] = value;
  }

  /**
   * Releases the value of {@code ref} (its event left the queue). An id in the window stays
   * known (and returns true) until the window lets it go; an id outside it is forgotten now (and
   * returns false).
   */
  boolean release(int ref) {
    values[ref] = null;
    if (positions[ref] >= 0) {
      return true;
    }
    forget(ref);
    return false;
  }

  /** Forgets {@code ref} at once, leaving a hole in the window if it was there (a dropped event). */
  void drop(int ref) {
    long position = positions[ref];
    if (position >= 0) {
      ringRefs[(int) position & ringMask] = 0;
      windowSize--;
    }
    forget(ref);
  }

  /**
   * Whether the window's oldest id was first seen at least {@code windowSecond}/{@code
   * windowNano} before {@code second}/{@code nano} (false when the window is empty).
   */
  boolean headOlderThan(long second, int nano, long windowSecond, int windowNano) {
    skipHoles();
    if (head == tail) {
      return false;
    }
    return olderThan((int) head & ringMask, second, nano, windowSecond, windowNano);
  }

  private boolean olderThan(int slot, long second, int nano, long windowSecond, int windowNano) {
    long seconds = second - ringSeconds[slot];
    int nanos = nano - ringNanos[slot];
    if (nanos < 0) {
      nanos += 1_000_000_000;
      seconds--;
    }
    return seconds > windowSecond || (seconds == windowSecond && nanos >= windowNano);
  }

  /**
   * How many ids the window holds that were first seen less than {@code windowSecond}/{@code
   * windowNano} before {@code second}/{@code nano}: the window after the age trim of {@link
   * #headOlderThan} and {@link #trimHead}, counted without changing anything (not even skipping
   * holes). O(ids and holes that trim would pass).
   */
  int windowSizeAfterAgeTrim(long second, int nano, long windowSecond, int windowNano) {
    int remaining = windowSize;
    for (long at = head; at != tail && remaining > 0; at++) {
      int slot = (int) at & ringMask;
      if (ringRefs[slot] == 0) {
        continue;
      }
      if (!olderThan(slot, second, nano, windowSecond, windowNano)) {
        break;
      }
      remaining--;
    }
    return remaining;
  }

  /** The ref of the window's oldest id (past any holes), or 0 when the window is empty. */
  int headRef() {
    skipHoles();
    return head == tail ? 0 : ringRefs[(int) head & ringMask];
  }

  /**
   * Takes the oldest id out of the window. Returns it if it was forgotten (nothing held it);
   * returns null if its value is still held (it stays known until {@link #release}d) or the
   * window is empty.
   */
  String trimHead() {
    skipHoles();
    if (head == tail) {
      return null;
    }
    int ref = ringRefs[(int) head & ringMask];
    head++;
    windowSize--;
    positions[ref] = -1;
    if (values[ref] != null) {
      return null;
    }
    String key = keys[ref];
    forget(ref);
    return key;
  }

  /**
   * Loads, without changing anything, the table slots that the caller's next {@link #find} of
   * {@code key} and, when {@code trimming}, the removal of the window's oldest id will touch, so
   * that these random accesses overlap, and can happen before the caller takes its lock. The one
   * method that may run without the owner's lock: it only reads, tolerates stale or torn state
   * (every index is bounded by the array it reads), and never throws for a racing writer. Returns
   * the loaded slots mixed together, for the caller to consume so the loads are not optimized away.
   */
  long prefetch(String key, boolean trimming) {
    long[] t = table;
    int m = t.length - 1;
    long loaded = t[mix(key.hashCode()) & m];
    if (trimming) {
      int[] refs = ringRefs;
      int ref = refs[(int) head & (refs.length - 1)];
      int[] hs = hashes;
      if (ref > 0 && ref < hs.length) {
        loaded ^= t[hs[ref] & m];
      }
    }
    return loaded;
  }

  private void skipHoles() {
    while (head != tail && ringRefs[(int) head & ringMask] == 0) {
      head++;
    }
  }

  private void forget(int ref) {
    removeFromTable(hashes[ref], ref);
    size--;
    keys[ref] = null;
    values[ref] = null;
    positions[ref] = -1;
    if (freeCount == freeRefs.length) {
      freeRefs = Arrays.copyOf(freeRefs, freeCount * 2);
    }
    freeRefs[freeCount++] = ref;
  }

  private int allocateRef() {
    if (freeCount > 0) {
      return freeRefs[--freeCount];
    }
    if (nextRef == keys.length) {
      int n = keys.length * 2;
      keys = Arrays.copyOf(keys, n);
      hashes = Arrays.copyOf(hashes, n);
      values = Arrays.copyOf(values, n);
      positions = Arrays.copyOf(positions, n);
    }
    return nextRef++;
  }

  private static void insert(long[] t, int m, int h, int ref) {
    int i = h & m;
    while (t[i] != 0) {
      i = (i + 1) & m;
    }
    t[i] = ((long) h << 32) | (ref & 0xFFFF_FFFFL);
  }

  private void removeFromTable(int h, int ref) {
    long[] t = table;
    int m = tableMask;
    long wanted = ((long) h << 32) | (ref & 0xFFFF_FFFFL);
    int i = h & m;
    while (t[i] != wanted) {
      if (t[i] == 0) {
        throw new IllegalStateException("ref " + ref + " is not in the table");
      }
      i = (i + 1) & m;
    }
    // Backward shift: move each later slot of the run whose home is not in (i, j] into the gap.
    int j = i;
    while (true) {
      j = (j + 1) & m;
      long slot = t[j];
      if (slot == 0) {
        break;
      }
      int home = (int) (slot >>> 32) & m;
      boolean staysPut = i <= j ? (i < home && home <= j) : (i < home || home <= j);
      if (!staysPut) {
        t[i] = slot;
        i = j;
      }
    }
    t[i] = 0;
  }

  private void growTable() {
    long[] old = table;
    long[] t = new long[old.length << 1];
    int m = t.length - 1;
    for (long slot : old) {
      if (slot != 0) {
        insert(t, m, (int) (slot >>> 32), (int) slot);
      }
    }
    table = t;
    tableMask = m;
  }

  /**
   * Closes the holes dropped ids left in a full ring, keeping the window's order: a ring at least
   * half holes is compacted rather than grown, so the ring stays within twice the window's size
   * however many ids are dropped (O(ring) once per ring/2 adds: amortized O(1)).
   */
  private void compactRing() {
    long to = head;
    for (long p = head; p < tail; p++) {
      int from = (int) p & ringMask;
      int ref = ringRefs[from];
      if (ref == 0) {
        continue;
      }
      int at = (int) to & ringMask;
      // to <= p, so slot `at` was already read: moving entries down in order is safe in place.
      ringRefs[at] = ref;
      ringSeconds[at] = ringSeconds[from];
      ringNanos[at] = ringNanos[from];
      positions[ref] = to;
      to++;
    }
    for (long p = to; p < tail; p++) {
      ringRefs[(int) p & ringMask] = 0;
    }
    tail = to;
  }

  private void growRing() {
    int n = ringRefs.length << 1;
    int[] refs = new int[n];
    long[] seconds = new long[n];
    int[] nanos = new int[n];
    int m = n - 1;
    for (long p = head; p < tail; p++) {
      int from = (int) p & ringMask;
      int to = (int) p & m;
      refs[to] = ringRefs[from];
      seconds[to] = ringSeconds[from];
      nanos[to] = ringNanos[from];
    }
    ringRefs = refs;
    ringSeconds = seconds;
    ringNanos = nanos;
    ringMask = m;
  }

  /** Table slots, for tests. */
  int tableSlots() {
    return table.length;
  }

  /** Window ring slots (including holes not yet trimmed), for tests. */
  int ringSlots() {
    return ringRefs.length;
  }
}
