package com.example.shop;

import static org.assertj.core.api.Assertions.assertThat;

import io.relaykit.tck.Await;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.UUID;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * README's Spring Boot quick start, run as written: the application places order-42 at start, and
 * its listener prints the line the README promises.
 */
class SpringBootQuickStartTest {

  @Test
  @DisplayName("README's Spring Boot quick start commits, relays and handles order-42")
  void quickStartShipsTheOrder() {
    PrintStream original = System.out;
    ByteArrayOutputStream captured = new ByteArrayOutputStream();
    System.setOut(new PrintStream(captured, true, StandardCharsets.UTF_8));
    try (ConfigurableApplicationContext context = new SpringApplicationBuilder(ShopApplication.class)
        .web(WebApplicationType.NONE)
        .properties(
            "spring.datasource.url=jdbc:h2:mem:shop-" + UUID.randomUUID() + ";DB_CLOSE_DELAY=-1",
            "relaykit.storage=jdbc",
            "relaykit.transport=memory")
        .run()) {
      Await.until(Duration.ofSeconds(30), "the listener prints the shipped order",
          () -> captured.toString(StandardCharsets.UTF_8)
              .contains("shipping order-42: {\"sku\":\"book\"}"));
      assertThat(context.isRunning()).isTrue();
    } finally {
      System.setOut(original);
    }
  }
}
