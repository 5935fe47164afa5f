//! The experiment whose analysis is not yet a `[report]` of its file (`mpquic-sim exp e4`): E4's
//! per-phase rates need the run's time series, which the per-run outcome does not carry. It
//! builds its variants from the scenario file, runs them with every seed, and writes `e4.json`,
//! `tables.md` and `e4.svg` into the output directory. E1, E2, E6 and E7 are files in
//! `experiments/`.

use std::path::Path;

use serde_json::json;

use mpquic_scenario::metrics::{cell, Spread};

use crate::exp::{sweep_with, write_json, Metrics, SummaryRow, Variant};
use crate::net::Ps;
use crate::plot::{write_timeline_plot, FlowRates, TimelinePanel};
use crate::report::{goodput_between, jain, Report};
use crate::scenario::{Dur, Scenario};
use crate::Sim;

/// Options common to all experiments.
pub struct ExpOptions<'a> {
    /// Seeds (one run per seed and variant).
    pub seeds: Vec<u64>,
    /// Controllers to compare (the experiment's own list if empty).
    pub controllers: Vec<String>,
    /// Output directory.
    pub out: &'a Path,
    /// The command line, recorded in the JSON.
    pub command: String,
}

fn controllers(o: &ExpOptions, default: &[&str]) -> Vec<String> {
    if o.controllers.is_empty() {
        default.iter().map(|s| s.to_string()).collect()
    } else {
        o.controllers.clone()
    }
}

/// Single-path baselines run with one path whatever the experiment's path count.
fn paths_for(controller: &str, paths: usize) -> usize {
    if controller == "dctcp" {
        1
    } else {
        paths
    }
}

fn link<'a>(r: &'a Report, name: &str) -> Option<&'a crate::report::LinkReport> {
    r.links.iter().find(|l| l.name == name)
}

/// The instants at which a scenario's timeline changes (flow starts and stops, path openings),
/// with 0 and the end of the run: the bounds of its phases, in order.
fn timeline(s: &Scenario) -> Vec<Ps> {
    let end = s.duration.0;
    let mut t = vec![0, end];
    for f in &s.flows {
        t.push(f.start.0);
        t.extend(f.stop.map(|d| d.0));
        t.extend(f.path_times.iter().map(|d| d.0));
    }
    t.retain(|&x| x <= end);
    t.sort_unstable();
    t.dedup();
    t
}

/// The instants to mark in a timeline plot: flows starting after 0 and paths opening after
/// their flow's handshake (ms, label).
fn timeline_marks(s: &Scenario) -> Vec<(f64, String)> {
    let ms = |t: Dur| t.0 as f64 / 1e9;
    let mut marks = vec![];
    for (i, f) in s.flows.iter().enumerate() {
        let name = f.name.clone().unwrap_or_else(|| format!("flow{i}"));
        if f.start.0 > 0 {
            marks.push((ms(f.start), format!("{name} starts")));
        }
        for (p, t) in f.path_times.iter().enumerate().filter(|(_, t)| **t > f.connect_at()) {
            marks.push((ms(*t), format!("{name} +path {}", p + 1)));
        }
    }
    marks
}

/// E4's table: per controller and phase, the multipath flows' paths, Jain's index and each
/// flow's rate, median (min-max) over seeds; in Mbit/s when every rate is below 1 Gbit/s.
fn phase_table(base: &Scenario, bounds_ms: &[f64], summary: &[SummaryRow]) -> String {
    let names: Vec<String> = base
        .flows
        .iter()
        .enumerate()
        .map(|(i, f)| f.name.clone().unwrap_or_else(|| format!("flow{i}")))
        .collect();
    let multipath: Vec<&String> =
        names.iter().zip(&base.flows).filter(|(_, f)| f.paths > 1).map(|(n, _)| n).collect();
    let rates = summary.iter().flat_map(|r| r.metrics.iter()).filter(|(k, _)| k.ends_with("_gbps"));
    let (unit, scale) = if rates.map(|(_, s)| s.max).fold(0.0, f64::max) < 1.0 {
        ("Mbps", 1e3)
    } else {
        ("Gbps", 1.0)
    };
    let paths_of = multipath.iter().map(|n| n.as_str()).collect::<Vec<_>>().join(" / ");
    let rate_cols: Vec<String> = names.iter().map(|n| format!("{n} {unit}")).collect();
    let mut out = format!(
        "### E4: per phase, the flows' rates over its second half, median (min-max) over seeds\n\n\
         | controller | phase (ms) | paths ({paths_of}) | Jain | {} |\n|{}\n",
        rate_cols.join(" | "),
        "---|".repeat(4 + names.len())
    );
    for row in summary {
        for (k, w) in bounds_ms.windows(2).enumerate() {
            let get = |key: String, scale: f64| {
                row.metrics.get(&key).map_or("-".into(), |s| {
                    cell(&Spread {
                        median: s.median * scale,
                        min: s.min * scale,
                        max: s.max * scale,
                        n: s.n,
                        sum: s.sum * scale,
                    })
                })
            };
            let p = k + 1;
            let paths: Vec<String> =
                multipath.iter().map(|n| get(format!("p{p}_{n}_paths"), 1.0)).collect();
            let rates: Vec<String> =
                names.iter().map(|n| get(format!("p{p}_{n}_gbps"), scale)).collect();
            out += &format!(
                "| {} | {p} ({:.0}-{:.0}) | {} | {} | {} |\n",
                row.series,
                w[0],
                w[1],
                paths.join(" / "),
                get(format!("p{p}_jain"), 1.0),
                rates.join(" | ")
            );
        }
    }
    out
}

/// E4, coexistence (XMP Fig. 6, Table 2): the flows of the scenario share one link
/// (`sw->r`) on the scenario's own timeline: flow starts and stops, and paths opened while a
/// flow runs (`path_times`; in the paper flow 1 adds paths at 0, 5 and 15 s, flow 2 joins with
/// 2 paths at 20 s, flow 4 at 10 s). Every flow runs the series' controller (dctcp: one path
/// each). The timeline's instants cut each run into phases; per phase, the rate of each flow
/// present over the phase's second half, its path count, and the Jain's index of those rates.
pub fn e4(base: &Scenario, o: &ExpOptions) -> Result<(), String> {
    let ctrls = controllers(o, &["xmp", "amp", "dcm", "lia", "cubic", "dctcp"]);
    let mut variants = vec![];
    for (i, c) in ctrls.iter().enumerate() {
        let mut s = base.clone();
        for f in &mut s.flows {
            f.controller = Some(c.clone());
            f.paths = paths_for(c, f.paths);
            f.path_times.truncate(f.paths);
        }
        variants.push(Variant { series: c.clone(), x: i as f64, scenario: s });
    }
    let bounds = timeline(base);
    let end = base.duration.0;
    let bucket = base.output.goodput_interval.0.max(1);
    let extract = |r: &Report, sim: &Sim| -> (Metrics, FlowRates) {
        let mut m = Metrics::new();
        for (k, w) in bounds.windows(2).enumerate() {
            let (from, to) = (w[0], w[1]);
            let mid = from + (to - from) / 2;
            let mut rates = vec![];
            for f in &sim.flows {
                if f.spec.start.0 > from || f.spec.stop.map_or(end, |d| d.0) < to {
                    continue; // not present for the whole phase
                }
                let gbps = goodput_between(f, bucket, mid, to) / 1e9;
                let established = f.progress.paths_established.iter().filter(|p| p.1 <= mid);
                m.insert(format!("p{}_{}_gbps", k + 1, f.name), gbps);
                m.insert(format!("p{}_{}_paths", k + 1, f.name), 1.0 + established.count() as f64);
                rates.push(gbps);
            }
            m.insert(format!("p{}_jain", k + 1), jain(&rates).unwrap_or(f64::NAN));
        }
        if let Some(q) = link(r, "sw->r").and_then(|l| l.queue.as_ref()) {
            m.insert("queue_p50".into(), q.p50 as f64);
            m.insert("queue_p99".into(), q.p99 as f64);
        }
        // Whether a multipath flow's paths carry data at the end, or its controller keeps some
        // from new data (AMP's suppression), and how often it suppressed.
        for f in &r.flows {
            m.insert(format!("{}_suppressions", f.name), f.suppressions() as f64);
            let client = f.controllers.iter().find(|c| c.side == crate::sim::Side::Client);
            if let Some(c) = client {
                let active = c.snapshot.paths.iter().filter(|p| p.active).count();
                m.insert(format!("{}_active_paths_end", f.name), active as f64);
            }
        }
        // Per-flow rate over time for the plot, about 250 points per run.
        let step = ((end / bucket) as usize / 250).max(1);
        let series = sim
            .flows
            .iter()
            .map(|f| {
                let points = f
                    .progress
                    .delivered
                    .chunks(step)
                    .enumerate()
                    .map(|(i, c)| {
                        let secs = c.len() as f64 * bucket as f64 / 1e12;
                        let t_ms = (i * step) as f64 * bucket as f64 / 1e9;
                        (t_ms, c.iter().sum::<u64>() as f64 * 8.0 / secs / 1e9)
                    })
                    .collect();
                (f.name.clone(), points)
            })
            .collect();
        (m, series)
    };
    let bounds_ms: Vec<f64> = bounds.iter().map(|&t| t as f64 / 1e9).collect();
    eprintln!(
        "E4: {} controllers x {} seeds, phases at {bounds_ms:?} ms",
        ctrls.len(),
        o.seeds.len()
    );
    let (rows, summary, series) = sweep_with(&variants, &o.seeds, &extract)?;
    std::fs::create_dir_all(o.out).map_err(|e| e.to_string())?;
    write_json(
        &o.out.join("e4.json"),
        json!({
            "experiment": "E4 coexistence fairness (XMP Fig. 6, Table 2)",
            "command": o.command,
            "scenario": base,
            "seeds": o.seeds,
            "controllers_x": ctrls,
            "phases_ms": bounds_ms,
            "definition": "One run per controller and seed on the scenario's timeline (flow \
                starts, stops and per-path open times). Phase k lies between the k-th and \
                (k+1)-th of phases_ms. p<k>_<flow>_gbps = the flow's goodput over the second half \
                of phase k, for the flows present for the whole phase; p<k>_<flow>_paths = paths \
                established by the middle of the phase; p<k>_jain = Jain's index of those rates. \
                <flow>_suppressions = AMP SSR episodes; <flow>_active_paths_end = the client \
                controller's paths allowed to carry new data at the end (mpquic-cc only). \
                Every flow runs the series' controller (dctcp: all single-path). queue_* = the \
                bottleneck sw->r queue (packets) over the whole run.",
        }),
        &rows,
        &summary,
    )?;
    std::fs::write(o.out.join("tables.md"), phase_table(base, &bounds_ms, &summary))
        .map_err(|e| e.to_string())?;
    let marks = timeline_marks(base);
    let panels: Vec<TimelinePanel> = ctrls
        .iter()
        .zip(series.into_iter().step_by(o.seeds.len().max(1)))
        .map(|(c, flows)| TimelinePanel {
            title: format!("{c} (seed {})", o.seeds.first().copied().unwrap_or(0)),
            flows,
            marks: marks.clone(),
        })
        .collect();
    write_timeline_plot(
        &o.out.join("e4.svg"),
        "E4 coexistence: per-flow goodput on one link; dashed: flow starts and path openings",
        &panels,
    )
}
