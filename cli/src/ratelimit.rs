//! A cap on log lines that peers can trigger: a stranger sending garbage must not be able to
//! flood the operator's terminal or disk.

use std::sync::Mutex;
use std::time::Instant;

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

impl LogLimiter {
    pub fn new(burst: u32, per_second: f64) -> Self {
        let bucket = Bucket { tokens: burst as f64, refilled: Instant::now(), held_back: 0 };
        LogLimiter { burst: burst as f64, per_second, state: Mutex::new(bucket) }
    }

    /// Whether a line may be written at `now`: `Some(n)` with the lines held back before it.
    pub fn admit(&self, now: Instant) -> Option<u64> {
        let mut b = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let elapsed = now.saturating_duration_since(b.refilled).as_secs_f64();
        b.tokens = (b.tokens + elapsed * self.per_second).min(self.burst);
        b.refilled = now;
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
}
