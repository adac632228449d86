package io.relaykit.storage.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import io.relaykit.deadletter.DeadLetter;
import io.relaykit.deadletter.DeadLetterQuery;
import io.relaykit.message.Message;
import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Dead-letter retention is a decision relays on several hosts share: the JDBC store measures a
 * dead letter's age on the database's clock, so a host whose clock runs days ahead purges nothing
 * early (and one running behind nothing late).
 */
@DisplayName("JDBC dead-letter retention measured on the database's clock")
class JdbcDeadLetterRetentionClockTest {

  private static DeadLetter failedAt(String id, Instant at) {
    Message m = Message.builder().id(id).type("order.paid").payload("{}").build();
    return new DeadLetter(m, "orders", null, "failed", "java.lang.RuntimeException", "boom", 3,
        at, at);
  }

  @ParameterizedTest
  @EnumSource(value = TestDatabase.Kind.class, names = {"H2_MEMORY", "POSTGRESQL"})
  @DisplayName("a host clock 10 days ahead purges none of the dead letters 2 days old under a"
      + " 7-day retention; one 8 days old is purged whatever the host's clock")
  void hostClockAheadPurgesNothingEarly(TestDatabase.Kind kind) {
    String prefix = TestDatabase.newPrefix();
    JdbcStorage storage = TestDatabase.shared(kind).emptied(prefix, Duration.ofDays(7),
        InstantSource.system());
    var store = storage.deadLetterStore();
    Instant real = Instant.now();
    DeadLetter young = failedAt("young", real.minus(Duration.ofDays(2)));
    DeadLetter old = failedAt("old", real.minus(Duration.ofDays(8)));
    store.add(young);
    store.add(old);

    Instant hostAhead = real.plus(Duration.ofDays(10));
    assertThat(store.purgeFailedOlderThan(Duration.ofDays(7), 10, hostAhead)).isEqualTo(1);
    assertThat(store.find(young.id())).isPresent();
    assertThat(store.find(old.id())).isEmpty();

    Instant hostBehind = real.minus(Duration.ofDays(30));
    store.add(failedAt("old-2", real.minus(Duration.ofDays(8))));
    assertThat(store.purgeFailedOlderThan(Duration.ofDays(7), 10, hostBehind)).isEqualTo(1);
    assertThat(store.count(DeadLetterQuery.all())).isEqualTo(1);
  }
}
