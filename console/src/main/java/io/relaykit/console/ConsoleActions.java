package io.relaykit.console;

import io.relaykit.deadletter.DeadLetter;
import io.relaykit.deadletter.DeadLetterQuery;
import io.relaykit.deadletter.ReplayInProgressException;
import io.relaykit.deadletter.ReplayMarkLapsedException;
import io.relaykit.monitor.MetricsListener;
import java.time.Duration;
import java.util.List;
import java.util.Optional;

/**
 * Runs console actions through the ledger: at most once per issued id, one log line and one metric
 * per run. A set is read newest first in keyset pages of {@value #SET_PAGE}; dead letters
 * dead-lettered again during the run are newer than the first page and are not reached again.
 */
final class ConsoleActions {

  static final int SET_PAGE = 100;
  private static final System.Logger LOG = System.getLogger(Console.class.getName());

  private final ActionLedger ledger;
  private final MetricsListener metrics;
  private final int maxSetSize;

  ConsoleActions(ActionLedger ledger, MetricsListener metrics, int maxSetSize) {
    this.ledger = ledger;
    this.metrics = metrics;
    this.maxSetSize = maxSetSize;
  }

  /**
   * Runs {@code e} if it was only issued; otherwise waits up to {@code wait} for the run under
   * way. Never throws what the action throws: it becomes the outcome.
   *
   * @throws InterruptedException if interrupted while waiting for a twin's run
   */
  void run(ActionLedger.Entry e, ConsoleDeadLetterSource s, String principal, Duration wait)
      throws InterruptedException {
    switch (ledger.begin(e.id, principal)) {
      case RUN -> {
        ActionLedger.Outcome o;
        try {
          o = execute(e.action, s);
        } catch (RuntimeException x) {
          o = new ActionLedger.Outcome(false, 0, e.action.kind().verb + " failed: " + x);
        } catch (Error x) {
          finish(e, principal, new ActionLedger.Outcome(false, 0, e.action.kind().verb
              + " failed: " + x));
          throw x;
        }
        finish(e, principal, o);
      }
      case RUNNING -> ledger.await(e.id, wait);
      case DONE, UNKNOWN -> {
        // Done once already (its outcome is shown), or gone: nothing runs twice.
      }
    }
  }

  private void finish(ActionLedger.Entry e, String principal, ActionLedger.Outcome o) {
    ledger.finish(e.id, o);
    String who = principal == null ? "an anonymous operator" : principal;
    LOG.log(System.Logger.Level.INFO, "console action " + e.action.kind().label + " by " + who
        + ": " + e.action.describe() + ": " + o.summary() + " (" + o.count()
        + " dead letters) [action " + e.id + "]");
    MetricsListener.safely(metrics, m -> m.consoleAction(e.action.kind().label,
        o.ok() ? "ok" : "failed", o.count()));
  }

  private ActionLedger.Outcome execute(ConsoleAction a, ConsoleDeadLetterSource s) {
    if (s == null) {
      return new ActionLedger.Outcome(false, 0, "store " + a.store() + " is no longer shown");
    }
    boolean purge = a.kind() == ConsoleAction.Kind.PURGE_ONE
        || a.kind() == ConsoleAction.Kind.PURGE_SET;
    if (purge && !s.purgeSupported()) {
      return new ActionLedger.Outcome(false, 0, "refused: store " + s.name()
          + " cannot remove dead letters" + (s.note() == null ? "" : " (" + s.note() + ")"));
    }
    if (a.kind().single()) {
      return one(a, s, purge);
    }
    return set(a, s, purge);
  }

  private static ActionLedger.Outcome one(ConsoleAction a, ConsoleDeadLetterSource s,
      boolean purge) {
    String id = a.deadLetterId();
    try {
      Optional<DeadLetter> done = purge ? s.store().remove(id) : s.replay().replay(id);
      if (done.isEmpty()) {
        return new ActionLedger.Outcome(true, 0, "dead letter " + id
            + " is no longer in the store (already replayed or purged): nothing done");
      }
      return new ActionLedger.Outcome(true, 1, (purge ? "purged" : "replayed")
          + " dead letter " + id);
    } catch (ReplayMarkLapsedException e) {
      return new ActionLedger.Outcome(true, 1, "replayed dead letter " + id + ", but: "
          + e.getMessage());
    } catch (ReplayInProgressException e) {
      return new ActionLedger.Outcome(false, 0, "not replayed: another replay of " + id
          + " is under way");
    } catch (RuntimeException e) {
      return new ActionLedger.Outcome(false, 0, (purge ? "purge" : "replay") + " of dead letter "
          + id + " failed: " + message(e));
    }
  }

  private ActionLedger.Outcome set(ConsoleAction a, ConsoleDeadLetterSource s, boolean purge) {
    ConsoleAction.Filter f = a.filter();
    long count;
    try {
      count = s.store().count(f.query(1));
    } catch (RuntimeException e) {
      return new ActionLedger.Outcome(false, 0, "could not count the set; nothing done: "
          + e.getMessage());
    }
    if (count > maxSetSize) {
      return new ActionLedger.Outcome(false, 0, "refused: " + count + " dead letters match now;"
          + " a set action handles at most " + maxSetSize + "; nothing done");
    }
    String verb = purge ? "purged" : "replayed";
    long done = 0;
    long missing = 0;
    long busy = 0;
    long reached = 0;
    String warning = "";
    DeadLetterQuery base = f.query(SET_PAGE);
    DeadLetterQuery.Position after = null;
    // What the operator confirmed, and no more: at most the confirmed count, and nothing newer
    // than the newest dead letter the confirmation saw.
    long limit = Math.min(maxSetSize, a.expected());
    DeadLetterQuery.Position head = a.head();
    long newer = 0;
    outer:
    while (reached < limit) {
      List<DeadLetter> page;
      try {
        page = s.store().list(after == null ? base : base.withAfter(after));
      } catch (RuntimeException e) {
        return stopped(verb, done, missing, busy, "reading the set failed: " + e.getMessage());
      }
      for (DeadLetter d : page) {
        if (reached >= limit) {
          break outer;
        }
        if (Thread.currentThread().isInterrupted()) {
          return stopped(verb, done, missing, busy, "interrupted");
        }
        after = DeadLetterQuery.Position.of(d);
        if (head != null && head.compareTo(d) > 0) {
          newer++;
          continue;
        }
        reached++;
        try {
          Optional<DeadLetter> r = purge ? s.store().remove(d.id()) : s.replay().replay(d.id());
          if (r.isPresent()) {
            done++;
          } else {
            missing++;
          }
        } catch (ReplayMarkLapsedException e) {
          done++;
          warning = "; a mark lapsed (" + e.getMessage() + ")";
        } catch (ReplayInProgressException e) {
          busy++;
        } catch (RuntimeException e) {
          return stopped(verb, done, missing, busy, (purge ? "purge" : "replay")
              + " of dead letter " + d.id() + " failed: " + message(e)
              + "; it and those not reached stay in the store");
        }
      }
      if (page.size() < SET_PAGE) {
        break;
      }
    }
    return new ActionLedger.Outcome(busy == 0, done, verb + " " + done + " of " + reached
        + " dead letters" + tail(missing, busy) + warning + (newer == 0 ? "" : "; " + newer
        + " newer than the confirmation left alone"));
  }

  /** The exception's message and its cause's, which a replay failure wraps. */
  static String message(Throwable e) {
    String m = String.valueOf(e.getMessage());
    Throwable c = e.getCause();
    return c == null || c.getMessage() == null || m.contains(c.getMessage()) ? m
        : m + " (" + c.getMessage() + ")";
  }

  private static String tail(long missing, long busy) {
    return (missing == 0 ? "" : "; " + missing + " were gone already")
        + (busy == 0 ? "" : "; " + busy + " skipped, another replay was under way");
  }

  private static ActionLedger.Outcome stopped(String verb, long done, long missing, long busy,
      String why) {
    return new ActionLedger.Outcome(false, done, "stopped after " + verb + " " + done
        + tail(missing, busy) + ": " + why);
  }
}
