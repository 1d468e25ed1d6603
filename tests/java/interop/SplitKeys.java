// The split-key oracle (tests/admin.rs): the Java client's own computation of the split keys
// of Admin.createTable(desc, startKey, endKey, numRegions), for each case of a file: the real
// code runs, RawAsyncHBaseAdmin's private getSplitKeys and then verifySplitKeys (what
// createTable checks before it sends them), called by reflection on an instance made without
// a constructor (neither method reads the instance's fields).
// Our own program, written for this project. Run through
// tests/java/interop/run --program SplitKeys.java CASES.
//
// CASES: one case per line, "START END REGIONS" with the keys as x<hex> (x alone is empty).
// Output, one line per case: "keys K1 K2 ..." (x<hex> each), or "error <exception class>".

import java.lang.reflect.Field;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HexFormat;

public class SplitKeys {
  static byte[] bytes(String token) {
    return HexFormat.of().parseHex(token.substring(1));
  }

  public static void main(String[] args) throws Exception {
    Class<?> admin = Class.forName("org.apache.hadoop.hbase.client.RawAsyncHBaseAdmin");
    Method split = admin.getDeclaredMethod("getSplitKeys", byte[].class, byte[].class, int.class);
    split.setAccessible(true);
    Method verify = admin.getDeclaredMethod("verifySplitKeys", byte[][].class);
    verify.setAccessible(true);
    Field unsafeField = Class.forName("sun.misc.Unsafe").getDeclaredField("theUnsafe");
    unsafeField.setAccessible(true);
    sun.misc.Unsafe unsafe = (sun.misc.Unsafe) unsafeField.get(null);
    Object instance = unsafe.allocateInstance(admin);
    StringBuilder out = new StringBuilder();
    for (String line : Files.readAllLines(Path.of(args[0]))) {
      String[] t = line.split(" ");
      try {
        byte[][] keys =
            (byte[][]) split.invoke(instance, bytes(t[0]), bytes(t[1]), Integer.parseInt(t[2]));
        verify.invoke(instance, (Object) keys);
        out.append("keys");
        for (byte[] k : keys) {
          out.append(" x").append(HexFormat.of().formatHex(k));
        }
      } catch (InvocationTargetException e) {
        out.append("error ").append(e.getCause().getClass().getName());
      }
      out.append('\n');
    }
    System.out.print(out);
  }
}
