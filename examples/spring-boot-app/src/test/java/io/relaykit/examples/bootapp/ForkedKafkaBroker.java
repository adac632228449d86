package io.relaykit.examples.bootapp;

import java.io.BufferedReader;
import java.io.File;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

/**
 * relaykit's Kafka 4.3 test broker in a JVM of its own ({@code
 * io.relaykit.examples.kafka.StandaloneBroker} on the examples module's class path), so this
 * JVM keeps Boot's kafka-clients. One per test JVM, started on first use, stopped when this JVM
 * exits (the child stops when its standard input, held here, ends).
 */
final class ForkedKafkaBroker {
  private static Process process;
  private static String bootstrap;

  private ForkedKafkaBroker() {}

  /** The broker's {@code host:port}, starting it on first use (at most two minutes). */
  static synchronized String bootstrapServers() {
    if (bootstrap == null) {
      start();
    }
    return bootstrap;
  }

  private static void start() {
    try {
      Path classes = Path.of(System.getProperty("examples.classes"));
      String classpath = Files.readString(Path.of(System.getProperty("examples.classpath")),
          StandardCharsets.UTF_8).strip();
      Path data = Files.createTempDirectory("bootapp-kafka");
      Path java = Path.of(System.getProperty("java.home"), "bin", "java");
      process = new ProcessBuilder(java.toString(), "-Xmx256m",
          "-cp", classes + File.pathSeparator + classpath,
          "io.relaykit.examples.kafka.StandaloneBroker", data.toString())
          .redirectError(data.resolve("launcher.err").toFile())
          .start();
      Runtime.getRuntime().addShutdownHook(new Thread(ForkedKafkaBroker::stop));
      BufferedReader out = new BufferedReader(new InputStreamReader(process.getInputStream(),
          StandardCharsets.UTF_8));
      // The launcher prints its line once the broker answers, or exits (LocalKafkaBroker's own
      // start timeout bounds this read).
      for (String line = out.readLine(); line != null; line = out.readLine()) {
        if (line.startsWith("bootstrap=")) {
          bootstrap = line.substring("bootstrap=".length());
          return;
        }
      }
      throw new IllegalStateException("the forked Kafka broker exited before it answered: "
          + Files.readString(data.resolve("launcher.err"), StandardCharsets.UTF_8));
    } catch (IOException e) {
      throw new UncheckedIOException("could not start the forked Kafka broker", e);
    }
  }

  private static synchronized void stop() {
    if (process == null) {
      return;
    }
    try {
      process.getOutputStream().close();
      if (!process.waitFor(60, TimeUnit.SECONDS)) {
        process.destroyForcibly();
      }
    } catch (IOException | InterruptedException e) {
      process.destroyForcibly();
    }
  }
}
