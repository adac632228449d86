package io.relaykit.docs;

// tag::server[]
import io.relaykit.poller.HttpAnswer;
import io.relaykit.poller.StatusResponses;
import java.net.URI;
import java.time.Duration;
// end::server[]
// tag::client[]
import io.relaykit.poller.PollOutcome;
import io.relaykit.poller.StatusPoller;
import java.net.http.HttpResponse;
// end::client[]

/** docs/status-polling.md. */
final class StatusPollingSnippets {
  private StatusPollingSnippets() {}

  static HttpAnswer server(String orderId) {
    // tag::server[]
    HttpAnswer answer = new StatusResponses("orderId")   // 202, Location, Retry-After, {"orderId": ...}
        .accepted(orderId, URI.create("/orders/" + orderId + "/status"), Duration.ofSeconds(1));
    // end::server[]
    return answer;
  }

  static PollOutcome client(HttpResponse<?> accepted) {
    // tag::client[]
    PollOutcome outcome = StatusPoller.builder().idField("orderId").build()
        .pollAfter(accepted).outcome().join();   // polls the 202's Location after its Retry-After;
                                                 // SUCCESS | FAILED | TIMED_OUT | ...
    // end::client[]
    return outcome;
  }
}
