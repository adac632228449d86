package io.relaykit.spring.jpa;

import io.relaykit.message.Message;
import io.relaykit.spring.boot.RelaykitListener;
import io.relaykit.spring.boot.TransactionalOutbox;
import jakarta.persistence.EntityManager;
import jakarta.persistence.PersistenceContext;
import java.sql.Connection;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicReference;
import javax.sql.DataSource;
import org.hibernate.Session;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.context.annotation.Import;
import org.springframework.jdbc.datasource.DataSourceUtils;
import org.springframework.stereotype.Component;
import org.springframework.stereotype.Service;
import org.springframework.transaction.annotation.Transactional;

/**
 * A Spring Data JPA application: an order entity saved and its message appended in one
 * {@code @Transactional} method, and a listener that records what it was handed.
 */
@SpringBootConfiguration
@EnableAutoConfiguration
@Import({JpaApp.Checkout.class, JpaApp.Shipping.class})
public class JpaApp {

  /** The business service. */
  @Service
  public static class Checkout {
    private final JpaOrders orders;
    private final TransactionalOutbox outbox;
    private final DataSource dataSource;
    @PersistenceContext
    private EntityManager em;

    public Checkout(JpaOrders orders, TransactionalOutbox outbox, DataSource dataSource) {
      this.orders = orders;
      this.outbox = outbox;
      this.dataSource = dataSource;
    }

    static Message placed(String id) {
      return Message.builder().id(id).type("order.placed").key(id)
          .payload("{\"id\":\"" + id + "\"}").build();
    }

    /** saveAndFlush, then append: the entity's INSERT runs before the outbox row's. */
    @Transactional
    public void placeFlushed(String id) {
      orders.saveAndFlush(new JpaOrder(id, "book"));
      outbox.append("orders", placed(id));
    }

    /**
     * persist without a flush, then append: Hibernate defers the entity's INSERT to the commit's
     * flush, after the outbox row.
     */
    @Transactional
    public void placeUnflushed(String id) {
      em.persist(new JpaOrder(id, "book"));
      outbox.append("orders", placed(id));
    }

    /** Saves, appends, then fails. */
    @Transactional
    public void placeThenFail(String id) {
      orders.saveAndFlush(new JpaOrder(id, "book"));
      outbox.append("orders", placed(id));
      throw new IllegalStateException("payment declined after the append");
    }

    /**
     * Appends, and reports what the transaction sees: Hibernate's own JDBC connection, the one
     * Spring's DataSourceUtils hands out (which the outbox uses), and how many outbox rows of
     * {@code id} each of Hibernate's connection and a separate connection can see.
     */
    @Transactional
    public Seen placeAndLook(String id, String outboxTable) {
      orders.saveAndFlush(new JpaOrder(id, "book"));
      outbox.append("orders", placed(id));
      AtomicReference<Connection> hibernate = new AtomicReference<>();
      em.unwrap(Session.class).doWork(hibernate::set);
      Connection spring = DataSourceUtils.getConnection(dataSource);
      long inTransaction = ((Number) em.createNativeQuery("SELECT COUNT(*) FROM " + outboxTable
          + " WHERE message_id = ?1").setParameter(1, id).getSingleResult()).longValue();
      long outside;
      try (Connection other = dataSource.getConnection();
          var ps = other.prepareStatement("SELECT COUNT(*) FROM " + outboxTable
              + " WHERE message_id = ?")) {
        ps.setString(1, id);
        try (var rs = ps.executeQuery()) {
          rs.next();
          outside = rs.getLong(1);
        }
      } catch (java.sql.SQLException e) {
        throw new IllegalStateException(e);
      }
      return new Seen(hibernate.get(), spring, inTransaction, outside);
    }
  }

  /**
   * What {@link Checkout#placeAndLook} saw inside its transaction.
   *
   * @param hibernate Hibernate's JDBC connection
   * @param spring the connection bound to the transaction for the DataSource
   * @param inTransaction outbox rows of the id seen through Hibernate
   * @param outside outbox rows of the id seen on another connection
   */
  public record Seen(Connection hibernate, Connection spring, long inTransaction, long outside) {}

  /** Records each delivery of "orders". */
  @Component
  public static class Shipping {
    public final List<String> handled = new CopyOnWriteArrayList<>();

    @RelaykitListener(destination = "orders", group = "shipping")
    public void ship(Message order) {
      handled.add(order.id());
    }
  }
}
