/*
 * A YCSB DB binding for HBase 2.x on the standard Java client (hbase-shaded-client), written for
 * benches/compare-java because site.ycsb:hbase20-binding:0.17.0 is not on Maven Central.
 *
 * It does what YCSB's HBase 1.0/2.0 bindings do, call for call, so that the Java side of the
 * comparison pays exactly the Java client's costs:
 *   - one Connection for the whole process (created by the first thread, closed by the last);
 *     one Table and, with clientbuffering=true, one BufferedMutator per client thread;
 *   - read   -> Table.get(Get) with addFamily (all fields) or addColumn per field; an empty
 *               Result is NOT_FOUND; cells are copied into the result map;
 *   - scan   -> Scan from the start key, caching = count, PageFilter(count) unless
 *               hbase.usepagefilter=false, stop after count rows;
 *   - insert, update -> a Put with one column per field and the configured durability,
 *               through the thread's BufferedMutator if buffering, else Table.put;
 *   - delete -> a Delete, through the mutator if buffering, else Table.delete;
 *   - cleanup: the time to close the mutator and the table is measured as UPDATE when
 *               buffering (CLEANUP otherwise), as the YCSB binding does.
 * Properties: columnfamily (required), table, clientbuffering (default false, as YCSB's code),
 * writebuffersize (12 MiB), durability, hbase.usepagefilter. The cluster comes from
 * hbase-site.xml on the classpath.
 */
package hbasers.compare;

import java.io.IOException;
import java.util.HashMap;
import java.util.Map;
import java.util.Set;
import java.util.Vector;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hbase.Cell;
import org.apache.hadoop.hbase.CellUtil;
import org.apache.hadoop.hbase.HBaseConfiguration;
import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.client.Admin;
import org.apache.hadoop.hbase.client.BufferedMutator;
import org.apache.hadoop.hbase.client.BufferedMutatorParams;
import org.apache.hadoop.hbase.client.Connection;
import org.apache.hadoop.hbase.client.ConnectionFactory;
import org.apache.hadoop.hbase.client.Delete;
import org.apache.hadoop.hbase.client.Durability;
import org.apache.hadoop.hbase.client.Get;
import org.apache.hadoop.hbase.client.Put;
import org.apache.hadoop.hbase.client.Result;
import org.apache.hadoop.hbase.client.ResultScanner;
import org.apache.hadoop.hbase.client.Scan;
import org.apache.hadoop.hbase.client.Table;
import org.apache.hadoop.hbase.filter.PageFilter;
import org.apache.hadoop.hbase.util.Bytes;

import site.ycsb.ByteArrayByteIterator;
import site.ycsb.ByteIterator;
import site.ycsb.DB;
import site.ycsb.DBException;
import site.ycsb.Status;
import site.ycsb.measurements.Measurements;

public class JavaHBaseDB extends DB {
  private static final Object SHARED_LOCK = new Object();
  private static Connection shared;
  private static int users;

  private boolean buffering;
  private long bufferSize = 12L * 1024 * 1024;
  private Durability durability = Durability.USE_DEFAULT;
  private boolean pageFilter = true;
  private byte[] family;
  private TableName tableName;
  private Table table;
  private BufferedMutator mutator;

  @Override
  public void init() throws DBException {
    String cf = getProperties().getProperty("columnfamily");
    if (cf == null || cf.isEmpty()) {
      throw new DBException("columnfamily is required");
    }
    family = Bytes.toBytes(cf);
    buffering = Boolean.parseBoolean(getProperties().getProperty("clientbuffering", "false"));
    String size = getProperties().getProperty("writebuffersize");
    if (size != null) {
      bufferSize = Long.parseLong(size.trim());
    }
    String d = getProperties().getProperty("durability");
    if (d != null) {
      durability = Durability.valueOf(d.trim());
    }
    pageFilter = !"false".equals(getProperties().getProperty("hbase.usepagefilter", "true"));
    tableName = TableName.valueOf(getProperties().getProperty("table", "usertable"));
    try {
      synchronized (SHARED_LOCK) {
        if (shared == null) {
          Configuration conf = HBaseConfiguration.create();
          shared = ConnectionFactory.createConnection(conf);
          try (Admin admin = shared.getAdmin()) {
            if (!admin.tableExists(tableName)) {
              throw new DBException("table " + tableName + " does not exist");
            }
          }
        }
        users++;
      }
      table = shared.getTable(tableName);
      if (buffering) {
        mutator = shared.getBufferedMutator(
            new BufferedMutatorParams(tableName).writeBufferSize(bufferSize));
      }
    } catch (IOException e) {
      throw new DBException(e);
    }
  }

  @Override
  public void cleanup() throws DBException {
    long start = System.nanoTime();
    try {
      if (mutator != null) {
        mutator.close();
      }
      if (table != null) {
        table.close();
      }
    } catch (IOException e) {
      throw new DBException(e);
    } finally {
      long micros = (System.nanoTime() - start) / 1000;
      Measurements.getMeasurements().measure(buffering ? "UPDATE" : "CLEANUP", (int) micros);
      synchronized (SHARED_LOCK) {
        users--;
        if (users == 0 && shared != null) {
          try {
            shared.close();
          } catch (IOException e) {
            System.err.println("closing the connection: " + e);
          }
          shared = null;
        }
      }
    }
  }

  private static HashMap<String, ByteIterator> toMap(Result r, Map<String, ByteIterator> into) {
    HashMap<String, ByteIterator> m = into == null ? new HashMap<>() : null;
    Map<String, ByteIterator> target = into == null ? m : into;
    for (Cell c : r.rawCells()) {
      target.put(Bytes.toString(CellUtil.cloneQualifier(c)),
          new ByteArrayByteIterator(CellUtil.cloneValue(c)));
    }
    return m;
  }

  @Override
  public Status read(String t, String key, Set<String> fields, Map<String, ByteIterator> result) {
    Get get = new Get(Bytes.toBytes(key));
    if (fields == null) {
      get.addFamily(family);
    } else {
      for (String f : fields) {
        get.addColumn(family, Bytes.toBytes(f));
      }
    }
    Result r;
    try {
      r = table.get(get);
    } catch (IOException | RuntimeException e) {
      return Status.ERROR;
    }
    if (r.isEmpty()) {
      return Status.NOT_FOUND;
    }
    toMap(r, result);
    return Status.OK;
  }

  @Override
  public Status scan(String t, String startkey, int recordcount, Set<String> fields,
      Vector<HashMap<String, ByteIterator>> result) {
    Scan scan = new Scan().withStartRow(Bytes.toBytes(startkey)).setCaching(recordcount);
    if (pageFilter) {
      scan.setFilter(new PageFilter(recordcount));
    }
    if (fields == null) {
      scan.addFamily(family);
    } else {
      for (String f : fields) {
        scan.addColumn(family, Bytes.toBytes(f));
      }
    }
    try (ResultScanner rs = table.getScanner(scan)) {
      Result r;
      while (result.size() < recordcount && (r = rs.next()) != null) {
        result.add(toMap(r, null));
      }
    } catch (IOException | RuntimeException e) {
      return Status.ERROR;
    }
    return Status.OK;
  }

  @Override
  public Status update(String t, String key, Map<String, ByteIterator> values) {
    Put put = new Put(Bytes.toBytes(key));
    put.setDurability(durability);
    for (Map.Entry<String, ByteIterator> e : values.entrySet()) {
      put.addColumn(family, Bytes.toBytes(e.getKey()), e.getValue().toArray());
    }
    try {
      if (mutator != null) {
        mutator.mutate(put);
      } else {
        table.put(put);
      }
    } catch (IOException | RuntimeException e) {
      return Status.ERROR;
    }
    return Status.OK;
  }

  @Override
  public Status insert(String t, String key, Map<String, ByteIterator> values) {
    return update(t, key, values);
  }

  @Override
  public Status delete(String t, String key) {
    Delete del = new Delete(Bytes.toBytes(key));
    del.setDurability(durability);
    try {
      if (mutator != null) {
        mutator.mutate(del);
      } else {
        table.delete(del);
      }
    } catch (IOException | RuntimeException e) {
      return Status.ERROR;
    }
    return Status.OK;
  }
}
