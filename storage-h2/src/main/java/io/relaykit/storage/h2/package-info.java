/**
 * The JDBC storage's former package, kept for one release: {@link H2StorageConfig}, {@link
 * H2StorageModule}, {@link H2StorageBackend} and {@link H2ConfigKeys} forward to their
 * replacements in {@link io.relaykit.storage.jdbc}, and are removed in the next release. Every
 * other type of this package moved there under its own name (import {@code
 * io.relaykit.storage.jdbc.*} instead).
 */
package io.relaykit.storage.h2;
