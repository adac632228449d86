package io.relaykit.spring.boot;

import io.relaykit.codec.PayloadTypes;
import io.relaykit.codec.Payloads;
import io.relaykit.jackson.JacksonJsonCodec;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.context.annotation.Bean;
import tools.jackson.databind.json.JsonMapper;

/**
 * Typed payloads in a Spring Boot application with Jackson 3 ({@code
 * tools.jackson.core:jackson-databind}, which Boot's web and JSON starters bring) on its class
 * path: one {@link Payloads} bean whose default codec is JSON ({@link JacksonJsonCodec}) on the
 * application's {@link JsonMapper} bean (Boot's, with the application's {@code spring.jackson.*}
 * settings and modules), or on a new mapper with Jackson's defaults when there is none.
 *
 * <p>{@link TransactionalOutbox#append(String, String, Object)} and {@link RelaykitListener}
 * methods that take a payload type use it. The application's {@link PayloadTypes} bean, if any,
 * names the types (register stable names there); without one, types go by their class names.
 * Define your own {@link Payloads} bean to choose a codec per destination, add codecs a
 * subscription can name ({@link RelaykitListener#codec()}) or change the payload size limit; this
 * one then backs off.
 */
@AutoConfiguration(afterName =
    "org.springframework.boot.jackson.autoconfigure.JacksonAutoConfiguration")
@ConditionalOnClass({JacksonJsonCodec.class, JsonMapper.class})
public class RelaykitPayloadAutoConfiguration {

  /** Created by Spring. */
  public RelaykitPayloadAutoConfiguration() {
  }

  /**
   * The payloads: JSON by default, on the application's mapper when it has exactly one.
   *
   * @param mapper the application's JSON mapper, if it has one
   * @param types the application's type names, if it has a registry
   * @return the payloads
   */
  @Bean
  @ConditionalOnMissingBean
  public Payloads relaykitPayloads(ObjectProvider<JsonMapper> mapper,
      ObjectProvider<PayloadTypes> types) {
    JsonMapper m = mapper.getIfUnique();
    JacksonJsonCodec codec = m == null ? new JacksonJsonCodec() : new JacksonJsonCodec(m);
    Payloads.Builder b = Payloads.builder().defaultCodec(codec);
    PayloadTypes t = types.getIfUnique();
    if (t != null) {
      b.types(t);
    }
    return b.build();
  }
}
