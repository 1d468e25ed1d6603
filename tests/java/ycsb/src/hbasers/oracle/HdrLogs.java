package hbasers.oracle;

import java.util.Locale;

import org.HdrHistogram.EncodableHistogram;
import org.HdrHistogram.Histogram;
import org.HdrHistogram.HistogramIterationValue;
import org.HdrHistogram.HistogramLogReader;

/**
 * Reads HdrHistogram interval logs (YCSB's {@code hdrhistogram.fileoutput} files, {@code
 * <OP>.hdr}) with the HistogramLogReader of the HdrHistogram on the classpath (the one YCSB
 * 0.17.0 ships, 2.1.4, or a newer one: tests/java/ycsb/hdr/pom.xml), as HistogramLogProcessor
 * and the plotting tools read them, and prints what it understood, one line per fact, for
 * tests/ycsb_hdr.rs to compare:
 *
 * <pre>
 * file PATH
 * start_time SECONDS          (the #[StartTime: ] header, 0.000 when absent)
 * interval I start_ms=S end_ms=E count=C min=M max=X mean=A p50=P p99=Q p99.9=R values=V
 * total intervals=N count=C min=M max=X mean=A p50=P p99=Q p99.9=R values=V
 * </pre>
 *
 * V is every recorded bucket as {@code lowest:count}, comma-separated (the bucket's lowest
 * equivalent value): the histogram exactly as the reader decoded it, whatever its version's
 * statistics make of it (2.1.10 changed getValueAtPercentile's rank from round-to-nearest to
 * round-up).
 *
 * Interval times are milliseconds after the start time (the reader's absolute stamps, which it
 * truncates to whole milliseconds, minus the start time rounded to one). Any exception (a
 * histogram it cannot decode, a line it cannot parse) ends the program with it.
 */
public final class HdrLogs {
  private HdrLogs() {
  }

  private static String stats(Histogram h) {
    long min = h.getTotalCount() == 0 ? 0 : h.getMinValue();
    return String.format(Locale.ROOT, "count=%d min=%d max=%d mean=%.3f p50=%d p99=%d p99.9=%d",
        h.getTotalCount(), min, h.getMaxValue(), h.getTotalCount() == 0 ? 0.0 : h.getMean(),
        h.getValueAtPercentile(50.0), h.getValueAtPercentile(99.0),
        h.getValueAtPercentile(99.9)) + " values=" + values(h);
  }

  private static String values(Histogram h) {
    StringBuilder out = new StringBuilder();
    for (HistogramIterationValue v : h.recordedValues()) {
      if (out.length() > 0) {
        out.append(',');
      }
      out.append(h.lowestEquivalentValue(v.getValueIteratedTo())).append(':')
          .append(v.getCountAtValueIteratedTo());
    }
    return out.toString();
  }

  public static void main(String[] args) throws Exception {
    for (String path : args) {
      System.out.println("file " + path);
      HistogramLogReader reader = new HistogramLogReader(path);
      Histogram total = new Histogram(3);
      int n = 0;
      // The reader knows the start time once it has passed the header, at the first interval.
      EncodableHistogram e = reader.nextIntervalHistogram();
      long base = Math.round(reader.getStartTimeSec() * 1000.0);
      System.out.println(String.format(Locale.ROOT, "start_time %.3f", reader.getStartTimeSec()));
      for (; e != null; e = reader.nextIntervalHistogram()) {
        Histogram h = (Histogram) e;
        total.add(h);
        System.out.println(String.format(Locale.ROOT, "interval %d start_ms=%d end_ms=%d %s", n,
            h.getStartTimeStamp() - base, h.getEndTimeStamp() - base, stats(h)));
        n++;
      }
      System.out.println("total intervals=" + n + " " + stats(total));
    }
  }
}
