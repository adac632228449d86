package io.relaykit.examples.bootapp;

import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;

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
}
