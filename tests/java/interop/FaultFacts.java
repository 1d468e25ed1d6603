// The Java client under the same faults as ours (tests/retries_java.rs): hbase-shaded-client from
// Maven Central runs one operation per command line read from standard input and answers one
// line per command, while the Rust test switches faults in the fault proxy
// (tests/support/proxy.rs) in front of the region servers. Our own program, written for this
// project. Run through
//   tests/java/interop/run --program FaultFacts.java --zk HOST:PORT --remap FROM=TO,... \
//       --rpc-timeout MS --operation-timeout MS [--failed-servers-expiry MS]
//
// --remap sends every connection to a server FROM (host:port as the server advertises it) to
// TO, the proxy's listener for it. The Java client has no address mapper of its own; its
// blocking RPC client (hbase.rpc.client.impl = BlockingRpcClient) opens its sockets through
// Hadoop's socket factory (hadoop.rpc.socket.factory.class.default), and the factory here
// connects them to the proxy instead. The transport differs from the default Netty client's;
// the retrying above it (RpcRetryingCallerImpl, AsyncProcess) is the same code.
//
// Commands (tokens separated by single spaces; rows, families, qualifiers and values are
// UTF-8 text without spaces):
//   increment TABLE ROW FAM QUAL AMOUNT          ok <new value>
//   append TABLE ROW FAM QUAL VALUE              ok <new value>
//   put TABLE ROW FAM QUAL VALUE                 ok
//   delete-newest TABLE ROW FAM QUAL             ok   (the column's newest version)
//   delete-version TABLE ROW FAM QUAL TS         ok   (exactly that version)
//   check-put TABLE ROW FAM QUAL EXPECTED VALUE  ok true|false  (put VALUE if QUAL == EXPECTED)
//   get TABLE ROW                                ok <cells>
//   scan TABLE ROW                               ok <rows>  (from ROW to ROW~)
//   batch-put TABLE ROW FAM QUAL VALUE           ok   (one put through Table.batch)
//   mutator-put TABLE ROW FAM QUAL VALUE         ok   (one put through a BufferedMutator, flushed)
//   operation-timeout MS                         ok   (for the tables of the commands after it;
//                                                     a BufferedMutator keeps the connection's)
//   rpc-timeout MS                               ok   (the same, for each call's timeout)
//   quit
// A failure answers "error" and the exception's class chain, outermost first
// ("error RetriesExhaustedException<CallTimeoutException").

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import javax.net.SocketFactory;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hbase.HBaseConfiguration;
import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.client.Append;
import org.apache.hadoop.hbase.client.BufferedMutator;
import org.apache.hadoop.hbase.client.CheckAndMutate;
import org.apache.hadoop.hbase.client.Connection;
import org.apache.hadoop.hbase.client.ConnectionFactory;
import org.apache.hadoop.hbase.client.Delete;
import org.apache.hadoop.hbase.client.Get;
import org.apache.hadoop.hbase.client.Put;
import org.apache.hadoop.hbase.client.Result;
import org.apache.hadoop.hbase.client.ResultScanner;
import org.apache.hadoop.hbase.client.Row;
import org.apache.hadoop.hbase.client.Scan;
import org.apache.hadoop.hbase.client.Table;
import org.apache.hadoop.hbase.util.Bytes;

public class FaultFacts {
  /** Where each server's connections go: "host:port" as advertised, to the proxy's listener. */
  static final Map<String, InetSocketAddress> REMAP = new HashMap<>();

  /** Hadoop's socket factory for the blocking RPC client: sockets that connect to the proxy. */
  public static class ProxySockets extends SocketFactory {
    @Override
    public Socket createSocket() {
      return new Socket() {
        @Override
        public void connect(SocketAddress to, int timeout) throws IOException {
          super.connect(remapped(to), timeout);
        }

        @Override
        public void connect(SocketAddress to) throws IOException {
          super.connect(remapped(to));
        }
      };
    }

    // The RPC client only ever asks for an unconnected socket; SocketFactory's other four
    // methods are abstract.
    @Override
    public Socket createSocket(String h, int p) throws IOException { throw unexpected(); }

    @Override
    public Socket createSocket(String h, int p, InetAddress l, int lp) throws IOException { throw unexpected(); }

    @Override
    public Socket createSocket(InetAddress h, int p) throws IOException { throw unexpected(); }

    @Override
    public Socket createSocket(InetAddress h, int p, InetAddress l, int lp) throws IOException { throw unexpected(); }

    static IOException unexpected() {
      return new IOException("FaultFacts: the RPC client asked for a connected socket");
    }
  }

  /** The operation timeout of the tables the commands use (the "operation-timeout" command). */
  static int operationTimeout;

  /** The RPC timeout of the tables the commands use (the "rpc-timeout" command). */
  static int rpcTimeout;

  /** The tables' pool (for batches); a table from a builder needs one of its own. */
  static final ExecutorService POOL = Executors.newCachedThreadPool(r -> {
    Thread t = new Thread(r, "fault-facts-table");
    t.setDaemon(true);
    return t;
  });

  static Table table(Connection conn, TableName tn) {
    return conn.getTableBuilder(tn, POOL).setOperationTimeout(operationTimeout)
        .setRpcTimeout(rpcTimeout).setReadRpcTimeout(rpcTimeout).setWriteRpcTimeout(rpcTimeout)
        .build();
  }

  static SocketAddress remapped(SocketAddress to) throws IOException {
    if (!(to instanceof InetSocketAddress)) {
      return to;
    }
    InetSocketAddress a = (InetSocketAddress) to;
    InetSocketAddress via = REMAP.get(a.getHostString() + ":" + a.getPort());
    if (via == null) {
      // Every server must go through the proxy, or a fault would miss it.
      throw new IOException("FaultFacts: no proxy listener for " + a.getHostString() + ":" + a.getPort());
    }
    return via;
  }

  public static void main(String[] args) throws Exception {
    String zk = null;
    String rpcTimeout = "2000";
    String operationTimeout = "30000";
    String failedServersExpiry = null;
    for (int i = 0; i < args.length; i++) {
      switch (args[i]) {
        case "--zk": zk = args[++i]; break;
        case "--rpc-timeout": rpcTimeout = args[++i]; break;
        case "--operation-timeout": operationTimeout = args[++i]; break;
        case "--failed-servers-expiry": failedServersExpiry = args[++i]; break;
        case "--remap":
          for (String pair : args[++i].split(",")) {
            String[] p = pair.split("=", 2);
            int colon = p[1].lastIndexOf(':');
            REMAP.put(p[0], new InetSocketAddress(p[1].substring(0, colon),
                Integer.parseInt(p[1].substring(colon + 1))));
          }
          break;
        default: throw new IllegalArgumentException("unknown argument " + args[i]);
      }
    }
    if (zk == null) {
      throw new IllegalArgumentException("--zk HOST:PORT is needed");
    }
    Configuration conf = HBaseConfiguration.create();
    int colon = zk.lastIndexOf(':');
    conf.set("hbase.zookeeper.quorum", zk.substring(0, colon));
    conf.set("hbase.zookeeper.property.clientPort", zk.substring(colon + 1));
    conf.set("hbase.rpc.client.impl", "org.apache.hadoop.hbase.ipc.BlockingRpcClient");
    conf.set("hadoop.rpc.socket.factory.class.default", ProxySockets.class.getName());
    // The factory is a class of this program, which the source launcher loads itself.
    conf.setClassLoader(FaultFacts.class.getClassLoader());
    conf.set("hbase.rpc.timeout", rpcTimeout);
    conf.set("hbase.rpc.read.timeout", rpcTimeout);
    conf.set("hbase.rpc.write.timeout", rpcTimeout);
    conf.set("hbase.client.operation.timeout", operationTimeout);
    FaultFacts.operationTimeout = Integer.parseInt(operationTimeout);
    FaultFacts.rpcTimeout = Integer.parseInt(rpcTimeout);
    if (failedServersExpiry != null) {
      conf.set("hbase.ipc.client.failed.servers.expiry", failedServersExpiry);
    }
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    try (Connection conn = ConnectionFactory.createConnection(conf)) {
      System.out.println("ready");
      System.out.flush();
      String line;
      while ((line = in.readLine()) != null) {
        if (line.equals("quit")) {
          break;
        }
        String answer;
        try {
          answer = "ok" + run(conn, line.split(" "));
        } catch (Exception e) {
          StringBuilder chain = new StringBuilder("error ");
          for (Throwable t = e; t != null; t = t.getCause()) {
            if (t != e) {
              chain.append('<');
            }
            chain.append(t.getClass().getSimpleName());
            if (t.getCause() == t) {
              break;
            }
          }
          answer = chain.toString();
        }
        System.out.println(answer);
        System.out.flush();
      }
    }
  }

  static byte[] b(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  /** Runs one command; what follows "ok" in the answer. */
  static String run(Connection conn, String[] c) throws Exception {
    if (c[0].equals("operation-timeout")) {
      operationTimeout = Integer.parseInt(c[1]);
      return "";
    }
    if (c[0].equals("rpc-timeout")) {
      rpcTimeout = Integer.parseInt(c[1]);
      return "";
    }
    TableName tn = TableName.valueOf(c[1]);
    byte[] row = b(c[2]);
    switch (c[0]) {
      case "increment":
        try (Table t = table(conn, tn)) {
          return " " + t.incrementColumnValue(row, b(c[3]), b(c[4]), Long.parseLong(c[5]));
        }
      case "append":
        try (Table t = table(conn, tn)) {
          Result r = t.append(new Append(row).addColumn(b(c[3]), b(c[4]), b(c[5])));
          return " " + Bytes.toString(r.getValue(b(c[3]), b(c[4])));
        }
      case "put":
        try (Table t = table(conn, tn)) {
          t.put(new Put(row).addColumn(b(c[3]), b(c[4]), b(c[5])));
          return "";
        }
      case "delete-newest":
        try (Table t = table(conn, tn)) {
          t.delete(new Delete(row).addColumn(b(c[3]), b(c[4])));
          return "";
        }
      case "delete-version":
        try (Table t = table(conn, tn)) {
          t.delete(new Delete(row).addColumn(b(c[3]), b(c[4]), Long.parseLong(c[5])));
          return "";
        }
      case "check-put":
        try (Table t = table(conn, tn)) {
          CheckAndMutate cam = CheckAndMutate.newBuilder(row).ifEquals(b(c[3]), b(c[4]), b(c[5]))
              .build(new Put(row).addColumn(b(c[3]), b(c[4]), b(c[6])));
          return " " + t.checkAndMutate(cam).isSuccess();
        }
      case "get":
        try (Table t = table(conn, tn)) {
          return " " + t.get(new Get(row)).size();
        }
      case "scan":
        try (Table t = table(conn, tn);
            ResultScanner rs = t.getScanner(new Scan().withStartRow(row).withStopRow(b(c[2] + "~")))) {
          int rows = 0;
          while (rs.next() != null) {
            rows++;
          }
          return " " + rows;
        }
      case "batch-put":
        try (Table t = table(conn, tn)) {
          List<Row> actions = new ArrayList<>();
          actions.add(new Put(row).addColumn(b(c[3]), b(c[4]), b(c[5])));
          t.batch(actions, new Object[1]);
          return "";
        }
      case "mutator-put":
        try (BufferedMutator m = conn.getBufferedMutator(tn)) {
          m.mutate(new Put(row).addColumn(b(c[3]), b(c[4]), b(c[5])));
          m.flush();
          return "";
        }
      default:
        throw new IllegalArgumentException("unknown command " + c[0]);
    }
  }
}
