// The Kerberos server-principal oracle (tests/security.rs): for each host name given, the
// principal the Java client (hbase-shaded-client 2.6.4, from Maven Central) asks the KDC for
// when it connects to a region server advertised under that name, from its own code:
// RpcConnection.getServerPrincipal(conf, "hbase.regionserver.kerberos.principal", address),
// called by reflection (it is private) with InetAddress.getByName(host), as a connection
// resolves its server; once as by default and once with
// hbase.unsafe.client.kerberos.hostname.disable.reversedns=true. Our own program, written for
// this project. Run through tests/java/interop/run --program ServerPrincipals.java PATTERN HOST...
//
// Output, one line per host: HOST <tab> PRINCIPAL <tab> PRINCIPAL WITHOUT REVERSE DNS, or
// HOST <tab> "unresolved" <tab> "unresolved" when InetAddress.getByName throws (the Java client
// cannot connect to such a server at all).

import java.lang.reflect.Method;
import java.net.InetAddress;
import java.net.UnknownHostException;
import org.apache.hadoop.conf.Configuration;

public class ServerPrincipals {
  public static void main(String[] args) throws Exception {
    String key = "hbase.regionserver.kerberos.principal";
    Configuration byDefault = new Configuration(false);
    byDefault.set(key, args[0]);
    Configuration noReverse = new Configuration(false);
    noReverse.set(key, args[0]);
    noReverse.setBoolean("hbase.unsafe.client.kerberos.hostname.disable.reversedns", true);
    Method principal = Class.forName("org.apache.hadoop.hbase.ipc.RpcConnection")
        .getDeclaredMethod("getServerPrincipal", Configuration.class, String.class, InetAddress.class);
    principal.setAccessible(true);
    StringBuilder out = new StringBuilder();
    for (int i = 1; i < args.length; i++) {
      String host = args[i];
      out.append(host);
      for (Configuration conf : new Configuration[] {byDefault, noReverse}) {
        String answer;
        try {
          // A fresh address each time: getCanonicalHostName caches its answer in the object.
          answer = (String) principal.invoke(null, conf, key, InetAddress.getByName(host));
        } catch (UnknownHostException e) {
          answer = "unresolved";
        }
        out.append('\t').append(answer);
      }
      out.append('\n');
    }
    System.out.print(out);
  }
}
