package io.relaykit.test.spring;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Inherited;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.context.annotation.Import;

/**
 * Runs the application's relaykit on the in-process transport inside a Spring Boot test, watched
 * by a {@link io.relaykit.test.TestRelayKit} bean: put it beside {@code @SpringBootTest} and
 * {@code @Autowired TestRelayKit relaykit}.
 *
 * <p>It sets {@code relaykit.transport=memory} for the test, in front of every other property
 * source (the application's configuration and the test's own properties cannot override it), and
 * imports {@link RelaykitTestConfiguration}: the transport, the relay and
 * the {@code @RelaykitListener} methods run on a {@link io.relaykit.tck.FakeClock} bean, publish and
 * subscribe through the recording harness, and write dead letters to the application's store. The
 * storage stays the application's choice ({@code relaykit.storage}: in memory, or the JDBC storage
 * on its DataSource, where appends join its transactions). Before each test the harness forgets
 * what it recorded and deletes the dead letters ({@link io.relaykit.test.TestRelayKit#clear()}), so
 * tests sharing a cached context do not see each other's traffic.
 */
@Target(ElementType.TYPE)
@Retention(RetentionPolicy.RUNTIME)
@Documented
@Inherited
@Import(RelaykitTestConfiguration.class)
@ExtendWith(RelaykitTestReset.class)
public @interface RelaykitTest {}
