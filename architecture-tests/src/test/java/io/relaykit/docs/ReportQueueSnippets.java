package io.relaykit.docs;

// tag::report-queue[]
import io.relaykit.queue.BatchResult;
import io.relaykit.queue.DropPolicy;
import io.relaykit.queue.FileJournal;
import io.relaykit.queue.Priority;
import io.relaykit.queue.QueuedEvent;
import io.relaykit.queue.ReportDispatcher;
import io.relaykit.queue.ReportEvent;
import io.relaykit.queue.ReportQueue;
import java.nio.file.Path;
import java.util.List;
// end::report-queue[]

/** docs/report-queue.md. */
final class ReportQueueSnippets {
  private ReportQueueSnippets() {}

  /** Stands in for the application's HTTP call to its collector. */
  interface Collector {
    BatchResult send(List<QueuedEvent> batch);
  }

  /** What the snippet built, so a test can close it. */
  record Running(FileJournal journal, ReportQueue queue, ReportDispatcher dispatcher) {}

  static Running reportQueue(Path dir, Collector collector, String paymentId,
      String json) {
    // tag::report-queue[]
    FileJournal journal = FileJournal.builder(dir).build();           // e.g. /var/lib/myapp/reports
    ReportQueue queue = ReportQueue.builder()
        .journal(journal)                                  // CRITICAL: fsynced before enqueue returns
        .capacity(10_000)
        .dropPolicy(DropPolicy.DROP_LOWEST_PRIORITY)       // page views make room for payments
        .build();
    queue.restore();                                       // in-flight events come back pending

    ReportDispatcher dispatcher = ReportDispatcher.builder(queue, collector::send).build();
    dispatcher.start();                                    // batches, per-event ack/nack, Retry-After

    queue.enqueue(new ReportEvent(paymentId, "payment.captured", json, Priority.CRITICAL, null));
    // end::report-queue[]
    return new Running(journal, queue, dispatcher);
  }
}
