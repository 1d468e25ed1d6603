// The exception-table oracle (tests/retries.rs, exception_table_agrees_with_the_java_client):
// what the Java client (hbase-shaded-client from Maven Central) does with each server exception
// class, and what a server sends with it, printed in the form tests/support/bin/exception_facts.rs
// prints our table's verdicts. Our own program, written for this project; it calls the Java
// client's own methods and composes them only as its retrying callers do (named below).
//
// tests/java/interop/run --server --program ExceptionFacts.java server [--hbase-classes] NAME...
//   On the server's classpath (hbase-server and its dependencies): the flags a server sends
//   with an exception of each class. With --hbase-classes, first every concrete IOException
//   class the HBase jars on the classpath define (top-level classes of org.apache.hadoop.hbase,
//   not the relocated org.apache.hadoop.hbase.shaded). One line each, sorted:
//     NAME <tab> unknown                      the server has no such class
//     NAME <tab> flags=none|dnr|overloaded|dnr+overloaded
//   as ServerCall.setExceptionResponse sets them: do_not_retry when the class extends
//   DoNotRetryIOException, server_overloaded when an HBaseServerException made with the
//   (String) constructor says it is overloaded.
//
// tests/java/interop/run --program ExceptionFacts.java client SPEC...
//   On the client's classpath. SPEC is call:NAME[+dnr][+overloaded] (an exception answering a
//   whole call: the ExceptionResponse's class and flags) or action:NAME (an action's or a
//   region's exception inside a Multi answer: a NameBytesPair, a class name and a message).
//   One line each:
//     SPEC <tab> retry=yes|no <tab> cache=keep|drop|moved
//          <tab> pause=normal|overloaded|throttled|immediate|- <tab> master=forget|keep|-
//          <tab> made=yes|no
//   retry: whether the Java client retries (not a DoNotRetryIOException once read).
//   cache: what ClientExceptionsUtil.isMetaClearingException says of the cached location (keep
//     it, drop it, or, for a RegionMovedException, replace it by the new server), computed for
//     every exception: Java's single-request callers give up on a DoNotRetryIOException before
//     they look at it, its batch callers look at it first (the test knows this).
//   pause: the pause before the next attempt, for a retried exception: immediate for a
//     RetryImmediatelyException (the batch callers resubmit at once), throttled for an
//     RpcThrottlingException (its own wait), overloaded when HBaseServerException says the
//     server is overloaded (the longer pause), else normal.
//   master: for a call, whether Java's master caller forgets the master it called (its cached
//     master stub, so the next attempt asks the registry for the active master) when the call
//     fails with the exception: AsyncMasterRequestRpcRetryingCaller.clearMasterStubCacheOnError
//     forgets it on a connection exception (ClientExceptionsUtil.isConnectionException) or a
//     ServerNotRunningYetException (a backup master answering), and AsyncRpcRetryingCaller.onError
//     calls it only for an exception it retries (it gives up on a DoNotRetryIOException first).
//     "-" for an action: a master call is never a Multi.
//   made: whether the client made an exception of the class sent; "no" when it cannot load the
//     class or make one from a message, and then the lines above are about what it made
//     instead (a DoNotRetryIOException for a call, an IOException failing the whole Multi
//     answer for an action). Our side has no such column: our table reads every class by name.

import java.io.File;
import java.io.IOException;
import java.lang.reflect.Constructor;
import java.lang.reflect.Modifier;
import java.util.ArrayList;
import java.util.Enumeration;
import java.util.List;
import java.util.TreeSet;
import java.util.jar.JarEntry;
import java.util.jar.JarFile;
import org.apache.hadoop.hbase.DoNotRetryIOException;
import org.apache.hadoop.hbase.HBaseServerException;

public class ExceptionFacts {
  // One message for every class: a RegionMovedException's (String) constructor reads the new
  // server from it; every other class keeps it as its message.
  static final String MESSAGE =
      "Region moved to: hostname=h1.example port=16020 startCode=1. As of locationSeqNum=5.";

  public static void main(String[] args) throws Exception {
    List<String> rest = new ArrayList<>(List.of(args).subList(1, args.length));
    switch (args[0]) {
      case "server":
        server(rest);
        break;
      case "client":
        for (String spec : rest) {
          System.out.println(spec + "\t" + client(spec));
        }
        break;
      default:
        throw new IllegalArgumentException("mode server or client, not " + args[0]);
    }
  }

  // ---- The server's side: which classes it has, and the flags it sends with them.

  static void server(List<String> args) throws Exception {
    TreeSet<String> names = new TreeSet<>();
    if (!args.isEmpty() && args.get(0).equals("--hbase-classes")) {
      args = args.subList(1, args.size());
      names.addAll(hbaseIoExceptions());
    }
    names.addAll(args);
    for (String name : names) {
      Class<?> c;
      try {
        c = Class.forName(name, false, ExceptionFacts.class.getClassLoader());
      } catch (ClassNotFoundException e) {
        System.out.println(name + "\tunknown");
        continue;
      }
      boolean dnr = DoNotRetryIOException.class.isAssignableFrom(c);
      boolean overloaded = false;
      if (HBaseServerException.class.isAssignableFrom(c)) {
        Constructor<?> cn = c.getConstructor(String.class);
        overloaded = ((HBaseServerException) cn.newInstance(MESSAGE)).isServerOverloaded();
      }
      String flags =
          dnr ? (overloaded ? "dnr+overloaded" : "dnr") : (overloaded ? "overloaded" : "none");
      System.out.println(name + "\tflags=" + flags);
    }
  }

  /** Every concrete, top-level IOException class of org.apache.hadoop.hbase on the classpath. */
  static List<String> hbaseIoExceptions() throws IOException {
    List<String> found = new ArrayList<>();
    for (String entry : System.getProperty("java.class.path").split(File.pathSeparator)) {
      if (!entry.endsWith(".jar")) {
        continue;
      }
      try (JarFile jar = new JarFile(entry)) {
        Enumeration<JarEntry> entries = jar.entries();
        while (entries.hasMoreElements()) {
          String path = entries.nextElement().getName();
          if (!path.startsWith("org/apache/hadoop/hbase/") || !path.endsWith(".class")
              || path.contains("$") || path.startsWith("org/apache/hadoop/hbase/shaded/")) {
            continue;
          }
          String name = path.substring(0, path.length() - ".class".length()).replace('/', '.');
          Class<?> c;
          try {
            c = Class.forName(name, false, ExceptionFacts.class.getClassLoader());
          } catch (Throwable e) {
            // A class whose dependencies are not on this classpath (told on stderr).
            System.err.println("ExceptionFacts: cannot load " + name + ": " + e);
            continue;
          }
          if (IOException.class.isAssignableFrom(c) && !Modifier.isAbstract(c.getModifiers())
              && Modifier.isPublic(c.getModifiers())) {
            found.add(name);
          }
        }
      }
    }
    return found;
  }

  // ---- The client's side: what the Java client makes of an exception it is sent.

  static String client(String spec) throws Exception {
    int colon = spec.indexOf(':');
    String path = spec.substring(0, colon);
    String[] parts = spec.substring(colon + 1).split("\\+");
    String name = parts[0];
    boolean dnr = false;
    boolean overloaded = false;
    for (int i = 1; i < parts.length; i++) {
      switch (parts[i]) {
        case "dnr": dnr = true; break;
        case "overloaded": overloaded = true; break;
        default: throw new IllegalArgumentException("unknown flag in " + spec);
      }
    }
    Throwable e;
    switch (path) {
      case "call":
        // The RPC client makes a RemoteWithExtrasException of an ExceptionResponse
        // (IPCUtil.createRemoteException); both retrying callers read it with
        // unwrapRemoteException (ConnectionUtils.translateException,
        // RpcRetryingCallerImpl.translateException). A class the client cannot load or make
        // comes back as a DoNotRetryIOException.
        e = new org.apache.hadoop.hbase.ipc.RemoteWithExtrasException(
                name, MESSAGE, dnr, overloaded)
            .unwrapRemoteException();
        break;
      case "action":
        if (dnr || overloaded) {
          throw new IllegalArgumentException("an action's exception has no flags: " + spec);
        }
        // ResponseConverter.getResults reads each action's (and region's) exception with
        // ProtobufUtil.toException. A class it cannot load or make throws an IOException out of
        // getResults: the whole Multi answer fails with it, and the batch caller treats that as
        // the call's failure for every action in it; so that IOException is what the action
        // meets.
        org.apache.hadoop.hbase.shaded.protobuf.generated.HBaseProtos.NameBytesPair pair =
            org.apache.hadoop.hbase.shaded.protobuf.generated.HBaseProtos.NameBytesPair.newBuilder()
                .setName(name)
                .setValue(org.apache.hbase.thirdparty.com.google.protobuf.ByteString
                    .copyFromUtf8(MESSAGE))
                .build();
        try {
          e = org.apache.hadoop.hbase.shaded.protobuf.ProtobufUtil.toException(pair);
        } catch (IOException unreadable) {
          e = unreadable;
        }
        break;
      default:
        throw new IllegalArgumentException("call: or action:, not " + spec);
    }
    boolean retried = !(e instanceof DoNotRetryIOException);
    String cache;
    if (!org.apache.hadoop.hbase.exceptions.ClientExceptionsUtil.isMetaClearingException(e)) {
      cache = "keep";
    } else if (org.apache.hadoop.hbase.exceptions.ClientExceptionsUtil.findException(e)
        instanceof org.apache.hadoop.hbase.exceptions.RegionMovedException) {
      cache = "moved";
    } else {
      cache = "drop";
    }
    String pause;
    if (!retried) {
      pause = "-";
    } else if (e instanceof org.apache.hadoop.hbase.RetryImmediatelyException) {
      pause = "immediate";
    } else if (e instanceof org.apache.hadoop.hbase.quotas.RpcThrottlingException) {
      pause = "throttled";
    } else if (HBaseServerException.isServerOverloaded(e)) {
      pause = "overloaded";
    } else {
      pause = "normal";
    }
    String master;
    if (!path.equals("call")) {
      master = "-";
    } else if (retried
        && (org.apache.hadoop.hbase.exceptions.ClientExceptionsUtil.isConnectionException(e)
            || e instanceof org.apache.hadoop.hbase.ipc.ServerNotRunningYetException)) {
      master = "forget";
    } else {
      master = "keep";
    }
    boolean made = e.getClass().getName().equals(name);
    return "retry=" + (retried ? "yes" : "no") + "\tcache=" + cache + "\tpause=" + pause
        + "\tmaster=" + master + "\tmade=" + (made ? "yes" : "no");
  }
}
