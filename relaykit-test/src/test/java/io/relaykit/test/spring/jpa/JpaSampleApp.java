package io.relaykit.test.spring.jpa;

import io.relaykit.message.Message;
import io.relaykit.spring.boot.RelaykitListener;
import io.relaykit.spring.boot.TransactionalOutbox;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.context.annotation.Import;
import org.springframework.stereotype.Component;
import org.springframework.stereotype.Service;
import org.springframework.transaction.annotation.Transactional;

/** The sample application on Spring Data JPA: a shipment entity and its message in one transaction. */
@SpringBootConfiguration
@EnableAutoConfiguration
@Import({JpaSampleApp.Shipping.class, JpaSampleApp.Tracking.class})
public class JpaSampleApp {

  /** Ships: saves the entity and appends its message in one transaction. */
  @Service
  public static class Shipping {
    private final Shipments shipments;
    private final TransactionalOutbox outbox;

    public Shipping(Shipments shipments, TransactionalOutbox outbox) {
      this.shipments = shipments;
      this.outbox = outbox;
    }

    @Transactional
    public void ship(String id, String address) {
      shipments.save(new Shipment(id, address));
      outbox.append("shipments", Message.builder().id(id).type("shipment.created").key(id)
          .payload(address).build());
    }

    @Transactional
    public void shipThenFail(String id, String address) {
      ship(id, address);
      throw new IllegalStateException("carrier refused");
    }
  }

  /** Notifies the customer of each shipment. */
  @Component
  public static class Tracking {
    public final List<String> notified = new CopyOnWriteArrayList<>();

    @RelaykitListener(destination = "shipments", group = "tracking")
    public void notify(Message shipment) {
      notified.add(shipment.id());
    }
  }
}
