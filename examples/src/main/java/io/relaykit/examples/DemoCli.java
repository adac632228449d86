package io.relaykit.examples;

import io.relaykit.deadletter.DeadLetter;
import java.io.PrintStream;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * The operator CLI over the demo's store: {@code ./relaykit stats}, {@code ./relaykit dlq list},
 * {@code ./relaykit dlq replay ID}, {@code ./relaykit dlq purge}, {@code ./relaykit console}, each
 * with {@code --data DIR} (default {@code ./data}), {@code --storage h2|postgres|redis} and {@code
 * --url JDBC-URL}; {@code console} also takes {@code --transport memory|kafka|rabbitmq}, {@code
 * --port N} (default 8081, 0: any), {@code --bind ADDR} (default 127.0.0.1) and {@code
 * --allow-actions} (see {@link DemoConsole}).
 *
 * <p>Which database it reads: {@code --url} (or {@code --storage}) when given; otherwise the store
 * the demo recorded at start in {@code DIR/relaykit-store.properties} (so it reads PostgreSQL when
 * the demo runs on PostgreSQL); otherwise the H2 file under {@code DIR}. The first line of its
 * output names that store (password masked) and where the choice came from.
 *
 * <p>It opens the storage only (no relay, no consumers). The H2 URL uses {@code AUTO_SERVER=TRUE}
 * (with {@code FILE_LOCK=SOCKET}, see {@link DemoStore#H2_OPTIONS}), so it works while the demo
 * runs; a replayed dead letter goes back into the outbox and the running
 * demo's relay publishes it. Exit codes: 0 done, 1 nothing to act on (no such dead letter) or the
 * store did not open, 2 bad usage.
 */
public final class DemoCli {
  static final String USAGE = "usage: relaykit stats [STORE]\n"
      + "       relaykit dlq list [--limit N] [STORE]\n"
      + "       relaykit dlq replay ID [STORE]\n"
      + "       relaykit dlq purge [STORE]\n"
      + "       relaykit console [--transport memory|kafka|rabbitmq] [--port N] [--bind ADDR]"
      + " [--allow-actions] [STORE]\n"
      + "STORE: [--data DIR] [--storage h2|postgres|redis] [--url JDBC-URL]; without --storage and"
      + " --url,\nthe store the demo recorded in DIR/" + DemoStore.FILE + ", else the H2 file in"
      + " DIR (default ./data)";

  private DemoCli() {}

  public static void main(String[] args) {
    // With the demo down the CLI hosts the H2 file itself: its sockets on loopback only.
    DemoStore.bindH2ToLoopback();
    // The connection pool's INFO lines would bury the answer on the terminal.
    System.setProperty("org.slf4j.simpleLogger.defaultLogLevel", "warn");
    System.exit(run(args, System.out, System.err));
  }

  /** Runs one command and answers its exit code; never calls {@code System.exit}. */
  static int run(String[] args, PrintStream out, PrintStream err) {
    List<String> words = new ArrayList<>();
    List<String> options = new ArrayList<>();
    String storage = null;
    String url = null;
    int limit = 100;
    ConsoleOptions console = new ConsoleOptions();
    try {
      for (int i = 0; i < args.length; i++) {
        if (args[i].equals("--limit")) {
          if (i + 1 >= args.length) {
            throw new IllegalArgumentException("--limit needs a value");
          }
          limit = positive("--limit", args[++i]);
        } else if (console.accepts(args, i)) {
          i += console.take(args, i);
        } else if (args[i].equals("--storage") || args[i].equals("--url")) {
          if (i + 1 >= args.length) {
            throw new IllegalArgumentException(args[i] + " needs a value");
          }
          if (args[i].equals("--storage")) {
            storage = args[++i];
          } else {
            url = args[++i];
          }
        } else if (args[i].startsWith("--")) {
          if (!args[i].equals("--data")) {
            throw new IllegalArgumentException("unknown option " + args[i]
                + "; known: --data, --storage, --url, --limit, and for console --transport,"
                + " --port, --bind, --allow-actions");
          }
          options.add(args[i]);
          if (i + 1 < args.length) {
            options.add(args[++i]);
          }
        } else {
          words.add(args[i]);
        }
      }
      DemoOptions data = DemoOptions.parse(options.toArray(String[]::new));
      Command command = Command.of(words);
      if (!command.name().equals("console") && console.given()) {
        throw new IllegalArgumentException("--transport, --port, --bind and --allow-actions are"
            + " options of relaykit console only");
      }
      DemoStore store = DemoStore.resolve(data.dataDir(), storage, url);
      DemoOptions demo = new DemoOptions(data.host(), data.port(), data.dataDir(), store.storage(),
          console.transport == null ? data.transport() : console.transport, data.failRate(),
          data.poisonSku(), data.lease(), data.namespace());
      out.println(store.describe());
      try (CheckoutApp app = CheckoutApp.storageOnly(demo, store)) {
        if (command.name().equals("console")) {
          return serveConsole(app, demo, console, out);
        }
        return command.run(app, limit, out, err);
      }
    } catch (IllegalArgumentException e) {
      err.println("relaykit: " + e.getMessage());
      err.println(USAGE);
      return 2;
    } catch (DemoStartupException e) {
      err.println("relaykit: " + e.getMessage());
      return 1;
    } catch (Exception e) {
      err.println("relaykit: " + e);
      return 1;
    }
  }

  /** Serves the console until the process is stopped (Ctrl-C). */
  private static int serveConsole(CheckoutApp app, DemoOptions demo, ConsoleOptions options,
      PrintStream out) throws Exception {
    java.util.concurrent.CountDownLatch stopped = new java.util.concurrent.CountDownLatch(1);
    try (DemoConsole console = DemoConsole.start(app, demo, options.bind, options.port,
        options.allowActions)) {
      Runtime.getRuntime().addShutdownHook(new Thread(stopped::countDown,
          "relaykit-console-stop"));
      out.println("relaykit console " + (options.allowActions ? "(actions allowed)"
          : "(read-only; --allow-actions to replay and purge)") + " on " + console.url());
      out.println("open that URL (it carries the access token); Ctrl-C stops the console");
      String exposed = exposureWarning(options.bind);
      if (exposed != null) {
        out.println(exposed);
      }
      out.flush();
      stopped.await();
    }
    return 0;
  }

  /**
   * The warning printed when the console listens beyond this machine, or null on loopback: the
   * console speaks plain HTTP, so its token and pages cross the network in clear.
   */
  static String exposureWarning(java.net.InetAddress bind) {
    if (bind.isLoopbackAddress()) {
      return null;
    }
    return "warning: listening on " + (bind.isAnyLocalAddress() ? "every interface"
        : bind.getHostAddress()) + " over plain HTTP: the access token and the pages cross the"
        + " network unencrypted; prefer the default 127.0.0.1 and an SSH tunnel";
  }

  /** The options of {@code relaykit console}. */
  static final class ConsoleOptions {
    String transport;
    int port = 8081;
    java.net.InetAddress bind = java.net.InetAddress.getLoopbackAddress();
    boolean allowActions;
    private boolean given;

    boolean given() {
      return given;
    }

    boolean accepts(String[] args, int i) {
      return List.of("--transport", "--port", "--bind", "--allow-actions").contains(args[i]);
    }

    /** Reads the option at {@code i}; answers how many more words it took. */
    int take(String[] args, int i) {
      given = true;
      if (args[i].equals("--allow-actions")) {
        allowActions = true;
        return 0;
      }
      if (i + 1 >= args.length) {
        throw new IllegalArgumentException(args[i] + " needs a value");
      }
      String v = args[i + 1];
      switch (args[i]) {
        case "--transport" -> {
          if (!DemoOptions.TRANSPORTS.contains(v)) {
            throw new IllegalArgumentException("--transport must be one of "
                + DemoOptions.TRANSPORTS + ", was '" + v + "'");
          }
          transport = v;
        }
        case "--port" -> {
          try {
            port = Integer.parseInt(v);
          } catch (NumberFormatException e) {
            port = -1;
          }
          if (port < 0 || port > 65535) {
            throw new IllegalArgumentException("--port must be in 0..65535, was '" + v + "'");
          }
        }
        default -> {
          try {
            bind = java.net.InetAddress.getByName(v);
          } catch (java.net.UnknownHostException e) {
            throw new IllegalArgumentException("--bind: unknown address '" + v + "'");
          }
        }
      }
      return 1;
    }
  }

  private static int positive(String name, String value) {
    try {
      int n = Integer.parseInt(value);
      if (n > 0) {
        return n;
      }
    } catch (NumberFormatException e) {
      // reported below with the value
    }
    throw new IllegalArgumentException(name + " must be a positive whole number, was '" + value
        + "'");
  }

  private record Command(String name, String id) {
    static Command of(List<String> words) {
      if (words.equals(List.of("stats"))) {
        return new Command("stats", null);
      }
      if (words.equals(List.of("console"))) {
        return new Command("console", null);
      }
      if (words.equals(List.of("dlq", "list"))) {
        return new Command("list", null);
      }
      if (words.equals(List.of("dlq", "purge"))) {
        return new Command("purge", null);
      }
      if (words.size() == 3 && words.get(0).equals("dlq") && words.get(1).equals("replay")) {
        return new Command("replay", words.get(2));
      }
      if (words.size() == 2 && words.equals(List.of("dlq", "replay"))) {
        throw new IllegalArgumentException("dlq replay needs the dead letter's ID"
            + " (see: relaykit dlq list)");
      }
      throw new IllegalArgumentException("unknown command '" + String.join(" ", words) + "'");
    }

    int run(CheckoutApp app, int limit, PrintStream out, PrintStream err) throws Exception {
      switch (name) {
        case "stats": {
          Map<String, Object> m = app.metrics();
          out.println("orders              " + app.orders.count());
          out.println("outbox backlog      " + m.get("outboxBacklog"));
          out.println("oldest pending (ms) " + m.get("oldestPendingAgeMs"));
          out.println("sent, not purged    " + m.get("sentNotPurged"));
          out.println("dead letters        " + m.get("deadLetters"));
          out.println("verdict             " + m.get("verdict"));
          return 0;
        }
        case "list": {
          List<DeadLetter> list = app.deadLetters(limit);
          if (list.isEmpty()) {
            out.println("no dead letters");
          }
          for (DeadLetter d : list) {
            out.println(d.id() + "\t" + d.source() + "\tattempts=" + d.attempts() + "\t"
                + d.lastFailureAt() + "\t" + d.reason());
          }
          return 0;
        }
        case "replay": {
          Optional<DeadLetter> replayed = app.replay(id);
          if (replayed.isEmpty()) {
            err.println("relaykit: no dead letter " + id + " (already replayed or purged)");
            return 1;
          }
          out.println("replayed " + id + " to " + replayed.get().source());
          return 0;
        }
        case "purge":
          out.println("purged " + app.purgeDeadLetters() + " dead letters");
          return 0;
        default:
          throw new IllegalStateException("unhandled command " + name);
      }
    }
  }
}
