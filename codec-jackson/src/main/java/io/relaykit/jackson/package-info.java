/**
 * A JSON {@link io.relaykit.codec.PayloadCodec} on Jackson 3: {@link
 * io.relaykit.jackson.JacksonJsonCodec}, the Spring Boot starter's default codec.
 */
package io.relaykit.jackson;
