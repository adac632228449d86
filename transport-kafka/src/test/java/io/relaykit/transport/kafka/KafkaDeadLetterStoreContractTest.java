package io.relaykit.transport.kafka;

import io.relaykit.deadletter.DeadLetterStore;
import io.relaykit.tck.DeadLetterStoreContract;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The DeadLetterStore contract over a real dead-letter topic on the in-JVM broker. A topic is an
 * append-only log, so the store cannot remove single entries or purge (it says so, and the kit
 * checks that both fail loudly); everything else — add, find, list with filters and paging,
 * count, the newest entry of an id winning — holds as on every other backend.
 */
class KafkaDeadLetterStoreContractTest extends DeadLetterStoreContract {

  @RegisterExtension
  final KafkaClients clients = new KafkaClients();

  @Override
  protected boolean supportsRetention() {
    return false; // a broker's dead-letter log has no bounded, ordered delete
  }

  @Override
  protected DeadLetterStore createStore() {
    return clients.deadLetterStore(KafkaTestSupport.newTopic("dlt-kit", 1));
  }

  @Override
  protected boolean supportsRemoveById() {
    return false;
  }

  @Override
  protected boolean supportsPurge() {
    return false;
  }

  @Override
  protected boolean supportsReplayMarks() {
    // A log cannot mark or delete one record: replay marks do not apply, and of the lost-reply
    // cases only add (a retried append is a second record; find and list answer the newest).
    return false;
  }
}
