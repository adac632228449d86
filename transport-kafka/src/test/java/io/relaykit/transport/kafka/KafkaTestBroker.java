package io.relaykit.transport.kafka;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.test.KafkaClusterTestKit;
import org.apache.kafka.common.test.TestKitNodes;

/**
 * One real KRaft broker (a combined broker + controller node) for the whole test JVM, started on
 * first use (about 5 s) and stopped by a shutdown hook. Test classes share it and isolate
 * themselves with {@link #uniqueTopic} names. Public (and shipped in the module's test jar) so the
 * benchmarks can run on the same broker setup.
 *
 * <p>With the system property {@value #FORK_CLASSPATH} naming a file that holds a class path (the
 * boot-versions test run, whose own class path has Spring Boot's older kafka-clients, which the
 * Kafka 4.3 server cannot run on), the broker runs in a child JVM on that class path ({@link
 * #main}) and this JVM only talks to it; the child stops when this JVM exits.
 *
 * <p>A single node cannot host the internal topics with their default replication factor of 3: the
 * offsets, transaction and share-state topics get replication factor 1 and min ISR 1, or consumer
 * groups never receive anything.
 */
public final class KafkaTestBroker {

  /** System property: a file holding the class path to fork the broker on. */
  public static final String FORK_CLASSPATH = "relaykit.test.kafka.brokerClasspath";

  private static KafkaClusterTestKit cluster;
  private static String bootstrap;
  private static Process forked;
  private static Admin admin;

  private KafkaTestBroker() {}

  /** The broker's bootstrap address, starting the broker if it is not running yet. */
  public static synchronized String bootstrapServers() {
    if (bootstrap == null) {
      String classpathFile = System.getProperty(FORK_CLASSPATH);
      if (classpathFile != null && !classpathFile.isBlank()) {
        startForked(java.nio.file.Path.of(classpathFile));
      } else {
        start();
        bootstrap = cluster.bootstrapServers();
      }
    }
    return bootstrap;
  }

  /**
   * Runs the broker in this JVM, prints {@code bootstrap=HOST:PORT} once it is ready and stops it
   * when standard input ends (the parent closed it or died).
   *
   * @param args none
   * @throws Exception if the broker cannot start or standard input fails
   */
  public static void main(String[] args) throws Exception {
    start();
    System.out.println("bootstrap=" + cluster.bootstrapServers());
    System.out.flush();
    byte[] buffer = new byte[256];
    while (System.in.read(buffer) >= 0) {
      // Nothing is sent on the lifeline; only its end matters.
    }
    stop();
    System.exit(0);
  }

  private static void startForked(java.nio.file.Path classpathFile) {
    try {
      // Where this class and the module's main classes come from, then the jars of the file.
      StringBuilder classpath = new StringBuilder();
      for (Class<?> c : new Class<?>[] {KafkaTestBroker.class, KafkaPublisher.class}) {
        classpath.append(java.nio.file.Path.of(c.getProtectionDomain().getCodeSource()
            .getLocation().toURI())).append(java.io.File.pathSeparator);
      }
      classpath.append(java.nio.file.Files.readString(classpathFile).strip());
      java.nio.file.Path javaBin = java.nio.file.Path.of(System.getProperty("java.home"), "bin",
          "java");
      java.nio.file.Path err = java.nio.file.Files.createTempFile("kafka-test-broker", ".err");
      Process p = new ProcessBuilder(javaBin.toString(), "-Xmx512m", "-cp", classpath.toString(),
          KafkaTestBroker.class.getName())
          .redirectError(err.toFile()).start();
      forked = p;
      Runtime.getRuntime().addShutdownHook(new Thread(KafkaTestBroker::stop,
          "kafka-test-broker-stop"));
      java.io.BufferedReader out = new java.io.BufferedReader(new java.io.InputStreamReader(
          p.getInputStream(), java.nio.charset.StandardCharsets.UTF_8));
      // Bounded by the child: it prints the line once ready, or exits (closing the stream).
      for (String line = out.readLine(); line != null; line = out.readLine()) {
        if (line.startsWith("bootstrap=")) {
          bootstrap = line.substring("bootstrap=".length());
          return;
        }
      }
      throw new IllegalStateException("the forked Kafka test broker exited before it was ready: "
          + java.nio.file.Files.readString(err));
    } catch (java.io.IOException | java.net.URISyntaxException e) {
      throw new IllegalStateException("could not fork the Kafka test broker", e);
    }
  }

  /** A shared admin client on the broker; do not close it. */
  public static synchronized Admin admin() {
    if (admin == null) {
      admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers()));
    }
    return admin;
  }

  /** A topic name no other test uses: {@code prefix} plus a random suffix. */
  public static String uniqueTopic(String prefix) {
    return prefix + "-" + UUID.randomUUID().toString().substring(0, 8);
  }

  /**
   * Creates {@code topic} with {@code partitions} partitions and waits until every partition's
   * leader serves requests: a produce that races the leader's start gets NOT_LEADER_OR_FOLLOWER,
   * and the idempotent producer's retry of such a first batch can stall on sequence errors.
   */
  public static void createTopic(String topic, int partitions) {
    createTopic(topic, partitions, Map.of());
  }

  /** {@link #createTopic(String, int)} with topic-level settings ({@code max.message.bytes}). */
  public static void createTopic(String topic, int partitions, Map<String, String> configs) {
    try {
      admin().createTopics(List.of(new NewTopic(topic, partitions, (short) 1).configs(configs)))
          .all().get(30, TimeUnit.SECONDS);
      Map<TopicPartition, OffsetSpec> latest = new HashMap<>();
      for (int p = 0; p < partitions; p++) {
        latest.put(new TopicPartition(topic, p), OffsetSpec.latest());
      }
      KafkaSubscriber.awaitLeaders(admin(), latest, java.time.Duration.ofSeconds(30));
    } catch (Exception e) {
      throw new IllegalStateException("could not create topic " + topic, e);
    }
  }

  /** Whether the broker holds a topic with this name. */
  public static boolean topicExists(String topic) {
    try {
      Set<String> names = admin().listTopics().names().get(30, TimeUnit.SECONDS);
      return names.contains(topic);
    } catch (Exception e) {
      throw new IllegalStateException("could not list topics", e);
    }
  }

  private static void start() {
    try {
      TestKitNodes nodes = new TestKitNodes.Builder()
          .setCombined(true)
          .setNumBrokerNodes(1)
          .setNumControllerNodes(1)
          .build();
      KafkaClusterTestKit kit = new KafkaClusterTestKit.Builder(nodes)
          .setConfigProp("offsets.topic.replication.factor", "1")
          .setConfigProp("offsets.topic.num.partitions", "4")
          .setConfigProp("transaction.state.log.replication.factor", "1")
          .setConfigProp("transaction.state.log.min.isr", "1")
          .setConfigProp("share.coordinator.state.topic.replication.factor", "1")
          .setConfigProp("share.coordinator.state.topic.min.isr", "1")
          .setConfigProp("min.insync.replicas", "1")
          .setConfigProp("auto.create.topics.enable", "true")
          // A lone consumer should not wait the default 3 s before its first assignment.
          .setConfigProp("group.initial.rebalance.delay.ms", "0")
          // Members of the rebalance kit join and leave in seconds: allow short sessions.
          .setConfigProp("group.min.session.timeout.ms", "1000")
          .setConfigProp("group.consumer.min.session.timeout.ms", "1000")
          .setConfigProp("group.consumer.min.heartbeat.interval.ms", "500")
          .setConfigProp("group.consumer.heartbeat.interval.ms", "500")
          // Share groups: short sessions and heartbeats, and locks a test can outlast in seconds
          // (a group sets its own share.record.lock.duration.ms down to this minimum).
          .setConfigProp("group.share.min.session.timeout.ms", "1000")
          .setConfigProp("group.share.session.timeout.ms", "6000")
          .setConfigProp("group.share.min.heartbeat.interval.ms", "200")
          .setConfigProp("group.share.heartbeat.interval.ms", "500")
          .setConfigProp("group.share.min.record.lock.duration.ms", "1000")
          .build();
      kit.format();
      kit.startup();
      kit.waitForReadyBrokers();
      cluster = kit;
      Runtime.getRuntime().addShutdownHook(new Thread(KafkaTestBroker::stop, "kafka-test-broker-stop"));
    } catch (Exception e) {
      throw new IllegalStateException("could not start the in-JVM Kafka test broker", e);
    }
  }

  /**
   * Stops the broker if it runs; idempotent. Called when the JUnit session ends ({@link
   * KafkaTestBrokerSession}) so the broker shuts down while the test framework still listens, and
   * by the shutdown hook for other users (benchmarks).
   */
  public static synchronized void stop() {
    try {
      if (admin != null) {
        admin.close(java.time.Duration.ofSeconds(5));
      }
      if (cluster != null) {
        cluster.close();
      }
      if (forked != null) {
        forked.getOutputStream().close();
        if (!forked.waitFor(60, TimeUnit.SECONDS)) {
          forked.destroyForcibly();
        }
      }
    } catch (Exception e) {
      // Only temp files are left behind by a broker that does not stop cleanly.
      System.err.println("kafka test broker did not stop cleanly: " + e);
    } finally {
      admin = null;
      cluster = null;
      forked = null;
      bootstrap = null;
    }
  }
}
