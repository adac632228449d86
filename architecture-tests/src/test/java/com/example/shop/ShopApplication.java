// tag::spring-boot-quickstart[]
package com.example.shop;

import io.relaykit.message.Message;
import io.relaykit.spring.boot.RelaykitListener;
import io.relaykit.spring.boot.TransactionalOutbox;
import org.springframework.boot.CommandLineRunner;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.context.annotation.Bean;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.stereotype.Component;
import org.springframework.stereotype.Service;
import org.springframework.transaction.annotation.Transactional;

@SpringBootApplication
public class ShopApplication {
  public static void main(String[] args) {
    SpringApplication.run(ShopApplication.class, args);
  }

  @Bean
  CommandLineRunner placeOneOrder(Orders orders) {
    return args -> orders.place("order-42", "{\"sku\":\"book\"}");
  }
}

@Service
class Orders {
  private final JdbcTemplate jdbc;
  private final TransactionalOutbox outbox;

  Orders(JdbcTemplate jdbc, TransactionalOutbox outbox) {
    this.jdbc = jdbc;
    this.outbox = outbox;
    jdbc.execute("CREATE TABLE IF NOT EXISTS orders (id VARCHAR(64) PRIMARY KEY, body VARCHAR(1000))");
  }

  @Transactional   // the order row and its message commit together, or neither does
  public void place(String orderId, String json) {
    jdbc.update("INSERT INTO orders (id, body) VALUES (?, ?)", orderId, json);
    outbox.append("orders", Message.builder().type("order.placed").key(orderId).payload(json).build());
  }
}

@Component
class Shipping {
  @RelaykitListener(destination = "orders", group = "shipping")
  void ship(Message order) {   // returns: acknowledged; throws: retried, then dead-lettered
    System.out.println("shipping " + order.key().orElseThrow() + ": " + order.payloadUtf8());
  }
}
// end::spring-boot-quickstart[]
