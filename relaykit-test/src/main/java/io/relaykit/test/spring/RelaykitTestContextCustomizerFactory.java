package io.relaykit.test.spring;

import java.util.List;
import java.util.Map;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.core.annotation.MergedAnnotations;
import org.springframework.core.env.MapPropertySource;
import org.springframework.test.context.ContextConfigurationAttributes;
import org.springframework.test.context.ContextCustomizer;
import org.springframework.test.context.ContextCustomizerFactory;
import org.springframework.test.context.MergedContextConfiguration;

/**
 * Puts {@code relaykit.transport=memory} in front of every other property source of a {@link
 * RelaykitTest} class's context, so neither the application's configuration nor the test's own
 * properties can move it onto a broker. Registered in {@code META-INF/spring.factories}; not for
 * direct use.
 */
public final class RelaykitTestContextCustomizerFactory implements ContextCustomizerFactory {

  /** The factory (Spring's test context framework creates it). */
  public RelaykitTestContextCustomizerFactory() {}

  @Override
  public ContextCustomizer createContextCustomizer(Class<?> testClass,
      List<ContextConfigurationAttributes> configAttributes) {
    if (!MergedAnnotations.from(testClass, MergedAnnotations.SearchStrategy.TYPE_HIERARCHY)
        .isPresent(RelaykitTest.class)) {
      return null;
    }
    return new InProcessTransport();
  }

  /** Equal to every other instance: one cached context per configuration, as without it. */
  private static final class InProcessTransport implements ContextCustomizer {
    @Override
    public void customizeContext(ConfigurableApplicationContext context,
        MergedContextConfiguration mergedConfig) {
      context.getEnvironment().getPropertySources().addFirst(new MapPropertySource(
          "relaykitTest", Map.of("relaykit.transport", "memory")));
    }

    @Override
    public boolean equals(Object o) {
      return o instanceof InProcessTransport;
    }

    @Override
    public int hashCode() {
      return InProcessTransport.class.hashCode();
    }
  }
}
