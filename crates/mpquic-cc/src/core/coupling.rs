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

use super::Core;

/// Which sums an algorithm needs the core to maintain.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Coupling {
    /// Uncoupled, or coupled only at round ends (XMP): nothing per ACK.
    Off,
    /// `W_total` only (AMP).
    WindowSum,
    /// `W_total`, `sum(w / srtt)`, `max(w / srtt^2)` and `min(srtt)`.
    Rates,
}

/// The cached sums.
#[derive(Debug, Clone)]
pub(crate) struct Sums {
    pub level: Coupling,
    /// Sum of the active paths' windows, bytes.
    pub w_active: f64,
    /// Sum of `w / srtt` over active measured paths, bytes per second.
    pub rate_sum: f64,
    /// Max of `w / srtt^2` over active measured paths, and where it is.
    pub max_lia: f64,
    max_lia_at: usize,
    /// Min of `srtt` over active measured paths (infinite if none), seconds, and where it is.
    pub min_srtt: f64,
    min_srtt_at: usize,
}

impl Sums {
    pub(crate) fn new(level: Coupling) -> Self {
        Sums {
            level,
            w_active: 0.0,
            rate_sum: 0.0,
            max_lia: 0.0,
            max_lia_at: usize::MAX,
            min_srtt: f64::INFINITY,
            min_srtt_at: usize::MAX,
        }
    }
}

impl<X> Core<X> {
    /// Switch the maintained sums (MMPTCP couples its paths only after its phase switch).
    pub(crate) fn set_coupling(&mut self, level: Coupling) {
        self.sums.level = level;
        self.recompute_sums();
    }

    /// Set path `i`'s window, clamped to `[cwnd_min, MAX_WINDOW]`, keeping the sums in step.
    #[inline]
    pub(crate) fn set_window(&mut self, i: usize, w: f64) {
        let p = &mut self.paths[i];
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
                self.refresh_rate_terms(i);
            }
        }
    }

    /// Set path `i`'s smoothed RTT (seconds, already floored), keeping the sums in step.
    #[inline]
    pub(crate) fn set_srtt(&mut self, i: usize, srtt: f64) {
        let p = &mut self.paths[i];
        p.srtt = srtt;
        if !p.active || self.sums.level != Coupling::Rates {
            return;
        }
        self.refresh_rate_terms(i);
        if srtt <= self.sums.min_srtt {
            self.sums.min_srtt = srtt;
            self.sums.min_srtt_at = i;
        } else if self.sums.min_srtt_at == i {
            self.rescan_min_srtt();
        }
    }

    /// Suppress, eliminate or reactivate path `i`.
    pub(crate) fn set_active(&mut self, i: usize, active: bool) {
        if self.paths[i].active != active {
            self.paths[i].active = active;
            self.recompute_sums();
        }
    }

    #[inline]
    fn refresh_rate_terms(&mut self, i: usize) {
        let p = &mut self.paths[i];
        if p.srtt == 0.0 {
            return;
        }
        let rate = p.w / p.srtt;
        let lia = rate / p.srtt;
        self.sums.rate_sum += rate - p.rate_term;
        p.rate_term = rate;
        let old_lia = p.lia_term;
        p.lia_term = lia;
        if lia >= self.sums.max_lia {
            self.sums.max_lia = lia;
            self.sums.max_lia_at = i;
        } else if self.sums.max_lia_at == i && lia < old_lia {
            self.rescan_max_lia();
        }
    }

    fn rescan_max_lia(&mut self) {
        let (mut max, mut at) = (0.0, usize::MAX);
        for (i, p) in self.paths.iter().enumerate() {
            if p.active && p.srtt > 0.0 && p.lia_term >= max {
                (max, at) = (p.lia_term, i);
            }
        }
        self.sums.max_lia = max;
        self.sums.max_lia_at = at;
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
        self.rescan_min_srtt();
    }

    /// `sum(w / srtt)` and `min(srtt)` over active measured paths, computed on the spot (for
    /// algorithms that need them only at round ends).
    pub(crate) fn scan_rates(&self) -> (f64, f64) {
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
            let i = (next() % 5) as usize;
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
            assert_eq!(a.min_srtt, b.min_srtt, "step {step}");
        }
    }
}
