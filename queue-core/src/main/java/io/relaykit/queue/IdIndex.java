package io.relaykit.queue;

import java.security.SecureRandom;
import java.util.Arrays;
import java.util.function.ObjIntConsumer;

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
 * <p>Hashing: ids come from outside (clients, servers, anyone who can send an event), so the
 * table does not use {@link String#hashCode()}, for which colliding ids are easy to make (every
 * string of "Aa" and "BB" blocks of one length has the same hash code), and a run of n colliding
 * ids would make each lookup O(n) under the queue's lock. Each index hashes ids with SipHash-1-3
 * under its own random 128-bit key instead: without the key, ids cannot be chosen to collide.
 * That costs one pass over the id's characters per lookup (about 10 ns for a 36-character UUID).
 *
 * <p>Costs: {@link #find}, {@link #add}, {@link #release}, {@link #drop} and {@link #trimHead} are
 * O(1) expected; the arrays double when full (amortized O(1)). Memory: about 40 bytes per known id
 * beyond the id string, plus 16 to 32 per window slot (the ring is a power of two, and a full ring
 * that is at least half holes left by dropped ids is compacted instead of grown, so it stays
 * within four times the window's size).
 *
 * <p>Memory comes back after a burst: once fewer than a quarter of the per-id slots (or an eighth
 * of the table slots) are in use, the index is compacted: live ids get the lowest refs (the
 * owner hears of each moved value through its {@code onMove} callback), and the arrays and the
 * table are reallocated for twice the ids left (never below their initial sizes). A window ring
 * less than a quarter used is halved the same way. Each compaction is O(capacity) once, paid for
 * by the quarter of the capacity of removals since the last resize: amortized O(1).
 *
 * @param <V> the queue's per-event object
 */
final class IdIndex<V> {

  private static final int MIN_TABLE = 16;
  private static final int MAX_TABLE = 1 << 30;
  private static final int INITIAL_REFS = 256;
  private static final SecureRandom KEYS = new SecureRandom();

  /** This index's SipHash key. */
  private final long k0;
  private final long k1;

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
  // Monotonic reading (nanoTime) at first sight, per position: an id leaves the window by age only
  // once both its wall-clock age and its elapsed time reach the window, so a wall clock stepped
  // forward never lets ids go early (a duplicate is then still refused).
  private long[] ringMono;
  private long monoNow;
  private long monoWindow;
  private int ringMask;
  /** The table's initial size: it never shrinks below it. */
  private final int minTableSlots;
  /** Told the new ref of each held value a compaction moves. */
  private ObjIntConsumer<V> onMove = (v, ref) -> { };
  private long head;
  private long tail;
  private int windowSize;

  /**
   * An index whose table holds {@code expectedIds} ids before it grows (a table rehash touches
   * every slot, so the queue sizes it up front); the per-id arrays and the window ring start small
   * and double as needed (a copy, amortized O(1)).
   */
  IdIndex(int expectedIds) {
    this(expectedIds, KEYS.nextLong(), KEYS.nextLong());
  }

  /** An index whose hash key is ({@code k0}, {@code k1}): for tests that place ids by hand. */
  IdIndex(int expectedIds, long k0, long k1) {
    this.k0 = k0;
    this.k1 = k1;
    int slots = MIN_TABLE;
    while (slots < MAX_TABLE && slots / 2 < expectedIds) {
      slots <<= 1;
    }
    table = new long[slots];
    tableMask = slots - 1;
    minTableSlots = slots;
    keys = new String[INITIAL_REFS];
    hashes = new int[INITIAL_REFS];
    values = new Object[INITIAL_REFS];
    positions = new long[INITIAL_REFS];
    freeRefs = new int[MIN_TABLE];
    ringRefs = new int[INITIAL_REFS];
    ringSeconds = new long[INITIAL_REFS];
    ringNanos = new int[INITIAL_REFS];
    ringMono = new long[INITIAL_REFS];
    ringMask = INITIAL_REFS - 1;
  }

  /**
   * Sets what a compaction tells the owner when it moves a held value to a new ref (the owner keeps
   * refs in its values); runs under the owner's lock, and must not call back into this index.
   */
  void onMove(ObjIntConsumer<V> listener) {
    onMove = listener;
  }

  /**
   * The table hash of {@code key}: SipHash-1-3 under this index's key, over the id's UTF-16 code
   * units (four to a 64-bit word), folded to 32 bits.
   */
  int hash(String key) {
    long v0 = k0 ^ 0x736f6d6570736575L;
    long v1 = k1 ^ 0x646f72616e646f6dL;
    long v2 = k0 ^ 0x6c7967656e657261L;
    long v3 = k1 ^ 0x7465646279746573L;
    int n = key.length();
    int i = 0;
    for (; i + 4 <= n; i += 4) {
      long m = key.charAt(i) | (long) key.charAt(i + 1) << 16 | (long) key.charAt(i + 2) << 32
          | (long) key.charAt(i + 3) << 48;
      v3 ^= m;
      // one SipRound
      v0 += v1; v1 = Long.rotateLeft(v1, 13); v1 ^= v0; v0 = Long.rotateLeft(v0, 32);
      v2 += v3; v3 = Long.rotateLeft(v3, 16); v3 ^= v2;
      v0 += v3; v3 = Long.rotateLeft(v3, 21); v3 ^= v0;
      v2 += v1; v1 = Long.rotateLeft(v1, 17); v1 ^= v2; v2 = Long.rotateLeft(v2, 32);
      v0 ^= m;
    }
    long last = (long) (n & 0xff) << 56;
    for (int shift = 0; i < n; i++, shift += 16) {
      last |= (long) key.charAt(i) << shift;
    }
    v3 ^= last;
    v0 += v1; v1 = Long.rotateLeft(v1, 13); v1 ^= v0; v0 = Long.rotateLeft(v0, 32);
    v2 += v3; v3 = Long.rotateLeft(v3, 16); v3 ^= v2;
    v0 += v3; v3 = Long.rotateLeft(v3, 21); v3 ^= v0;
    v2 += v1; v1 = Long.rotateLeft(v1, 17); v1 ^= v2; v2 = Long.rotateLeft(v2, 32);
    v0 ^= last;
    v2 ^= 0xff;
    for (int r = 0; r < 3; r++) {
      v0 += v1; v1 = Long.rotateLeft(v1, 13); v1 ^= v0; v0 = Long.rotateLeft(v0, 32);
      v2 += v3; v3 = Long.rotateLeft(v3, 16); v3 ^= v2;
      v0 += v3; v3 = Long.rotateLeft(v3, 21); v3 ^= v0;
      v2 += v1; v1 = Long.rotateLeft(v1, 17); v1 ^= v2; v2 = Long.rotateLeft(v2, 32);
    }
    long h = v0 ^ v1 ^ v2 ^ v3;
    return (int) (h ^ (h >>> 32));
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
    int h = hash(key);
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
    return add(key, value, second, nano, monoNow);
  }

  /**
   * The monotonic reading ({@code nanoTime}) that the next age checks and adds use, and the
   * window's length in nanoseconds (0: ages are judged on the wall clock alone).
   */
  void monotonicNow(long nanos, long windowNanos) {
    monoNow = nanos;
    monoWindow = windowNanos;
  }

  /** Like {@link #add(String, Object, long, int)}, first seen at monotonic reading {@code mono}. */
  int add(String key, V value, long second, int nano, long mono) {
    int ref = allocateRef();
    int h = hash(key);
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
    ringMono[at] = mono;
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
    return (seconds > windowSecond || (seconds == windowSecond && nanos >= windowNano))
        && (monoWindow == 0 || monoNow - ringMono[slot] >= monoWindow);
  }

  /**
   * How many ids the window holds, less those among its oldest {@code maxVisited} slots (ids and
   * holes) that were first seen at least {@code windowSecond}/{@code windowNano} before {@code
   * second}/{@code nano}: the window after one age trim of at most that many, counted without
   * changing anything (not even skipping holes). O(maxVisited), whatever the window's size.
   */
  int windowSizeAfterAgeTrim(long second, int nano, long windowSecond, int windowNano,
      int maxVisited) {
    int remaining = windowSize;
    int visited = 0;
    for (long at = head; at != tail && remaining > 0 && visited < maxVisited; at++, visited++) {
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

  /**
   * The refs of the window's oldest ids that a trim would take next, oldest first, without
   * changing anything: while more than {@code overCount} have been taken, or the id was first
   * seen at least the window's age before {@code second}/{@code nano}; at most {@code out.length}.
   * Returns how many were written. O(returned + holes passed).
   */
  int trimCandidates(int[] out, int overCount, long second, int nano, long windowSecond,
      int windowNano) {
    int n = 0;
    for (long at = head; at != tail && n < out.length; at++) {
      int slot = (int) at & ringMask;
      int ref = ringRefs[slot];
      if (ref == 0) {
        continue;
      }
      if (n >= overCount && !olderThan(slot, second, nano, windowSecond, windowNano)) {
        break;
      }
      out[n++] = ref;
    }
    return n;
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
      shrinkIfSparse();
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
    long loaded = t[hash(key) & m];
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
    shrinkIfSparse();
  }

  /**
   * Gives memory back after a burst: compacts the refs and the table when under a quarter of the
   * per-id slots or an eighth of the table slots are in use, and halves the ring (or more) when
   * under a quarter of it spans the window. O(1) unless it resizes; then O(what it resizes), after
   * at least a quarter of that many removals since the last resize.
   */
  private void shrinkIfSparse() {
    if ((keys.length > INITIAL_REFS && size < keys.length / 4)
        || (table.length > minTableSlots && size < table.length / 8)) {
      compactRefs();
    }
    long span = tail - head;
    if (ringRefs.length > INITIAL_REFS && span < ringRefs.length / 4) {
      int n = INITIAL_REFS;
      while (n < span * 2) {
        n <<= 1;
      }
      if (n < ringRefs.length) {
        resizeRing(n);
      }
    }
  }

  /** Renumbers the live ids 1..size and reallocates the per-id arrays and the table for them. */
  private void compactRefs() {
    int refSlots = INITIAL_REFS;
    while (refSlots < 2 * (size + 1)) {
      refSlots <<= 1;
    }
    int slots = minTableSlots;
    while (slots < MAX_TABLE && slots / 4 < size) {
      slots <<= 1;
    }
    String[] newKeys = new String[refSlots];
    int[] newHashes = new int[refSlots];
    Object[] newValues = new Object[refSlots];
    long[] newPositions = new long[refSlots];
    long[] t = new long[slots];
    int m = slots - 1;
    int next = 1;
    for (int ref = 1; ref < nextRef; ref++) {
      String key = keys[ref];
      if (key == null) {
        continue; // free
      }
      int to = next++;
      newKeys[to] = key;
      newHashes[to] = hashes[ref];
      newValues[to] = values[ref];
      long position = positions[ref];
      newPositions[to] = position;
      if (position >= 0) {
        ringRefs[(int) position & ringMask] = to;
      }
      insert(t, m, hashes[ref], to);
    }
    keys = newKeys;
    hashes = newHashes;
    values = newValues;
    positions = newPositions;
    table = t;
    tableMask = m;
    nextRef = next;
    freeRefs = new int[MIN_TABLE];
    freeCount = 0;
    for (int ref = 1; ref < next; ref++) {
      if (newValues[ref] != null) {
        @SuppressWarnings("unchecked")
        V v = (V) newValues[ref];
        onMove.accept(v, ref);
      }
    }
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
      ringMono[at] = ringMono[from];
      positions[ref] = to;
      to++;
    }
    for (long p = to; p < tail; p++) {
      ringRefs[(int) p & ringMask] = 0;
    }
    tail = to;
  }

  private void growRing() {
    resizeRing(ringRefs.length << 1);
  }

  private void resizeRing(int n) {
    int[] refs = new int[n];
    long[] seconds = new long[n];
    int[] nanos = new int[n];
    long[] mono = new long[n];
    int m = n - 1;
    for (long p = head; p < tail; p++) {
      int from = (int) p & ringMask;
      int to = (int) p & m;
      refs[to] = ringRefs[from];
      seconds[to] = ringSeconds[from];
      nanos[to] = ringNanos[from];
      mono[to] = ringMono[from];
    }
    ringRefs = refs;
    ringSeconds = seconds;
    ringNanos = nanos;
    ringMono = mono;
    ringMask = m;
  }

  /** The longest run of occupied table slots: the worst probe length. For tests. */
  int longestRun() {
    int longest = 0;
    int run = 0;
    for (int pass = 0; pass < 2; pass++) { // twice round, for a run that wraps
      for (long slot : table) {
        run = slot == 0 ? 0 : run + 1;
        longest = Math.max(longest, Math.min(run, table.length));
      }
    }
    return longest;
  }

  /** Table slots, for tests. */
  int tableSlots() {
    return table.length;
  }

  /** Per-id slots, for tests. */
  int refSlots() {
    return keys.length;
  }

  /** Window ring slots (including holes not yet trimmed), for tests. */
  int ringSlots() {
    return ringRefs.length;
  }
}
