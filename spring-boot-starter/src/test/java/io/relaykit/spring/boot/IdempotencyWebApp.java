package io.relaykit.spring.boot;

import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.context.annotation.Import;
import org.springframework.http.HttpStatus;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RestController;
import org.springframework.web.server.ResponseStatusException;

/** A servlet application with the Idempotency-Key filter and handlers that count their runs. */
@SpringBootConfiguration
@EnableAutoConfiguration
@Import(IdempotencyWebApp.Api.class)
public class IdempotencyWebApp {

  /** Handlers whose runs are counted per name, so a test sees how often its request ran. */
  @RestController
  public static class Api {
    final ConcurrentHashMap<String, AtomicInteger> runs = new ConcurrentHashMap<>();
    /** Released by the test to let a held /slow request finish. */
    volatile CountDownLatch release = new CountDownLatch(0);
    volatile CountDownLatch entered = new CountDownLatch(1);

    int runs(String name) {
      AtomicInteger n = runs.get(name);
      return n == null ? 0 : n.get();
    }

    private int run(String name) {
      return runs.computeIfAbsent(name, k -> new AtomicInteger()).incrementAndGet();
    }

    @PostMapping("/api/orders/{name}")
    public ResponseEntity<String> place(@PathVariable("name") String name, @RequestBody String body) {
      int n = run(name);
      return ResponseEntity.status(201).header("Location", "/api/orders/" + name)
          .header("Set-Cookie", "session=" + n).header("Content-Type", "application/json")
          .body("{\"name\":\"" + name + "\",\"run\":" + n + ",\"body\":" + body.length() + "}");
    }

    @PostMapping("/api/slow/{name}")
    public String slow(@PathVariable("name") String name) throws InterruptedException {
      run(name);
      entered.countDown();
      if (!release.await(30, TimeUnit.SECONDS)) {
        throw new IllegalStateException("the test never released " + name);
      }
      return "slow " + name;
    }

    @PostMapping("/api/flaky/{name}")
    public String flaky(@PathVariable("name") String name) {
      if (run(name) == 1) {
        throw new IllegalStateException("first attempt of " + name + " fails");
      }
      return "done " + name;
    }

    @PostMapping("/api/big/{name}")
    public String big(@PathVariable("name") String name) {
      run(name);
      return "x".repeat(4096);
    }

    /** Spring MVC answers a ResponseStatusException with sendError (Boot's /error writes it). */
    @PostMapping("/api/rejected/{name}")
    public String rejected(@PathVariable("name") String name) {
      run(name);
      throw new ResponseStatusException(HttpStatus.CONFLICT, "sold out " + name);
    }

    @PostMapping("/api/send-error/{name}")
    public void sendError(@PathVariable("name") String name, HttpServletResponse response)
        throws IOException {
      run(name);
      response.sendError(422, "cannot place " + name);
    }

    @GetMapping("/api/orders/{name}")
    public String read(@PathVariable("name") String name) {
      return "read " + name;
    }

    @PostMapping("/open/{name}")
    public String open(@PathVariable("name") String name) {
      return "open " + name + " " + run(name);
    }
  }
}
