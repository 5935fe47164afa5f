//! Token buckets: a cap on log lines that peers can trigger (a stranger sending garbage must
//! not be able to flood the operator's terminal or disk), and `--bwlimit`'s cap on file data.

use std::sync::Mutex;
use std::time::{Duration, Instant};

/// A token bucket for log lines: `burst` at once, refilled at `per_second`. Lines held back are
/// counted and the count is reported with the next line let through.
pub struct LogLimiter {
    burst: f64,
    per_second: f64,
    state: Mutex<Bucket>,
}

struct Bucket {
    tokens: f64,
    refilled: Instant,
    held_back: u64,
}

impl Bucket {
    /// Add the tokens earned since the last refill, up to `burst`.
    fn refill(&mut self, now: Instant, per_second: f64, burst: f64) {
        let elapsed = now.saturating_duration_since(self.refilled).as_secs_f64();
        self.tokens = (self.tokens + elapsed * per_second).min(burst);
        self.refilled = now;
    }
}

impl LogLimiter {
    pub fn new(burst: u32, per_second: f64) -> Self {
        let bucket = Bucket { tokens: burst as f64, refilled: Instant::now(), held_back: 0 };
        LogLimiter { burst: burst as f64, per_second, state: Mutex::new(bucket) }
    }

    /// Whether a line may be written at `now`: `Some(n)` with the lines held back before it.
    pub fn admit(&self, now: Instant) -> Option<u64> {
        let mut b = self.state.lock().unwrap_or_else(|e| e.into_inner());
        b.refill(now, self.per_second, self.burst);
        if b.tokens < 1.0 {
            b.held_back += 1;
            return None;
        }
        b.tokens -= 1.0;
        Some(std::mem::take(&mut b.held_back))
    }

    /// Print `line` (made only if it will be printed) on stderr, if the budget allows.
    pub fn eprint(&self, line: impl FnOnce() -> String) {
        match self.admit(Instant::now()) {
            Some(0) => eprintln!("{}", line()),
            Some(n) => eprintln!("{} ({n} similar lines not shown)", line()),
            None => {}
        }
    }
}

/// A total rate cap on bytes (`--bwlimit`), shared by every stream of a command: each takes
/// its bytes before moving them, and waits when the bucket is in debt. Whatever the callers, at
/// most `burst + rate * t` bytes pass in any `t`.
pub struct ByteRate {
    per_second: f64,
    burst: f64,
    state: Mutex<Bucket>,
}

impl ByteRate {
    /// Up to `per_second` bytes a second (more than 0), after a first `burst`.
    pub fn new(per_second: u64, burst: u64) -> Self {
        let bucket = Bucket { tokens: burst as f64, refilled: Instant::now(), held_back: 0 };
        ByteRate { per_second: per_second as f64, burst: burst as f64, state: Mutex::new(bucket) }
    }

    /// `--bwlimit`'s cap (send, get and serve alike), if one is asked for: a first burst of one
    /// chunk (what one write moves), then `per_second`.
    pub fn bwlimit(per_second: Option<u64>) -> Option<Self> {
        const BURST: u64 = 256 << 10;
        per_second.map(|rate| ByteRate::new(rate, BURST))
    }

    /// How long to wait at `now` before moving `n` bytes: their share of the debt. Taken at
    /// once, so concurrent callers queue behind each other's bytes.
    pub fn delay(&self, n: u64, now: Instant) -> Duration {
        let mut b = self.state.lock().unwrap_or_else(|e| e.into_inner());
        b.refill(now, self.per_second, self.burst);
        b.tokens -= n as f64;
        Duration::from_secs_f64((-b.tokens).max(0.0) / self.per_second)
    }
}

/// Wait for `n` bytes' share of an optional cap (at once without one), calling `progress(0)`
/// every 100 ms of the wait: the wait is this end's, so a watchdog over the peer (the server's
/// `--stall-timeout`) must not take it for a stall.
pub async fn take(rate: Option<&ByteRate>, n: u64, progress: &mut impl FnMut(u64)) {
    const SLICE: Duration = Duration::from_millis(100);
    let Some(rate) = rate else { return };
    let now = Instant::now();
    let end = now + rate.delay(n, now);
    while Instant::now() < end {
        // Slices to a fixed end, so that their overshoots do not add up.
        tokio::time::sleep_until(end.min(Instant::now() + SLICE).into()).await;
        progress(0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_burst_passes_then_the_rate_holds_and_the_count_is_told() {
        let limiter = LogLimiter::new(5, 2.0);
        let t0 = Instant::now();
        let admitted = (0..1000).filter(|_| limiter.admit(t0).is_some()).count();
        assert_eq!(admitted, 5, "the burst, then nothing");
        // Half a second later: one token back, and it carries the 995 held back.
        assert_eq!(limiter.admit(t0 + Duration::from_millis(500)), Some(995));
        assert_eq!(limiter.admit(t0 + Duration::from_millis(500)), None);
        // A long pause refills only up to the burst.
        let later = t0 + Duration::from_secs(3600);
        assert_eq!((0..100).filter(|_| limiter.admit(later).is_some()).count(), 5);
    }

    #[test]
    fn bytes_beyond_the_burst_wait_for_their_share_of_the_rate() {
        let rate = ByteRate::new(1000, 500);
        let t0 = Instant::now();
        assert_eq!(rate.delay(500, t0), Duration::ZERO, "the burst passes");
        assert_eq!(rate.delay(250, t0), Duration::from_millis(250));
        // A second caller queues behind the first's debt.
        assert_eq!(rate.delay(250, t0), Duration::from_millis(500));
        // Half a second later the debt is paid; a long pause earns only the burst back.
        assert_eq!(rate.delay(0, t0 + Duration::from_millis(500)), Duration::ZERO);
        let later = t0 + Duration::from_secs(60);
        assert_eq!(rate.delay(1500, later), Duration::from_secs(1));
    }
}
