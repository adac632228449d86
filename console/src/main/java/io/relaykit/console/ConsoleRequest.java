package io.relaykit.console;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * One HTTP request to the console, as its host received it.
 *
 * @param method the HTTP method, upper case ({@code GET}, {@code POST}, ...); not null
 * @param root the console's root path as the browser sees it, without a trailing slash ({@code ""}
 *     when the console is served at the server's root, {@code "/relaykit/console"} under a path);
 *     links and form actions start with it; not null
 * @param path the path under the root, starting with {@code /} ({@code "/"} for the overview,
 *     {@code "/dead-letters"}, ...); not null
 * @param parameters the query and form parameters (decoded), each name with its values in order;
 *     copied; not null
 * @param principal the name of the signed-in user, as logged with each action; null when the host
 *     does not know one
 * @param csrfParameter the name of the form field that carries the host's CSRF token, embedded in
 *     every action form; null when the host protects actions another way
 * @param csrfToken the CSRF token to embed; null exactly when {@code csrfParameter} is null
 */
public record ConsoleRequest(String method, String root, String path,
    Map<String, List<String>> parameters, String principal, String csrfParameter,
    String csrfToken) {

  /**
   * Checks and copies the parts.
   *
   * @param method the component of that name
   * @param root the component of that name
   * @param path the component of that name
   * @param parameters the component of that name
   * @param principal the component of that name
   * @param csrfParameter the component of that name
   * @param csrfToken the component of that name
   * @throws NullPointerException if {@code method}, {@code root}, {@code path} or {@code
   *     parameters} is null, or a parameter name or value is
   * @throws IllegalArgumentException if {@code root} ends with {@code /}, {@code path} does not
   *     start with {@code /}, or only one of {@code csrfParameter} and {@code csrfToken} is given
   */
  public ConsoleRequest {
    Objects.requireNonNull(method, "method");
    Objects.requireNonNull(root, "root");
    Objects.requireNonNull(path, "path");
    Objects.requireNonNull(parameters, "parameters");
    if (root.endsWith("/")) {
      throw new IllegalArgumentException("root must not end with /, was " + root);
    }
    if (!path.startsWith("/")) {
      throw new IllegalArgumentException("path must start with /, was " + path);
    }
    if ((csrfParameter == null) != (csrfToken == null)) {
      throw new IllegalArgumentException(
          "csrfParameter and csrfToken must be given together or not at all");
    }
    Map<String, List<String>> copy = new LinkedHashMap<>();
    parameters.forEach((k, v) -> copy.put(Objects.requireNonNull(k, "parameter name"),
        List.copyOf(v)));
    parameters = java.util.Collections.unmodifiableMap(copy);
  }

  /**
   * A GET of {@code path} under the root {@code ""} with no parameters, user or CSRF token.
   *
   * @param path the path, starting with {@code /}
   * @return the request
   */
  public static ConsoleRequest get(String path) {
    return new ConsoleRequest("GET", "", path, Map.of(), null, null, null);
  }

  /**
   * This request with one more value of parameter {@code name}.
   *
   * @param name the parameter's name
   * @param value its value
   * @return a new request
   */
  public ConsoleRequest withParameter(String name, String value) {
    Map<String, List<String>> copy = new LinkedHashMap<>(parameters);
    List<String> values = new ArrayList<>(copy.getOrDefault(name, List.of()));
    values.add(value);
    copy.put(name, values);
    return new ConsoleRequest(method, root, path, copy, principal, csrfParameter, csrfToken);
  }

  /**
   * This request with another method.
   *
   * @param method the method, upper case
   * @return a new request
   */
  public ConsoleRequest withMethod(String method) {
    return new ConsoleRequest(method, root, path, parameters, principal, csrfParameter,
        csrfToken);
  }

  /**
   * This request made by {@code principal}.
   *
   * @param principal the user's name, or null
   * @return a new request
   */
  public ConsoleRequest withPrincipal(String principal) {
    return new ConsoleRequest(method, root, path, parameters, principal, csrfParameter,
        csrfToken);
  }

  /**
   * The first value of parameter {@code name}.
   *
   * @param name the parameter
   * @return its first value, or null when it is absent
   */
  public String parameter(String name) {
    List<String> values = parameters.get(name);
    return values == null || values.isEmpty() ? null : values.get(0);
  }
}
