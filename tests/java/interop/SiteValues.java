// The hbase-site.xml oracle (tests/hbase_site.rs): Hadoop's own Configuration (inside
// hbase-shaded-client, from Maven Central) reads a configuration file and prints, for each
// property name given, its raw value and its value with ${...} references expanded, in the
// form tests/support/bin/site_values.rs prints ours. Our own program, written for this
// project. Run through tests/java/interop/run --program SiteValues.java [--classpath] FILE NAME...
//
// The file is added as a file resource (a Hadoop Path), as conf.addResource(new Path(file))
// adds it; with --classpath, as HBaseConfiguration.create() finds hbase-site.xml instead: the
// file's directory on the class path (HBase's bin/hbase puts HBASE_CONF_DIR there) and the
// file added by name. Both matter for XInclude: Hadoop looks an href up on the class path
// first, then as a URL, then as a file relative to the directory of the resource's name. (A
// URL resource, which this program added before XInclude was compared, has a name of the
// form file:/dir/f.xml, against which Hadoop resolves no relative href.)
//
// Output, one line per name: NAME <tab> RAW <tab> EXPANDED, where a value is "unset", or
// "=" and the value with \ as \\, newline as \n, tab as \t, carriage return as \r; an
// expansion Hadoop refuses is "error". When Hadoop cannot read the file at all (a bad
// include, a loop), one line instead: FAILED <tab> the exception's class and message.

import java.io.File;
import java.net.URL;
import java.net.URLClassLoader;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;

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
    int first = 0;
    boolean classpath = false;
    if (args.length > 0 && args[0].equals("--classpath")) {
      classpath = true;
      first = 1;
    }
    File file = new File(args[first]).getAbsoluteFile();
    Configuration conf = new Configuration(false);
    if (classpath) {
      URL dir = file.getParentFile().toURI().toURL();
      conf.setClassLoader(new URLClassLoader(new URL[] {dir}, SiteValues.class.getClassLoader()));
      conf.addResource(file.getName());
    } else {
      conf.addResource(new Path(file.getPath()));
    }
    try {
      // The resources are read on first use: read them here, to tell a file Hadoop cannot
      // read from a value it cannot expand. StackOverflowError included (an include loop).
      conf.size();
    } catch (Throwable e) {
      Throwable root = e;
      while (root.getCause() != null) {
        root = root.getCause();
      }
      String message = String.valueOf(root.getMessage()).replace('\n', ' ');
      if (message.length() > 300) {
        message = message.substring(0, 300) + "...";
      }
      System.out.println("FAILED\t" + root.getClass().getName() + ": " + message);
      return;
    }
    for (int i = first + 1; i < args.length; i++) {
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
