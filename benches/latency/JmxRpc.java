// benches/latency/JmxRpc.java: prints the region servers' RPC timing metrics of a running
// HBase JVM (attached by pid through the JDK's attach API, no JMX port or info server needed).
//
//   java benches/latency/JmxRpc.java PID
//
// One `name value` line per numeric attribute of the RegionServer IPC source
// (Hadoop:service=HBase,name=RegionServer,sub=IPC: QueueCallTime_*, ProcessCallTime_*,
// TotalCallTime_*, in ms), so a script can take deltas around a run.
import com.sun.tools.attach.VirtualMachine;
import javax.management.MBeanAttributeInfo;
import javax.management.MBeanServerConnection;
import javax.management.ObjectName;
import javax.management.remote.JMXConnector;
import javax.management.remote.JMXConnectorFactory;
import javax.management.remote.JMXServiceURL;

public class JmxRpc {
  public static void main(String[] args) throws Exception {
    if (args.length < 1) {
      System.err.println("usage: JmxRpc PID [MBEAN]");
      System.exit(2);
    }
    String bean = args.length > 1 ? args[1] : "Hadoop:service=HBase,name=RegionServer,sub=IPC";
    VirtualMachine vm = VirtualMachine.attach(args[0]);
    try {
      String url = vm.startLocalManagementAgent();
      try (JMXConnector c = JMXConnectorFactory.connect(new JMXServiceURL(url))) {
        MBeanServerConnection s = c.getMBeanServerConnection();
        ObjectName name = new ObjectName(bean);
        for (MBeanAttributeInfo a : s.getMBeanInfo(name).getAttributes()) {
          Object v;
          try {
            v = s.getAttribute(name, a.getName());
          } catch (Exception e) {
            continue;
          }
          if (v instanceof Number) {
            System.out.println(a.getName() + " " + v);
          }
        }
      }
    } finally {
      vm.detach();
    }
  }
}
