/**
 * Typed payloads: objects in, bytes on the wire, objects out.
 *
 * <p>{@link io.relaykit.codec.PayloadCodec} (SPI) turns an object into bytes of one content type
 * and bytes back into an object of a requested class. {@link io.relaykit.codec.Payloads} picks the
 * codec (per destination, else its default), records the payload's type in the message's {@code
 * type} (the {@code relaykit-type} header on the wire) and its content type in the {@value
 * io.relaykit.message.CloudEvents#CONTENT_TYPE} header, and on the way back checks them before it
 * decodes, so that one handler can dispatch by type. {@link io.relaykit.codec.PayloadTypes} maps
 * type names to classes. A payload that cannot be converted is a {@link
 * io.relaykit.codec.PayloadConversionException}, a permanent failure (a dead letter at once) whose
 * reason names the target type and describes the bytes, never quotes them.
 *
 * <p>The core ships no codec (it depends on the JDK only); {@code relaykit-codec-jackson} has a
 * JSON codec on Jackson 3, which the Spring Boot starter uses by default.
 */
package io.relaykit.codec;
