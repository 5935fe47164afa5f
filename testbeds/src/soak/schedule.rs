//! The soak's timeline of faults, drawn from the seed before the run starts: path faults one
//! at a time (a black hole or a gray path, then its healing), and the server's restarts.

use fastrand::Rng;

/// One thing the fault thread does at its time.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// Every packet of path `p`'s last link dropped, both ways.
    Blackhole(usize),
    /// Path `p` put back as it was.
    Restore(usize),
    /// `pct` percent of path `p`'s packets dropped at random, both ways.
    Lose(usize, f64),
    /// The loss of path `p` taken away.
    Heal(usize, f64),
    /// SIGTERM to the server; it is started again `down_s` later.
    Restart { down_s: f64 },
}

/// Seconds after the start at which each action happens, in order.
pub type Timeline = Vec<(f64, Action)>;

/// The timeline of a run of `duration_s` over `paths` paths with `restarts` server restarts:
/// path faults from 5 s in, one at a time with 8-25 s between them (a black hole of 3-10 s
/// or 5-30% loss for 5-15 s); restarts spread over 20-70% of the run, so that the last
/// server instance runs at least the last 30% (its memory is judged from its warm-up on).
pub fn timeline(seed: u64, duration_s: f64, paths: usize, restarts: u32) -> Timeline {
    let mut rng = Rng::with_seed(seed ^ 0x5041_4b00);
    let mut t = 5.0;
    let mut out = Vec::new();
    while t < duration_s - 5.0 && paths > 0 {
        let p = rng.usize(0..paths);
        if rng.bool() {
            let hold = 3.0 + 7.0 * rng.f64();
            out.push((t, Action::Blackhole(p)));
            out.push((t + hold, Action::Restore(p)));
            t += hold;
        } else {
            let (pct, hold) = ((5.0 + 25.0 * rng.f64()).round(), 5.0 + 10.0 * rng.f64());
            out.push((t, Action::Lose(p, pct)));
            out.push((t + hold, Action::Heal(p, pct)));
            t += hold;
        }
        t += 8.0 + 17.0 * rng.f64();
    }
    for r in 0..restarts {
        let share = 0.2 + 0.5 * (r as f64 + rng.f64()) / restarts as f64;
        out.push((duration_s * share, Action::Restart { down_s: 1.0 + 2.0 * rng.f64() }));
    }
    out.sort_by(|a, b| a.0.total_cmp(&b.0));
    out
}

/// The moment `t` of a run, as the table prints it.
pub fn describe(t: f64, action: &Action) -> String {
    match action {
        Action::Blackhole(p) => format!("{t:.1} s: path {p} black-holed"),
        Action::Restore(p) => format!("{t:.1} s: path {p} restored"),
        Action::Lose(p, pct) => format!("{t:.1} s: path {p} gray ({pct}% loss)"),
        Action::Heal(p, _) => format!("{t:.1} s: path {p} healed"),
        Action::Restart { down_s } => {
            format!("{t:.1} s: server SIGTERM, restarted {down_s:.1} s later")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_path_fault_at_a_time_and_restarts_in_the_middle() {
        let tl = timeline(7, 1800.0, 4, 2);
        assert_eq!(tl, timeline(7, 1800.0, 4, 2), "the seed decides it");
        assert_ne!(tl, timeline(8, 1800.0, 4, 2));
        let mut open: Option<usize> = None;
        for (t, a) in &tl {
            match a {
                Action::Blackhole(p) | Action::Lose(p, _) => {
                    assert!(open.is_none(), "a fault at {t} while path {open:?} is faulted");
                    open = Some(*p);
                }
                Action::Restore(p) | Action::Heal(p, _) => assert_eq!(open.take(), Some(*p)),
                Action::Restart { .. } => assert!((360.0..=1260.0).contains(t), "{t}"),
            }
        }
        assert!(open.is_none(), "every fault is healed");
        let faults = tl.iter().filter(|(_, a)| matches!(a, Action::Blackhole(_))).count();
        assert!(faults > 10, "{faults} black holes in 30 minutes");
        assert_eq!(tl.iter().filter(|(_, a)| matches!(a, Action::Restart { .. })).count(), 2);
    }

    /// The suite's short soak (tests/soak.rs: seed 7, 120 s) has both kinds of path fault.
    #[test]
    fn the_short_soak_black_holes_and_grays_a_path() {
        let tl = timeline(7, 120.0, 4, 1);
        assert!(tl.iter().any(|(t, a)| matches!(a, Action::Blackhole(_)) && *t < 110.0));
        assert!(tl.iter().any(|(t, a)| matches!(a, Action::Lose(..)) && *t < 110.0));
    }
}
