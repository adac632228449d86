package io.relaykit.chaos;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.SplittableRandom;

/**
 * The seeded fault schedule: the same options and seed give the same events (kind, moment,
 * target, mode, length). Events are planned over the middle of the load phase (10% to 85% of its
 * planned length), one per slot; {@link FaultPacer} holds each back until the previous fault
 * recovered. Every partition mode asked for is drawn at least once when there are at least as many
 * partitions as modes (the rest are drawn at random); with fewer partitions, distinct modes.
 */
final class FaultSchedule {

  /**
   * One scheduled fault.
   *
   * @param atMs ms after the load started
   * @param fault the fault's name
   * @param target an instance index for {@code kill}; a service ({@code db}, {@code redis}, ...)
   *     for {@code partition}
   * @param mode the partition mode; empty otherwise
   * @param lengthMs how long the fault lasts (0 for instantaneous ones)
   * @param pick a seeded number for the fault's own choices
   */
  record Event(long atMs, String fault, String target, String mode, long lengthMs, long pick) {}

  private FaultSchedule() {}

  /** The events of a run whose load phase is planned to last {@code loadMs}. */
  static List<Event> plan(ChaosOptions o, long loadMs) {
    SplittableRandom random = new SplittableRandom(o.seed());
    List<String> kinds = new ArrayList<>();
    for (String fault : ChaosOptions.FAULTS) { // a fixed order, so the seed decides alone
      if (!o.faults().contains(fault)) {
        continue;
      }
      int n = switch (fault) {
        case "kill" -> o.kills();
        case "partition" -> o.partitions();
        case "broker-kill" -> o.brokerKills();
        default -> 1;
      };
      for (int i = 0; i < n; i++) {
        kinds.add(fault);
      }
    }
    // Shuffle the kinds with the seed (Fisher-Yates), then give each a slot.
    for (int i = kinds.size() - 1; i > 0; i--) {
      int j = random.nextInt(i + 1);
      String t = kinds.get(i);
      kinds.set(i, kinds.get(j));
      kinds.set(j, t);
    }
    List<String> targets = kinds.contains("partition") ? o.effectiveTargets() : List.of();
    long from = loadMs / 10;
    long span = Math.max(1, loadMs * 85 / 100 - from);
    long slot = kinds.isEmpty() ? span : span / kinds.size();
    List<String> modes = modes(o.partitionModes(),
        (int) kinds.stream().filter("partition"::equals).count(), random);
    int nextMode = 0;
    List<Event> events = new ArrayList<>();
    for (int i = 0; i < kinds.size(); i++) {
      String kind = kinds.get(i);
      long at = from + i * slot + (long) (random.nextDouble() * slot * 0.6);
      long pick = random.nextLong();
      switch (kind) {
        case "kill" -> events.add(new Event(at, kind, Integer.toString(
            random.nextInt(o.instances())), "", 0, pick));
        case "partition" -> {
          String target = targets.get(random.nextInt(targets.size()));
          String mode = modes.get(nextMode++);
          long length = mode.equals("cut") ? 0 : o.partitionLength().toMillis();
          events.add(new Event(at, kind, target, mode, length, pick));
        }
        case "clock" -> events.add(new Event(at, kind, Integer.toString(
            random.nextInt(o.instances())), "", o.partitionLength().toMillis(), pick));
        default -> events.add(new Event(at, kind, "", "", 0, pick));
      }
    }
    events.sort(Comparator.comparingLong(Event::atMs));
    return events;
  }

  /**
   * {@code n} partition modes in a seeded order: each of {@code asked} once (as far as {@code n}
   * allows), the rest drawn at random from {@code asked}.
   */
  static List<String> modes(List<String> asked, int n, SplittableRandom random) {
    List<String> deck = new ArrayList<>(asked);
    shuffle(deck, random);
    List<String> out = new ArrayList<>(deck.subList(0, Math.min(n, deck.size())));
    while (out.size() < n) {
      out.add(asked.get(random.nextInt(asked.size())));
    }
    shuffle(out, random);
    return out;
  }

  private static void shuffle(List<String> list, SplittableRandom random) {
    for (int i = list.size() - 1; i > 0; i--) {
      int j = random.nextInt(i + 1);
      String t = list.get(i);
      list.set(i, list.get(j));
      list.set(j, t);
    }
  }
}
