package io.relaykit.examples;

import io.opentelemetry.sdk.common.CompletableResultCode;
import io.opentelemetry.sdk.trace.data.SpanData;
import io.opentelemetry.sdk.trace.export.SpanExporter;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Collection;
import java.util.function.Consumer;
import java.util.stream.Collectors;

/**
 * A {@link SpanExporter} that writes one text line per finished span: name, kind, trace id, span
 * id, parent span id, status and the attributes, sorted. The demo's {@code
 * -Drelaykit.demo.spans=log} sends the lines to its log, {@code =<file>} appends them to a file.
 * A write that fails is reported as a failed export (the SDK logs it); the demo goes on.
 */
final class SpanLines implements SpanExporter {
  private final Consumer<String> out;
  private final AutoCloseable closer;

  private SpanLines(Consumer<String> out, AutoCloseable closer) {
    this.out = out;
    this.closer = closer;
  }

  /** Lines to the demo's log (System.Logger, INFO). */
  static SpanLines toLog() {
    System.Logger log = System.getLogger("io.relaykit.examples.spans");
    return new SpanLines(line -> log.log(System.Logger.Level.INFO, line), () -> {});
  }

  /** Lines appended to {@code file}, flushed after every export. */
  static SpanLines toFile(Path file) throws IOException {
    Path parent = file.toAbsolutePath().getParent();
    if (parent != null) {
      Files.createDirectories(parent);
    }
    Writer w = Files.newBufferedWriter(file, StandardCharsets.UTF_8, StandardOpenOption.CREATE,
        StandardOpenOption.APPEND);
    return new SpanLines(line -> {
      try {
        synchronized (w) {
          w.write(line);
          w.write('\n');
          w.flush();
        }
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
    }, w);
  }

  /** One span as a line. */
  static String line(SpanData s) {
    return s.getName() + " kind=" + s.getKind() + " trace=" + s.getTraceId() + " span="
        + s.getSpanId() + " parent=" + (s.getParentSpanContext().isValid()
            ? s.getParentSpanId() : "-")
        + " status=" + s.getStatus().getStatusCode() + " " + s.getAttributes().asMap().entrySet()
            .stream().map(e -> e.getKey().getKey() + "=" + e.getValue()).sorted()
            .collect(Collectors.joining(", ", "{", "}"));
  }

  @Override
  public CompletableResultCode export(Collection<SpanData> spans) {
    try {
      for (SpanData s : spans) {
        out.accept(line(s));
      }
      return CompletableResultCode.ofSuccess();
    } catch (RuntimeException e) {
      return CompletableResultCode.ofFailure();
    }
  }

  @Override
  public CompletableResultCode flush() {
    return CompletableResultCode.ofSuccess();
  }

  @Override
  public CompletableResultCode shutdown() {
    try {
      closer.close();
      return CompletableResultCode.ofSuccess();
    } catch (Exception e) {
      return CompletableResultCode.ofFailure();
    }
  }
}
