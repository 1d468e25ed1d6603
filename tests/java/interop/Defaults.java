// Two oracles: the defaults (tests/hbase_site.rs, client_defaults_are_the_java_clients) and
// the KeyValue size limit (tests/bad_input.rs, keyvalue_size_limit_is_the_java_clients).
//
// The defaults: the Java
// client's (hbase-shaded-client from Maven Central) default of every setting whose default we
// say is Java's, as that client resolves it from a default HBaseConfiguration.create() (which
// reads the jar's hbase-default.xml): by building the class that reads the setting and reading
// what it kept (AsyncConnectionConfiguration, SimpleRequestController, FailedServers,
// RegistryEndpointsRefresher), or, where building it needs a live connection, by the same
// Configuration lookup its constructor makes with its own constant as the default (read by
// reflection when not public). Our own program, written for this project.
//
// tests/java/interop/run --program Defaults.java defaults
//   NAME <tab> VALUE, one line each, NAME the property (or a name of ours for a value without
//   one); durations in ms, sizes in bytes.
//
// tests/java/interop/run --program Defaults.java site FILE
//   The same lines, from HBaseConfiguration.create() with FILE added after it
//   (conf.addResource(new Path(FILE)), as a user's hbase-site.xml on top of the defaults; the
//   oracle of configured_values_are_read_as_the_java_client_reads_them). A line whose value
//   Java fails to resolve (a NumberFormatException out of Configuration.getInt, say, or out
//   of the constructor of the class that reads it) is NAME <tab> ERROR <the innermost
//   exception's class>; every line of a class whose constructor fails says so. A file Hadoop
//   cannot read at all fails the first line that reads the configuration, and with it every
//   other line (the Configuration throws the same error on each read).
//
// tests/java/interop/run --program Defaults.java keyvalue CASE...
//   CASE is MAX:ROW:FAMILY:QUALIFIER:VALUE[,VALUE...]: a Put of a ROW-byte row with one cell
//   per VALUE (a VALUE-byte value, a FAMILY-byte family and a QUALIFIER-byte qualifier, the
//   qualifiers made distinct in their last byte), checked by ConnectionUtils.validatePut (the
//   check of the Java client's puts) against the limit the client reads from
//   hbase.client.keyvalue.maxsize=MAX ("default": unset). One line each:
//     ok|refused <tab> limit=N <tab> sizes=each cell's getSerializedSize(),...
//
// tests/java/interop/run --program Defaults.java digits
//   Every code point (surrogates aside) that is a number alone to Long.parseLong, the parser
//   of Configuration.getLong (getInt's Integer.parseInt reads the same digits), in decimal or
//   in hexadecimal (getLong's reading after "0x"). One line each: the code point in
//   hexadecimal <tab> its decimal value or - <tab> its hexadecimal value or -.

import java.lang.reflect.Constructor;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hbase.Cell;
import org.apache.hadoop.hbase.HBaseConfiguration;
import org.apache.hadoop.hbase.HConstants;
import org.apache.hadoop.hbase.client.Put;

public class Defaults {
  public static void main(String[] args) throws Exception {
    switch (args[0]) {
      case "defaults":
        resolved(HBaseConfiguration.create());
        break;
      case "site":
        Configuration conf = HBaseConfiguration.create();
        conf.addResource(new org.apache.hadoop.fs.Path(args[1]));
        resolved(conf);
        break;
      case "keyvalue":
        keyvalue(args);
        break;
      case "digits":
        StringBuilder out = new StringBuilder();
        for (int cp = 0; cp <= Character.MAX_CODE_POINT; cp++) {
          if (cp >= Character.MIN_SURROGATE && cp <= Character.MAX_SURROGATE) {
            continue;
          }
          String alone = new String(Character.toChars(cp));
          String decimal = parsed(alone, 10);
          String hex = parsed(alone, 16);
          if (!decimal.equals("-") || !hex.equals("-")) {
            out.append(Integer.toHexString(cp)).append('\t').append(decimal).append('\t')
                .append(hex).append('\n');
          }
        }
        System.out.print(out);
        break;
      default:
        throw new IllegalArgumentException(
            "mode defaults, site, keyvalue or digits, not " + args[0]);
    }
  }

  // `s` as Long.parseLong reads it in `radix`, or "-" where it throws.
  static String parsed(String s, int radix) {
    try {
      return Long.toString(Long.parseLong(s, radix));
    } catch (NumberFormatException e) {
      return "-";
    }
  }

  // Every line of `defaults` and `site`, as the Java client resolves it from `conf`.
  static void resolved(Configuration conf) {
    // What the async client (AsyncConnectionImpl's connConf) reads.
    Once async = new Once(
        () -> construct("org.apache.hadoop.hbase.client.AsyncConnectionConfiguration", conf));
    print("hbase.client.retries.number", () -> call(async.get(), "getMaxRetries"));
    // The attempts that make: ConnectionUtils.retries2Attempts, as the retrying callers count.
    print("attempts", () -> method("org.apache.hadoop.hbase.client.ConnectionUtils",
        "retries2Attempts", int.class).invoke(null, call(async.get(), "getMaxRetries")));
    print("hbase.client.pause", () -> ms(call(async.get(), "getPauseNs")));
    print("hbase.client.pause.server.overloaded",
        () -> ms(call(async.get(), "getPauseNsForServerOverloaded")));
    print("hbase.rpc.timeout", () -> ms(call(async.get(), "getRpcTimeoutNs")));
    print("hbase.client.operation.timeout", () -> ms(call(async.get(), "getOperationTimeoutNs")));
    print("hbase.client.write.buffer", () -> call(async.get(), "getWriteBufferSize"));
    print("hbase.client.write.buffer.periodicflush.timeout.ms",
        () -> ms(call(async.get(), "getWriteBufferPeriodicFlushTimeoutNs")));
    print("hbase.client.write.buffer.maxmutations",
        () -> call(async.get(), "getBufferedMutatorMaxMutations"));
    print("hbase.client.keyvalue.maxsize", () -> call(async.get(), "getMaxKeyValueSize"));
    print("hbase.client.scanner.caching", () -> call(async.get(), "getScannerCaching"));
    print("hbase.client.scanner.max.result.size",
        () -> call(async.get(), "getScannerMaxResultSize"));

    // How batches and buffered mutators cut and pace their Multi requests (2.x's AsyncProcess).
    Once requests = new Once(
        () -> construct("org.apache.hadoop.hbase.client.SimpleRequestController", conf));
    print("hbase.client.max.perrequest.heapsize",
        () -> field(requests.get(), "maxHeapSizePerRequest"));
    print("hbase.client.max.perrequest.rows", () -> field(requests.get(), "maxRowsPerRequest"));
    print("hbase.client.max.perserver.tasks",
        () -> field(requests.get(), "maxConcurrentTasksPerServer"));
    print("hbase.client.max.perregion.tasks",
        () -> field(requests.get(), "maxConcurrentTasksPerRegion"));

    // AsyncNonMetaRegionLocator's constructor (it needs a connection): its two lookups.
    String locator = "org.apache.hadoop.hbase.client.AsyncNonMetaRegionLocator";
    print("hbase.client.meta.max.concurrent.locate.per.table",
        () -> lookup(conf, locator, "MAX_CONCURRENT_LOCATE_REQUEST_PER_TABLE"));
    print("hbase.client.locate.prefetch.limit",
        () -> lookup(conf, locator, "LOCATE_PREFETCH_LIMIT"));

    // The RPC client's failed-server memory, and its connect timeout (AbstractRpcClient's
    // constructor: conf.getInt(SOCKET_TIMEOUT_CONNECT, DEFAULT_SOCKET_TIMEOUT_CONNECT)).
    print("hbase.ipc.client.failed.servers.expiry", () -> field(
        construct("org.apache.hadoop.hbase.ipc.FailedServers", conf), "recheckServersTimeout"));
    String rpcClient = "org.apache.hadoop.hbase.ipc.RpcClient";
    print("hbase.ipc.client.socket.timeout.connect",
        () -> lookup(conf, rpcClient, "SOCKET_TIMEOUT_CONNECT"));

    // ReadOnlyZKClient's constructor: conf.getInt(ZK_SESSION_TIMEOUT, DEFAULT_ZK_SESSION_TIMEOUT).
    print("zookeeper.session.timeout",
        () -> conf.getInt(HConstants.ZK_SESSION_TIMEOUT, HConstants.DEFAULT_ZK_SESSION_TIMEOUT));

    // The RPC registry's refresher of the bootstrap nodes, as RpcConnectionRegistry creates it.
    print("hbase.client.bootstrap.refresh_interval_secs", () -> bootstrapRefreshMs(conf) / 1000);

    // The backoff: HConstants.RETRY_BACKOFF, and ConnectionUtils.getPauseTime (the pause before
    // retry n is getPauseTime(pause, n - 1) in every retrying caller).
    print("RETRY_BACKOFF", () -> Arrays.stream(HConstants.RETRY_BACKOFF)
        .mapToObj(Integer::toString).collect(Collectors.joining(",")));
    // Pause before each retry n = 1..retries as a multiple of the base pause (the smallest of
    // 1,000 draws, so the jitter rounds away), and the jitter's range over 100,000 draws, in
    // 0.1% of the pause.
    Once backoff = new Once(() -> {
      long base = (Long) call(async.get(), "getPauseNs");
      int retries = (Integer) call(async.get(), "getMaxRetries");
      List<String> schedule = new ArrayList<>();
      double lowest = Double.MAX_VALUE;
      double highest = 0;
      for (int retry = 1; retry <= retries; retry++) {
        long min = Long.MAX_VALUE;
        for (int i = 0; i < 1000; i++) {
          min = Math.min(min, pauseTime(base, retry - 1));
        }
        long multiple = min / base;
        schedule.add(Long.toString(multiple));
        for (int i = 0; i < 100_000 / retries; i++) {
          long normal = base * multiple;
          double jitter = (double) (pauseTime(base, retry - 1) - normal) / normal;
          lowest = Math.min(lowest, jitter);
          highest = Math.max(highest, jitter);
        }
      }
      return new String[] { String.join(",", schedule),
          String.format("%.1f%%..%.1f%%", lowest * 100, highest * 100) };
    });
    print("backoff.schedule", () -> ((String[]) backoff.get())[0]);
    print("backoff.jitter", () -> ((String[]) backoff.get())[1]);
  }

  // A value one or more lines print, resolved once: the value, or the same failure each time.
  interface Resolve {
    Object get() throws Exception;
  }

  static final class Once {
    private final Resolve resolve;
    private boolean done;
    private Object value;
    private Exception failure;

    Once(Resolve resolve) {
      this.resolve = resolve;
    }

    Object get() throws Exception {
      if (!done) {
        done = true;
        try {
          value = resolve.get();
        } catch (Exception e) {
          failure = e;
        }
      }
      if (failure != null) {
        throw failure;
      }
      return value;
    }
  }

  // The Java client's pause before retry tries + 1 (ConnectionUtils.getPauseTime).
  static long pauseTime(long pause, int tries) {
    return org.apache.hadoop.hbase.client.ConnectionUtils.getPauseTime(pause, tries);
  }

  // RegistryEndpointsRefresher.create with the keys RpcConnectionRegistry passes; its refresh
  // period as the refresher keeps it (ms). A refresher that never runs; stopped at once.
  static long bootstrapRefreshMs(Configuration conf) throws Exception {
    String registry = "org.apache.hadoop.hbase.client.RpcConnectionRegistry";
    Class<?> refresherClass = Class.forName("org.apache.hadoop.hbase.client.RegistryEndpointsRefresher");
    Class<?> callback = Class.forName("org.apache.hadoop.hbase.client.RegistryEndpointsRefresher$Refresher");
    Object noop = Proxy.newProxyInstance(callback.getClassLoader(), new Class<?>[] { callback },
        (proxy, m, a) -> null);
    Method create = refresherClass.getDeclaredMethod("create", Configuration.class, String.class,
        String.class, String.class, callback);
    create.setAccessible(true);
    Object refresher = create.invoke(null, conf, staticField(registry, "INITIAL_REFRESH_DELAY_SECS"),
        staticField(registry, "PERIODIC_REFRESH_INTERVAL_SECS"),
        staticField(registry, "MIN_SECS_BETWEEN_REFRESHES"), noop);
    long period = (Long) field(refresher, "periodicRefreshMs");
    Method stop = refresherClass.getDeclaredMethod("stop");
    stop.setAccessible(true);
    stop.invoke(refresher);
    return period;
  }

  // One line per case: the Put that case describes, checked by ConnectionUtils.validatePut
  // with the limit the client resolves from a default configuration with
  // hbase.client.keyvalue.maxsize set to MAX (AsyncConnectionConfiguration.getMaxKeyValueSize,
  // what RawAsyncTableImpl and the buffered mutator pass).
  static void keyvalue(String[] args) throws Exception {
    Method validate = method("org.apache.hadoop.hbase.client.ConnectionUtils", "validatePut",
        Put.class, int.class);
    for (int a = 1; a < args.length; a++) {
      String[] f = args[a].split(":");
      Configuration conf = HBaseConfiguration.create();
      if (!f[0].equals("default")) {
        conf.set("hbase.client.keyvalue.maxsize", f[0]);
      }
      int max = (Integer) call(construct(
          "org.apache.hadoop.hbase.client.AsyncConnectionConfiguration", conf), "getMaxKeyValueSize");
      int row = Integer.parseInt(f[1]);
      int family = Integer.parseInt(f[2]);
      int qualifier = Integer.parseInt(f[3]);
      Put put = new Put(filled(row, (byte) 'r'));
      String[] values = f[4].split(",");
      for (int i = 0; i < values.length; i++) {
        put.addColumn(filled(family, (byte) 'f'), qualifier(qualifier, i),
            filled(Integer.parseInt(values[i]), (byte) 'v'));
      }
      List<String> sizes = new ArrayList<>();
      for (List<Cell> cells : put.getFamilyCellMap().values()) {
        for (Cell cell : cells) {
          sizes.add(Integer.toString(cell.getSerializedSize()));
        }
      }
      String verdict;
      try {
        validate.invoke(null, put, max);
        verdict = "ok";
      } catch (java.lang.reflect.InvocationTargetException e) {
        verdict = "refused";
        if (!(e.getCause() instanceof IllegalArgumentException)
            || !e.getCause().getMessage().equals("KeyValue size too large")) {
          throw e;
        }
      }
      System.out.println(verdict + "\tlimit=" + max + "\tsizes=" + String.join(",", sizes));
    }
  }

  // Cell i's qualifier: LEN bytes of 'q', the last one 'a' + i so the cells differ.
  static byte[] qualifier(int len, int i) {
    byte[] q = filled(len, (byte) 'q');
    if (len > 0) {
      q[len - 1] = (byte) ('a' + i);
    }
    return q;
  }

  static byte[] filled(int len, byte b) {
    byte[] bytes = new byte[len];
    Arrays.fill(bytes, b);
    return bytes;
  }

  // NAME <tab> the value, or NAME <tab> ERROR <class> when resolving it throws (the innermost
  // cause of reflection's and the constructors' wrapping exceptions).
  static void print(String name, Resolve value) {
    String shown;
    try {
      shown = String.valueOf(value.get());
    } catch (Exception | Error e) {
      Throwable cause = e;
      while (cause.getCause() != null && cause.getCause() != cause) {
        cause = cause.getCause();
      }
      shown = "ERROR " + cause.getClass().getName();
    }
    System.out.println(name + "\t" + shown);
  }

  static long ms(Object nanos) {
    return TimeUnit.NANOSECONDS.toMillis((Long) nanos);
  }

  static Object construct(String className, Configuration conf) throws Exception {
    Constructor<?> c = Class.forName(className).getDeclaredConstructor(Configuration.class);
    c.setAccessible(true);
    return c.newInstance(conf);
  }

  static Object call(Object target, String name) throws Exception {
    Method m = target.getClass().getDeclaredMethod(name);
    m.setAccessible(true);
    return m.invoke(target);
  }

  static Method method(String className, String name, Class<?>... types) throws Exception {
    Method m = Class.forName(className).getDeclaredMethod(name, types);
    m.setAccessible(true);
    return m;
  }

  static Object field(Object target, String name) throws Exception {
    Field f = target.getClass().getDeclaredField(name);
    f.setAccessible(true);
    return f.get(target);
  }

  // conf.getInt(className.KEY, className.DEFAULT_KEY), the lookup a constructor makes.
  static int lookup(Configuration conf, String className, String key) throws Exception {
    return conf.getInt((String) staticField(className, key),
        (Integer) staticField(className, "DEFAULT_" + key));
  }

  static Object staticField(String className, String name) throws Exception {
    Field f = Class.forName(className).getDeclaredField(name);
    f.setAccessible(true);
    return f.get(null);
  }
}
