//! Cached sums over the active paths, so that coupled increases cost O(1) per ACK.
//!
//! The coupled algorithms need, per ACK, `W_total` (AMP), `sum(w / srtt)` and `max(w / srtt^2)`
//! (LIA, DCM, MMPTCP's second phase) or `sum(w / srtt)` and `min(srtt)` (MPTCP-D). Recomputing
//! them walks every path on every ACK; instead each path keeps the terms it contributed and a
//! change of one path's window or RTT adjusts the sums by the difference. The maximum and the
//! minimum are kept with the index that holds them and are only rescanned when that path's term
//! moves the wrong way. Everything is recomputed exactly when the set of paths or their activity
//! changes, and about once per round of every path, so floating-point drift from the running
//! differences cannot build up.
//!
//! Paths without an RTT sample yet stay out of the rate sums (they have no rate) but count in
//! `W_total`. Inactive (suppressed or eliminated) paths count in neither.

use super::{Core, Slot};

/// Which sums an algorithm needs the core to maintain (each level costs a little per ACK).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Coupling {
    /// Uncoupled, or coupled only at round ends (XMP): nothing per ACK.
    Off,
    /// `W_total` only (AMP).
    WindowSum,
    /// `W_total`, `sum(w / srtt)`, `max(w / srtt^2)` and `min(srtt)`.
    Rates,
}

/// The cached sums over the active paths, read through [`Core::sums`]. Only the sums the
/// [`Coupling`] level asks for are kept; the others read 0 (or infinity for `min_srtt`).
#[derive(Debug, Clone)]
pub struct Sums {
    level: Coupling,
    /// Sum of the active paths' windows, bytes.
    w_active: f64,
    /// Sum of `w / srtt` over active measured paths, bytes per second.
    rate_sum: f64,
    /// Max of `w / srtt^2` over active measured paths, and where it is.
    max_lia: f64,
    max_lia_at: usize,
    /// Max of `w / srtt` over active measured paths, and where it is.
    max_rate: f64,
    max_rate_at: usize,
    /// Min of `srtt` over active measured paths (infinite if none), seconds, and where it is.
    min_srtt: f64,
    min_srtt_at: usize,
}

impl Sums {
    /// The level kept.
    pub fn coupling(&self) -> Coupling {
        self.level
    }

    /// `W_total`: the sum of the active paths' windows, bytes ([`Coupling::WindowSum`] and up).
    #[inline]
    pub fn window_sum(&self) -> f64 {
        self.w_active
    }

    /// `sum(w / srtt)` over the active measured paths, bytes per second ([`Coupling::Rates`]).
    #[inline]
    pub fn rate_sum(&self) -> f64 {
        self.rate_sum
    }

    /// `max(w / srtt)` over the active measured paths, bytes per second ([`Coupling::Rates`]).
    #[inline]
    pub fn max_rate(&self) -> f64 {
        self.max_rate
    }

    /// `max(w / srtt^2)` over the active measured paths, bytes per second squared: the
    /// numerator of RFC 6356's `alpha` ([`Coupling::Rates`]).
    #[inline]
    pub fn max_rate_per_rtt(&self) -> f64 {
        self.max_lia
    }

    /// `min(srtt)` over the active measured paths, seconds; infinite if none ([`Coupling::Rates`]).
    #[inline]
    pub fn min_srtt(&self) -> f64 {
        self.min_srtt
    }
}

impl Sums {
    pub(crate) fn new(level: Coupling) -> Self {
        Sums {
            level,
            w_active: 0.0,
            rate_sum: 0.0,
            max_lia: 0.0,
            max_lia_at: usize::MAX,
            max_rate: 0.0,
            max_rate_at: usize::MAX,
            min_srtt: f64::INFINITY,
            min_srtt_at: usize::MAX,
        }
    }
}

impl<X> Core<X> {
    /// Switch the maintained sums (MMPTCP couples its paths only after its phase switch).
    pub fn set_coupling(&mut self, level: Coupling) {
        self.sums.level = level;
        self.recompute_sums();
    }

    /// Set the window of the path in `s`, bytes, clamped to `[cwnd_min, 2^48]`, keeping the sums
    /// in step. A NaN is a bug in the algorithm (debug builds panic on it).
    #[inline]
    pub fn set_window(&mut self, s: Slot, w: f64) {
        let p = &mut self.paths[s.0];
        debug_assert!(!w.is_nan(), "NaN window on path {}", p.id);
        let w = w.clamp(p.cwnd_min, super::path::MAX_WINDOW);
        let old = p.w;
        p.w = w;
        if !p.active {
            return;
        }
        match self.sums.level {
            Coupling::Off => {}
            Coupling::WindowSum => self.sums.w_active += w - old,
            Coupling::Rates => {
                self.sums.w_active += w - old;
                self.refresh_rate_terms(s);
            }
        }
    }

    /// Set the smoothed RTT of the path in `s` (seconds, already floored), keeping the sums in step.
    #[inline]
    pub(crate) fn set_srtt(&mut self, s: Slot, srtt: f64) {
        let p = &mut self.paths[s.0];
        p.srtt = srtt;
        if !p.active || self.sums.level != Coupling::Rates {
            return;
        }
        self.refresh_rate_terms(s);
        if srtt <= self.sums.min_srtt {
            self.sums.min_srtt = srtt;
            self.sums.min_srtt_at = s.0;
        } else if self.sums.min_srtt_at == s.0 {
            self.rescan_min_srtt();
        }
    }

    /// Keep the path in `s` from new data (`false`: AMP's suppression, MPTCP-D's elimination) or
    /// let it carry data again. Inactive paths count in no sum.
    pub fn set_active(&mut self, s: Slot, active: bool) {
        if self.paths[s.0].active != active {
            self.paths[s.0].active = active;
            self.recompute_sums();
        }
    }

    #[inline]
    fn refresh_rate_terms(&mut self, s: Slot) {
        let p = &mut self.paths[s.0];
        if p.srtt == 0.0 {
            return;
        }
        let rate = p.w / p.srtt;
        let lia = rate / p.srtt;
        self.sums.rate_sum += rate - p.rate_term;
        let old_rate = p.rate_term;
        p.rate_term = rate;
        let old_lia = p.lia_term;
        p.lia_term = lia;
        if lia >= self.sums.max_lia {
            self.sums.max_lia = lia;
            self.sums.max_lia_at = s.0;
        } else if self.sums.max_lia_at == s.0 && lia < old_lia {
            self.rescan_max_lia();
        }
        if rate >= self.sums.max_rate {
            self.sums.max_rate = rate;
            self.sums.max_rate_at = s.0;
        } else if self.sums.max_rate_at == s.0 && rate < old_rate {
            self.rescan_max_rate();
        }
    }

    /// The largest `key` over the active measured paths and where it is (0 and nowhere if none).
    fn max_over_measured(&self, key: impl Fn(&super::PathState<X>) -> f64) -> (f64, usize) {
        let (mut max, mut at) = (0.0, usize::MAX);
        for (i, p) in self.paths.iter().enumerate() {
            if p.active && p.srtt > 0.0 && key(p) >= max {
                (max, at) = (key(p), i);
            }
        }
        (max, at)
    }

    fn rescan_max_lia(&mut self) {
        (self.sums.max_lia, self.sums.max_lia_at) = self.max_over_measured(|p| p.lia_term);
    }

    fn rescan_max_rate(&mut self) {
        (self.sums.max_rate, self.sums.max_rate_at) = self.max_over_measured(|p| p.rate_term);
    }

    fn rescan_min_srtt(&mut self) {
        let (mut min, mut at) = (f64::INFINITY, usize::MAX);
        for (i, p) in self.paths.iter().enumerate() {
            if p.active && p.srtt > 0.0 && p.srtt <= min {
                (min, at) = (p.srtt, i);
            }
        }
        self.sums.min_srtt = min;
        self.sums.min_srtt_at = at;
    }

    /// Recompute every sum from scratch (path set or activity changed, or a round ended).
    pub(crate) fn recompute_sums(&mut self) {
        if self.sums.level == Coupling::Off {
            return;
        }
        let mut w_active = 0.0;
        let mut rate_sum = 0.0;
        for p in &mut self.paths {
            if p.active {
                w_active += p.w;
            }
            if p.active && p.srtt > 0.0 {
                p.rate_term = p.w / p.srtt;
                p.lia_term = p.rate_term / p.srtt;
                rate_sum += p.rate_term;
            } else {
                p.rate_term = 0.0;
                p.lia_term = 0.0;
            }
        }
        self.sums.w_active = w_active;
        self.sums.rate_sum = rate_sum;
        self.rescan_max_lia();
        self.rescan_max_rate();
        self.rescan_min_srtt();
    }

    /// `sum(w / srtt)` and `min(srtt)` over the active measured paths, computed on the spot
    /// (O(paths), for algorithms that need them only at round ends and keep no sums).
    pub fn scan_rates(&self) -> (f64, f64) {
        let mut total = 0.0;
        let mut min_rtt = f64::INFINITY;
        for p in &self.paths {
            if p.active && p.srtt > 0.0 {
                total += p.w / p.srtt;
                min_rtt = min_rtt.min(p.srtt);
            }
        }
        (total, min_rtt)
    }
}

#[cfg(test)]
mod tests {
    use super::Coupling;
    use crate::core::Core;
    use crate::PathId;

    /// The cached sums must equal a fresh computation after any mix of window and RTT changes.
    #[test]
    fn cached_sums_match_a_fresh_scan() {
        let mut core: Core<()> = Core::new(Coupling::Rates);
        for id in 0..5 {
            core.add_path(PathId(id), 1200);
        }
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for step in 0..10_000 {
            let i = crate::core::Slot((next() % 5) as usize);
            match next() % 4 {
                0 => core.set_window(i, (next() % 1_000_000) as f64),
                1 => core.set_srtt(i, 1e-6 * (1 + next() % 1000) as f64),
                2 => core.grow(i, (next() % 5000) as f64),
                _ => core.set_active(i, next() % 3 != 0),
            }
            let mut fresh = core.clone();
            fresh.recompute_sums();
            let (a, b) = (&core.sums, &fresh.sums);
            let close = |x: f64, y: f64| (x - y).abs() <= 1e-9 * x.abs().max(y.abs()).max(1.0);
            assert!(close(a.w_active, b.w_active), "step {step}: {a:?} vs {b:?}");
            assert!(close(a.rate_sum, b.rate_sum), "step {step}: {a:?} vs {b:?}");
            assert_eq!(a.max_lia, b.max_lia, "step {step}");
            assert_eq!(a.max_rate, b.max_rate, "step {step}");
            assert_eq!(a.min_srtt, b.min_srtt, "step {step}");
        }
    }
}
