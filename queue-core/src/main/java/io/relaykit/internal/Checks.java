package io.relaykit.internal;

import java.time.Duration;

/** Argument checks shared inside queue-core. Not API: other modules must not use this package. */
public final class Checks {
  private Checks() {}

  /**
   * Returns {@code value} or throws an {@link IllegalArgumentException} naming {@code field}.
   *
   * @param field the name the exception gives the value
   * @param value the value to check
   * @return {@code value}, not null and not blank
   * @throws IllegalArgumentException if {@code value} is null or blank
   */
  public static String requireNonBlank(String field, String value) {
    if (value == null) {
      throw new IllegalArgumentException(field + " must not be null");
    }
    // Fast path: a printable ASCII first character (not whitespace) settles it without a scan.
    if (!value.isEmpty()) {
      char first = value.charAt(0);
      if (first > ' ' && first < 0x7f) {
        return value;
      }
    }
    if (value.isBlank()) {
      throw new IllegalArgumentException(field + " must not be blank");
    }
    return value;
  }

  /**
   * Returns {@code value} or throws an {@link IllegalArgumentException} naming {@code field}.
   *
   * @param <T> the value's type
   * @param field the name the exception gives the value
   * @param value the value to check
   * @return {@code value}, not null
   * @throws IllegalArgumentException if {@code value} is null
   */
  public static <T> T requireNonNull(String field, T value) {
    if (value == null) {
      throw new IllegalArgumentException(field + " must not be null");
    }
    return value;
  }

  /**
   * Returns {@code value} or throws an {@link IllegalArgumentException} naming {@code field}.
   *
   * @param field the name the exception gives the value
   * @param value the value to check
   * @return {@code value}, longer than zero
   * @throws IllegalArgumentException if {@code value} is null, zero or negative
   */
  public static Duration requirePositive(String field, Duration value) {
    if (value == null || value.isZero() || value.isNegative()) {
      throw new IllegalArgumentException(field + " must be a positive duration, was " + value);
    }
    return value;
  }

  /**
   * Returns {@code value} or throws an {@link IllegalArgumentException} naming {@code field}.
   *
   * @param field the name the exception gives the value
   * @param value the value to check
   * @return {@code value}, {@code >= 1}
   * @throws IllegalArgumentException if {@code value < 1}
   */
  public static int requirePositive(String field, int value) {
    if (value < 1) {
      throw new IllegalArgumentException(field + " must be >= 1, was " + value);
    }
    return value;
  }

  /**
   * Returns {@code value} or throws an {@link IllegalArgumentException} naming {@code field}.
   *
   * @param field the name the exception gives the value
   * @param value the value to check
   * @return {@code value}, {@code >= 1}
   * @throws IllegalArgumentException if {@code value < 1}
   */
  public static long requirePositive(String field, long value) {
    if (value < 1) {
      throw new IllegalArgumentException(field + " must be >= 1, was " + value);
    }
    return value;
  }
}
