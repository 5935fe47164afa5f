//! The experiments of `design/EXPERIMENTS.md` as sweeps over a base scenario (`mpquic-sim exp`).
//! Each builds its variants from the scenario file, runs them with every seed, and writes
//! `<exp>.json` and `<exp>*.svg` into the output directory.

use std::path::Path;

use serde_json::json;

use crate::exp::{
    group_flows, jain_of, mean_std, quantile, sweep, write_json, write_sweep_plot, Metrics, Panel,
    Variant,
};
use crate::report::{FlowReport, Report};
use crate::scenario::{Scenario, Workload};

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
        m
    };
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
        "E1 incast: 128 KB flows, 4 paths (dctcp: 1), 10 Gbps, 100-pkt buffer, K=10",
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
