//! Time series downsampled into a fixed number of time buckets, so memory stays bounded however
//! long the trace is. When a sample falls past the last bucket, neighbouring buckets are merged
//! pairwise and the bucket width doubles.

use serde::Serialize;

/// What one bucket keeps of the samples that fell into it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Bucket {
    /// Time of the earliest sample, ms.
    pub t_first: f64,
    /// Time of the latest sample, ms (the one `last` was taken at).
    pub t_last: f64,
    /// Smallest value.
    pub min: f64,
    /// Largest value.
    pub max: f64,
    /// Value of the latest sample.
    pub last: f64,
    /// Sum of the values (for counters: bytes or events in the bucket).
    pub sum: f64,
    /// Number of samples.
    pub count: u64,
}

impl Bucket {
    fn new(t: f64, v: f64) -> Bucket {
        Bucket { t_first: t, t_last: t, min: v, max: v, last: v, sum: v, count: 1 }
    }

    fn add(&mut self, t: f64, v: f64) {
        self.merge(&Bucket::new(t, v));
    }

    fn merge(&mut self, other: &Bucket) {
        self.t_first = self.t_first.min(other.t_first);
        if other.t_last >= self.t_last {
            self.t_last = other.t_last;
            self.last = other.last;
        }
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
        self.sum += other.sum;
        self.count += other.count;
    }
}

/// A bucketed time series.
#[derive(Debug, Clone)]
pub struct Series {
    /// Bucket width, ms.
    width: f64,
    capacity: usize,
    buckets: Vec<Option<Bucket>>,
}

/// Default number of buckets per series.
pub const DEFAULT_BUCKETS: usize = 1000;
/// Initial bucket width (1 µs), doubled as needed.
const INITIAL_WIDTH_MS: f64 = 0.001;

impl Series {
    /// An empty series of at most `capacity` buckets (at least 2).
    pub fn new(capacity: usize) -> Series {
        Series { width: INITIAL_WIDTH_MS, capacity: capacity.max(2), buckets: Vec::new() }
    }

    /// Add the sample `v` at time `t` (ms; negative times count as 0; NaN values are ignored).
    pub fn push(&mut self, t: f64, v: f64) {
        if !v.is_finite() || !t.is_finite() {
            return;
        }
        let t = t.max(0.0);
        while t >= self.width * self.capacity as f64 {
            self.coarsen();
        }
        let i = ((t / self.width) as usize).min(self.capacity - 1);
        if self.buckets.len() <= i {
            self.buckets.resize(i + 1, None);
        }
        match &mut self.buckets[i] {
            Some(b) => b.add(t, v),
            slot => *slot = Some(Bucket::new(t, v)),
        }
    }

    fn coarsen(&mut self) {
        let merged = self
            .buckets
            .chunks(2)
            .map(|pair| {
                let mut it = pair.iter().flatten();
                let mut b = *it.next()?;
                for other in it {
                    b.merge(other);
                }
                Some(b)
            })
            .collect();
        self.buckets = merged;
        self.width *= 2.0;
    }

    /// The bucket width of a series of `capacity` buckets whose latest sample is at `span` ms:
    /// the width every series of a trace that long ends up with, at most.
    pub fn width_for(span: f64, capacity: usize) -> f64 {
        let mut width = INITIAL_WIDTH_MS;
        while span >= width * capacity.max(2) as f64 {
            width *= 2.0;
        }
        width
    }

    /// Bucket width, ms.
    pub fn width(&self) -> f64 {
        self.width
    }

    /// Whether no sample was pushed.
    pub fn is_empty(&self) -> bool {
        self.buckets.iter().all(Option::is_none)
    }

    /// Non-empty buckets with their start time (ms), in time order.
    pub fn buckets(&self) -> impl Iterator<Item = (f64, &Bucket)> + '_ {
        self.buckets
            .iter()
            .enumerate()
            .filter_map(move |(i, b)| b.as_ref().map(|b| (i as f64 * self.width, b)))
    }

    /// Sum over all samples.
    pub fn total(&self) -> f64 {
        self.buckets().map(|(_, b)| b.sum).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_keep_min_max_last_sum_of_their_samples_and_stay_bounded() {
        let mut s = Series::new(8);
        let samples: Vec<(f64, f64)> =
            (0..10_000).map(|i| (i as f64 * 0.37, ((i * 7919) % 101) as f64)).collect();
        for &(t, v) in &samples {
            s.push(t, v);
        }
        assert!(s.buckets().count() <= 8);
        assert!(s.width() * 8.0 > samples.last().unwrap().0);
        let mut seen = 0;
        for (start, b) in s.buckets() {
            let inside: Vec<_> =
                samples.iter().filter(|(t, _)| *t >= start && *t < start + s.width()).collect();
            assert_eq!(inside.len() as u64, b.count);
            seen += inside.len();
            let min = inside.iter().map(|s| s.1).fold(f64::MAX, f64::min);
            let max = inside.iter().map(|s| s.1).fold(f64::MIN, f64::max);
            assert_eq!((b.min, b.max), (min, max));
            assert_eq!(b.last, inside.last().unwrap().1);
            assert_eq!(b.t_last, inside.last().unwrap().0);
            assert_eq!(b.sum, inside.iter().map(|s| s.1).sum::<f64>());
        }
        assert_eq!(seen, samples.len());
    }

    #[test]
    fn a_late_sample_before_the_newest_does_not_replace_last() {
        let mut s = Series::new(4);
        s.push(1.0, 5.0);
        s.push(0.9, 9.0);
        let (_, b) = s.buckets().next().unwrap();
        assert_eq!((b.last, b.max, b.count), (5.0, 9.0, 2));
    }
}
