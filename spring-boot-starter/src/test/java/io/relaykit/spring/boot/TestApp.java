package io.relaykit.spring.boot;

import io.relaykit.message.Message;
import java.nio.charset.StandardCharsets;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.context.annotation.Import;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.stereotype.Service;
import org.springframework.transaction.annotation.Transactional;

/** A Spring Boot application using the starter, with one @Transactional business service. */
// No component scan: ListenerApp, in this package, is another application.
@SpringBootConfiguration
@EnableAutoConfiguration
@Import(TestApp.OrderService.class)
public class TestApp {

  /** A business write and an outbox append in one transaction. */
  @Service
  public static class OrderService {
    private final JdbcTemplate jdbc;
    private final TransactionalOutbox outbox;
    private final String table;
    private final String destination;

    public OrderService(JdbcTemplate jdbc, TransactionalOutbox outbox,
        @Value("${test.orders-table}") String table,
        @Value("${test.destination:orders}") String destination) {
      this.jdbc = jdbc;
      this.outbox = outbox;
      this.table = table;
      this.destination = destination;
    }

    @Transactional
    public void place(String id, boolean fail) {
      place(id, id, fail);
    }

    @Transactional
    public void place(String id, String key, boolean fail) {
      jdbc.update("INSERT INTO " + table + "(id) VALUES (?)", id);
      outbox.append(destination, Message.builder().id(id).type("order.placed").key(key)
          .payload(("{\"id\":\"" + id + "\"}").getBytes(StandardCharsets.UTF_8)).build());
      if (fail) {
        throw new IllegalStateException("business failure after the append");
      }
    }

    public void placeWithoutTransaction(String id) {
      outbox.append(destination, Message.builder().id(id).type("order.placed")
          .payload(new byte[] {1}).build());
    }
  }
}
