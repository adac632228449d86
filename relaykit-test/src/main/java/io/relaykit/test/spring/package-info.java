/**
 * {@link io.relaykit.test.spring.RelaykitTest}: relaykit's test harness inside a Spring Boot
 * test's application context. Needs relaykit-spring-boot-starter and spring-test on the test class
 * path (an application that uses the starter has both).
 */
package io.relaykit.test.spring;
