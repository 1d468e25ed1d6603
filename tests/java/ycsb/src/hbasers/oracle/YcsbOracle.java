/*
 * The YCSB conformance harness: our own code (not copied from YCSB) that drives the real
 * site.ycsb:core:0.17.0 classes from Maven Central through their public API and prints what
 * they produce, so tests/ycsb_conformance.rs can compare our Rust driver with it exactly.
 *
 * Randomness: YCSB draws from ThreadLocalRandom. To make a draw sequence reproducible, the
 * harness sets the calling thread's ThreadLocalRandom seed (Thread.threadLocalRandomSeed, which
 * needs --add-opens java.base/java.lang=ALL-UNNAMED) and prints the thread id, since JDK 17's
 * ThreadLocalRandom steps its seed by GOLDEN_GAMMA + 2 * threadId.
 *
 * Commands (one per JVM):
 *   tlr SEED N                 raw nextLong/nextInt/nextDouble draws after seeding
 *   keys                       stdin "zeropadding insertorder keynum" -> CoreWorkload.buildKeyName
 *   values N ARGS              N doInsert calls with a capturing DB: "key field value" lines
 *   fnv X...                   Utils.fnvhash64
 *   constants                  ScrambledZipfianGenerator's and ZipfianGenerator's constants
 *   zeta ST N THETA INIT       ZipfianGenerator.zetastatic
 *   gen SEED N KIND ARGS       N draws of one generator after seeding
 *   ops SEED N ARGS            N doTransaction calls with a capturing DB: one line per DB call
 *                              (an insert's or update's values as "field:length", sorted)
 *   order KIND KEYS            Java's iteration order of a hash container filled in that order
 *                              (KIND: chm, status, hashmap, hashset, properties)
 *   orders                     stdin: "KIND KEY..." a line, keys escaped -> each order, escaped
 *   report                     stdin script: measurements, summaries, status lines, exports
 *   pfiles                     stdin: one properties file path a line; each read by YCSB's own
 *                              Client.parseArguments (-P FILE -p workload=...), which loads it
 *                              with Properties.load(new FileInputStream(FILE)): "== N" then one
 *                              "key=value" line per property (escaped, unsorted), or "ERROR ..."
 *                              (Client never closes the file, so a few hundred files a JVM)
 *   clis                       stdin: one command line a line, each argument escaped (escape())
 *                              and the arguments separated by single spaces; each given to
 *                              YCSB's own Client.parseArguments: "== N" then one "key=value"
 *                              line per property (escaped, unsorted), or "THROW <exception>",
 *                              or "EXIT <the last line it printed>" when it called System.exit,
 *                              which ends this JVM (the caller starts another for the rest)
 *   histograms SEED K          stdin: one histogram file path a line; each loaded by YCSB's
 *                              HistogramGenerator(String file): "== N", then "OK BLOCK AREA
 *                              C0,C1,..." (its private blockSize, area and buckets), "tid T"
 *                              and K draws after seeding, one a line (or "DRAWTHROW <exception>"
 *                              where a draw throws); or "THROW <exception>" from the constructor
 * ARGS are YCSB's -P FILE and -p NAME=VALUE.
 */
package hbasers.oracle;

import java.io.BufferedReader;
import java.io.ByteArrayOutputStream;
import java.io.FileInputStream;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.lang.reflect.Field;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Enumeration;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.Vector;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ThreadLocalRandom;

import site.ycsb.ByteIterator;
import site.ycsb.Client;
import site.ycsb.ClientThread;
import site.ycsb.DB;
import site.ycsb.Status;
import site.ycsb.StatusThread;
import site.ycsb.generator.AcknowledgedCounterGenerator;
import site.ycsb.generator.DiscreteGenerator;
import site.ycsb.generator.ExponentialGenerator;
import site.ycsb.generator.HistogramGenerator;
import site.ycsb.generator.HotspotIntegerGenerator;
import site.ycsb.generator.OracleAccess;
import site.ycsb.generator.ScrambledZipfianGenerator;
import site.ycsb.generator.SkewedLatestGenerator;
import site.ycsb.generator.UniformLongGenerator;
import site.ycsb.generator.ZipfianGenerator;
import site.ycsb.measurements.Measurements;
import site.ycsb.workloads.CoreWorkload;

public final class YcsbOracle {
  private YcsbOracle() {
  }

  public static void main(String[] args) throws Exception {
    PrintStream out = new PrintStream(System.out, false, "UTF-8");
    switch (args[0]) {
    case "tlr":
      tlr(out, Long.parseLong(args[1]), Integer.parseInt(args[2]));
      break;
    case "keys":
      keys(out);
      break;
    case "values":
      values(out, Integer.parseInt(args[1]), props(args, 2));
      break;
    case "valueshex":
      CaptureDb.hexValues = true;
      values(out, Integer.parseInt(args[1]), props(args, 2));
      break;
    case "fnv":
      for (int i = 1; i < args.length; i++) {
        out.println(site.ycsb.Utils.fnvhash64(Long.parseLong(args[i])));
      }
      break;
    case "constants":
      out.println("ZETAN " + Double.doubleToRawLongBits(ScrambledZipfianGenerator.ZETAN));
      out.println("ITEM_COUNT " + ScrambledZipfianGenerator.ITEM_COUNT);
      out.println("ZIPFIAN_CONSTANT " + Double.doubleToRawLongBits(ZipfianGenerator.ZIPFIAN_CONSTANT));
      break;
    case "zeta":
      double z = OracleAccess.zeta(Long.parseLong(args[1]), Long.parseLong(args[2]),
          Double.parseDouble(args[3]), Double.parseDouble(args[4]));
      out.println(Double.doubleToRawLongBits(z) + " " + z);
      break;
    case "gen":
      gen(out, Long.parseLong(args[1]), Integer.parseInt(args[2]), args[3], args, 4);
      break;
    case "ops":
      ops(out, Long.parseLong(args[1]), Integer.parseInt(args[2]), props(args, 3));
      break;
    case "order":
      order(out, args[1], args, 2);
      break;
    case "orders":
      orders(out);
      break;
    case "report":
      report(out);
      break;
    case "pfiles":
      pfiles(out);
      break;
    case "clis":
      clis(out);
      break;
    case "histograms":
      histograms(out, Long.parseLong(args[1]), Integer.parseInt(args[2]));
      break;
    case "doubles":
      doubles(out);
      break;
    default:
      throw new IllegalArgumentException("unknown command " + args[0]);
    }
    out.flush();
  }

  /**
   * Double.toString of each double on stdin (its bits as a long, one per line), after a first
   * line "feature N" naming the JDK's feature version (JDK 19 changed Double.toString).
   */
  static void doubles(PrintStream out) throws Exception {
    out.println("feature " + Runtime.version().feature());
    java.io.BufferedReader in = new java.io.BufferedReader(
        new java.io.InputStreamReader(System.in, StandardCharsets.US_ASCII));
    StringBuilder b = new StringBuilder();
    for (String line = in.readLine(); line != null; line = in.readLine()) {
      b.append(Double.toString(Double.longBitsToDouble(Long.parseLong(line)))).append('\n');
    }
    out.print(b);
  }

  /** Seeds the calling thread's ThreadLocalRandom; returns the thread id (its gamma's part). */
  static long seedThread(long seed) throws Exception {
    ThreadLocalRandom.current(); // initialises the probe, so current() keeps our seed
    Field f = Thread.class.getDeclaredField("threadLocalRandomSeed");
    f.setAccessible(true);
    f.setLong(Thread.currentThread(), seed);
    return Thread.currentThread().getId();
  }

  /** Like YCSB's Client: the -P files in order, then the -p pairs over them. */
  static Properties props(String[] args, int from) throws IOException {
    Properties files = new Properties();
    Properties cli = new Properties();
    for (int i = from; i < args.length; i++) {
      if (args[i].equals("-P")) {
        Properties f = new Properties();
        try (FileInputStream in = new FileInputStream(args[++i])) {
          f.load(in);
        }
        for (String k : f.stringPropertyNames()) {
          files.setProperty(k, f.getProperty(k));
        }
      } else if (args[i].equals("-p")) {
        String kv = args[++i];
        int eq = kv.indexOf('=');
        cli.setProperty(kv.substring(0, eq), kv.substring(eq + 1));
      } else {
        throw new IllegalArgumentException("unexpected argument " + args[i]);
      }
    }
    for (String k : cli.stringPropertyNames()) {
      files.setProperty(k, cli.getProperty(k));
    }
    return files;
  }

  /**
   * A string as printable ASCII that keeps every UTF-16 unit: a backslash doubled; a space,
   * '=', control, non-ASCII or surrogate unit as backslash-u and four upper-case hex digits.
   */
  static String escape(String s) {
    StringBuilder b = new StringBuilder();
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (c == '\\') {
        b.append("\\\\");
      } else if (c > ' ' && c < 0x7f && c != '=') {
        b.append(c);
      } else {
        b.append(String.format("\\u%04X", (int) c));
      }
    }
    return b.toString();
  }

  /** Each file on stdin read as YCSB's Client reads a -P file (its own private parseArguments). */
  static void pfiles(PrintStream out) throws Exception {
    Method parse = Client.class.getDeclaredMethod("parseArguments", String[].class);
    parse.setAccessible(true);
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    String path;
    int n = 0;
    while ((path = in.readLine()) != null) {
      if (path.isEmpty()) {
        continue;
      }
      out.println("== " + n++);
      String[] args = {"-P", path, "-p", "workload=site.ycsb.workloads.CoreWorkload"};
      try {
        Properties p = (Properties) parse.invoke(null, (Object) args);
        for (String k : p.stringPropertyNames()) {
          out.println(escape(k) + "=" + escape(p.getProperty(k)));
        }
      } catch (InvocationTargetException e) {
        out.println("ERROR " + escape(String.valueOf(e.getCause())));
      }
    }
  }

  /** What Client printed on System.out while parsing the current command line. */
  static ByteArrayOutputStream clientOut = new ByteArrayOutputStream();

  /**
   * Each command line on stdin given to YCSB's Client.parseArguments. On bad input Client
   * prints the usage text and calls System.exit(0): a shutdown hook reports the last line it
   * printed (the reason), and the JVM ends there.
   */
  static void clis(PrintStream out) throws Exception {
    Method parse = Client.class.getDeclaredMethod("parseArguments", String[].class);
    parse.setAccessible(true);
    System.setOut(new PrintStream(clientOut, true, "UTF-8"));
    // Client also echoes each command line on System.err: not part of the answer.
    System.setErr(new PrintStream(new ByteArrayOutputStream(), true, "UTF-8"));
    Thread hook = new Thread(() -> {
      String[] printed = clientOut.toString(StandardCharsets.UTF_8).split("\\R");
      out.println("EXIT " + escape(printed[printed.length - 1]));
      out.flush();
    });
    Runtime.getRuntime().addShutdownHook(hook);
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    int n = 0;
    for (String line = in.readLine(); line != null; line = in.readLine()) {
      out.println("== " + n++);
      out.flush();
      clientOut.reset();
      String[] t = line.split(" ", -1);
      String[] args = new String[t.length];
      for (int i = 0; i < t.length; i++) {
        args[i] = unescape(t[i]);
      }
      try {
        Properties p = (Properties) parse.invoke(null, (Object) args);
        for (String k : p.stringPropertyNames()) {
          out.println(escape(k) + "=" + escape(p.getProperty(k)));
        }
      } catch (InvocationTargetException e) {
        out.println("THROW " + escape(String.valueOf(e.getCause())));
      }
      out.flush();
    }
    Runtime.getRuntime().removeShutdownHook(hook);
  }

  /** Each histogram file on stdin loaded by YCSB's HistogramGenerator, its state and draws. */
  static void histograms(PrintStream out, long seed, int k) throws Exception {
    Field blockSize = HistogramGenerator.class.getDeclaredField("blockSize");
    Field area = HistogramGenerator.class.getDeclaredField("area");
    Field buckets = HistogramGenerator.class.getDeclaredField("buckets");
    for (Field f : new Field[] {blockSize, area, buckets}) {
      f.setAccessible(true);
    }
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    StringBuilder b = new StringBuilder();
    int n = 0;
    for (String path = in.readLine(); path != null; path = in.readLine()) {
      b.append("== ").append(n++).append('\n');
      HistogramGenerator g;
      try {
        g = new HistogramGenerator(path);
      } catch (Exception e) {
        b.append("THROW ").append(escape(String.valueOf(e))).append('\n');
        continue;
      }
      StringBuilder counts = new StringBuilder();
      for (long c : (long[]) buckets.get(g)) {
        counts.append(counts.length() == 0 ? "" : ",").append(c);
      }
      b.append("OK ").append(blockSize.getLong(g)).append(' ').append(area.getLong(g))
          .append(' ').append(counts).append('\n');
      b.append("tid ").append(seedThread(seed)).append('\n');
      for (int i = 0; i < k; i++) {
        try {
          b.append(g.nextValue()).append('\n');
        } catch (Exception e) {
          b.append("DRAWTHROW ").append(escape(String.valueOf(e))).append('\n');
          break;
        }
      }
    }
    out.print(b);
  }

  static void tlr(PrintStream out, long seed, int n) throws Exception {
    out.println("tid " + seedThread(seed));
    ThreadLocalRandom r = ThreadLocalRandom.current();
    for (int i = 0; i < n; i++) {
      out.println("L " + r.nextLong());
      out.println("I " + r.nextInt());
      out.println("D " + Double.doubleToRawLongBits(r.nextDouble()));
    }
  }

  /** Exposes CoreWorkload's key builder (protected) and its workload state. */
  static final class Workload extends CoreWorkload {
    String key(long keynum) {
      return buildKeyName(keynum);
    }
  }

  static Workload workload(Properties p) throws Exception {
    Measurements.setProperties(p);
    resetMeasurements();
    Workload w = new Workload();
    w.init(p);
    return w;
  }

  static void keys(PrintStream out) throws Exception {
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    String line;
    while ((line = in.readLine()) != null) {
      String[] t = line.trim().split("\\s+");
      if (t.length < 3) {
        continue;
      }
      Properties p = new Properties();
      p.setProperty("zeropadding", t[0]);
      p.setProperty("insertorder", t[1]);
      out.println(workload(p).key(Long.parseLong(t[2])));
    }
  }

  /** Records every call; reads find nothing, everything returns OK. */
  static final class CaptureDb extends DB {
    final PrintStream out;
    final boolean printValues;
    /** Print each value's bytes (toArray, as the binding sends them) in hex, not its text. */
    static boolean hexValues;

    CaptureDb(PrintStream out, boolean printValues) {
      this.out = out;
      this.printValues = printValues;
    }

    static String fields(Set<String> f) {
      return f == null ? "*" : String.join(",", new TreeSet<>(f));
    }

    String values(Map<String, ByteIterator> v) {
      if (!printValues) {
        // Each value's length as the binding sees it (bytesLeft of an unread iterator).
        StringBuilder sb = new StringBuilder();
        for (Map.Entry<String, ByteIterator> e : new TreeMap<>(v).entrySet()) {
          sb.append(sb.length() == 0 ? "" : ",").append(e.getKey()).append(':')
              .append(e.getValue().bytesLeft());
        }
        return sb.toString();
      }
      StringBuilder sb = new StringBuilder();
      for (Map.Entry<String, ByteIterator> e : new TreeMap<>(v).entrySet()) {
        sb.append(' ').append(e.getKey()).append('=');
        if (hexValues) {
          sb.append(java.util.HexFormat.of().formatHex(e.getValue().toArray()));
        } else {
          sb.append(e.getValue().toString());
        }
      }
      return sb.toString().trim();
    }

    @Override
    public Status read(String t, String k, Set<String> f, Map<String, ByteIterator> r) {
      out.println("READ " + k + " " + fields(f));
      return Status.OK;
    }

    @Override
    public Status scan(String t, String k, int n, Set<String> f, Vector<HashMap<String, ByteIterator>> r) {
      out.println("SCAN " + k + " " + n + " " + fields(f));
      return Status.OK;
    }

    @Override
    public Status update(String t, String k, Map<String, ByteIterator> v) {
      out.println("UPDATE " + k + " " + values(v));
      return Status.OK;
    }

    @Override
    public Status insert(String t, String k, Map<String, ByteIterator> v) {
      out.println("INSERT " + k + " " + values(v));
      return Status.OK;
    }

    @Override
    public Status delete(String t, String k) {
      out.println("DELETE " + k);
      return Status.OK;
    }
  }

  static void values(PrintStream out, int n, Properties p) throws Exception {
    Workload w = workload(p);
    Object state = w.initThread(p, 0, 1);
    DB db = new CaptureDb(out, true);
    for (int i = 0; i < n; i++) {
      w.doInsert(db, state);
    }
  }

  static void ops(PrintStream out, long seed, int n, Properties p) throws Exception {
    Workload w = workload(p);
    Object state = w.initThread(p, 0, 1);
    DB db = new CaptureDb(out, false);
    out.println("tid " + seedThread(seed));
    for (int i = 0; i < n; i++) {
      w.doTransaction(db, state);
    }
  }

  static void gen(PrintStream out, long seed, int n, String kind, String[] a, int i) throws Exception {
    // Generators are built before seeding: ZipfianGenerator's constructor draws once.
    switch (kind) {
    case "zipfian": {
      ZipfianGenerator g = new ZipfianGenerator(Long.parseLong(a[i]), Long.parseLong(a[i + 1]),
          Double.parseDouble(a[i + 2]));
      out.println("tid " + seedThread(seed));
      for (int k = 0; k < n; k++) {
        out.println(g.nextValue());
      }
      break;
    }
    case "zipfian-grow": {
      // items, then draws over items + k * step: zeta is extended incrementally
      long items = Long.parseLong(a[i]);
      long step = Long.parseLong(a[i + 1]);
      ZipfianGenerator g = new ZipfianGenerator(items);
      out.println("tid " + seedThread(seed));
      for (int k = 0; k < n; k++) {
        out.println(OracleAccess.nextLong(g, items + k * step));
      }
      break;
    }
    case "scrambled": {
      ScrambledZipfianGenerator g = new ScrambledZipfianGenerator(Long.parseLong(a[i]),
          Long.parseLong(a[i + 1]));
      out.println("tid " + seedThread(seed));
      for (int k = 0; k < n; k++) {
        out.println(g.nextValue());
      }
      break;
    }
    case "latest": {
      // basis: an acknowledged counter at recordcount; every other draw acknowledges an insert
      AcknowledgedCounterGenerator basis = new AcknowledgedCounterGenerator(Long.parseLong(a[i]));
      SkewedLatestGenerator g = new SkewedLatestGenerator(basis);
      out.println("tid " + seedThread(seed));
      for (int k = 0; k < n; k++) {
        out.println(g.nextValue());
        if (k % 2 == 1) {
          basis.acknowledge(basis.nextValue());
        }
      }
      break;
    }
    case "hotspot": {
      HotspotIntegerGenerator g = new HotspotIntegerGenerator(Long.parseLong(a[i]),
          Long.parseLong(a[i + 1]), Double.parseDouble(a[i + 2]), Double.parseDouble(a[i + 3]));
      out.println("tid " + seedThread(seed));
      for (int k = 0; k < n; k++) {
        out.println(g.nextValue());
      }
      break;
    }
    case "exponential": {
      ExponentialGenerator g = new ExponentialGenerator(Double.parseDouble(a[i]),
          Double.parseDouble(a[i + 1]));
      out.println("tid " + seedThread(seed));
      for (int k = 0; k < n; k++) {
        out.println(g.nextValue().intValue());
      }
      break;
    }
    case "uniform": {
      UniformLongGenerator g = new UniformLongGenerator(Long.parseLong(a[i]), Long.parseLong(a[i + 1]));
      out.println("tid " + seedThread(seed));
      for (int k = 0; k < n; k++) {
        out.println(g.nextValue());
      }
      break;
    }
    case "discrete": {
      DiscreteGenerator g = new DiscreteGenerator();
      for (int k = i; k < a.length; k += 2) {
        g.addValue(Double.parseDouble(a[k + 1]), a[k]);
      }
      out.println("tid " + seedThread(seed));
      for (int k = 0; k < n; k++) {
        out.println(g.nextString());
      }
      break;
    }
    default:
      throw new IllegalArgumentException("unknown generator " + kind);
    }
  }

  static void order(PrintStream out, String kind, String[] keys, int from) throws Exception {
    List<String> l = new ArrayList<>();
    for (int i = from; i < keys.length; i++) {
      l.add(keys[i]);
    }
    out.println(String.join(" ", order(kind, l)));
  }

  /**
   * The order command over stdin, one case a line: "KIND KEY KEY..." with each key escaped as
   * escape() escapes it; prints the iteration order, each key escaped, space-separated.
   */
  static void orders(PrintStream out) throws Exception {
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    StringBuilder b = new StringBuilder();
    for (String line = in.readLine(); line != null; line = in.readLine()) {
      String[] t = line.split(" ");
      List<String> keys = new ArrayList<>();
      for (int i = 1; i < t.length; i++) {
        keys.add(unescape(t[i]));
      }
      List<String> escaped = new ArrayList<>();
      for (String k : order(t[0], keys)) {
        escaped.add(escape(k));
      }
      b.append(String.join(" ", escaped)).append('\n');
    }
    out.print(b);
  }

  /** The inverse of escape(). */
  static String unescape(String s) {
    StringBuilder b = new StringBuilder();
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (c == '\\' && s.charAt(i + 1) == '\\') {
        b.append('\\');
        i++;
      } else if (c == '\\' && s.charAt(i + 1) == 'u') {
        b.append((char) Integer.parseInt(s.substring(i + 2, i + 6), 16));
        i += 5;
      } else {
        b.append(c);
      }
    }
    return b.toString();
  }

  /** The iteration order of the container KIND filled with these keys in this order. */
  static List<String> order(String kind, List<String> keys) throws Exception {
    List<String> order = new ArrayList<>();
    switch (kind) {
    case "chm": {
      ConcurrentHashMap<String, Boolean> m = new ConcurrentHashMap<>();
      for (String k : keys) {
        m.putIfAbsent(k, true);
      }
      order.addAll(m.keySet());
      break;
    }
    case "status": {
      ConcurrentHashMap<Status, Boolean> m = new ConcurrentHashMap<>();
      for (String k : keys) {
        m.putIfAbsent((Status) Status.class.getField(k).get(null), true);
      }
      for (Status s : m.keySet()) {
        order.add(s.getName());
      }
      break;
    }
    case "hashmap": {
      HashMap<String, Boolean> m = new HashMap<>();
      for (String k : keys) {
        m.put(k, true);
      }
      order.addAll(m.keySet());
      break;
    }
    case "hashset": {
      order.addAll(new HashSet<>(keys));
      break;
    }
    case "properties": {
      Properties p = new Properties();
      for (String k : keys) {
        p.setProperty(k, "v");
      }
      for (Enumeration<?> e = p.propertyNames(); e.hasMoreElements();) {
        order.add((String) e.nextElement());
      }
      break;
    }
    default:
      throw new IllegalArgumentException("unknown container " + kind);
    }
    return order;
  }

  /** Drops YCSB's Measurements singleton, so the next getMeasurements() uses new properties. */
  static void resetMeasurements() throws Exception {
    Field f = Measurements.class.getDeclaredField("singleton");
    f.setAccessible(true);
    f.set(null, null);
  }

  /**
   * The report script, one command per line:
   *   begin NAME=VALUE...   new measurements with these properties
   *   m OP US | i OP US | s OP STATUS   measure, measureIntended, reportStatus
   *   summary               Measurements.getSummary()
   *   status LABEL START INTERVAL_START END LAST_TOTAL DONE/OPCOUNT,...   one status line
   *   export OPCOUNT RUNTIME_MS         Client's report (the exporter named by the properties)
   * Each output block starts with "=== <command>" and ends with "=== end".
   */
  static void report(PrintStream out) throws Exception {
    // What YCSB itself prints to stdout (raw measurements) comes out as a "=== stdout" block
    // before each export.
    ByteArrayOutputStream captured = new ByteArrayOutputStream();
    System.setOut(new PrintStream(captured, true, "UTF-8"));
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    Properties p = new Properties();
    Measurements m = null;
    String line;
    while ((line = in.readLine()) != null) {
      if (line.isBlank() || line.startsWith("#")) {
        continue;
      }
      String[] t = line.split(" ");
      switch (t[0]) {
      case "begin":
        p = new Properties();
        for (int i = 1; i < t.length; i++) {
          int eq = t[i].indexOf('=');
          p.setProperty(t[i].substring(0, eq), t[i].substring(eq + 1));
        }
        Measurements.setProperties(p);
        resetMeasurements();
        m = Measurements.getMeasurements();
        break;
      case "m":
        m.measure(t[1], Integer.parseInt(t[2]));
        break;
      case "i":
        m.measureIntended(t[1], Integer.parseInt(t[2]));
        break;
      case "s":
        m.reportStatus(t[1], (Status) Status.class.getField(t[2]).get(null));
        break;
      case "summary":
        out.println("=== summary");
        out.println(m.getSummary());
        out.println("=== end");
        break;
      case "status":
        out.println("=== status");
        out.println(statusLine(p, t));
        out.println("=== end");
        break;
      case "export":
        String text = export(p, Integer.parseInt(t[1]), Long.parseLong(t[2]));
        out.println("=== stdout");
        out.print(captured.toString("UTF-8"));
        out.println("=== end");
        captured.reset();
        out.println("=== export");
        out.print(text);
        out.println("=== end");
        break;
      default:
        throw new IllegalArgumentException("unknown report command " + t[0]);
      }
    }
  }

  static String statusLine(Properties p, String[] t) throws Exception {
    String label = t[1].equals("-") ? "" : t[1];
    long start = Long.parseLong(t[2]);
    long intervalStart = Long.parseLong(t[3]);
    long end = Long.parseLong(t[4]);
    long lastTotal = Long.parseLong(t[5]);
    List<ClientThread> clients = new ArrayList<>();
    Field done = ClientThread.class.getDeclaredField("opsdone");
    done.setAccessible(true);
    for (String c : t[6].split(",")) {
      String[] dt = c.split("/");
      ClientThread ct = new ClientThread(null, true, null, p, Integer.parseInt(dt[1]), -1,
          new CountDownLatch(1));
      done.setInt(ct, Integer.parseInt(dt[0]));
      clients.add(ct);
    }
    StatusThread st = new StatusThread(new CountDownLatch(1), clients, label, false, 10);
    Method compute = StatusThread.class.getDeclaredMethod("computeStats", long.class, long.class,
        long.class, long.class);
    compute.setAccessible(true);
    PrintStream err = System.err;
    ByteArrayOutputStream buf = new ByteArrayOutputStream();
    System.setErr(new PrintStream(buf, true, "UTF-8"));
    try {
      compute.invoke(st, start, intervalStart, end, lastTotal);
    } finally {
      System.setErr(err);
    }
    return buf.toString("UTF-8").replaceAll("\\R$", "");
  }

  static String export(Properties p, int opcount, long runtime) throws Exception {
    Path file = Files.createTempFile("ycsb-oracle", ".out");
    Properties q = new Properties();
    q.putAll(p);
    q.setProperty("exportfile", file.toString());
    Method exp = Client.class.getDeclaredMethod("exportMeasurements", Properties.class, int.class,
        long.class);
    exp.setAccessible(true);
    exp.invoke(null, q, opcount, runtime);
    String text = new String(Files.readAllBytes(file), StandardCharsets.UTF_8);
    Files.delete(file);
    // The end of the file, exactly: whether the exporter ends with a newline.
    return text + "<EOF>\n";
  }

}
