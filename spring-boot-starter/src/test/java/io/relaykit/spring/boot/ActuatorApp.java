package io.relaykit.spring.boot;

import io.relaykit.tck.FakeClock;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.context.annotation.Bean;

/**
 * An application with the starter and Actuator, whose clock is a {@link FakeClock} starting at
 * the real time (so the relay, on the system clock, can claim what was appended at its start).
 */
@SpringBootConfiguration
@EnableAutoConfiguration
public class ActuatorApp {

  @Bean
  FakeClock testClock() {
    return new FakeClock(Instant.now().truncatedTo(ChronoUnit.MILLIS));
  }
}
