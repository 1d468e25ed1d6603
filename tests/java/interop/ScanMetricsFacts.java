// The scan-metrics oracle (tests/scan_metrics.rs): the Java client's own ScanMetrics of a list
// of scans against a table of the test cluster. Each scan runs with setScanMetricsEnabled(true)
// through Table.getScanner, every result is read, the scanner is closed (a close RPC, when the
// client sends one, is counted then), and ResultScanner.getScanMetrics().getMetricsMap(false) is
// printed: every key the Java client reports, zeros included. Our own program, written for
// this project. Run through
// tests/java/interop/run --program ScanMetricsFacts.java --zk HOST:PORT SPEC.
//
// SPEC: "table NS:NAME" on the first line, then one scan per line, tokens separated by single
// spaces, bytes as x<hex> (x alone is empty):
//   scan [start=B] [stop=B] [reversed] [limit=N] [caching=N] [maxsize=N] [batch=N]
//        [allowpartial] [valueregex=B]
// (valueregex: a ValueFilter(EQUAL, RegexStringComparator(B as UTF-8)), which drops the rows
// none of whose cells match.)
//
// Output, one line per scan: "results=R NAME=V NAME=V ...", R the number of Results the
// scanner returned, the metrics sorted by name.

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hbase.CompareOperator;
import org.apache.hadoop.hbase.HBaseConfiguration;
import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.client.Connection;
import org.apache.hadoop.hbase.client.ConnectionFactory;
import org.apache.hadoop.hbase.client.Result;
import org.apache.hadoop.hbase.client.ResultScanner;
import org.apache.hadoop.hbase.client.Scan;
import org.apache.hadoop.hbase.client.Table;
import org.apache.hadoop.hbase.filter.RegexStringComparator;
import org.apache.hadoop.hbase.filter.ValueFilter;

public class ScanMetricsFacts {
  public static void main(String[] args) throws Exception {
    if (args.length != 3 || !args[0].equals("--zk")) {
      System.err.println("usage: ScanMetricsFacts --zk HOST:PORT[,HOST:PORT] SPEC");
      System.exit(2);
    }
    List<String> lines = Files.readAllLines(Path.of(args[2]), StandardCharsets.UTF_8);
    Configuration conf = HBaseConfiguration.create();
    conf.set("hbase.zookeeper.quorum", args[1]);
    StringBuilder out = new StringBuilder();
    try (Connection conn = ConnectionFactory.createConnection(conf)) {
      String[] head = lines.get(0).split(" ");
      if (!head[0].equals("table")) {
        throw new IllegalArgumentException("the spec starts with \"table NS:NAME\"");
      }
      try (Table table = conn.getTable(TableName.valueOf(head[1]))) {
        for (String line : lines.subList(1, lines.size())) {
          if (line.isEmpty()) {
            continue;
          }
          out.append(run(table, scan(line.split(" ")))).append('\n');
        }
      }
    }
    System.out.print(out);
  }

  /** Runs `scan` to its end: the results count and the metrics, as one output line. */
  private static String run(Table table, Scan scan) throws IOException {
    scan.setScanMetricsEnabled(true);
    long results = 0;
    ResultScanner scanner = table.getScanner(scan);
    try {
      for (Result r = scanner.next(); r != null; r = scanner.next()) {
        results++;
      }
    } finally {
      scanner.close();
    }
    // Read once, after the close: the map of every counter the client made, zeros included.
    Map<String, Long> metrics = new TreeMap<>(scanner.getScanMetrics().getMetricsMap(false));
    StringBuilder line = new StringBuilder("results=").append(results);
    metrics.forEach((k, v) -> line.append(' ').append(k).append('=').append(v));
    return line.toString();
  }

  /** The Scan of a spec line (options from t[1] on). */
  private static Scan scan(String[] t) {
    if (!t[0].equals("scan")) {
      throw new IllegalArgumentException("not a scan line: " + String.join(" ", t));
    }
    Scan s = new Scan();
    for (int i = 1; i < t.length; i++) {
      String[] kv = t[i].split("=", 2);
      switch (kv[0]) {
        case "start": s.withStartRow(bytes(kv[1])); break;
        case "stop": s.withStopRow(bytes(kv[1])); break;
        case "reversed": s.setReversed(true); break;
        case "limit": s.setLimit(Integer.parseInt(kv[1])); break;
        case "caching": s.setCaching(Integer.parseInt(kv[1])); break;
        case "maxsize": s.setMaxResultSize(Long.parseLong(kv[1])); break;
        case "batch": s.setBatch(Integer.parseInt(kv[1])); break;
        case "allowpartial": s.setAllowPartialResults(true); break;
        case "valueregex":
          s.setFilter(new ValueFilter(CompareOperator.EQUAL,
              new RegexStringComparator(new String(bytes(kv[1]), StandardCharsets.UTF_8))));
          break;
        default: throw new IllegalArgumentException("unknown scan option " + t[i]);
      }
    }
    return s;
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
}
