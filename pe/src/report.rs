//! Number formats and figures of PerformanceEvaluation's report.

use crate::histogram::Snapshot;

/// Java's `DecimalFormat("#0.00")`: two decimals, half-even.
pub fn two_places(x: f64) -> String {
    format!("{x:.2}")
}

/// Java's `DecimalFormat("0.##")`: at most two decimals, no trailing zeros.
pub fn up_to_two_places(x: f64) -> String {
    if !x.is_finite() {
        return if x.is_nan() {
            "NaN".into()
        } else {
            "∞".into()
        };
    }
    let s = format!("{x:.2}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s == "-0" {
        "0".into()
    } else {
        s.to_string()
    }
}

/// `mean=…, min=…, max=…, stdDev=…, 50th=…, …, 99.999th=…`
pub fn histogram_report(s: &Snapshot) -> String {
    format!(
        "mean={}, min={}, max={}, stdDev={}, 50th={}, 75th={}, 95th={}, 99th={}, 99.9th={}, \
         99.99th={}, 99.999th={}",
        two_places(s.mean()),
        two_places(s.min() as f64),
        two_places(s.max() as f64),
        two_places(s.std_dev()),
        two_places(s.value(0.5)),
        two_places(s.value(0.75)),
        two_places(s.value(0.95)),
        two_places(s.value(0.99)),
        two_places(s.value(0.999)),
        two_places(s.value(0.9999)),
        two_places(s.value(0.99999)),
    )
}

/// `mean=…, min=…, max=…, stdDev=…, 95th=…, 99th=…` (the progress lines).
pub fn short_histogram_report(s: &Snapshot) -> String {
    format!(
        "mean={}, min={}, max={}, stdDev={}, 95th={}, 99th={}",
        two_places(s.mean()),
        two_places(s.min() as f64),
        two_places(s.max() as f64),
        two_places(s.std_dev()),
        two_places(s.value(0.95)),
        two_places(s.value(0.99)),
    )
}

/// The multi-line block (`Mean      = …` to `99.999th  = …`).
pub fn pretty_histogram_report(s: &Snapshot) -> String {
    [
        ("Mean      = ", s.mean()),
        ("Min       = ", s.min() as f64),
        ("Max       = ", s.max() as f64),
        ("StdDev    = ", s.std_dev()),
        ("50th      = ", s.value(0.5)),
        ("75th      = ", s.value(0.75)),
        ("95th      = ", s.value(0.95)),
        ("99th      = ", s.value(0.99)),
        ("99.9th    = ", s.value(0.999)),
        ("99.99th   = ", s.value(0.9999)),
        ("99.999th  = ", s.value(0.99999)),
    ]
    .iter()
    .map(|(label, v)| format!("{label}{}", two_places(*v)))
    .collect::<Vec<_>>()
    .join("\n")
}

/// MB/s as PerformanceEvaluation counts it: each row is the 26-byte key plus, per family and
/// column, the value, the family name (`info` + one digit) and the one-byte qualifier.
pub fn mbps(rows: u64, time_ms: u64, value_size: u32, families: u32, columns: u32) -> String {
    let row_size = 26 + ((value_size as u64 + 5 + 1) * columns as u64) * families as u64;
    let mbps = (rows * row_size) as f64 / time_ms as f64 * 1000.0 / (1024.0 * 1024.0);
    format!("{} MB/s", up_to_two_places(mbps))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_match_decimal_format() {
        assert_eq!(two_places(3.0), "3.00");
        assert_eq!(two_places(0.125), "0.12");
        assert_eq!(up_to_two_places(7.5), "7.5");
        assert_eq!(up_to_two_places(12.0), "12");
        assert_eq!(up_to_two_places(0.004), "0");
        // 1,000 rows of 1,032 bytes in 1 s.
        assert_eq!(mbps(1000, 1000, 1000, 1, 1), "0.98 MB/s");
    }
}
