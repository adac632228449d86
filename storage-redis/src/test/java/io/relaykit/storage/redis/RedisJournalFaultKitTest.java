package io.relaykit.storage.redis;

import io.relaykit.tck.QueueJournalFaultContract;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

/**
 * The fault-injection kit on the real Redis. Every open is a new journal instance on the run's
 * name (the state lives in Redis, so the client's connection can be shared).
 */
class RedisJournalFaultKitTest extends QueueJournalFaultContract {
  private static RedisTestSupport support;
  private static RedisStorage storage;

  @BeforeAll
  static void connect() {
    support = new RedisTestSupport();
    storage = support.open();
  }

  @AfterAll
  static void cleanUp() {
    if (storage != null) {
      storage.close();
    }
    if (support != null) {
      support.close();
    }
  }

  @Override
  protected Backend backend() {
    String name = "faults-" + UUID.randomUUID();
    return new Backend() {
      @Override
      public RedisJournal open() {
        return storage.journal(name);
      }

      @Override
      public void destroy() {
        storage.journal(name).destroy();
      }
    };
  }
}
