package io.relaykit.spring.boot.sample;

import java.net.URI;
import java.util.Map;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RequestHeader;
import org.springframework.web.bind.annotation.RestController;

/**
 * The checkout API. The Idempotency-Key filter runs before it: a handler call is a first request
 * (a repeat never reaches it), and the key is passed on so the order row carries it too.
 */
@RestController
public class OrderController {

  private final CheckoutService service;

  /**
   * The controller.
   *
   * @param service the checkout service
   */
  public OrderController(CheckoutService service) {
    this.service = service;
  }

  /**
   * What a client orders.
   *
   * @param sku the product, 1 to 64 characters
   * @param qty how many, 1 to 1000
   */
  public record OrderRequest(String sku, int qty) {}

  /**
   * Places an order: 201 with its Location; 400 for a bad body.
   *
   * @param key the Idempotency-Key (validated by the filter)
   * @param order the order
   * @return 201 and {@code {orderId}}
   */
  @PostMapping("/orders")
  public ResponseEntity<Map<String, Object>> place(
      @RequestHeader("Idempotency-Key") String key, @RequestBody OrderRequest order) {
    if (order.sku() == null || order.sku().isBlank() || order.sku().length() > 64
        || order.qty() < 1 || order.qty() > 1000) {
      return ResponseEntity.badRequest().body(Map.of("error",
          "sku must be 1 to 64 characters and qty 1 to 1000"));
    }
    String id = service.place(key, order.sku(), order.qty());
    return ResponseEntity.created(URI.create("/orders/" + id)).body(Map.of("orderId", id));
  }

  /**
   * An order and whether it shipped: 200, or 404.
   *
   * @param id the order id
   * @return the order
   */
  @GetMapping("/orders/{id}")
  public ResponseEntity<Map<String, Object>> find(@PathVariable("id") String id) {
    return service.find(id).map(ResponseEntity::ok)
        .orElseGet(() -> ResponseEntity.notFound().build());
  }
}
