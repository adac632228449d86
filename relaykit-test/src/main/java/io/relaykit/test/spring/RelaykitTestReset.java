package io.relaykit.test.spring;

import io.relaykit.test.TestRelayKit;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.springframework.test.context.junit.jupiter.SpringExtension;

/**
 * Clears the context's {@link TestRelayKit} before each test of a {@link RelaykitTest} class.
 * Registered by the annotation; not for direct use.
 */
public final class RelaykitTestReset implements BeforeEachCallback {

  /** The extension (JUnit creates it). */
  public RelaykitTestReset() {}

  @Override
  public void beforeEach(ExtensionContext context) {
    SpringExtension.getApplicationContext(context).getBean(TestRelayKit.class).clear();
  }
}
