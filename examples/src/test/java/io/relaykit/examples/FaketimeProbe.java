package io.relaykit.examples;

import java.util.concurrent.locks.LockSupport;

/**
 * The child of {@link FaketimeTest}: prints its wall clock, then parks until 200 ms have passed on
 * its monotonic clock and prints how many parks that took and how far its wall clock moved
 * meanwhile. Parks that return at once (a monotonic clock that disagrees with the waits) show as
 * thousands of parks.
 */
public final class FaketimeProbe {
  private FaketimeProbe() {}

  public static void main(String[] args) {
    long millis = System.currentTimeMillis();
    long start = System.nanoTime();
    long end = start + 200_000_000L;
    int parks = 0;
    for (long now = start; now - end < 0; now = System.nanoTime()) {
      LockSupport.parkNanos(end - now);
      parks++;
    }
    long monotonicMs = (System.nanoTime() - start) / 1_000_000;
    long wallMs = System.currentTimeMillis() - millis;
    System.out.println("millis=" + millis + " parks=" + parks + " monotonicMs=" + monotonicMs
        + " wallMs=" + wallMs);
  }
}
