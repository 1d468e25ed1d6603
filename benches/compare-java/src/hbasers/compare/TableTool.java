/*
 * benches/compare-java helper: `TableTool drop <table>` disables and deletes a table if it
 * exists, so every load starts from an empty table (the script recreates it, pre-split, with
 * `ycsb create-table`). The cluster comes from hbase-site.xml on the classpath.
 */
package hbasers.compare;

import org.apache.hadoop.hbase.HBaseConfiguration;
import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.client.Admin;
import org.apache.hadoop.hbase.client.Connection;
import org.apache.hadoop.hbase.client.ConnectionFactory;

public final class TableTool {
  private TableTool() {}

  public static void main(String[] args) throws Exception {
    if (args.length != 2 || !"drop".equals(args[0])) {
      System.err.println("usage: TableTool drop <table>");
      System.exit(2);
    }
    TableName name = TableName.valueOf(args[1]);
    try (Connection c = ConnectionFactory.createConnection(HBaseConfiguration.create());
         Admin admin = c.getAdmin()) {
      if (admin.tableExists(name)) {
        if (admin.isTableEnabled(name)) {
          admin.disableTable(name);
        }
        admin.deleteTable(name);
        System.out.println("dropped " + name);
      }
    }
  }
}
