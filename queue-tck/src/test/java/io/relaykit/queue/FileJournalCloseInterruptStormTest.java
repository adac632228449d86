package io.relaykit.queue;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/**
 * A close that races critical producers while their threads (and the closer's) are interrupted:
 * every producer gets an answer, an interrupted wait keeps the flag, the close returns within its
 * bound, and after reopen every acknowledged event is there while every refused one is not.
 */
@DisplayName("FileJournal: close racing interrupted critical producers")
class FileJournalCloseInterruptStormTest {

  private static final Instant T0 = Instant.parse("2026-01-01T00:00:00Z");
  private static final int PRODUCERS = 4;

  private final List<Path> dirs = new ArrayList<>();
  private final List<FileJournal> journals = new ArrayList<>();

  @AfterEach
  void cleanUp() throws IOException {
    journals.forEach(FileJournal::crash);
    for (Path d : dirs) {
      try (Stream<Path> files = Files.walk(d)) {
        for (Path p : files.sorted(Comparator.reverseOrder()).toList()) {
          Files.deleteIfExists(p);
        }
      }
    }
  }

  private static QueuedEvent event(String id) {
    return new QueuedEvent(id, "storm", "{\"id\":\"" + id + "\"}", Priority.CRITICAL, T0, 0, T0,
        null);
  }

  @Test
  @DisplayName("producers interrupted at random while an interrupted closer closes: each gets OK, NOT_RECORDED or UNKNOWN (flag kept); acknowledged events are back after reopen, refused ones are not")
  void closeRacesInterruptedProducers() throws Exception {
    Path d = Files.createTempDirectory("relaykit-close-storm-");
    dirs.add(d);
    FileJournal j = FileJournal.builder(d).commitInterval(Duration.ofMillis(2))
        .segmentBytes(16 * 1024).build();
    journals.add(j);
    j.load();

    Set<String> acked = ConcurrentHashMap.newKeySet();
    Set<String> refused = ConcurrentHashMap.newKeySet();
    Set<String> unknown = ConcurrentHashMap.newKeySet();
    Set<String> flagLost = ConcurrentHashMap.newKeySet();
    AtomicInteger interruptedAnswers = new AtomicInteger();
    List<Thread> producers = new ArrayList<>();
    for (int p = 0; p < PRODUCERS; p++) {
      int id = p;
      producers.add(new Thread(() -> {
        for (int i = 0; ; i++) {
          String e = "p" + id + "-" + i;
          try {
            j.append(event(e));
            acked.add(e);
          } catch (JournalException ex) {
            boolean flag = Thread.interrupted();
            if (ex.getCause() instanceof InterruptedException) {
              interruptedAnswers.incrementAndGet();
              if (!flag) {
                flagLost.add(e);
              }
            }
            if (ex.outcome() == JournalException.Outcome.NOT_RECORDED) {
              refused.add(e);
              if (ex.getCause() == null) {
                return; // closed: nothing more is accepted
              }
            } else {
              unknown.add(e);
            }
          }
          Thread.interrupted(); // an interrupt that came after the answer
        }
      }, "storm-producer-" + p));
    }
    producers.forEach(Thread::start);

    SplittableRandom random = new SplittableRandom(20261206L);
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
    while (acked.size() < 400 || interruptedAnswers.get() < 20) {
      assertThat(System.nanoTime() - deadline).as("producers made progress under interrupts")
          .isNegative();
      producers.get(random.nextInt(PRODUCERS)).interrupt();
      Thread.yield();
    }

    Thread closer = new Thread(() -> {
      Thread.currentThread().interrupt();
      try {
        j.close();
      } catch (JournalException e) {
        // an interrupted closer's wait ends at once; the journal still syncs and closes
      }
    }, "storm-closer");
    long closeStart = System.nanoTime();
    closer.start();
    // interrupts go on while the close runs
    while (closer.isAlive()) {
      producers.get(random.nextInt(PRODUCERS)).interrupt();
      closer.join(1);
    }
    assertThat(System.nanoTime() - closeStart).as("close returned within its 10 s bound")
        .isLessThan(TimeUnit.SECONDS.toNanos(11));
    for (Thread t : producers) {
      t.join(TimeUnit.SECONDS.toMillis(10));
      assertThat(t.isAlive()).as(t.getName() + " got an answer after the close").isFalse();
    }

    assertThat(flagLost).as("interrupted waits that lost the flag").isEmpty();
    FileJournal reopened = FileJournal.builder(d).build();
    journals.add(reopened);
    List<String> pending = reopened.load().pending().stream().map(QueuedEvent::eventId).toList();
    assertThat(pending).doesNotHaveDuplicates().containsAll(acked);
    Set<String> refusedBack = pending.stream().filter(refused::contains)
        .collect(Collectors.toSet());
    assertThat(refusedBack).as("refused events after reopen").isEmpty();
    assertThat(pending.size()).isLessThanOrEqualTo(acked.size() + unknown.size());
  }
}
