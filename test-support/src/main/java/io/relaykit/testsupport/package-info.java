/**
 * Helpers for relaykit's own tests, not published: {@link
 * io.relaykit.testsupport.HeadlessChromium} drives Debian's headless Chromium for page tests, and
 * {@link io.relaykit.testsupport.ChartSvg} reads a TimeChart's SVG back into points.
 */
package io.relaykit.testsupport;
