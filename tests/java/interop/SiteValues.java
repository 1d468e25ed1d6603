// The hbase-site.xml oracle (tests/hbase_site.rs): Hadoop's own Configuration (inside
// hbase-shaded-client, from Maven Central) reads a configuration file and prints, for each
// property name given, its raw value and its value with ${...} references expanded, in the
// form tests/support/bin/site_values.rs prints ours. Our own program, written for this
// project. Run through tests/java/interop/run --program SiteValues.java FILE NAME...
//
// Output, one line per name: NAME <tab> RAW <tab> EXPANDED, where a value is "unset", or
// "=" and the value with \ as \\, newline as \n, tab as \t, carriage return as \r; an
// expansion Hadoop refuses is "error".

import java.io.File;
import org.apache.hadoop.conf.Configuration;

public class SiteValues {
  static String escape(String v) {
    if (v == null) {
      return "unset";
    }
    StringBuilder b = new StringBuilder("=");
    for (char c : v.toCharArray()) {
      switch (c) {
        case '\\': b.append("\\\\"); break;
        case '\n': b.append("\\n"); break;
        case '\t': b.append("\\t"); break;
        case '\r': b.append("\\r"); break;
        default: b.append(c);
      }
    }
    return b.toString();
  }

  public static void main(String[] args) throws Exception {
    Configuration conf = new Configuration(false);
    conf.addResource(new File(args[0]).toURI().toURL());
    for (int i = 1; i < args.length; i++) {
      String name = args[i];
      String expanded;
      try {
        expanded = escape(conf.get(name));
      } catch (IllegalStateException e) {
        expanded = "error";
      }
      System.out.println(name + "\t" + escape(conf.getRaw(name)) + "\t" + expanded);
    }
  }
}
