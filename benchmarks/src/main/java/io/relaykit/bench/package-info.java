/**
 * JMH suites that measure relaykit beside a baseline in the same run, and the report that turns
 * JMH's JSON into ratios and a chart. Not API (this module is never published); run it with
 * {@code ./relaykit bench}.
 */
package io.relaykit.bench;
