package io.relaykit.ordering;

import io.relaykit.tck.VersionGuardContract;

class InMemoryVersionGuardTest extends VersionGuardContract {

  @Override
  protected VersionGuard createGuard() {
    return new InMemoryVersionGuard();
  }
}
