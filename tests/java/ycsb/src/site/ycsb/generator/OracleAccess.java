/*
 * Part of the YCSB conformance harness (tests/java): written by this project, not copied from
 * YCSB. It lives in YCSB's generator package only to reach two package-private members of the
 * real site.ycsb:core:0.17.0 classes, so the harness can print what they compute.
 */
package site.ycsb.generator;

/** Package-level access to ZipfianGenerator's zeta sum and its itemcount-taking draw. */
public final class OracleAccess {
  private OracleAccess() {
  }

  /** ZipfianGenerator.zetastatic(st, n, theta, initialsum). */
  public static double zeta(long st, long n, double theta, double initial) {
    return ZipfianGenerator.zetastatic(st, n, theta, initial);
  }

  /** ZipfianGenerator.nextLong(itemcount): a draw over a grown (or shrunk) item count. */
  public static long nextLong(ZipfianGenerator gen, long itemcount) {
    return gen.nextLong(itemcount);
  }
}
