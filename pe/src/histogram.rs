//! The latency statistics PerformanceEvaluation prints, with the semantics of the metrics
//! library it uses (a uniform reservoir of 512,000 samples, Vitter's algorithm R, and its
//! snapshot's percentile interpolation and sample standard deviation), so that the same
//! latencies print the same numbers.

use rand::Rng;

/// Samples kept per histogram (PerformanceEvaluation's `UniformReservoir(1024 * 500)`).
pub const RESERVOIR_SIZE: usize = 1024 * 500;

/// A uniform sample of the values seen, bounded in memory.
#[derive(Debug, Clone)]
pub struct Reservoir {
    values: Vec<i64>,
    count: u64,
    capacity: usize,
}

impl Default for Reservoir {
    fn default() -> Self {
        Reservoir::with_capacity(RESERVOIR_SIZE)
    }
}

impl Reservoir {
    /// A reservoir keeping at most `capacity` samples.
    pub fn with_capacity(capacity: usize) -> Reservoir {
        Reservoir {
            values: Vec::new(),
            count: 0,
            capacity: capacity.max(1),
        }
    }

    /// Records one value.
    pub fn update(&mut self, value: i64) {
        self.count += 1;
        if self.values.len() < self.capacity {
            self.values.push(value);
        } else {
            let slot = rand::rng().random_range(0..self.count);
            if (slot as usize) < self.capacity {
                self.values[slot as usize] = value;
            }
        }
    }

    /// How many values were recorded (not only kept).
    pub fn count(&self) -> u64 {
        self.count
    }

    /// The kept values, sorted.
    pub fn snapshot(&self) -> Snapshot {
        let mut values = self.values.clone();
        values.sort_unstable();
        Snapshot { values }
    }
}

/// Sorted samples, with the statistics PerformanceEvaluation reports.
#[derive(Debug, Clone)]
pub struct Snapshot {
    values: Vec<i64>,
}

impl Snapshot {
    /// The value at quantile `q` (0..=1), interpolated between the two nearest samples at
    /// position `q * (n + 1)`.
    pub fn value(&self, q: f64) -> f64 {
        let n = self.values.len();
        if n == 0 {
            return 0.0;
        }
        let pos = q * (n as f64 + 1.0);
        let index = pos as usize;
        if index < 1 {
            return self.values[0] as f64;
        }
        if index >= n {
            return self.values[n - 1] as f64;
        }
        let lower = self.values[index - 1] as f64;
        let upper = self.values[index] as f64;
        lower + (pos - pos.floor()) * (upper - lower)
    }

    /// The arithmetic mean; 0 without samples.
    pub fn mean(&self) -> f64 {
        if self.values.is_empty() {
            return 0.0;
        }
        let sum: f64 = self.values.iter().map(|&v| v as f64).sum();
        sum / self.values.len() as f64
    }

    /// The sample standard deviation (n − 1 in the denominator); 0 below two samples.
    pub fn std_dev(&self) -> f64 {
        let n = self.values.len();
        if n <= 1 {
            return 0.0;
        }
        let mean = self.mean();
        let sum: f64 = self
            .values
            .iter()
            .map(|&v| (v as f64 - mean) * (v as f64 - mean))
            .sum();
        (sum / (n as f64 - 1.0)).sqrt()
    }

    /// The smallest sample; 0 without samples.
    pub fn min(&self) -> i64 {
        self.values.first().copied().unwrap_or(0)
    }

    /// The largest sample; 0 without samples.
    pub fn max(&self) -> i64 {
        self.values.last().copied().unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_interpolate_between_neighbours() {
        let mut r = Reservoir::default();
        for v in 1..=10 {
            r.update(v);
        }
        let s = r.snapshot();
        // pos = 0.5 * 11 = 5.5: halfway between the 5th and 6th samples.
        assert_eq!(s.value(0.5), 5.5);
        // pos = 0.99 * 11 = 10.89 >= n: the largest sample.
        assert_eq!(s.value(0.99), 10.0);
        assert_eq!(s.value(0.05), 1.0);
        assert_eq!(s.mean(), 5.5);
        assert!((s.std_dev() - 3.0276503540974917).abs() < 1e-12);
        assert_eq!((s.min(), s.max()), (1, 10));
    }

    #[test]
    fn reservoir_is_bounded() {
        let mut r = Reservoir::with_capacity(100);
        for v in 0..10_000 {
            r.update(v);
        }
        assert_eq!(r.count(), 10_000);
        assert_eq!(r.snapshot().values.len(), 100);
    }

    #[test]
    fn empty_snapshot_is_zero() {
        let s = Reservoir::default().snapshot();
        assert_eq!((s.mean(), s.std_dev(), s.value(0.5)), (0.0, 0.0, 0.0));
    }
}
