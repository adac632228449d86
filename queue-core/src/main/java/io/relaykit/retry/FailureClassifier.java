package io.relaykit.retry;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * Says whether a failure is worth retrying. Implementations must be pure and must not throw.
 *
 * <p>The default classifier treats {@link PermanentFailureException} as permanent and everything
 * else as retryable. Add the exception types your domain knows to be permanent:
 *
 * <pre>{@code
 * FailureClassifier classifier = FailureClassifier.builder()
 *     .permanent(IllegalArgumentException.class)
 *     .build();
 * }</pre>
 */
@FunctionalInterface
public interface FailureClassifier {

  /** Whether a failure is worth another attempt. */
  enum Kind {
    RETRYABLE,
    PERMANENT
  }

  Kind classify(Throwable failure);

  /** {@link PermanentFailureException} is permanent; every other failure is retryable. */
  static FailureClassifier defaults() {
    return builder().build();
  }

  static Builder builder() {
    return new Builder();
  }

  /** Builds a classifier by exception type; subclasses match their registered supertypes. */
  final class Builder {
    private final List<Class<? extends Throwable>> permanent = new ArrayList<>();
    private final List<Class<? extends Throwable>> retryable = new ArrayList<>();

    private Builder() {
      permanent.add(PermanentFailureException.class);
    }

    /** Failures of this type (or a subtype) are permanent. */
    public Builder permanent(Class<? extends Throwable> type) {
      permanent.add(Objects.requireNonNull(type, "type"));
      return this;
    }

    /**
     * Failures of this type (or a subtype) are retryable even when a permanent type also matches;
     * useful to carve a transient subtype out of a permanent family.
     */
    public Builder retryable(Class<? extends Throwable> type) {
      retryable.add(Objects.requireNonNull(type, "type"));
      return this;
    }

    public FailureClassifier build() {
      List<Class<? extends Throwable>> perm = List.copyOf(permanent);
      List<Class<? extends Throwable>> retry = List.copyOf(retryable);
      return failure -> {
        if (failure == null) {
          return Kind.RETRYABLE;
        }
        for (Class<? extends Throwable> type : retry) {
          if (type.isInstance(failure)) {
            return Kind.RETRYABLE;
          }
        }
        for (Class<? extends Throwable> type : perm) {
          if (type.isInstance(failure)) {
            return Kind.PERMANENT;
          }
        }
        return Kind.RETRYABLE;
      };
    }
  }
}
