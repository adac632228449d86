package com.example.shop;

import static org.assertj.core.api.Assertions.assertThat;

import io.relaykit.tck.Await;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.io.StringReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Properties;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * README's Spring Boot quick start, run as written: with the {@code application.properties} block
 * of README.md (read from the page, so the page cannot drift), the application places order-42 at
 * start, its listener prints the line the README promises, and the application is still running
 * (the quick start has no web server; without {@code spring.main.keep-alive} it would stop before
 * the relay delivers).
 */
class SpringBootQuickStartTest {

  @Test
  @DisplayName("README's Spring Boot quick start commits, relays and handles order-42")
  void quickStartShipsTheOrder() throws IOException {
    Properties readme = readmeProperties();
    assertThat(readme).as("README's application.properties block")
        .containsKeys("spring.datasource.url", "relaykit.storage", "spring.main.keep-alive");
    PrintStream original = System.out;
    ByteArrayOutputStream captured = new ByteArrayOutputStream();
    System.setOut(new PrintStream(captured, true, StandardCharsets.UTF_8));
    try (ConfigurableApplicationContext context = new SpringApplicationBuilder(ShopApplication.class)
        .web(WebApplicationType.NONE)
        .properties(readme)
        .run()) {
      Await.until(Duration.ofSeconds(30), "the listener prints the shipped order",
          () -> captured.toString(StandardCharsets.UTF_8)
              .contains("shipping order-42: {\"sku\":\"book\"}"));
      assertThat(context.isRunning()).isTrue();
    } finally {
      System.setOut(original);
    }
  }

  /** The first {@code ```properties} block of README.md's Spring Boot quick start. */
  static Properties readmeProperties() throws IOException {
    Path readme = Path.of(System.getProperty("basedir", "")).toAbsolutePath().getParent()
        .resolve("README.md");
    String page = Files.readString(readme, StandardCharsets.UTF_8);
    int section = page.indexOf("## Quick start: Spring Boot");
    assertThat(section).as("README's Spring Boot quick start section").isNotNegative();
    int start = page.indexOf("```properties\n", section);
    assertThat(start).as("a ```properties block in README's Spring Boot quick start").isNotNegative();
    start += "```properties\n".length();
    int end = page.indexOf("```", start);
    Properties properties = new Properties();
    properties.load(new StringReader(page.substring(start, end)));
    return properties;
  }
}
