// Smoke test for scripts/hbase-local: run with `scripts/hbase-local smoke`.
// Single-file Java program (JDK 11+ source launcher) against the fetched hbase-client jars.
// Creates a pre-split table, writes and reads a row in every region, lists where the
// regions live, then drops the table. Exit code 0 on success.

import java.util.List;
import java.util.TreeSet;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hbase.HBaseConfiguration;
import org.apache.hadoop.hbase.HRegionLocation;
import org.apache.hadoop.hbase.ServerName;
import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.client.Admin;
import org.apache.hadoop.hbase.client.ColumnFamilyDescriptorBuilder;
import org.apache.hadoop.hbase.client.Connection;
import org.apache.hadoop.hbase.client.ConnectionFactory;
import org.apache.hadoop.hbase.client.Get;
import org.apache.hadoop.hbase.client.Put;
import org.apache.hadoop.hbase.client.RegionLocator;
import org.apache.hadoop.hbase.client.Result;
import org.apache.hadoop.hbase.client.Table;
import org.apache.hadoop.hbase.client.TableDescriptorBuilder;
import org.apache.hadoop.hbase.util.Bytes;

public class HBaseLocalSmoke {
  public static void main(String[] args) throws Exception {
    String host = args.length > 0 ? args[0] : "127.0.0.1";
    String port = args.length > 1 ? args[1] : "2181";
    Configuration conf = HBaseConfiguration.create();
    conf.set("hbase.zookeeper.quorum", host);
    conf.set("hbase.zookeeper.property.clientPort", port);
    conf.setInt("hbase.client.retries.number", 5);

    long t0 = System.nanoTime();
    TableName name = TableName.valueOf("hbase_local_smoke");
    byte[] family = Bytes.toBytes("f");
    byte[] qualifier = Bytes.toBytes("q");
    byte[][] splits = {Bytes.toBytes("g"), Bytes.toBytes("p")};
    String[] rows = {"apple", "kiwi", "zucchini"}; // one per region

    try (Connection conn = ConnectionFactory.createConnection(conf);
        Admin admin = conn.getAdmin()) {
      List<ServerName> servers = List.copyOf(admin.getRegionServers());
      System.out.println("region servers: " + servers.size() + " " + servers);
      if (admin.tableExists(name)) {
        if (admin.isTableEnabled(name)) admin.disableTable(name);
        admin.deleteTable(name);
      }
      admin.createTable(
          TableDescriptorBuilder.newBuilder(name)
              .setColumnFamily(ColumnFamilyDescriptorBuilder.of(family))
              .build(),
          splits);
      System.out.println("created " + name + " with " + (splits.length + 1) + " regions");

      try (Table table = conn.getTable(name)) {
        for (String row : rows) {
          table.put(new Put(Bytes.toBytes(row)).addColumn(family, qualifier, Bytes.toBytes("v-" + row)));
        }
        for (String row : rows) {
          Result r = table.get(new Get(Bytes.toBytes(row)));
          String v = Bytes.toString(r.getValue(family, qualifier));
          if (!("v-" + row).equals(v)) {
            throw new IllegalStateException("row " + row + ": expected v-" + row + ", got " + v);
          }
        }
      }
      System.out.println("put + get of " + rows.length + " rows: ok");

      TreeSet<String> hosting = new TreeSet<>();
      try (RegionLocator locator = conn.getRegionLocator(name)) {
        for (HRegionLocation loc : locator.getAllRegionLocations()) {
          System.out.printf("  region [%s, %s) on %s%n",
              Bytes.toStringBinary(loc.getRegion().getStartKey()),
              Bytes.toStringBinary(loc.getRegion().getEndKey()),
              loc.getServerName());
          hosting.add(loc.getServerName().toString());
        }
      }
      System.out.println("regions spread over " + hosting.size() + " region server(s)");

      admin.disableTable(name);
      admin.deleteTable(name);
      System.out.println("dropped " + name);
    }
    System.out.printf("smoke test passed (%.1f s)%n", (System.nanoTime() - t0) / 1e9);
  }
}
