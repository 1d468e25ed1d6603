// The interop suite's Java side (tests/interop.rs): the Java HBase client (hbase-shaded-client)
// as the oracle. It replays a spec of writes against one table and dumps the results of a list
// of gets and scans in a canonical text form, which the Rust side produces too; the test
// compares the dumps. tests/mutator.rs uses it too, to see how Java's BufferedMutator cuts a
// flush into requests (`multis`). Our own program, written for this project. Run through
// tests/java/interop/run --zk HOST:PORT SPEC.
//
// Spec: one command per line, tokens separated by single spaces; '#' starts a comment line.
//   bytes     x<hex> (x alone is empty); a value may also be fill:<length>:<seed> (see fill())
//   ts        a timestamp in ms, or - for "none" (the server's clock, or the latest version)
//   table NS:NAME                       the table the following commands use
//   log FILE                            where the write outcomes go (written at the end)
//   put ROW TS (FAM QUAL TS VALUE)+     one Put; the first TS is the Put's own
//   delete ROW TS                       the whole row (up to TS)
//   delete-family ROW FAM TS            every column of a family (up to TS)
//   delete-family-version ROW FAM TS    every column of a family, exactly at TS
//   delete-columns ROW FAM QUAL TS      every version of a column (up to TS)
//   delete-column ROW FAM QUAL TS       one version of a column (at TS, or the latest)
//   delete-many ROW TS (TARGET)+        one Delete(row[, ts]) of several targets, in order:
//     family FAM                          addFamily(fam) (at the Delete's TS)
//     family-version FAM TS               addFamilyVersion(fam, ts)
//     columns FAM QUAL                    addColumns(fam, qual) (up to the Delete's TS)
//     column FAM QUAL TS                  addColumn(fam, qual[, ts])
//   increment ROW FAM QUAL AMOUNT       logs the new value
//   append ROW FAM QUAL VALUE           logs the new value
//   check-put ROW FAM QUAL CHECK FAM QUAL VALUE    CHECK: absent, or OP:bytes (value OP current);
//   check-delete ROW FAM QUAL CHECK FAM QUAL       logs whether the mutation was applied
//   batch-begin ... batch-end           the puts and deletes between go as one Table.batch
//   mutator-begin ... mutator-end       ... through one BufferedMutator, flushed at the end
//   multis                              logs "multis N" (the Multi requests this connection has
//                                       sent) and "actions A B ..." (the actions of each, in
//                                       ascending order), from the Java client's own metrics
//                                       (clients 2.5 and 2.6: read by reflection, so that the
//                                       program still compiles against others)
//   snapshot NAME                       Admin.snapshot of the table under NAME (waits until done)
//   dump FILE                           the queries up to `end`, results to FILE:
//     scan [start=B] [stop=B] [stopinclusive] [reversed] [versions=N] [family=B]
//          [column=B:B] [limit=N] [caching=N] [maxsize=N] [timerange=A:B] [filter=F]
//          [batch=N] [allowpartial] [raw] [readtype=stream|pread] [timeline] [nocacheblocks] [metrics]
//       (setBatch, setAllowPartialResults(true), setRaw(true), setReadType, setConsistency
//       (TIMELINE), setCacheBlocks(false))
//     get ROW [versions=N] [family=B] [column=B:B] [timerange=A:B] [filter=F] [timeline]
//     scan-proto ..., get-proto ...   the same options; "proto <bytes>": the ClientProtos.Scan
//                                     or .Get the client's ProtobufUtil makes (what it sends)
//   filters F: prefix(B) page(N) keyonly(true|false) firstkeyonly() colprefix(B)
//     colrange(B|-,true|false,B|-,true|false) row(OP,C) qualifier(OP,C) value(OP,C)
//     scv(FAM,QUAL,OP,C,filterIfMissing,latestOnly) all(F;F;...) any(F;F;...)
//     comparators C: binary:B binaryprefix:B substring:B regex:B (strings as UTF-8 bytes)
//     OP: LESS LESS_OR_EQUAL EQUAL NOT_EQUAL GREATER_OR_EQUAL GREATER
//
// Dump lines: "# <query line>", then per Result "row <bytes>" (followed by " more" when
// Result.mayHaveMoreCellsInRow(): a piece of a row, from batch or allowpartial) and per cell
// " cell <family> <qualifier> <timestamp> <type> <value>", or "none" for a get without a row.
// A value of up to 48 bytes is written as bytes, a longer one as len=<n>,md5=<hex>.

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hbase.Cell;
import org.apache.hadoop.hbase.CellUtil;
import org.apache.hadoop.hbase.CompareOperator;
import org.apache.hadoop.hbase.HBaseConfiguration;
import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.client.Append;
import org.apache.hadoop.hbase.client.BufferedMutator;
import org.apache.hadoop.hbase.client.CheckAndMutate;
import org.apache.hadoop.hbase.client.Connection;
import org.apache.hadoop.hbase.client.Consistency;
import org.apache.hadoop.hbase.client.ConnectionFactory;
import org.apache.hadoop.hbase.client.Delete;
import org.apache.hadoop.hbase.client.Get;
import org.apache.hadoop.hbase.client.Increment;
import org.apache.hadoop.hbase.client.Mutation;
import org.apache.hadoop.hbase.client.Put;
import org.apache.hadoop.hbase.client.Result;
import org.apache.hadoop.hbase.client.ResultScanner;
import org.apache.hadoop.hbase.client.Row;
import org.apache.hadoop.hbase.client.Scan;
import org.apache.hadoop.hbase.client.Table;
import org.apache.hadoop.hbase.filter.BinaryComparator;
import org.apache.hadoop.hbase.filter.BinaryPrefixComparator;
import org.apache.hadoop.hbase.filter.ByteArrayComparable;
import org.apache.hadoop.hbase.filter.ColumnPrefixFilter;
import org.apache.hadoop.hbase.filter.ColumnRangeFilter;
import org.apache.hadoop.hbase.filter.Filter;
import org.apache.hadoop.hbase.filter.FilterList;
import org.apache.hadoop.hbase.filter.FirstKeyOnlyFilter;
import org.apache.hadoop.hbase.filter.KeyOnlyFilter;
import org.apache.hadoop.hbase.filter.PageFilter;
import org.apache.hadoop.hbase.filter.PrefixFilter;
import org.apache.hadoop.hbase.filter.QualifierFilter;
import org.apache.hadoop.hbase.filter.RegexStringComparator;
import org.apache.hadoop.hbase.filter.RowFilter;
import org.apache.hadoop.hbase.filter.SingleColumnValueFilter;
import org.apache.hadoop.hbase.filter.SubstringComparator;
import org.apache.hadoop.hbase.filter.ValueFilter;
import org.apache.hadoop.hbase.shaded.protobuf.ProtobufUtil;

public class Interop {
  private final Connection conn;
  private TableName tableName;
  private Table table;
  private Path logFile;
  private final List<String> log = new ArrayList<>();
  /** Mutations of an open batch-begin or mutator-begin block, and which of the two it is. */
  private List<Mutation> pending;
  private boolean pendingIsMutator;

  private Interop(Connection conn) {
    this.conn = conn;
  }

  public static void main(String[] args) throws Exception {
    String zk = null;
    Path spec = null;
    for (int i = 0; i < args.length; i++) {
      if (args[i].equals("--zk") && i + 1 < args.length) {
        zk = args[++i];
      } else {
        spec = Path.of(args[i]);
      }
    }
    if (zk == null || spec == null) {
      System.err.println("usage: Interop --zk HOST:PORT[,HOST:PORT] SPEC");
      System.exit(2);
    }
    Configuration conf = HBaseConfiguration.create();
    conf.set("hbase.zookeeper.quorum", zk);
    conf.setInt("hbase.client.retries.number", 10);
    conf.setInt("hbase.client.operation.timeout", 120_000);
    // The connection's own metrics: each Multi request and its number of actions (`multis`).
    conf.setBoolean("hbase.client.metrics.enable", true);
    try (Connection conn = ConnectionFactory.createConnection(conf)) {
      new Interop(conn).run(Files.readAllLines(spec, StandardCharsets.UTF_8));
    }
  }

  private void run(List<String> lines) throws Exception {
    for (int i = 0; i < lines.size(); i++) {
      String line = lines.get(i);
      if (line.isEmpty() || line.startsWith("#")) {
        continue;
      }
      String[] t = line.split(" ");
      try {
        if (t[0].equals("dump")) {
          List<String> out = new ArrayList<>();
          while (!lines.get(++i).equals("end")) {
            query(lines.get(i), out);
          }
          Files.write(Path.of(t[1]), out, StandardCharsets.UTF_8);
        } else {
          command(t);
        }
      } catch (Exception e) {
        throw new IOException("spec line " + (i + 1) + ": " + line, e);
      }
    }
    if (table != null) {
      table.close();
    }
    if (logFile != null) {
      Files.write(logFile, log, StandardCharsets.UTF_8);
    }
  }

  /**
   * Calls the public no-argument method `name` of `target`. The client's metrics classes are
   * private API: their getters exist in the 2.5 and 2.6 clients (not 2.4's, and 3.0 has no
   * ClusterConnection), so `multis` reaches them this way and fails only when it is used.
   */
  private static Object invoke(Object target, String name) throws Exception {
    try {
      java.lang.reflect.Method m = target.getClass().getMethod(name);
      m.setAccessible(true);
      return m.invoke(target);
    } catch (NoSuchMethodException e) {
      throw new IOException("multis: " + target.getClass().getName() + " has no " + name
          + "() in this client version (2.5 or 2.6 needed)", e);
    }
  }

  private void command(String[] t) throws Exception {
    switch (t[0]) {
      case "table":
        if (table != null) {
          table.close();
        }
        tableName = TableName.valueOf(t[1]);
        table = conn.getTable(tableName);
        return;
      case "log":
        logFile = Path.of(t[1]);
        return;
      case "snapshot":
        try (org.apache.hadoop.hbase.client.Admin admin = conn.getAdmin()) {
          admin.snapshot(t[1], tableName);
        }
        return;
      case "batch-begin":
      case "mutator-begin":
        pending = new ArrayList<>();
        pendingIsMutator = t[0].equals("mutator-begin");
        return;
      case "batch-end":
        Object[] results = new Object[pending.size()];
        table.batch(new ArrayList<Row>(pending), results);
        pending = null;
        return;
      case "mutator-end":
        try (BufferedMutator m = conn.getBufferedMutator(tableName)) {
          m.mutate(pending);
          m.flush();
        }
        pending = null;
        return;
      case "multis": {
        // Updated once per Multi request (AbstractRpcClient): the counter by one, the histogram
        // by the request's action count. Its reservoir keeps all samples up to 1,028.
        Object metrics = invoke(conn, "getConnectionMetrics");
        if (metrics == null) {
          throw new IOException("the connection has no metrics (hbase.client.metrics.enable)");
        }
        Object counter =
            ((Map<?, ?>) invoke(metrics, "getRpcCounters")).get("rpcCount_ClientService_Multi");
        long[] sizes = (long[]) invoke(
            invoke(invoke(metrics, "getNumActionsPerServerHist"), "getSnapshot"), "getValues");
        log.add("multis " + (counter == null ? 0 : (Long) invoke(counter, "getCount")));
        log.add(("actions " + Arrays.stream(sizes).sorted().mapToObj(Long::toString)
            .collect(Collectors.joining(" "))).trim());
        return;
      }
      case "increment": {
        Increment inc = new Increment(bytes(t[1])).addColumn(bytes(t[2]), bytes(t[3]),
            Long.parseLong(t[4]));
        Result r = table.increment(inc);
        log.add(String.join(" ", t) + " = " + repr(r.getValue(bytes(t[2]), bytes(t[3]))));
        return;
      }
      case "append": {
        Append app = new Append(bytes(t[1])).addColumn(bytes(t[2]), bytes(t[3]), value(t[4]));
        Result r = table.append(app);
        log.add(String.join(" ", t) + " = " + repr(r.getValue(bytes(t[2]), bytes(t[3]))));
        return;
      }
      case "check-put":
      case "check-delete": {
        byte[] row = bytes(t[1]);
        CheckAndMutate.Builder b = CheckAndMutate.newBuilder(row);
        if (t[4].equals("absent")) {
          b.ifNotExists(bytes(t[2]), bytes(t[3]));
        } else {
          String[] check = t[4].split(":", 2);
          b.ifMatches(bytes(t[2]), bytes(t[3]), CompareOperator.valueOf(check[0]),
              bytes(check[1]));
        }
        CheckAndMutate cm = t[0].equals("check-put")
            ? b.build(new Put(row).addColumn(bytes(t[5]), bytes(t[6]), value(t[7])))
            : b.build(new Delete(row).addColumns(bytes(t[5]), bytes(t[6])));
        boolean applied = table.checkAndMutate(cm).isSuccess();
        log.add(String.join(" ", t) + " = " + applied);
        return;
      }
      default:
        Mutation m = mutation(t);
        if (pending != null) {
          pending.add(m);
        } else if (m instanceof Put) {
          table.put((Put) m);
        } else {
          table.delete((Delete) m);
        }
    }
  }

  /** A put or delete command as a Mutation. */
  private static Mutation mutation(String[] t) {
    byte[] row = bytes(t[1]);
    switch (t[0]) {
      case "put": {
        Put p = t[2].equals("-") ? new Put(row) : new Put(row, Long.parseLong(t[2]));
        for (int i = 3; i + 3 < t.length; i += 4) {
          if (t[i + 2].equals("-")) {
            p.addColumn(bytes(t[i]), bytes(t[i + 1]), value(t[i + 3]));
          } else {
            p.addColumn(bytes(t[i]), bytes(t[i + 1]), Long.parseLong(t[i + 2]), value(t[i + 3]));
          }
        }
        return p;
      }
      case "delete":
        return t[2].equals("-") ? new Delete(row) : new Delete(row, Long.parseLong(t[2]));
      case "delete-family":
        return t[3].equals("-") ? new Delete(row).addFamily(bytes(t[2]))
            : new Delete(row).addFamily(bytes(t[2]), Long.parseLong(t[3]));
      case "delete-family-version":
        return new Delete(row).addFamilyVersion(bytes(t[2]), Long.parseLong(t[3]));
      case "delete-columns":
        return t[4].equals("-") ? new Delete(row).addColumns(bytes(t[2]), bytes(t[3]))
            : new Delete(row).addColumns(bytes(t[2]), bytes(t[3]), Long.parseLong(t[4]));
      case "delete-column":
        return t[4].equals("-") ? new Delete(row).addColumn(bytes(t[2]), bytes(t[3]))
            : new Delete(row).addColumn(bytes(t[2]), bytes(t[3]), Long.parseLong(t[4]));
      case "delete-many":
        return deleteMany(row, t);
      default:
        throw new IllegalArgumentException("unknown command " + t[0]);
    }
  }

  /** `delete-many`: one Delete whose targets are added in the spec's order. */
  private static Delete deleteMany(byte[] row, String[] t) {
    Delete d = t[2].equals("-") ? new Delete(row) : new Delete(row, Long.parseLong(t[2]));
    int i = 3;
    while (i < t.length) {
      switch (t[i]) {
        case "family":
          d.addFamily(bytes(t[i + 1]));
          i += 2;
          break;
        case "family-version":
          d.addFamilyVersion(bytes(t[i + 1]), Long.parseLong(t[i + 2]));
          i += 3;
          break;
        case "columns":
          d.addColumns(bytes(t[i + 1]), bytes(t[i + 2]));
          i += 3;
          break;
        case "column":
          if (t[i + 3].equals("-")) {
            d.addColumn(bytes(t[i + 1]), bytes(t[i + 2]));
          } else {
            d.addColumn(bytes(t[i + 1]), bytes(t[i + 2]), Long.parseLong(t[i + 3]));
          }
          i += 4;
          break;
        default:
          throw new IllegalArgumentException("unknown delete target " + t[i]);
      }
    }
    return d;
  }

  private void query(String line, List<String> out) throws IOException {
    out.add("# " + line);
    String[] t = line.split(" ");
    // The protobuf message the client's ProtobufUtil makes of the Get or Scan, which is what
    // goes in a GetRequest or a (scanner-opening) ScanRequest; no call is made.
    if (t[0].equals("get-proto")) {
      out.add("proto " + hex(ProtobufUtil.toGet(get(t)).toByteArray()));
      return;
    }
    if (t[0].equals("scan-proto")) {
      out.add("proto " + hex(ProtobufUtil.toScan(scan(t)).toByteArray()));
      return;
    }
    if (t[0].equals("get")) {
      Result r = table.get(get(t));
      if (r.isEmpty()) {
        out.add("none");
      } else {
        dumpRow(r, out);
      }
      return;
    }
    try (ResultScanner scanner = table.getScanner(scan(t))) {
      for (Result r : scanner) {
        dumpRow(r, out);
      }
    }
  }

  /** The Get of a get query (t[1] is the row, options follow). */
  private static Get get(String[] t) throws IOException {
    Get g = new Get(bytes(t[1]));
    for (int i = 2; i < t.length; i++) {
      String[] kv = t[i].split("=", 2);
      switch (kv[0]) {
        case "versions": g.readVersions(Integer.parseInt(kv[1])); break;
        case "family": g.addFamily(bytes(kv[1])); break;
        case "column": {
          String[] fq = kv[1].split(":");
          g.addColumn(bytes(fq[0]), bytes(fq[1]));
          break;
        }
        case "timerange": {
          String[] r = kv[1].split(":");
          g.setTimeRange(Long.parseLong(r[0]), Long.parseLong(r[1]));
          break;
        }
        case "filter": g.setFilter(new FilterParser(kv[1]).filter()); break;
        case "timeline": g.setConsistency(Consistency.TIMELINE); break;
        default: throw new IllegalArgumentException("unknown get option " + t[i]);
      }
    }
    return g;
  }

  /** The Scan of a scan query (options from t[1] on). */
  private static Scan scan(String[] t) throws IOException {
    Scan s = new Scan();
    byte[] stop = null;
    boolean stopInclusive = false;
    for (int i = 1; i < t.length; i++) {
      String[] kv = t[i].split("=", 2);
      switch (kv[0]) {
        case "start": s.withStartRow(bytes(kv[1])); break;
        case "stop": stop = bytes(kv[1]); break;
        case "stopinclusive": stopInclusive = true; break;
        case "reversed": s.setReversed(true); break;
        case "versions": s.readVersions(Integer.parseInt(kv[1])); break;
        case "family": s.addFamily(bytes(kv[1])); break;
        case "column": {
          String[] fq = kv[1].split(":");
          s.addColumn(bytes(fq[0]), bytes(fq[1]));
          break;
        }
        case "limit": s.setLimit(Integer.parseInt(kv[1])); break;
        case "caching": s.setCaching(Integer.parseInt(kv[1])); break;
        case "maxsize": s.setMaxResultSize(Long.parseLong(kv[1])); break;
        case "timerange": {
          String[] r = kv[1].split(":");
          s.setTimeRange(Long.parseLong(r[0]), Long.parseLong(r[1]));
          break;
        }
        case "filter": s.setFilter(new FilterParser(kv[1]).filter()); break;
        case "batch": s.setBatch(Integer.parseInt(kv[1])); break;
        case "allowpartial": s.setAllowPartialResults(true); break;
        case "raw": s.setRaw(true); break;
        case "readtype": s.setReadType(Scan.ReadType.valueOf(kv[1].toUpperCase())); break;
        case "timeline": s.setConsistency(Consistency.TIMELINE); break;
        case "nocacheblocks": s.setCacheBlocks(false); break;
        case "metrics": s.setScanMetricsEnabled(true); break;
        default: throw new IllegalArgumentException("unknown scan option " + t[i]);
      }
    }
    if (stop != null) {
      s.withStopRow(stop, stopInclusive);
    }
    return s;
  }

  private static void dumpRow(Result r, List<String> out) {
    out.add("row " + hex(r.getRow()) + (r.mayHaveMoreCellsInRow() ? " more" : ""));
    for (Cell c : r.rawCells()) {
      out.add(" cell " + hex(CellUtil.cloneFamily(c)) + " " + hex(CellUtil.cloneQualifier(c)) + " "
          + c.getTimestamp() + " " + c.getType() + " " + repr(CellUtil.cloneValue(c)));
    }
  }

  /** A filter expression (see the header), read left to right. */
  private static final class FilterParser {
    private final String s;
    private int pos;

    FilterParser(String s) {
      this.s = s;
    }

    Filter filter() {
      int open = s.indexOf('(', pos);
      String name = s.substring(pos, open);
      pos = open + 1;
      if (name.equals("all") || name.equals("any")) {
        List<Filter> parts = new ArrayList<>();
        while (s.charAt(pos) != ')') {
          parts.add(filter());
          if (s.charAt(pos) == ';') {
            pos++;
          }
        }
        pos++;
        return new FilterList(name.equals("all") ? FilterList.Operator.MUST_PASS_ALL
            : FilterList.Operator.MUST_PASS_ONE, parts);
      }
      int close = s.indexOf(')', pos);
      String body = s.substring(pos, close);
      pos = close + 1;
      String[] a = body.isEmpty() ? new String[0] : body.split(",", -1);
      switch (name) {
        case "prefix": return new PrefixFilter(bytes(a[0]));
        case "page": return new PageFilter(Long.parseLong(a[0]));
        case "keyonly": return new KeyOnlyFilter(Boolean.parseBoolean(a[0]));
        case "firstkeyonly": return new FirstKeyOnlyFilter();
        case "colprefix": return new ColumnPrefixFilter(bytes(a[0]));
        case "colrange":
          return new ColumnRangeFilter(a[0].equals("-") ? null : bytes(a[0]),
              Boolean.parseBoolean(a[1]), a[2].equals("-") ? null : bytes(a[2]),
              Boolean.parseBoolean(a[3]));
        case "row": return new RowFilter(CompareOperator.valueOf(a[0]), comparator(a[1]));
        case "qualifier":
          return new QualifierFilter(CompareOperator.valueOf(a[0]), comparator(a[1]));
        case "value": return new ValueFilter(CompareOperator.valueOf(a[0]), comparator(a[1]));
        case "scv": {
          SingleColumnValueFilter f = new SingleColumnValueFilter(bytes(a[0]), bytes(a[1]),
              CompareOperator.valueOf(a[2]), comparator(a[3]));
          f.setFilterIfMissing(Boolean.parseBoolean(a[4]));
          f.setLatestVersionOnly(Boolean.parseBoolean(a[5]));
          return f;
        }
        default: throw new IllegalArgumentException("unknown filter " + name);
      }
    }

    private static ByteArrayComparable comparator(String c) {
      String[] kv = c.split(":", 2);
      switch (kv[0]) {
        case "binary": return new BinaryComparator(bytes(kv[1]));
        case "binaryprefix": return new BinaryPrefixComparator(bytes(kv[1]));
        case "substring":
          return new SubstringComparator(new String(bytes(kv[1]), StandardCharsets.UTF_8));
        case "regex":
          return new RegexStringComparator(new String(bytes(kv[1]), StandardCharsets.UTF_8));
        default: throw new IllegalArgumentException("unknown comparator " + c);
      }
    }
  }

  /** x<hex> as bytes. */
  private static byte[] bytes(String token) {
    if (!token.startsWith("x") || token.length() % 2 == 0) {
      throw new IllegalArgumentException("bad bytes token " + token);
    }
    byte[] b = new byte[(token.length() - 1) / 2];
    for (int i = 0; i < b.length; i++) {
      b[i] = (byte) Integer.parseInt(token.substring(1 + 2 * i, 3 + 2 * i), 16);
    }
    return b;
  }

  /** A value token: bytes, or fill:<length>:<seed>. */
  private static byte[] value(String token) {
    if (token.startsWith("fill:")) {
      String[] p = token.split(":");
      return fill(Integer.parseInt(p[1]), Integer.parseInt(p[2]));
    }
    return bytes(token);
  }

  /** The generated value the Rust side makes the same way: byte i = (seed*7 + i*31 + i/1024). */
  private static byte[] fill(int length, int seed) {
    byte[] b = new byte[length];
    for (int i = 0; i < length; i++) {
      b[i] = (byte) (seed * 7 + i * 31 + i / 1024);
    }
    return b;
  }

  private static String hex(byte[] b) {
    StringBuilder sb = new StringBuilder("x");
    for (byte x : b) {
      sb.append(String.format("%02x", x & 0xff));
    }
    return sb.toString();
  }

  private static String repr(byte[] v) {
    if (v == null) {
      return "missing";
    }
    if (v.length <= 48) {
      return hex(v);
    }
    try {
      byte[] d = MessageDigest.getInstance("MD5").digest(v);
      return "len=" + v.length + ",md5=" + hex(d).substring(1);
    } catch (java.security.NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }
}
