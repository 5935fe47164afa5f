//! `shift_time` (E3, traffic shifting, AMP Fig. 5, 6, 11): how fast the run's 2-path flow moves
//! its traffic off a path when a cross flow (the metric's group) arrives there.
//!
//! The 2-path flow's rate on each path is read from the wire bytes of the links only it uses
//! (its host's access links, e.g. `src->a` and `src->b` in the `two-path` topology), per bucket
//! of `output.goodput_interval`. The crossed path is the one whose last link (the link into its
//! server address) the cross flow's path ends on too.
//!
//! **Definition.** Let `share(t)` be the crossed path's share of the 2-path flow's bytes in
//! bucket `t`, and `pre` its mean share over the *pre-cross window* (the last half of the time
//! between the run's previous timeline instant, a flow's start or stop or a path opening, and
//! the cross flow's start). The flow *has moved its traffic* at the end of the first bucket
//! that begins a run of buckets, lasting at least [`HOLD`], in each of which
//! `share < THRESHOLD * pre`. The shifting time (`shift_ms`) is that instant minus the cross
//! flow's start; NaN if it never moved before the cross flow's stop. Buckets where the flow
//! sent nothing on either path do not count as moved. `during_share` and `during_rate_gbps`
//! are over the second half of the cross flow's time.

use mpquic_scenario::phases::timeline;
use mpquic_scenario::Dur;

use super::{host_addrs, interfaces, Analysis, Panel, Run};
use crate::net::Ps;
use crate::plot::ShiftPanel;
use crate::Sim;

pub const SHIFT_TIME: Analysis = Analysis { name: "shift_time", compute, panel: Some(panel) };

/// "Moved": the crossed path's share below this fraction of its pre-cross value...
const THRESHOLD: f64 = 0.5;
/// ...for at least this long.
const HOLD: Dur = Dur::ms(1);

/// One cross flow's phase, as the definition reads it.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Phase {
    pre_share: f64,
    during_share: f64,
    shift_ms: Option<f64>,
    during_rate_gbps: f64,
}

fn compute(run: &Run, metric: &str, _: Option<&str>, flows: &[usize]) -> f64 {
    let [cross] = flows else { return f64::NAN };
    let Some(p) = phase(run.sim, *cross) else { return f64::NAN };
    match metric {
        "shift_ms" => p.shift_ms.unwrap_or(f64::NAN),
        "pre_share" => p.pre_share,
        "during_share" => p.during_share,
        "during_rate_gbps" => p.during_rate_gbps,
        _ => f64::NAN,
    }
}

/// The run's one 2-path flow, with its paths' first links (its host's access links) and last
/// links (into its server's addresses), path by path.
fn multipath(sim: &Sim) -> Option<(usize, [(&str, &str); 2])> {
    let mut two = sim.flows.iter().enumerate().filter(|(_, f)| f.spec.paths == 2);
    let (i, f) = two.next().filter(|_| two.next().is_none())?;
    let (client, server) = (interfaces(sim, &f.spec.from), host_addrs(sim, &f.spec.to));
    let hop = |p: usize| -> Option<(&str, &str)> {
        let first = client.get((f.spec.from_addr + p) % client.len().max(1))?.link;
        let ip = server.get((f.spec.to_addr + p) % server.len().max(1))?;
        Some((sim.links[first].params.name.as_str(), sim.link_into(*ip)?))
    };
    Some((i, [hop(0)?, hop(1)?]))
}

fn bytes<'a>(sim: &'a Sim, link: &str) -> &'a [u64] {
    sim.links.iter().find(|l| l.params.name == link).map_or(&[], |l| &l.stats.bytes_series)
}

/// The phase of cross flow `cross` (NaN-free: None where the run has no 2-path flow, the cross
/// flow shares none of its paths, or it starts at 0).
fn phase(sim: &Sim, cross: usize) -> Option<Phase> {
    let (mp, hops) = multipath(sim)?;
    let c = &sim.flows[cross];
    if cross == mp {
        return None;
    }
    let server = host_addrs(sim, &c.spec.to);
    let into = sim.link_into(*server.get(c.spec.to_addr % server.len().max(1))?)?;
    let crossed = hops.iter().position(|h| h.1 == into)?;
    let end = sim.scenario.duration.0;
    let (start, stop) = (c.spec.start.0, c.spec.stop.map_or(end, |t| t.0));
    let prev =
        timeline(&sim.scenario, Dur(end)).into_iter().map(|t| t.0).filter(|&t| t < start).max()?;
    let bucket = sim.scenario.output.goodput_interval.0.max(1);
    let series = [bytes(sim, hops[0].0), bytes(sim, hops[1].0)];
    let at = |s: &[u64], i: usize| s.get(i).copied().unwrap_or(0);
    let share = |i: usize| {
        let (c, o) = (at(series[crossed], i), at(series[1 - crossed], i));
        (c + o > 0).then(|| c as f64 / (c + o) as f64)
    };
    let mean_share = |from: usize, to: usize| {
        let c: u64 = (from..to).map(|i| at(series[crossed], i)).sum();
        let o: u64 = (from..to).map(|i| at(series[1 - crossed], i)).sum();
        if c + o == 0 {
            0.0
        } else {
            c as f64 / (c + o) as f64
        }
    };
    let b = |t: Ps| (t / bucket) as usize;
    let pre_from = prev + (start - prev) / 2;
    let pre_share = mean_share(b(pre_from), b(start));
    let mid = start + (stop - start) / 2;
    let during_share = mean_share(b(mid), b(stop));
    let during_bytes: u64 = (b(mid)..b(stop)).map(|i| at(series[0], i) + at(series[1], i)).sum();
    let during_rate_gbps = during_bytes as f64 * 8.0 / ((stop - mid) as f64 / 1e12) / 1e9;
    let need = HOLD.0.div_ceil(bucket).max(1) as usize;
    let limit = THRESHOLD * pre_share;
    let mut run = 0;
    let mut shift_ms = None;
    for i in b(start)..b(stop) {
        if share(i).is_some_and(|s| s < limit) {
            run += 1;
            if run == need {
                let first = i + 1 - need;
                let moved_at = (first as Ps + 1) * bucket;
                shift_ms = Some(moved_at.saturating_sub(start) as f64 / 1e9);
                break;
            }
        } else {
            run = 0;
        }
    }
    Some(Phase { pre_share, during_share, shift_ms, during_rate_gbps })
}

/// The 2-path flow's rate per path over time (about 2000 points), the other flows' times
/// shaded, the shifting times in the title.
fn panel(run: &Run) -> Panel {
    let sim = run.sim;
    let Some((mp, hops)) = multipath(sim) else {
        let title = "no 2-path flow".into();
        return Panel::Shift(ShiftPanel { title, rates: vec![], cross: vec![] });
    };
    let bucket = sim.scenario.output.goodput_interval.0.max(1);
    let [a, b] = [bytes(sim, hops[0].0), bytes(sim, hops[1].0)];
    let n = a.len().max(b.len());
    let every = n.div_ceil(2000).max(1);
    let width = (bucket * every as Ps) as f64 / 1e12;
    let gbps = |s: &[u64], r: std::ops::Range<usize>| {
        r.map(|i| s.get(i).copied().unwrap_or(0)).sum::<u64>() as f64 * 8.0 / width / 1e9
    };
    let rates = (0..n.div_ceil(every))
        .map(|k| {
            let r = k * every..((k + 1) * every).min(n);
            let t = (k * every) as f64 * bucket as f64 / 1e9;
            (t, gbps(a, r.clone()), gbps(b, r))
        })
        .collect();
    let end = sim.scenario.duration.0;
    let others = (0..sim.flows.len()).filter(|&i| i != mp);
    let mut cross = vec![];
    let mut moved = vec![];
    for i in others {
        let f = &sim.flows[i];
        let ms = |t: Ps| t as f64 / 1e9;
        cross.push((ms(f.spec.start.0), ms(f.spec.stop.map_or(end, |t| t.0))));
        let shift = phase(sim, i).and_then(|p| p.shift_ms);
        let shift = shift.map_or("not moved".into(), |t| format!("{t:.1} ms"));
        moved.push(format!("{shift} ({})", f.name));
    }
    let title = format!("moved in {}", moved.join(", "));
    Panel::Shift(ShiftPanel { title, rates, cross })
}
