package io.relaykit.spring.boot;

import java.util.List;
import java.util.Objects;
import java.util.Set;
import org.springframework.boot.actuate.endpoint.EndpointId;
import org.springframework.boot.actuate.endpoint.SecurityContext;
import org.springframework.boot.actuate.endpoint.web.AdditionalPathsMapper;
import org.springframework.boot.actuate.endpoint.web.WebServerNamespace;
import org.springframework.boot.context.properties.bind.Bindable;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.boot.health.actuate.endpoint.AdditionalHealthEndpointPath;
import org.springframework.boot.health.actuate.endpoint.HealthEndpointGroup;
import org.springframework.boot.health.actuate.endpoint.HealthEndpointGroups;
import org.springframework.boot.health.actuate.endpoint.HealthEndpointGroupsPostProcessor;
import org.springframework.boot.health.actuate.endpoint.HttpCodeStatusMapper;
import org.springframework.boot.health.actuate.endpoint.StatusAggregator;
import org.springframework.core.env.Environment;

/**
 * Adds the {@code relaykit} health contributor to Spring Boot's {@code readiness} group, as a
 * default the application's own settings override: nothing is changed when {@code
 * management.endpoint.health.group.readiness.include} or {@code .exclude} is set (the
 * application chose the members), when {@code relaykit.spring.health.readiness=false}, or when
 * there is no readiness group (probes disabled). The liveness group is never touched.
 *
 * <p>Runs after Boot's own availability-probes post-processor (same lowest order, registered
 * later: {@link RelaykitActuatorAutoConfiguration} is ordered after its auto-configuration), so
 * the readiness group it wraps is Boot's, additional path ({@code /readyz}) included.
 */
final class RelaykitReadinessGroup implements HealthEndpointGroupsPostProcessor {

  static final String READINESS = "readiness";
  static final String CONTRIBUTOR = "relaykit";
  static final String INCLUDE = "management.endpoint.health.group.readiness.include";
  static final String EXCLUDE = "management.endpoint.health.group.readiness.exclude";

  private final boolean apply;

  RelaykitReadinessGroup(Environment env, boolean enabled) {
    Binder binder = Binder.get(env);
    boolean userChose = binder.bind(INCLUDE, Bindable.listOf(String.class)).isBound()
        || binder.bind(EXCLUDE, Bindable.listOf(String.class)).isBound();
    this.apply = enabled && !userChose;
  }

  @Override
  public HealthEndpointGroups postProcessHealthEndpointGroups(HealthEndpointGroups groups) {
    HealthEndpointGroup readiness = groups.get(READINESS);
    if (!apply || readiness == null || readiness.isMember(CONTRIBUTOR)) {
      return groups;
    }
    return new Groups(groups, new WithRelaykit(readiness));
  }

  /** The groups with readiness replaced; additional paths still answered by the delegate. */
  private static final class Groups implements HealthEndpointGroups, AdditionalPathsMapper {
    private final HealthEndpointGroups delegate;
    private final HealthEndpointGroup readiness;

    Groups(HealthEndpointGroups delegate, HealthEndpointGroup readiness) {
      this.delegate = delegate;
      this.readiness = readiness;
    }

    @Override
    public HealthEndpointGroup getPrimary() {
      return delegate.getPrimary();
    }

    @Override
    public Set<String> getNames() {
      return delegate.getNames();
    }

    @Override
    public HealthEndpointGroup get(String name) {
      return READINESS.equals(name) ? readiness : delegate.get(name);
    }

    @Override
    public List<String> getAdditionalPaths(EndpointId endpointId, WebServerNamespace namespace) {
      if (delegate instanceof AdditionalPathsMapper mapper) {
        return mapper.getAdditionalPaths(endpointId, namespace);
      }
      return List.of();
    }
  }

  /** A group whose members are the delegate's and {@code relaykit}. */
  private static final class WithRelaykit implements HealthEndpointGroup {
    private final HealthEndpointGroup delegate;

    WithRelaykit(HealthEndpointGroup delegate) {
      this.delegate = Objects.requireNonNull(delegate);
    }

    @Override
    public boolean isMember(String name) {
      return CONTRIBUTOR.equals(name) || delegate.isMember(name);
    }

    @Override
    public boolean showComponents(SecurityContext securityContext) {
      return delegate.showComponents(securityContext);
    }

    @Override
    public boolean showDetails(SecurityContext securityContext) {
      return delegate.showDetails(securityContext);
    }

    @Override
    public StatusAggregator getStatusAggregator() {
      return delegate.getStatusAggregator();
    }

    @Override
    public HttpCodeStatusMapper getHttpCodeStatusMapper() {
      return delegate.getHttpCodeStatusMapper();
    }

    @Override
    public AdditionalHealthEndpointPath getAdditionalPath() {
      return delegate.getAdditionalPath();
    }
  }
}
