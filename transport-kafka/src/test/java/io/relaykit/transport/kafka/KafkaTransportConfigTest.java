package io.relaykit.transport.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.relaykit.config.Settings;
import java.time.Duration;
import java.util.Map;
import java.util.TreeMap;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

@DisplayName("KafkaTransportConfig")
class KafkaTransportConfigTest {

  private static KafkaTransportConfig.Builder valid() {
    return KafkaTransportConfig.builder().bootstrapServers("localhost:9092");
  }

  @Nested
  @DisplayName("defaults")
  class Defaults {
    @Test
    @DisplayName("are pinned")
    void pinned() {
      KafkaTransportConfig c = valid().build();
      assertThat(c.clientIdPrefix()).isEqualTo("relaykit");
      assertThat(c.maxRecordBytes()).isEqualTo(1024 * 1024);
      assertThat(c.publishTimeout()).isEqualTo(Duration.ofSeconds(30));
      assertThat(c.retryTopicSuffix()).isEqualTo(".retry");
      assertThat(c.deadLetterTopicSuffix()).isEqualTo(".dlt");
      assertThat(c.commitInterval()).isEqualTo(Duration.ofSeconds(1));
      assertThat(c.pollTimeout()).isEqualTo(Duration.ofMillis(100));
      assertThat(c.maxPollInterval()).isEqualTo(Duration.ofMinutes(5));
      assertThat(c.closeTimeout()).isEqualTo(Duration.ofSeconds(10));
      assertThat(c.producerProperties()).isEmpty();
      assertThat(c.consumerProperties()).isEmpty();
      assertThat(c.handOff()).isEqualTo(KafkaTransportConfig.HandOff.CONFIRMED);
      assertThat(c.memberId()).isEmpty();
      assertThat(c.transactionTimeout()).isEqualTo(Duration.ofSeconds(60));
    }

    @Test
    @DisplayName("name retry and dead-letter topics per topic and group")
    void topicNames() {
      KafkaTransportConfig c = valid().build();
      assertThat(c.retryTopic("orders", "billing")).isEqualTo("orders.billing.retry");
      assertThat(c.deadLetterTopic("orders", "billing")).isEqualTo("orders.billing.dlt");
      assertThatThrownBy(() -> c.retryTopic("orders", "bill ing"))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("orders.bill ing.retry").hasMessageContaining("group bill ing");
      assertThatThrownBy(() -> c.deadLetterTopic("a/b", "g"))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("'a/b'");
    }
  }

  @Nested
  @DisplayName("build() rejects, naming field and value,")
  class Validation {
    @Test
    @DisplayName("a missing or blank bootstrap address")
    void bootstrap() {
      assertThatThrownBy(() -> KafkaTransportConfig.builder().build())
          .isInstanceOf(IllegalArgumentException.class).hasMessage(
              "bootstrapServers must not be blank, was null");
      assertThatThrownBy(() -> valid().bootstrapServers(" ").build())
          .hasMessage("bootstrapServers must not be blank, was ' '");
    }

    @Test
    @DisplayName("non-positive sizes and durations")
    void numbers() {
      assertThatThrownBy(() -> valid().maxRecordBytes(0).build())
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessage("maxRecordBytes must be >= 1, was 0");
      assertThatThrownBy(() -> valid().commitInterval(Duration.ZERO).build())
          .hasMessage("commitInterval must be a positive duration, was PT0S");
      assertThatThrownBy(() -> valid().publishTimeout(Duration.ofSeconds(-1)).build())
          .hasMessageContaining("publishTimeout");
      assertThatThrownBy(() -> valid().closeTimeout(null).build())
          .hasMessage("closeTimeout must be a positive duration, was null");
      assertThatThrownBy(() -> valid().pollTimeout(Duration.ofMinutes(10)).build())
          .hasMessageContaining("pollTimeout must be below maxPollInterval");
    }

    @Test
    @DisplayName("protected, blank or null client properties")
    void properties() {
      assertThatThrownBy(() -> valid().producerProperty("acks", "1").build())
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("producerProperty acks is set by the transport");
      assertThatThrownBy(() -> valid().consumerProperty("enable.auto.commit", "true").build())
          .hasMessageContaining("consumerProperty enable.auto.commit");
      assertThatThrownBy(() -> valid().consumerProperty(" ", "x").build())
          .hasMessageContaining("consumerProperty name must not be blank");
      assertThatThrownBy(() -> valid().producerProperty("linger.ms", null).build())
          .hasMessageContaining("producerProperty linger.ms must not be null");
    }

    @Test
    @DisplayName("bad topic suffixes, clock or listener")
    void suffixesAndCollaborators() {
      assertThatThrownBy(() -> valid().retryTopicSuffix("/r").build())
          .hasMessage("retryTopicSuffix must be non-blank and use only [a-zA-Z0-9._-], was '/r'");
      assertThatThrownBy(() -> valid().deadLetterTopicSuffix(".retry").build())
          .hasMessageContaining("deadLetterTopicSuffix must differ from retryTopicSuffix");
      assertThatThrownBy(() -> valid().clock(null).build()).hasMessage("clock must not be null");
      assertThatThrownBy(() -> valid().listener(null).build())
          .hasMessage("listener must not be null");
      assertThatThrownBy(() -> valid().clientIdPrefix("").build())
          .hasMessageContaining("clientIdPrefix");
    }
  }

  /** from(Settings) over {@code relaykit.kafka.<key>} for each entry of {@code section}. */
  private static KafkaTransportConfig fromSection(Map<String, String> section) {
    Settings.Builder b = Settings.builder();
    section.forEach((k, v) -> b.set("relaykit.kafka." + k, v));
    return KafkaTransportConfig.from(b.build());
  }

  @Nested
  @DisplayName("from(Settings)")
  class FromSettings {
    @Test
    @DisplayName("reads every setting and client properties")
    void readsEverything() {
      Map<String, String> s = new TreeMap<>();
      s.put("bootstrap-servers", "k1:9092,k2:9092");
      s.put("client-id-prefix", "shop");
      s.put("max-record-bytes", "2048");
      s.put("publish-timeout", "PT5S");
      s.put("retry-topic-suffix", ".r");
      s.put("dead-letter-topic-suffix", ".d");
      s.put("commit-interval", "500ms");
      s.put("poll-timeout", "50ms");
      s.put("max-poll-interval", "2m");
      s.put("close-timeout", "3s");
      s.put("producer.compression.type", "zstd");
      s.put("consumer.fetch.min.bytes", "1");
      KafkaTransportConfig c = fromSection(s);
      assertThat(c.bootstrapServers()).isEqualTo("k1:9092,k2:9092");
      assertThat(c.clientIdPrefix()).isEqualTo("shop");
      assertThat(c.maxRecordBytes()).isEqualTo(2048);
      assertThat(c.publishTimeout()).isEqualTo(Duration.ofSeconds(5));
      assertThat(c.retryTopic("t", "g")).isEqualTo("t.g.r");
      assertThat(c.deadLetterTopic("t", "g")).isEqualTo("t.g.d");
      assertThat(c.commitInterval()).isEqualTo(Duration.ofMillis(500));
      assertThat(c.pollTimeout()).isEqualTo(Duration.ofMillis(50));
      assertThat(c.maxPollInterval()).isEqualTo(Duration.ofMinutes(2));
      assertThat(c.closeTimeout()).isEqualTo(Duration.ofSeconds(3));
      assertThat(c.producerProperties()).containsExactly(Map.entry("compression.type", "zstd"));
      assertThat(c.consumerProperties()).containsExactly(Map.entry("fetch.min.bytes", "1"));
    }

    @Test
    @DisplayName("the environment sets keys and client properties; defaults are the builder's,"
        + " as KafkaConfigKeys documents them")
    void environmentAndDefaults() {
      KafkaTransportConfig c = KafkaTransportConfig.from(Settings.builder()
          .set(KafkaConfigKeys.BOOTSTRAP_SERVERS, "props:9092")
          .environment(Map.of("RELAYKIT_KAFKA_BOOTSTRAP_SERVERS", "env:9092",
              "RELAYKIT_KAFKA_PRODUCER_LINGER_MS", "5", "RELAYKIT_KAFKA_NO_SUCH_KEY", "x"))
          .warnings(w -> { })
          .build());
      KafkaTransportConfig d = valid().build();
      io.relaykit.config.ConfigRegistry r = io.relaykit.config.ConfigRegistry.discover();

      assertThat(c.bootstrapServers()).isEqualTo("env:9092");
      assertThat(c.producerProperties()).containsExactly(Map.entry("linger.ms", "5"));
      for (String[] pinned : new String[][] {
          {KafkaConfigKeys.CLIENT_ID_PREFIX, d.clientIdPrefix()},
          {KafkaConfigKeys.MAX_RECORD_BYTES, Integer.toString(d.maxRecordBytes())},
          {KafkaConfigKeys.PUBLISH_TIMEOUT, fmt(d.publishTimeout())},
          {KafkaConfigKeys.RETRY_TOPIC_SUFFIX, d.retryTopicSuffix()},
          {KafkaConfigKeys.DEAD_LETTER_TOPIC_SUFFIX, d.deadLetterTopicSuffix()},
          {KafkaConfigKeys.COMMIT_INTERVAL, fmt(d.commitInterval())},
          {KafkaConfigKeys.POLL_TIMEOUT, fmt(d.pollTimeout())},
          {KafkaConfigKeys.MAX_POLL_INTERVAL, fmt(d.maxPollInterval())},
          {KafkaConfigKeys.CLOSE_TIMEOUT, fmt(d.closeTimeout())},
          {KafkaConfigKeys.HAND_OFF, d.handOff().name().toLowerCase()}}) {
        assertThat(r.find(pinned[0])).as(pinned[0]).get()
            .extracting(io.relaykit.config.ConfigKey::defaultValue).isEqualTo(pinned[1]);
      }
    }

    private static String fmt(Duration d) {
      return io.relaykit.config.DurationFormat.format(d);
    }

    @Test
    @DisplayName("names the full key and value of a bad or unknown setting")
    void badSettings() {
      assertThatThrownBy(() -> fromSection(Map.of("bootstrap-servers", "k:1",
          "commit-interval", "soon")))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessage("relaykit.kafka.commit-interval must be a positive duration such as 500ms,"
              + " 30s, 5m, 1h, 2d or PT30S (at most 292 years), was 'soon'");
      assertThatThrownBy(() -> fromSection(Map.of("bootstrap-servers", "k:1",
          "max-record-bytes", "big")))
          .hasMessage("relaykit.kafka.max-record-bytes must be a whole number from 1 to"
              + " 2147483647, was 'big'");
      assertThatThrownBy(() -> fromSection(Map.of("bootstrap-servers", "k:1",
          "bootstrap", "x")))
          .hasMessage("relaykit.kafka.bootstrap is not a relaykit setting; did you mean"
              + " relaykit.kafka.bootstrap-servers?");
      assertThatThrownBy(() -> fromSection(Map.of()))
          .hasMessage("relaykit.kafka.bootstrap-servers is required (property"
              + " relaykit.kafka.bootstrap-servers or environment variable"
              + " RELAYKIT_KAFKA_BOOTSTRAP_SERVERS)");
      assertThatThrownBy(() -> fromSection(Map.of("bootstrap-servers", "k:1",
          "poll-timeout", "5m")))
          .hasMessageStartingWith("invalid relaykit.kafka.* settings: pollTimeout must be below");
    }
  
    @Test
    @DisplayName("reads the hand-off, the member id and the transaction timeout; refuses what"
        + " cannot work")
    void handOff() {
      KafkaTransportConfig c = fromSection(Map.of(
          "bootstrap-servers", "k:1", "hand-off", "Transactional", "member-id", "pod-7",
          "producer.transaction.timeout.ms", "20000"));
      assertThat(c.handOff()).isEqualTo(KafkaTransportConfig.HandOff.TRANSACTIONAL);
      assertThat(c.memberId()).contains("pod-7");
      assertThat(c.transactionTimeout()).isEqualTo(Duration.ofSeconds(20));
      assertThat(TransactionalCopies.transactionalId(c, "orders", "billing"))
          .isEqualTo("relaykit-billing-orders-pod-7");
      assertThat(KafkaConsumerRuntime.consumerProperties(c,
          io.relaykit.message.SubscriptionSpec.builder("orders", "billing").build(), 10))
          .containsEntry("isolation.level", "read_committed");
      assertThatThrownBy(() -> fromSection(Map.of("bootstrap-servers", "k:1",
          "hand-off", "exactly-once")))
          .hasMessage("relaykit.kafka.hand-off must be one of confirmed, transactional, was"
              + " 'exactly-once'");
      assertThatThrownBy(() -> valid().memberId("a b").build())
          .hasMessage("memberId must be 1 to 100 of [a-zA-Z0-9._-], was 'a b'");
      assertThatThrownBy(() -> valid().producerProperty("transactional.id", "x").build())
          .hasMessageContaining("transactional.id is set by the transport");
      assertThatThrownBy(() -> valid().producerProperty("transaction.timeout.ms", "500").build())
          .hasMessage("producerProperty transaction.timeout.ms must be at least 1000 ms, was 500");
      assertThatThrownBy(() -> valid().handOff(KafkaTransportConfig.HandOff.TRANSACTIONAL)
          .consumerProperty("isolation.level", "read_uncommitted").build())
          .hasMessageStartingWith("consumerProperty isolation.level=read_uncommitted contradicts"
              + " handOff TRANSACTIONAL");
    }
}
}
