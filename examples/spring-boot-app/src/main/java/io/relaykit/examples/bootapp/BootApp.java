package io.relaykit.examples.bootapp;

import io.relaykit.codec.PayloadTypes;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.context.annotation.Bean;

/**
 * The application: {@code spring.datasource.*} picks the database, {@code relaykit.storage=jdbc}
 * keeps relaykit's tables there, {@code relaykit.transport} (memory, kafka or rabbitmq) carries
 * the messages.
 */
@SpringBootApplication
public class BootApp {
  /**
   * Starts the application.
   *
   * @param args Spring Boot's command-line arguments
   */
  public static void main(String[] args) {
    SpringApplication.run(BootApp.class, args);
  }

  /**
   * Stable names for the event types on the wire: {@link OrderPlaced} travels as {@code
   * order.placed}, not as its class name, so the class may move or be renamed.
   *
   * @return the type names
   */
  @Bean
  PayloadTypes payloadTypes() {
    return new PayloadTypes().register("order.placed", OrderPlaced.class);
  }
}
