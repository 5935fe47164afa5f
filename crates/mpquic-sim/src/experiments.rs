//! The experiments of `design/EXPERIMENTS.md` as sweeps over a base scenario (`mpquic-sim exp`).
//! Each builds its variants from the scenario file, runs them with every seed, and writes
//! `<exp>.json` and `<exp>*.svg` into the output directory.

use std::path::Path;

use serde_json::json;

use crate::exp::{
    group_flows, jain_of, mean_std, quantile, sweep, sweep_with, write_json, write_sweep_plot,
    Metrics, Panel, Variant,
};
use crate::net::Ps;
use crate::plot::{write_timeline_plot, FlowRates, TimelinePanel};
use crate::report::{goodput_between, jain, FlowReport, Report};
use crate::scenario::{Dur, Scenario, Workload};
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

fn suppressions(flows: &[&FlowReport]) -> f64 {
    flows.iter().map(|f| f.notice_counts.get("suppressed").copied().unwrap_or(0)).sum::<u64>()
        as f64
}

/// For plot titles: the data-center ACK profile, if the scenario sets one.
fn ack_profile(s: &Scenario) -> String {
    s.transport.max_ack_delay.map_or(String::new(), |d| format!(", max_ack_delay {d}"))
}

/// E1, incast: k multipath flows of `bytes` join the bottleneck `sw->r` 50 us apart, `rounds`
/// times; FCT mean/std, unfinished flows, PTO expiries, drops.
pub fn e1(base: &Scenario, o: &ExpOptions) -> Result<(), String> {
    let ctrls = controllers(o, &["amp", "xmp", "dcm", "lia", "cubic", "dctcp"]);
    let ks = [10usize, 20, 30, 40];
    let mut variants = vec![];
    for c in &ctrls {
        for &k in &ks {
            let mut s = base.clone();
            for w in &mut s.workloads {
                if let Workload::Incast { k: wk, paths, controller, .. } = w {
                    *wk = Some(k);
                    *paths = paths_for(c, *paths);
                    *controller = Some(c.clone());
                }
            }
            variants.push(Variant { series: c.clone(), x: k as f64, scenario: s });
        }
    }
    let rounds = base
        .workloads
        .iter()
        .map(|w| if let Workload::Incast { rounds, .. } = w { *rounds } else { 0 })
        .sum::<usize>()
        .max(1) as f64;
    let metrics = move |r: &Report| -> Metrics {
        let flows: Vec<&FlowReport> = group_flows(r, "incast").collect();
        let fcts: Vec<f64> = flows.iter().filter_map(|f| f.fct_us).map(|x| x / 1000.0).collect();
        let (mean, std) = mean_std(&fcts);
        let bn = link(r, "sw->r");
        let mut m = Metrics::new();
        m.insert("flows".into(), flows.len() as f64);
        m.insert("unfinished".into(), (flows.len() - fcts.len()) as f64);
        m.insert("fct_mean_ms".into(), mean);
        m.insert("fct_std_ms".into(), std);
        m.insert("fct_p50_ms".into(), quantile(&fcts, 0.5));
        m.insert("fct_p99_ms".into(), quantile(&fcts, 0.99));
        m.insert("fct_max_ms".into(), quantile(&fcts, 1.0));
        let pto: u64 = flows.iter().map(|f| f.pto_client + f.pto_server).sum();
        m.insert("pto_per_round".into(), pto as f64 / rounds);
        m.insert(
            "flows_with_pto_per_round".into(),
            flows.iter().filter(|f| f.pto_client > 0).count() as f64 / rounds,
        );
        m.insert(
            "drops_per_round".into(),
            bn.map_or(f64::NAN, |l| l.dropped_overflow as f64) / rounds,
        );
        m.insert("marks_per_round".into(), bn.map_or(f64::NAN, |l| l.marked as f64) / rounds);
        m.insert("suppressions_per_round".into(), suppressions(&flows) / rounds);
        // The client sends the data, so its ACK_FREQUENCY request sets how the server ACKs.
        let lost = |fs: &[&FlowReport]| fs.iter().filter(|f| f.ack_frequency_lost.0).count();
        let slow: Vec<&FlowReport> =
            flows.iter().copied().filter(|f| f.fct_us.is_none_or(|x| x > 10_000.0)).collect();
        m.insert("ack_request_lost_per_round".into(), lost(&flows) as f64 / rounds);
        m.insert("flows_over_10ms_per_round".into(), slow.len() as f64 / rounds);
        m.insert("over_10ms_with_ack_request_lost_per_round".into(), lost(&slow) as f64 / rounds);
        // FCTs of the flows whose ACK profile did take effect.
        let heard: Vec<f64> = flows
            .iter()
            .filter(|f| !f.ack_frequency_lost.0)
            .filter_map(|f| f.fct_us)
            .map(|x| x / 1000.0)
            .collect();
        m.insert("fct_mean_ms_ack_heard".into(), mean_std(&heard).0);
        m.insert("fct_max_ms_ack_heard".into(), quantile(&heard, 1.0));
        m
    };
    let sizes: Vec<String> = base
        .workloads
        .iter()
        .filter_map(|w| match w {
            Workload::Incast { bytes, .. } => Some(format!("{} KB", bytes / 1024)),
            _ => None,
        })
        .collect();
    eprintln!("E1: {} variants x {} seeds", variants.len(), o.seeds.len());
    let (rows, summary) = sweep(&variants, &o.seeds, &metrics)?;
    std::fs::create_dir_all(o.out).map_err(|e| e.to_string())?;
    write_json(
        &o.out.join("e1.json"),
        json!({
            "experiment": "E1 incast (AMP Fig. 2, 8)",
            "command": o.command,
            "scenario": base,
            "seeds": o.seeds,
            "definition": "Per run: the flows of the incast group(s) (k per round, `rounds` rounds). \
                fct_* over the flows that completed (ms); unfinished = flows not complete at the end \
                of the run; pto_per_round = probe-timeout expiries of both ends of all flows / rounds; \
                flows_with_pto_per_round = flows whose client had >= 1 PTO / rounds; drops/marks at \
                the bottleneck sw->r / rounds; suppressions = AMP SSR episodes. Summary: median, min, \
                max over seeds. dctcp runs single-path.",
        }),
        &rows,
        &summary,
    )?;
    write_sweep_plot(
        &o.out.join("e1.svg"),
        &format!(
            "E1 incast: {} flows, 4 paths (dctcp: 1), 10 Gbps, 100-pkt buffer, K=10{}",
            sizes.join(" + "),
            ack_profile(base)
        ),
        "k (flows per round)",
        &summary,
        &[
            Panel { metric: "fct_mean_ms".into(), label: "mean FCT (ms)".into(), log: true },
            Panel { metric: "fct_std_ms".into(), label: "FCT std (ms)".into(), log: true },
            Panel {
                metric: "pto_per_round".into(),
                label: "PTO expiries / round".into(),
                log: false,
            },
            Panel { metric: "unfinished".into(), label: "unfinished flows".into(), log: false },
        ],
    )
}

/// E2, minimum window syndrome: (a) 8 DCTCP flows + 1 multipath flow (4 paths) per controller;
/// (b) 4 multipath flows alone. Jain, multipath / DCTCP goodput ratio, bottleneck queue.
pub fn e2(base: &Scenario, o: &ExpOptions) -> Result<(), String> {
    let ctrls = controllers(o, &["amp", "xmp", "dcm", "lia", "cubic", "dctcp"]);
    let mut mix = vec![];
    let mut alone = vec![];
    for (i, c) in ctrls.iter().enumerate() {
        let mut s = base.clone();
        for f in &mut s.flows {
            if f.name.as_deref() == Some("multipath") {
                f.controller = Some(c.clone());
                f.paths = paths_for(c, f.paths);
            }
        }
        mix.push(Variant { series: c.clone(), x: i as f64, scenario: s });
        if c == "dctcp" {
            continue;
        }
        // (b): the same link, four multipath flows of this controller and nothing else.
        let mut s = base.clone();
        let template = s
            .flows
            .iter()
            .find(|f| f.name.as_deref() == Some("multipath"))
            .cloned()
            .ok_or("E2 needs a flow named multipath")?;
        s.flows = (0..4)
            .map(|j| {
                let mut f = template.clone();
                f.name = Some(format!("multipath{j}"));
                f.from = format!("s{j}");
                f.controller = Some(c.clone());
                f
            })
            .collect();
        alone.push(Variant { series: c.clone(), x: i as f64, scenario: s });
    }
    let q = |r: &Report, m: &mut Metrics| {
        if let Some(l) = link(r, "sw->r") {
            if let Some(q) = &l.queue {
                m.insert("queue_p50".into(), q.p50 as f64);
                m.insert("queue_p90".into(), q.p90 as f64);
                m.insert("queue_p99".into(), q.p99 as f64);
                m.insert("queue_mean".into(), q.mean);
            }
            m.insert("utilization".into(), l.utilization);
            m.insert("drops".into(), l.dropped_overflow as f64);
        }
    };
    let mix_metrics = |r: &Report| -> Metrics {
        let mut m = Metrics::new();
        let single: Vec<&FlowReport> = group_flows(r, "single").collect();
        let mp: Vec<&FlowReport> =
            r.flows.iter().filter(|f| f.name.starts_with("multipath")).collect();
        let all: Vec<&FlowReport> = single.iter().chain(mp.iter()).copied().collect();
        let (dmean, _) =
            mean_std(&single.iter().map(|f| f.goodput_last_half_bps / 1e9).collect::<Vec<_>>());
        let mpg = mp.first().map_or(f64::NAN, |f| f.goodput_last_half_bps / 1e9);
        m.insert("jain".into(), jain_of(&all));
        m.insert("jain_dctcp_only".into(), jain_of(&single));
        m.insert("mp_gbps".into(), mpg);
        m.insert("dctcp_mean_gbps".into(), dmean);
        m.insert("mp_over_dctcp".into(), mpg / dmean);
        m.insert("suppressions".into(), suppressions(&mp));
        q(r, &mut m);
        m
    };
    let alone_metrics = |r: &Report| -> Metrics {
        let mut m = Metrics::new();
        let mp: Vec<&FlowReport> =
            r.flows.iter().filter(|f| f.name.starts_with("multipath")).collect();
        m.insert("jain".into(), jain_of(&mp));
        m.insert("suppressions".into(), suppressions(&mp));
        let mins: Vec<f64> = mp
            .iter()
            .flat_map(|f| f.controllers.iter().filter(|c| c.side == crate::sim::Side::Client))
            .flat_map(|c| c.snapshot.paths.iter())
            .map(|p| p.window as f64 / 1400.0)
            .collect();
        m.insert("final_window_pkts_mean".into(), mean_std(&mins).0);
        q(r, &mut m);
        m
    };
    eprintln!("E2 (a): 8 DCTCP + 1 multipath, {} controllers x {} seeds", mix.len(), o.seeds.len());
    let (rows_a, sum_a) = sweep(&mix, &o.seeds, &mix_metrics)?;
    eprintln!("E2 (b): 4 multipath flows alone, {} controllers", alone.len());
    let (rows_b, sum_b) = sweep(&alone, &o.seeds, &alone_metrics)?;
    std::fs::create_dir_all(o.out).map_err(|e| e.to_string())?;
    let mut rows = rows_a.clone();
    rows.iter_mut().for_each(|r| r.series = format!("mix/{}", r.series));
    rows.extend(rows_b.iter().cloned().map(|mut r| {
        r.series = format!("alone/{}", r.series);
        r
    }));
    let mut summary = sum_a.clone();
    summary.iter_mut().for_each(|r| r.series = format!("mix/{}", r.series));
    summary.extend(sum_b.iter().cloned().map(|mut r| {
        r.series = format!("alone/{}", r.series);
        r
    }));
    write_json(
        &o.out.join("e2.json"),
        json!({
            "experiment": "E2 minimum window syndrome (AMP Fig. 4, 9, 10)",
            "command": o.command,
            "scenario": base,
            "seeds": o.seeds,
            "controllers_x": ctrls,
            "definition": "mix/<c>: 8 single-path DCTCP flows (group single) + the flow `multipath` \
                (4 paths, controller c; dctcp = a 9th single-path DCTCP flow). alone/<c>: four \
                4-path flows of c (from s0..s3), nothing else. Goodput = each flow's goodput over \
                the second half of the run. jain over all flows; mp_over_dctcp = multipath goodput / \
                mean DCTCP goodput. queue_* = percentiles of the bottleneck sw->r queue (packets), \
                sampled every 10 us over the whole run. Summary: median, min, max over seeds.",
        }),
        &rows,
        &summary,
    )?;
    write_sweep_plot(
        &o.out.join("e2-mix.svg"),
        &format!("E2 (a) 8 DCTCP + 1 multipath (4 paths); x = {}", ctrls.join(", ")),
        "controller of the multipath flow (index)",
        &sum_a,
        &[
            Panel { metric: "jain".into(), label: "Jain's index".into(), log: false },
            Panel {
                metric: "mp_over_dctcp".into(),
                label: "multipath / DCTCP goodput".into(),
                log: false,
            },
            Panel { metric: "queue_p50".into(), label: "median queue (pkts)".into(), log: false },
            Panel { metric: "queue_p90".into(), label: "p90 queue (pkts)".into(), log: false },
        ],
    )?;
    write_sweep_plot(
        &o.out.join("e2-alone.svg"),
        &format!(
            "E2 (b) 4 multipath flows (4 paths) alone; x = {}",
            ctrls.iter().filter(|c| *c != "dctcp").cloned().collect::<Vec<_>>().join(", ")
        ),
        "controller (index)",
        &sum_b,
        &[
            Panel { metric: "queue_p50".into(), label: "median queue (pkts)".into(), log: false },
            Panel { metric: "queue_p90".into(), label: "p90 queue (pkts)".into(), log: false },
            Panel { metric: "jain".into(), label: "Jain's index".into(), log: false },
        ],
    )
}

/// Set the controller (and, for multipath controllers, the path count) of the flows whose group
/// is `group`; single-path baselines keep one path.
fn set_group(s: &mut Scenario, group: &str, controller: &str, paths: usize) {
    for f in &mut s.flows {
        if f.group.as_deref() == Some(group) {
            f.controller = Some(controller.to_string());
            f.paths = paths_for(controller, paths);
        }
    }
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
            m.insert(format!("{}_suppressions", f.name), suppressions(&[f]));
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

/// E6, short flows vs many paths (MMPTCP Fig. 1): long flows (group `long`) and Poisson short
/// flows (group `poisson*`) all run the series' controller with `paths` paths; x = paths.
pub fn e6(base: &Scenario, o: &ExpOptions) -> Result<(), String> {
    let ctrls = controllers(o, &["mmptcp", "lia", "amp", "cubic", "dctcp"]);
    let mut variants = vec![];
    for c in &ctrls {
        for paths in [4usize, 8] {
            if c == "dctcp" && paths != 8 {
                continue;
            }
            let mut s = base.clone();
            set_group(&mut s, "long", c, paths);
            for w in &mut s.workloads {
                if let Workload::Poisson { paths: p, controller, .. } = w {
                    *p = paths_for(c, paths);
                    *controller = Some(c.clone());
                }
            }
            variants.push(Variant { series: c.clone(), x: paths as f64, scenario: s });
        }
    }
    let metrics = |r: &Report| -> Metrics {
        let mut m = Metrics::new();
        let short: Vec<&FlowReport> = group_flows(r, "poisson").collect();
        let fcts: Vec<f64> = short.iter().filter_map(|f| f.fct_us).map(|x| x / 1000.0).collect();
        let (mean, std) = mean_std(&fcts);
        m.insert("short_flows".into(), short.len() as f64);
        m.insert("short_unfinished".into(), (short.len() - fcts.len()) as f64);
        m.insert("short_fct_mean_ms".into(), mean);
        m.insert("short_fct_std_ms".into(), std);
        m.insert("short_fct_p50_ms".into(), quantile(&fcts, 0.5));
        m.insert("short_fct_p99_ms".into(), quantile(&fcts, 0.99));
        m.insert(
            "short_pto".into(),
            short.iter().map(|f| (f.pto_client + f.pto_server) as f64).sum(),
        );
        let long: Vec<&FlowReport> = group_flows(r, "long").collect();
        m.insert(
            "long_mean_gbps".into(),
            mean_std(&long.iter().map(|f| f.goodput_bps / 1e9).collect::<Vec<_>>()).0,
        );
        m
    };
    eprintln!("E6: {} variants x {} seeds", variants.len(), o.seeds.len());
    let (rows, summary) = sweep(&variants, &o.seeds, &metrics)?;
    std::fs::create_dir_all(o.out).map_err(|e| e.to_string())?;
    write_json(
        &o.out.join("e6.json"),
        json!({
            "experiment": "E6 short flows vs many paths (MMPTCP Fig. 1)",
            "command": o.command,
            "scenario": base,
            "seeds": o.seeds,
            "definition": "All flows (long bulk flows of group long and the Poisson 70 KB short \
                flows, handshake at arrival, counted in the FCT) run the series' controller with x \
                paths (dctcp: 1). short_fct_* over the short flows that completed (ms).",
        }),
        &rows,
        &summary,
    )?;
    write_sweep_plot(
        &o.out.join("e6.svg"),
        "E6: 70 KB Poisson short flows with long flows, fat-tree k=4, 10 Gbps",
        "paths per flow",
        &summary,
        &[
            Panel {
                metric: "short_fct_mean_ms".into(),
                label: "short FCT mean (ms)".into(),
                log: true,
            },
            Panel {
                metric: "short_fct_std_ms".into(),
                label: "short FCT std (ms)".into(),
                log: true,
            },
            Panel { metric: "long_mean_gbps".into(), label: "long flow Gbps".into(), log: false },
        ],
    )
}

/// E7, partition/aggregate with background (AMP Fig. 12): DCTCP jobs (workloads) plus long
/// multipath background flows (group `bg`) with x = 4, 6, 8 paths; JCT p50/p90.
pub fn e7(base: &Scenario, o: &ExpOptions) -> Result<(), String> {
    let ctrls = controllers(o, &["amp", "xmp", "dcm", "dctcp", "lia", "cubic"]);
    let mut variants = vec![];
    for c in &ctrls {
        for paths in [4usize, 6, 8] {
            if c == "dctcp" && paths != 4 {
                continue; // single path: the same run
            }
            let mut s = base.clone();
            set_group(&mut s, "bg", c, paths);
            variants.push(Variant { series: c.clone(), x: paths as f64, scenario: s });
        }
    }
    let metrics = |r: &Report| -> Metrics {
        let mut m = Metrics::new();
        // Jobs: (group, job number from the name `pa<w>-job<j>-<worker>`) -> first start, last
        // completion, all complete, no flow lost an ACK_FREQUENCY request.
        let mut jobs: std::collections::BTreeMap<(String, String), (f64, f64, bool, bool)> =
            Default::default();
        for f in group_flows(r, "pa") {
            let job = f.name.split('-').nth(1).unwrap_or("").to_string();
            let e = jobs.entry((f.group.clone().unwrap_or_default(), job)).or_insert((
                f64::MAX,
                0.0,
                true,
                true,
            ));
            let start = f.start_s * 1e3;
            e.0 = e.0.min(start);
            match f.fct_us {
                Some(fct) => e.1 = e.1.max(start + fct / 1e3),
                None => e.2 = false,
            }
            e.3 &= !(f.ack_frequency_lost.0 || f.ack_frequency_lost.1);
        }
        let jct: Vec<f64> = jobs.values().filter(|j| j.2).map(|j| j.1 - j.0).collect();
        let jct_heard: Vec<f64> = jobs.values().filter(|j| j.2 && j.3).map(|j| j.1 - j.0).collect();
        m.insert("jct_p90_ms_ack_heard".into(), quantile(&jct_heard, 0.9));
        m.insert("jct_p99_ms_ack_heard".into(), quantile(&jct_heard, 0.99));
        m.insert("jobs_ack_heard".into(), jct_heard.len() as f64);
        // Unfinished jobs count with the time they had (a lower bound) in the `_all` figures.
        let end_ms = r.simulated_s * 1e3;
        let jct_all: Vec<f64> =
            jobs.values().map(|j| if j.2 { j.1 - j.0 } else { end_ms - j.0 }).collect();
        m.insert("jct_all_p90_ms".into(), quantile(&jct_all, 0.9));
        m.insert("jct_all_p99_ms".into(), quantile(&jct_all, 0.99));
        m.insert("jobs_over_10ms".into(), jct_all.iter().filter(|&&x| x > 10.0).count() as f64);
        m.insert("jobs".into(), jobs.len() as f64);
        m.insert("jobs_unfinished".into(), jobs.values().filter(|j| !j.2).count() as f64);
        m.insert("jct_p50_ms".into(), quantile(&jct, 0.5));
        m.insert("jct_p90_ms".into(), quantile(&jct, 0.9));
        m.insert("jct_p99_ms".into(), quantile(&jct, 0.99));
        m.insert("jct_mean_ms".into(), mean_std(&jct).0);
        let pa: Vec<&FlowReport> = group_flows(r, "pa").collect();
        m.insert("pa_pto".into(), pa.iter().map(|f| (f.pto_client + f.pto_server) as f64).sum());
        // Job flows where an end's ACK_FREQUENCY request never reached its peer.
        m.insert(
            "pa_ack_request_lost".into(),
            pa.iter().filter(|f| f.ack_frequency_lost.0 || f.ack_frequency_lost.1).count() as f64,
        );
        let bg: Vec<&FlowReport> = group_flows(r, "bg").collect();
        m.insert(
            "bg_mean_gbps".into(),
            mean_std(&bg.iter().map(|f| f.goodput_bps / 1e9).collect::<Vec<_>>()).0,
        );
        m.insert("bg_suppressions".into(), suppressions(&bg));
        let qs: Vec<f64> =
            r.links.iter().filter_map(|l| l.queue.as_ref()).map(|q| q.p90 as f64).collect();
        m.insert("host_downlink_queue_p90_max".into(), quantile(&qs, 1.0));
        m
    };
    eprintln!("E7: {} variants x {} seeds", variants.len(), o.seeds.len());
    let (rows, summary) = sweep(&variants, &o.seeds, &metrics)?;
    std::fs::create_dir_all(o.out).map_err(|e| e.to_string())?;
    write_json(
        &o.out.join("e7.json"),
        json!({
            "experiment": "E7 partition/aggregate with background (AMP Fig. 12)",
            "command": o.command,
            "scenario": base,
            "seeds": o.seeds,
            "definition": "Jobs: an aggregator sends 2 KB to 10 workers, each answers 64 KB, all \
                DCTCP single-path; a job completes when every answer has arrived (JCT = last \
                answer - job start). Background: the flows of group bg run the series' controller \
                with x paths (dctcp: 1, run at x = 4 only). jct_* over completed jobs (ms); \
                jct_all_* count an unfinished job with the time it had until the end of the run \
                (a lower bound); jobs_over_10ms counts jobs (finished or not) above 10 ms.",
        }),
        &rows,
        &summary,
    )?;
    write_sweep_plot(
        &o.out.join("e7.svg"),
        &format!(
            "E7: DCTCP partition/aggregate jobs with multipath background, fat-tree k=4{}",
            ack_profile(base)
        ),
        "paths per background flow",
        &summary,
        &[
            Panel { metric: "jct_p50_ms".into(), label: "JCT p50 (ms)".into(), log: false },
            Panel { metric: "jct_p90_ms".into(), label: "JCT p90 (ms)".into(), log: false },
            Panel {
                metric: "jobs_over_10ms".into(),
                label: "jobs > 10 ms (of 48)".into(),
                log: false,
            },
            Panel { metric: "bg_mean_gbps".into(), label: "background Gbps".into(), log: false },
        ],
    )
}
