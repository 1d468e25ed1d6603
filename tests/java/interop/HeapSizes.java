// The heap sizes the Java client gives mutations (tests/heap_size.rs): the oracle for our
// `Mutation::heap_size`, which a BufferedMutator's write buffer counts as Java's counts
// `Mutation.heapSize()`. Our own program, written for this project. Needs no cluster. Run
// through tests/java/interop/run --program HeapSizes.java SPEC.
//
// Spec: one mutation per line, tokens separated by single spaces; '#' starts a comment line.
//   bytes   x<hex> (x alone is empty), or n:<length> (that many bytes 'v')
//   ts      a timestamp in ms, or - for none
//   put ROW TS (FAM QUAL TS VALUE)+          Put(row[, ts]), addColumn(fam, qual[, ts], value)
//   delete ROW TS (TARGET)*                  Delete(row[, ts]) and its targets, in order:
//     family FAM TS                            addFamily(fam[, ts])
//     family-version FAM TS                    addFamilyVersion(fam, ts)
//     columns FAM QUAL TS                      addColumns(fam, qual[, ts])
//     column FAM QUAL TS                       addColumn(fam, qual[, ts])
//   increment ROW (FAM QUAL AMOUNT)+         Increment(row), addColumn(fam, qual, amount)
//   append ROW (FAM QUAL VALUE)+             Append(row), addColumn(fam, qual, value)
//   classsize                                ClassSize's figures on this JVM (a comment line)
//
// Output: one line per mutation, its heapSize().
//
// tests/java/interop/run --program HeapSizes.java --zk HOST:PORT --flushes TABLE BUFFER PUTS:
// Java's BufferedMutator with a write buffer of BUFFER bytes gets PUTS puts shaped as YCSB's
// (row "user" and 19 digits, ten 100-byte fields in family cf); prints "flushes" and the
// numbers of the puts after which its buffer was flushed (its current size fell).

import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hbase.HBaseConfiguration;
import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.client.Append;
import org.apache.hadoop.hbase.client.BufferedMutator;
import org.apache.hadoop.hbase.client.BufferedMutatorImpl;
import org.apache.hadoop.hbase.client.BufferedMutatorParams;
import org.apache.hadoop.hbase.client.Connection;
import org.apache.hadoop.hbase.client.ConnectionFactory;
import org.apache.hadoop.hbase.client.Delete;
import org.apache.hadoop.hbase.client.Increment;
import org.apache.hadoop.hbase.client.Mutation;
import org.apache.hadoop.hbase.client.Put;
import org.apache.hadoop.hbase.util.ClassSize;

public class HeapSizes {
  static byte[] bytes(String token) {
    if (token.startsWith("n:")) {
      byte[] b = new byte[Integer.parseInt(token.substring(2))];
      Arrays.fill(b, (byte) 'v');
      return b;
    }
    if (!token.startsWith("x")) {
      throw new IllegalArgumentException("bytes are x<hex> or n:<length>: " + token);
    }
    String hex = token.substring(1);
    byte[] b = new byte[hex.length() / 2];
    for (int i = 0; i < b.length; i++) {
      b[i] = (byte) Integer.parseInt(hex.substring(2 * i, 2 * i + 2), 16);
    }
    return b;
  }

  static boolean none(String ts) {
    return ts.equals("-");
  }

  static Mutation mutation(String[] t) {
    switch (t[0]) {
      case "put": {
        Put p = none(t[2]) ? new Put(bytes(t[1])) : new Put(bytes(t[1]), Long.parseLong(t[2]));
        for (int i = 3; i < t.length; i += 4) {
          byte[] f = bytes(t[i]);
          byte[] q = bytes(t[i + 1]);
          byte[] v = bytes(t[i + 3]);
          if (none(t[i + 2])) {
            p.addColumn(f, q, v);
          } else {
            p.addColumn(f, q, Long.parseLong(t[i + 2]), v);
          }
        }
        return p;
      }
      case "delete": {
        Delete d =
          none(t[2]) ? new Delete(bytes(t[1])) : new Delete(bytes(t[1]), Long.parseLong(t[2]));
        int i = 3;
        while (i < t.length) {
          String kind = t[i];
          byte[] f = bytes(t[i + 1]);
          if (kind.equals("family") || kind.equals("family-version")) {
            String ts = t[i + 2];
            if (kind.equals("family-version")) {
              d.addFamilyVersion(f, Long.parseLong(ts));
            } else if (none(ts)) {
              d.addFamily(f);
            } else {
              d.addFamily(f, Long.parseLong(ts));
            }
            i += 3;
          } else {
            byte[] q = bytes(t[i + 2]);
            String ts = t[i + 3];
            boolean all = kind.equals("columns");
            if (!all && !kind.equals("column")) {
              throw new IllegalArgumentException("unknown delete target " + kind);
            }
            if (none(ts)) {
              if (all) {
                d.addColumns(f, q);
              } else {
                d.addColumn(f, q);
              }
            } else if (all) {
              d.addColumns(f, q, Long.parseLong(ts));
            } else {
              d.addColumn(f, q, Long.parseLong(ts));
            }
            i += 4;
          }
        }
        return d;
      }
      case "increment": {
        Increment inc = new Increment(bytes(t[1]));
        for (int i = 2; i < t.length; i += 3) {
          inc.addColumn(bytes(t[i]), bytes(t[i + 1]), Long.parseLong(t[i + 2]));
        }
        return inc;
      }
      case "append": {
        Append a = new Append(bytes(t[1]));
        for (int i = 2; i < t.length; i += 3) {
          a.addColumn(bytes(t[i]), bytes(t[i + 1]), bytes(t[i + 2]));
        }
        return a;
      }
      default:
        throw new IllegalArgumentException("unknown mutation " + t[0]);
    }
  }

  static void flushes(String zk, String table, long buffer, int puts) throws Exception {
    Configuration conf = HBaseConfiguration.create();
    conf.set("hbase.zookeeper.quorum", zk);
    StringBuilder out = new StringBuilder("flushes");
    byte[] value = new byte[100];
    Arrays.fill(value, (byte) 'v');
    try (Connection conn = ConnectionFactory.createConnection(conf);
      BufferedMutator m = conn.getBufferedMutator(
        new BufferedMutatorParams(TableName.valueOf(table)).writeBufferSize(buffer))) {
      // Package-private in 2.6: read by reflection.
      Method current = BufferedMutatorImpl.class.getDeclaredMethod("getCurrentWriteBufferSize");
      current.setAccessible(true);
      for (int i = 1; i <= puts; i++) {
        Put p = new Put(String.format("user%019d", i).getBytes(StandardCharsets.UTF_8));
        for (int f = 0; f < 10; f++) {
          p.addColumn("cf".getBytes(StandardCharsets.UTF_8),
            ("field" + f).getBytes(StandardCharsets.UTF_8), value);
        }
        long before = (Long) current.invoke(m);
        m.mutate(p);
        if ((Long) current.invoke(m) < before + p.heapSize()) {
          out.append(' ').append(i);
        }
      }
    }
    System.out.println(out);
  }

  public static void main(String[] args) throws Exception {
    if (args[0].equals("--zk")) {
      flushes(args[1], args[3], Long.parseLong(args[4]), Integer.parseInt(args[5]));
      return;
    }
    StringBuilder out = new StringBuilder();
    for (String line : Files.readAllLines(Path.of(args[0]), StandardCharsets.UTF_8)) {
      if (line.isEmpty() || line.startsWith("#")) {
        continue;
      }
      if (line.equals("classsize")) {
        out.append("# OBJECT=").append(ClassSize.OBJECT).append(" REFERENCE=")
          .append(ClassSize.REFERENCE).append(" ARRAY=").append(ClassSize.ARRAY)
          .append(" ARRAYLIST=").append(ClassSize.ARRAYLIST).append(" MAP_ENTRY=")
          .append(ClassSize.MAP_ENTRY).append(" TREEMAP=").append(ClassSize.TREEMAP)
          .append(" INTEGER=").append(ClassSize.INTEGER).append(" TIMERANGE=")
          .append(ClassSize.TIMERANGE).append(" MUTATION_OVERHEAD=")
          .append(Mutation.MUTATION_OVERHEAD).append('\n');
        continue;
      }
      out.append(mutation(line.split(" ", -1)).heapSize()).append('\n');
    }
    System.out.print(out);
  }
}
