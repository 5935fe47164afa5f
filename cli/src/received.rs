//! A receiver's bytes over time (`serve --received-series`): the payload received so far,
//! sampled against CLOCK_MONOTONIC, the host's clock, so that other processes on the host (the
//! testbed's link sampler, its kernel TCP sinks) can line it up with theirs.

use std::time::Duration;

/// Samples of one transfer: (CLOCK_MONOTONIC ns, payload bytes so far).
pub struct ReceivedSeries {
    every_ns: u64,
    next_ns: u64,
    bytes: u64,
    samples: Vec<(u64, u64)>,
}

impl ReceivedSeries {
    /// A series starting now at 0 bytes, sampled at most once per `every`.
    pub fn new(every: Duration) -> Self {
        let now = monotonic_ns();
        let every_ns = every.as_nanos() as u64;
        ReceivedSeries { every_ns, next_ns: now + every_ns, bytes: 0, samples: vec![(now, 0)] }
    }

    /// `n` more bytes arrived; a sample is taken when an interval has passed since the last.
    pub fn add(&mut self, n: u64) {
        self.bytes += n;
        let now = monotonic_ns();
        if now >= self.next_ns {
            self.samples.push((now, self.bytes));
            self.next_ns = now + self.every_ns;
        }
    }

    /// The samples, the transfer's end the last of them.
    pub fn finish(mut self) -> Vec<(u64, u64)> {
        self.samples.push((monotonic_ns(), self.bytes));
        self.samples
    }
}

fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime fills the timespec it is given; CLOCK_MONOTONIC always exists.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_are_spaced_cumulative_and_end_with_the_total() {
        let started = std::time::Instant::now();
        let mut series = ReceivedSeries::new(Duration::from_millis(2));
        for _ in 0..30 {
            series.add(1000);
            std::thread::sleep(Duration::from_micros(300));
        }
        let samples = series.finish();
        let elapsed = started.elapsed();
        assert_eq!(samples[0].1, 0);
        assert_eq!(samples.last().unwrap().1, 30_000);
        // At least one sample between the first and the last: the adds span 29 sleeps of at
        // least 0.3 ms, more than the 2 ms interval. At most one per interval that passed
        // (bounded by the time measured, not by the adds: where the sleeps stretch to 2 ms and
        // more, as on a loaded host, every add rightly takes one).
        let most = 2 + (elapsed.as_nanos() / Duration::from_millis(2).as_nanos()) as usize;
        assert!(
            samples.len() > 2 && samples.len() <= most,
            "{} samples in {elapsed:?}",
            samples.len()
        );
        for w in samples.windows(2) {
            assert!(w[0].0 <= w[1].0 && w[0].1 <= w[1].1, "{w:?}");
        }
        let spaced = samples[1..samples.len() - 1].windows(2).all(|w| w[1].0 - w[0].0 >= 2_000_000);
        assert!(spaced, "{samples:?}");
    }
}
