package io.relaykit.retry;

import java.util.ArrayList;
import java.util.List;

/**
 * Says whether a failure is worth retrying. Implementations must be pure and must not throw.
 *
 * <p>The default classifier treats {@link PermanentFailureException} as permanent and everything
 * else as retryable. A built classifier checks, in order: {@link PermanentFailureException} (always
 * permanent), the {@linkplain Builder#retryable retryable} carve-outs, the {@linkplain
 * Builder#permanent permanent} types; anything else, and a null failure (a timeout), is retryable.
 * Classification is O(registered types). Add the exception types your domain knows to be permanent:
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
    /** Worth another attempt: the message is retried while the {@link RetryPolicy} allows. */
    RETRYABLE,
    /** Retrying cannot help: the message goes straight to dead letters. */
    PERMANENT
  }

  /**
   * Classifies one failure. Must be pure, cheap and must not throw.
   *
   * @param failure what went wrong; null for a failure without an exception (a timeout)
   * @return whether another attempt is worth making
   */
  Kind classify(Throwable failure);

  /**
   * {@link PermanentFailureException} is permanent; every other failure is retryable.
   *
   * @return the default classifier; stateless
   */
  static FailureClassifier defaults() {
    return builder().build();
  }

  /**
   * A builder that starts with no registered types, so it classifies like {@link #defaults()}.
   *
   * @return a new builder
   */
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

    /**
     * Failures of this type (or a subtype) are permanent.
     *
     * @param type the permanent exception type; not null
     * @return this builder
     * @throws IllegalArgumentException if {@code type} is null
     */
    public Builder permanent(Class<? extends Throwable> type) {
      permanent.add(requireType(type));
      return this;
    }

    /**
     * Failures of this type (or a subtype) are retryable even when a permanent type also matches;
     * useful to carve a transient subtype out of a permanent family. It never overrides {@link
     * PermanentFailureException}: code that throws it has said retrying cannot help.
     *
     * @param type the retryable exception type; not null
     * @return this builder
     * @throws IllegalArgumentException if {@code type} is null
     */
    public Builder retryable(Class<? extends Throwable> type) {
      retryable.add(requireType(type));
      return this;
    }

    private static Class<? extends Throwable> requireType(Class<? extends Throwable> type) {
      if (type == null) {
        throw new IllegalArgumentException("type must not be null");
      }
      return type;
    }

    /**
     * Builds the classifier from the types registered so far; later changes to this builder do not
     * affect it.
     *
     * @return an immutable, thread-safe classifier, O(registered types) per call
     */
    public FailureClassifier build() {
      List<Class<? extends Throwable>> perm = List.copyOf(permanent);
      List<Class<? extends Throwable>> retry = List.copyOf(retryable);
      return failure -> {
        if (failure == null) {
          return Kind.RETRYABLE;
        }
        if (failure instanceof PermanentFailureException) {
          return Kind.PERMANENT;
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
