package io.relaykit.test.spring;

import org.springframework.test.context.TestPropertySource;

/** {@link SampleAppTest} on the JDBC storage: the append joins the order's transaction. */
@TestPropertySource(properties = {"relaykit.storage=h2",
    "relaykit.h2.table-prefix=rk_sample_"})
class SampleAppH2Test extends SampleAppTest {
}
