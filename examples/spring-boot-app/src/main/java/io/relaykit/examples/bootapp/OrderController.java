package io.relaykit.examples.bootapp;

import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;

/** {@code POST /orders?sku=...}: places an order, answers its id. */
@RestController
public class OrderController {
  private final Orders orders;

  /**
   * The controller.
   *
   * @param orders the service
   */
  public OrderController(Orders orders) {
    this.orders = orders;
  }

  /**
   * Places an order.
   *
   * @param sku the product
   * @return the new order's id
   */
  @PostMapping("/orders")
  public String place(@RequestParam String sku) {
    return orders.place(sku);
  }
}
