/**
 * Helpers shared inside queue-core (argument checks, text bounds). Not API.
 *
 * <p>Public only because Java has no narrower sharing across packages: other modules and user code
 * must not use this package (the architecture tests enforce it), and it may change in any release
 * without notice.
 */
package io.relaykit.internal;
