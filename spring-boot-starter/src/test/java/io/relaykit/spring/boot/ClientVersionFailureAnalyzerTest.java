package io.relaykit.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;

import io.relaykit.internal.ClientVersionException;
import java.io.IOException;
import java.net.URL;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Properties;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.BeanCreationException;
import org.springframework.boot.diagnostics.FailureAnalysis;
import org.springframework.boot.diagnostics.FailureAnalyzer;
import org.springframework.core.io.UrlResource;
import org.springframework.core.io.support.PropertiesLoaderUtils;

class ClientVersionFailureAnalyzerTest {

  @Test
  @DisplayName("a client below its floor is reported as its one line, found through"
      + " spring.factories")
  void reportsTheOneLine() throws IOException {
    List<String> analyzers = new ArrayList<>();
    for (URL url : Collections.list(getClass().getClassLoader()
        .getResources("META-INF/spring.factories"))) {
      Properties factories = PropertiesLoaderUtils.loadProperties(new UrlResource(url));
      analyzers.add(factories.getProperty(FailureAnalyzer.class.getName(), ""));
    }
    assertThat(analyzers).anySatisfy(a ->
        assertThat(a).contains(ClientVersionFailureAnalyzer.class.getName()));
    String line = "relaykit-kafka needs kafka-clients 4.1.2 or newer, but kafka-clients 4.0.0 is"
        + " on the class path; upgrade kafka-clients to 4.1.2 or newer";
    FailureAnalysis a = new ClientVersionFailureAnalyzer().analyze(new BeanCreationException(
        "relaykitPublisher", "failed", new ClientVersionException(line)));
    assertThat(a.getDescription()).isEqualTo(line);
    assertThat(a.getAction()).contains("Upgrade");
  }
}
