package io.relaykit.spring.boot.sample;

import org.springframework.boot.SpringApplication;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.context.annotation.Import;

/**
 * The checkout demo as a Spring Boot application on relaykit-spring-boot-starter alone.
 *
 * <pre>
 *   POST /orders {sku, qty} + Idempotency-Key    (RelaykitIdempotencyFilter: 400/409/422/replay)
 *     → CheckoutService.place, @Transactional: the order row and its outbox message commit together
 *     → the relay publishes the message (relaykit.transport, in-process by default)
 *     → ShipmentListener, @RelaykitListener(idempotent = true): one shipment row per order
 *   GET  /orders/{id}                             the order and whether it shipped
 * </pre>
 *
 * <p>Configuration (application.properties): {@code spring.datasource.*} (PostgreSQL or H2),
 * {@code relaykit.storage=h2} (relaykit's tables on that DataSource), {@code
 * relaykit.spring.idempotency.enabled=true} with {@code paths=/orders}, and {@code sample.*} for
 * the table and destination names. Run it with {@code main}.
 */
@SpringBootConfiguration
@EnableAutoConfiguration
@Import({SampleSchema.class, CheckoutService.class, OrderController.class,
    ShipmentListener.class})
public class CheckoutSampleApplication {

  /**
   * Starts the sample.
   *
   * @param args Spring Boot's command-line arguments ({@code --server.port=8080}, ...)
   */
  public static void main(String[] args) {
    SpringApplication.run(CheckoutSampleApplication.class, args);
  }
}
