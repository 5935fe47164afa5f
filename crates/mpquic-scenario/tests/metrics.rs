//! The report metrics over a hand-made outcome: what each computes, per round and per job.

use mpquic_choice::PathClose;
use mpquic_scenario::experiment::TableSpec;
use mpquic_scenario::metrics::{
    comparison_table, compute, summarize, DelayLineSecond, FlowOutcome, LinkOutcome, Metrics,
    Outcome, PathOutcome, QueueOutcome, SummaryRow,
};
use mpquic_scenario::parse_scenario;
use mpquic_scenario::tables::markdown;
use mpquic_scenario::Experiment;

/// A table of these metrics' medians over every row, as `[[report.table]]` renders it.
fn median_table(title: &str, summary: &[SummaryRow], metrics: &[String]) -> String {
    let spec = TableSpec {
        title: title.into(),
        metrics: metrics.to_vec(),
        only: Default::default(),
        sum: vec![],
        compare: vec![],
    };
    markdown(&spec, summary)
}

fn flow(group: &str, fct_us: Option<f64>, job: Option<usize>, start_s: f64) -> FlowOutcome {
    FlowOutcome {
        group: Some(group.into()),
        fct_us,
        job,
        start_s,
        pto_client: 1,
        ..FlowOutcome::default()
    }
}

#[test]
fn flow_link_and_job_metrics() {
    let text = r#"name = "m"
duration = "100ms"
[topology]
kind = "many-to-one"
senders = 2
[[workloads]]
kind = "incast"
receiver = "r"
bytes = 1000
rounds = 2
[report]
group = "incast"
link = "sw->r"
metrics = ["flows", "unfinished", "fct_mean_ms", "fct_max_ms", "pto_per_round", "marks_per_round", "jobs@pa", "jct_p50_ms@pa", "jobs_unfinished@pa", "jct_all_p90_ms@pa"]
"#;
    let s = parse_scenario(text).unwrap();
    let outcome = Outcome {
        flows: vec![
            flow("incast0", Some(1000.0), None, 0.0),
            flow("incast0", Some(3000.0), None, 0.0),
            flow("incast0", None, None, 0.0),
            // Job 0: starts at 10 ms, last answer at 10 + 4 ms. Job 1: unfinished.
            flow("pa0", Some(2000.0), Some(0), 0.010),
            flow("pa0", Some(4000.0), Some(0), 0.010),
            flow("pa0", None, Some(1), 0.020),
        ],
        links: vec![LinkOutcome { name: "sw->r".into(), marked: 10, ..LinkOutcome::default() }],
        duration_s: 0.1,
        ..Outcome::default()
    };
    let m = compute(&s, &outcome);
    let get = |k: &str| m[k];
    assert_eq!(get("flows"), 3.0);
    assert_eq!(get("unfinished"), 1.0);
    assert_eq!(get("fct_mean_ms"), 2.0);
    assert_eq!(get("fct_max_ms"), 3.0);
    assert_eq!(get("pto_per_round"), 1.5, "3 client PTOs over 2 rounds");
    assert_eq!(get("marks_per_round"), 5.0);
    assert_eq!(get("jobs@pa"), 2.0);
    assert_eq!(get("jobs_unfinished@pa"), 1.0);
    assert!((get("jct_p50_ms@pa") - 4.0).abs() < 1e-9);
    // The unfinished job counts until the end of the run: 100 - 20 ms.
    assert!((get("jct_all_p90_ms@pa") - 80.0).abs() < 1e-9);

    let row = |v: f64| -> Metrics { [("fct_mean_ms".to_string(), v)].into() };
    let mut summary = summarize("amp", 10.0, &[row(1.0), row(3.0), row(2.0)]);
    summary.labels = vec![("controller".into(), "amp".into()), ("k".into(), "10".into())];
    let table = median_table("T", &[summary], &["fct_mean_ms".into()]);
    assert_eq!(
        table,
        "### T\n\n| controller | k | fct_mean_ms |\n|---|---|---|\n| amp | 10 | 2 (1-3) |\n"
    );
}

#[test]
fn unknown_metrics_and_plot_axes_are_refused() {
    let base = "name = \"m\"\nduration = \"1ms\"\n[topology]\nkind = \"two-path\"\n[report]\nmetrics = [\"fct_mean_ms\", \"fct_p42_ms\"]\n";
    let e = parse_scenario(base).unwrap_err().to_string();
    assert!(
        e.starts_with(
            "<scenario>:6:27: report.metrics.1: unknown metric `fct_p42_ms` (known: flows,"
        ),
        "{e}"
    );
    let e = parse_scenario(
        &base
            .replace(", \"fct_p42_ms\"", "")
            .replace("[report]", "[plot]\nx = \"k\"\ntitle = \"t\"\npanels = []\n[report]"),
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("plot.x: `k` is not a sweep axis"), "{e}");
}

/// Two flows with CPU times and paths, two monitored links, one receiver: the run-wide metrics,
/// the group sums and a ratio of two groups.
#[test]
fn run_wide_metrics_and_ratios() {
    let text = r#"name = "m"
duration = "1s"
[topology]
kind = "many-to-one"
senders = 2
[report]
link = "sw->r"
metrics = ["lost", "drops_all", "marks_all", "rcvbuf_drops", "host_load", "host_steal", "goodput_sum_mbps", "goodput_mean_mbps", "queue_p5", "queue_p95", "queue_p50_mean", "queue_p99_max", "cpu_s_per_gb", "fct_over_200ms", "goodput_mean_mbps@multi / goodput_mean_mbps@single", "fct_max_ms / fct_over_200ms"]
"#;
    let s = parse_scenario(text).unwrap();
    let flow = |group: &str, fct_ms: f64, mbps: f64, lost: u64| FlowOutcome {
        group: Some(group.into()),
        fct_us: Some(fct_ms * 1e3),
        goodput_bps: mbps * 1e6,
        lost_packets: lost,
        bytes: 250_000_000,
        cpu_s: Some(0.5),
        ..FlowOutcome::default()
    };
    let queue = |p5: f64, p50: f64, p95: f64, p99: f64| QueueOutcome {
        p5,
        p50,
        p95,
        p99,
        ..QueueOutcome::default()
    };
    let mut outcome = Outcome {
        flows: vec![flow("multi", 100.0, 60.0, 3), flow("single", 300.0, 20.0, 4)],
        links: vec![
            LinkOutcome {
                name: "sw->r".into(),
                marked: 7,
                dropped: 1,
                queue: Some(queue(1.0, 10.0, 18.0, 20.0)),
                ..LinkOutcome::default()
            },
            LinkOutcome {
                name: "s1->sw".into(),
                marked: 5,
                dropped: 2,
                queue: Some(queue(0.0, 4.0, 30.0, 40.0)),
                ..LinkOutcome::default()
            },
        ],
        duration_s: 1.0,
        host_load_1min: Some(2.5),
        host_steal_pct: Some(7.5),
        receiver_rcvbuf_errors: 9,
        receiver_cpu_s: Some(1.0),
        payload_ceiling: Some(0.95),
        delay_line: vec![],
        bursts: vec![],
    };
    let m = compute(&s, &outcome);
    let expected = [
        ("lost", 7.0),
        ("drops_all", 3.0),
        ("marks_all", 12.0),
        ("rcvbuf_drops", 9.0),
        ("host_load", 2.5),
        ("host_steal", 7.5),
        ("goodput_sum_mbps", 80.0),
        ("goodput_mean_mbps", 40.0),
        ("queue_p5", 1.0),
        ("queue_p95", 18.0),
        ("queue_p50_mean", 7.0),
        ("queue_p99_max", 40.0),
        // (0.5 + 0.5 senders + 1.0 receivers) CPU s over 0.5 GB.
        ("cpu_s_per_gb", 4.0),
        ("fct_over_200ms", 1.0),
        ("goodput_mean_mbps@multi / goodput_mean_mbps@single", 3.0),
        ("fct_max_ms / fct_over_200ms", 300.0),
    ];
    for (name, value) in expected {
        assert_eq!(m[name], value, "{name}");
    }

    // What a backend does not measure is NaN (a "-" in the tables).
    outcome.host_load_1min = None;
    outcome.host_steal_pct = None;
    outcome.receiver_cpu_s = None;
    let m = compute(&s, &outcome);
    assert!(m["host_load"].is_nan());
    assert!(m["host_steal"].is_nan());
    assert!(m["cpu_s_per_gb"].is_nan());
}

#[test]
fn a_ratio_of_unknown_metrics_is_refused() {
    let text = "name = \"m\"\nduration = \"1ms\"\n[topology]\nkind = \"two-path\"\n[report]\nmetrics = [\"lost / fct_p42_ms\"]\n";
    let e = parse_scenario(text).unwrap_err().to_string();
    assert!(e.contains("report.metrics.0: unknown metric `fct_p42_ms`"), "{e}");
}

/// E3's and E4's netns tables: per-flow goodput by group, Jain's index of the lifetime goodput,
/// a link's queue by name, and an analysis's metrics (which this crate leaves NaN).
#[test]
fn per_flow_goodput_jain_per_link_queue_and_analysis_metrics() {
    let text = r#"name = "m"
duration = "1s"
[topology]
kind = "two-path"
[report]
link = "a->dst"
analyses = ["shift"]
metrics = ["goodput_mean_mbps@mp", "goodput_mean_mbps@cross-b", "jain_goodput", "queue_p50", "queue_p50@b->dst", "queue_p99@b->dst", "shift.before_mbps@cross-a"]
"#;
    let s = parse_scenario(text).unwrap();
    let flow = |group: &str, mbps: f64| FlowOutcome {
        group: Some(group.into()),
        goodput_bps: mbps * 1e6,
        // The second half's rate must not count in jain_goodput.
        goodput_last_half_bps: 1.0,
        ..FlowOutcome::default()
    };
    let link = |name: &str, p50: f64| LinkOutcome {
        name: name.into(),
        queue: Some(QueueOutcome { p50, p99: 2.0 * p50, ..QueueOutcome::default() }),
        ..LinkOutcome::default()
    };
    let outcome = Outcome {
        flows: vec![flow("cross-a", 10.0), flow("cross-b", 30.0), flow("mp", 80.0)],
        links: vec![link("a->dst", 17.0), link("b->dst", 19.0)],
        duration_s: 1.0,
        ..Outcome::default()
    };
    let m = compute(&s, &outcome);
    assert_eq!(m["goodput_mean_mbps@mp"], 80.0);
    assert_eq!(m["goodput_mean_mbps@cross-b"], 30.0);
    // (10 + 30 + 80)^2 / (3 x (100 + 900 + 6400)) = 14400 / 22200.
    assert_eq!(m["jain_goodput"], 14400.0 / 22200.0);
    assert_eq!((m["queue_p50"], m["queue_p50@b->dst"], m["queue_p99@b->dst"]), (17.0, 19.0, 38.0));
    assert!(m["shift.before_mbps@cross-a"].is_nan(), "the backend's analysis fills it");

    // An analysis's metrics need the analysis.
    let e = parse_scenario(&text.replace("analyses = [\"shift\"]\n", "")).unwrap_err().to_string();
    assert!(e.contains("report.metrics.6: unknown metric `shift.before_mbps`"), "{e}");
}

/// `[[report.table]] only` keeps the points with those axis values, and names axes and values
/// that exist.
#[test]
fn a_table_shows_only_the_points_it_names() {
    let text = r#"name = "m"
duration = "1ms"
[topology]
kind = "two-path"
[[sweep]]
name = "cross"
values = ["amp", "dctcp"]
set = ["controller"]
[[sweep]]
name = "k"
values = [10, 20]
set = ["link.k"]
[report]
metrics = ["flows"]
[[report.table]]
title = "t"
metrics = ["flows"]
only = { cross = "dctcp", k = 20 }
"#;
    let e = mpquic_scenario::Experiment::parse(text, "t.toml").unwrap();
    let table = &e.base.report.as_ref().unwrap().table[0];
    let shown: Vec<String> =
        e.points.iter().filter(|p| table.shows(&p.labels)).map(|p| p.name()).collect();
    assert_eq!(shown, ["cross=dctcp,k=20"]);
    for (bad, says) in [
        (
            "only = { cross = \"udp\" }",
            "report.table.0.only.cross: `udp` is not a value of axis `cross`",
        ),
        ("only = { x = 1 }", "report.table.0.only.x: `x` is not a sweep axis"),
    ] {
        let text = text.replace("only = { cross = \"dctcp\", k = 20 }", bad);
        let e = mpquic_scenario::Experiment::parse(&text, "t.toml").unwrap_err().to_string();
        assert!(e.contains(says), "{e}");
    }
}

/// A path to `remote` closed for `close_reason` (`None`: open and carrying data).
fn path(
    remote: &str,
    bytes_sent: u64,
    rtt_ms: (f64, f64),
    close_reason: Option<PathClose>,
) -> PathOutcome {
    PathOutcome {
        remote: remote.into(),
        bytes_sent,
        rtt_min_ms: Some(rtt_ms.0),
        rtt_p50_ms: Some(rtt_ms.1),
        active: close_reason.is_none(),
        close_reason,
        ..PathOutcome::default()
    }
}

/// E5's metrics over one link-sharing flow (3 paths to one server address, 2 to the other)
/// and one repeating flow: path RTTs over the paths that carried data, ESE judged per link,
/// per-transfer FCTs and CPU.
#[test]
fn path_ese_and_transfer_metrics() {
    let text = r#"name = "m"
duration = "1s"
[topology]
kind = "two-path"
[report]
metrics = ["rtt_p50_ms", "rtt_min_ms", "eliminations", "flows_with_elimination", "ese_extra", "ese_keep", "ese_tp", "ese_fp", "active_paths", "transfers", "transfer_fct_p50_ms", "transfer_fct_p99_ms", "sender_cpu_ms_per_transfer", "unfinished", "fct_p50_ms", "fct_p99_ms", "fct_mean_ms"]
"#;
    let s = parse_scenario(text).unwrap();
    let sharing = FlowOutcome {
        fct_us: Some(2_000_000.0),
        eliminations: 3,
        cpu_s: Some(0.25),
        paths: vec![
            // Link 1: 3 paths, 2 eliminated (true positives), and one that failed (failover
            // re-opened it as the first): neither a path of the link nor an elimination.
            // Link 2: both eliminated (1 true, 1 false: its last path). The 50 kB path is too
            // small for the RTT metrics, as is the failed one.
            path("10.0.1.2:4433", 5_000_000, (0.5, 4.0), None),
            path("10.0.1.2:4433", 60_000, (0.2, 1.0), Some(PathClose::Failed)),
            path("10.0.1.2:4433", 200_000, (0.3, 2.0), Some(PathClose::Eliminated)),
            path("10.0.1.2:4433", 50_000, (0.1, 9.0), Some(PathClose::Eliminated)),
            path("10.0.2.2:4433", 3_000_000, (0.4, 3.0), Some(PathClose::Eliminated)),
            path("10.0.2.2:4433", 150_000, (0.6, 5.0), Some(PathClose::Eliminated)),
        ],
        ..FlowOutcome::default()
    };
    let repeating = FlowOutcome {
        fct_us: Some(30_000.0),
        transfer_fcts_us: vec![10_000.0, 30_000.0, 20_000.0],
        cpu_s: Some(0.05),
        paths: vec![path("10.0.1.2:4433", 0, (0.1, 0.2), None)],
        ..FlowOutcome::default()
    };
    let outcome = Outcome { flows: vec![sharing, repeating], ..Outcome::default() };
    let m = compute(&s, &outcome);
    let expected = [
        // RTT medians 4, 2, 3, 5 ms: the lower middle of four is 3.
        ("rtt_p50_ms", 3.0),
        ("rtt_min_ms", 0.3),
        ("eliminations", 3.0),
        ("flows_with_elimination", 1.0),
        ("ese_extra", 3.0),
        ("ese_keep", 3.0),
        ("ese_tp", 3.0),
        ("ese_fp", 1.0),
        ("active_paths", 2.0),
        // The sharing flow's own FCT (2 s) and the repeating flow's three transfers.
        ("transfers", 4.0),
        ("transfer_fct_p50_ms", 20.0),
        ("transfer_fct_p99_ms", 2000.0),
        ("sender_cpu_ms_per_transfer", 75.0),
        // The FCT percentiles range over the transfers too, not over the repeating flow's sum
        // (30 ms); both flows completed.
        ("unfinished", 0.0),
        ("fct_p50_ms", 20.0),
        ("fct_p99_ms", 2000.0),
        ("fct_mean_ms", (2000.0 + 10.0 + 30.0 + 20.0) / 4.0),
    ];
    for (name, value) in expected {
        assert_eq!(m[name], value, "{name}");
    }
}

/// A table's sum columns pool a point's runs; a comparison divides a point's median by the
/// median of the point that differs in one axis only, on the rows at `value`.
#[test]
fn tables_with_sums_and_comparisons_between_points() {
    let text = r#"name = "t"
duration = "1s"
[topology]
kind = "two-path"
[[flows]]
from = "src"
to = "dst"
[[sweep]]
name = "paths"
values = [2, 4]
set = ["flows.0.paths"]
[[sweep]]
name = "ese"
values = ["on", "off"]
set = ["flows.0.controller"]
[sweep.when.on]
"flows.0.controller" = "mptcp-d"
[sweep.when.off]
"flows.0.controller" = "mptcp-d:ese=false"
[report]
metrics = ["cpu_s_per_gb", "ese_tp"]
[[report.table]]
title = "T"
metrics = ["cpu_s_per_gb"]
sum = ["ese_tp"]
compare = [{ metric = "cpu_s_per_gb", axis = "ese", value = "on", over = "off" }]
"#;
    let e = Experiment::parse(text, "t.toml").unwrap();
    let row = |cpu: f64, tp: f64| -> Metrics {
        [("cpu_s_per_gb".to_string(), cpu), ("ese_tp".to_string(), tp)].into()
    };
    let runs = [
        [row(60.0, 1.0), row(50.0, 2.0)],
        [row(40.0, 0.0), row(40.0, 0.0)],
        [row(30.0, 3.0), row(30.0, 0.0)],
        [row(60.0, 0.0), row(60.0, 0.0)],
    ];
    let summary: Vec<_> = e
        .points
        .iter()
        .zip(&runs)
        .map(|(p, r)| {
            let mut s = summarize(&p.name(), 0.0, r);
            s.labels = p.labels.clone();
            s
        })
        .collect();
    let table = markdown(&e.base.report.as_ref().unwrap().table[0], &summary);
    assert_eq!(
        table,
        "### T\n\n| paths | ese | cpu_s_per_gb | ese_tp (sum) | cpu_s_per_gb on / off |\n\
         |---|---|---|---|---|\n\
         | 2 | on | 50 (50-60) | 3 | 1.25 |\n\
         | 2 | off | 40 | 0 | - |\n\
         | 4 | on | 30 | 3 | 0.50 |\n\
         | 4 | off | 60 | 0 | - |\n"
    );
    let bad = text.replace("over = \"off\"", "over = \"of\"");
    let err = Experiment::parse(&bad, "t.toml").unwrap_err().to_string();
    assert!(err.contains("compare.0.over: `of` is not a value of axis `ese`"), "{err}");
    let bad = text.replace("sum = [\"ese_tp\"]", "sum = [\"lost\"]");
    let err = Experiment::parse(&bad, "t.toml").unwrap_err().to_string();
    assert!(err.contains("report.table.0.sum.0: `lost` is not in report.metrics"), "{err}");
}

#[test]
fn table_numbers_are_short() {
    use mpquic_scenario::metrics::short;
    let cases = [
        (0.74343, "0.743"),
        (0.73102, "0.731"),
        (0.898857, "0.899"),
        (14.719, "14.7"),
        (13.941, "13.9"),
        (16.608, "16.6"),
        (26.09, "26.1"),
        (0.666667, "0.667"),
        (0.001234, "0.00123"),
        (34.0, "34"),
        (2.0, "2"),
        (0.0, "0"),
        (-0.0, "0"),
        (332.333, "332"),
        (1234.6, "1235"),
        (0.9996, "1"),
        (9.996, "10"),
        (-1.2345, "-1.23"),
    ];
    for (x, want) in cases {
        assert_eq!(short(x), want, "{x}");
    }
    // In a table: median (min-max), and one number when the spread rounds away.
    let row = |v: f64| -> Metrics {
        [("fct_mean_ms".to_string(), v), ("pto".to_string(), 4.0 + v * 1e-6)].into()
    };
    let mut summary = summarize("amp", 10.0, &[row(14.719), row(13.941), row(16.608)]);
    summary.labels = vec![("controller".into(), "amp".into())];
    let table = median_table("T", &[summary], &["fct_mean_ms".into(), "pto".into()]);
    assert!(table.ends_with("| amp | 14.7 (13.9-16.6) | 4 |\n"), "{table}");

    // From 6 runs up: the median's 95% interval (exact order statistics) instead of the range.
    // Ten runs 1..10: median 5 (the lower middle), interval (x_2, x_9).
    let ten: Vec<Metrics> = (1..=10).map(|i| row(f64::from(i))).collect();
    let mut summary = summarize("amp", 10.0, &ten);
    summary.labels = vec![("controller".into(), "amp".into())];
    assert_eq!(summary.metrics["fct_mean_ms"].ci95, Some((2.0, 9.0)));
    let table = median_table("T", &[summary], &["fct_mean_ms".into()]);
    assert!(table.ends_with("| amp | 5 [2, 9] |\n"), "{table}");
    let five = summarize("amp", 10.0, &ten[..5]);
    assert_eq!(five.metrics["fct_mean_ms"].ci95, None, "no 95% interval from 5 runs");
}

#[test]
fn final_windows_in_packets() {
    use mpquic_scenario::metrics::PathOutcome;
    let text = "name = \"m\"\nduration = \"1ms\"\n[transport]\nmtu = 1000\n[topology]\nkind = \"two-path\"\n[report]\nmetrics = [\"cwnd_pkts_mean\", \"cwnd_pkts_mean@none\"]\n";
    let s = parse_scenario(text).unwrap();
    let path = |cwnd_bytes| PathOutcome { cwnd_bytes, ..PathOutcome::default() };
    let outcome = Outcome {
        flows: vec![
            FlowOutcome {
                paths: vec![path(Some(2000)), path(Some(3000))],
                ..FlowOutcome::default()
            },
            // A path without a known window does not count.
            FlowOutcome { paths: vec![path(Some(7000)), path(None)], ..FlowOutcome::default() },
        ],
        ..Outcome::default()
    };
    let m = compute(&s, &outcome);
    assert_eq!(m["cwnd_pkts_mean"], 4.0, "(2 + 3 + 7) / 3 packets of 1000 bytes");
    assert!(m["cwnd_pkts_mean@none"].is_nan(), "no flow in the group");
}

#[test]
fn path_metrics_select_paths_by_the_link_they_cross() {
    let text = r#"name = "m"
duration = "1ms"
[topology]
kind = "two-path"
[report]
metrics = ["path_share[b->dst]", "path_share", "path_mb[b->dst]", "path_rtt_p50_ms[a->dst]", "path_rtt_p99_ms[b->dst]", "path_rtt_p50_ms", "path_share[x->y]", "goodput_mean_mbps / 120"]
"#;
    let s = parse_scenario(text).unwrap();
    let path = |link: &str, bytes: u64, p50: f64, p99: f64| PathOutcome {
        link: Some(link.into()),
        bytes_sent: bytes,
        rtt_p50_ms: Some(p50),
        rtt_p99_ms: Some(p99),
        ..PathOutcome::default()
    };
    let outcome = Outcome {
        flows: vec![
            FlowOutcome {
                goodput_bps: 90e6,
                paths: vec![path("a->dst", 600, 4.0, 9.0), path("b->dst", 200, 45.0, 90.0)],
                ..FlowOutcome::default()
            },
            FlowOutcome {
                goodput_bps: 30e6,
                paths: vec![path("a->dst", 100, 3.0, 8.0), path("b->dst", 100, 47.0, 99.0)],
                ..FlowOutcome::default()
            },
        ],
        ..Outcome::default()
    };
    let m = compute(&s, &outcome);
    assert_eq!(m["path_share[b->dst]"], 0.3, "300 of 1000 bytes");
    assert_eq!(m["path_mb[b->dst]"], 300.0 / 1e6, "300 bytes");
    assert_eq!(m["path_share"], 1.0);
    assert_eq!(m["path_rtt_p50_ms[a->dst]"], 3.0, "nearest rank: the lower of two");
    assert_eq!(m["path_rtt_p99_ms[b->dst]"], 90.0);
    assert_eq!(m["path_rtt_p50_ms"], 4.0, "over all four paths");
    assert_eq!(m["path_share[x->y]"], 0.0, "no path crosses it");
    assert_eq!(m["goodput_mean_mbps / 120"], 0.5, "a ratio to a number");

    let bad = text.replace("\"path_share\", ", "\"lost[a->dst]\", ");
    let e = parse_scenario(&bad).unwrap_err().to_string();
    assert!(e.contains("report.metrics.1: `lost` is not a path metric"), "{e}");
}

#[test]
fn delay_line_metrics_read_its_busy_seconds() {
    let text = r#"name = "m"
duration = "1ms"
[topology]
kind = "two-path"
[report]
metrics = ["delay_pkt_per_s", "delay_late_p99_us", "delay_late_p99_worst_us", "delay_late_max_us", "delay_late_max_worst_us"]
"#;
    let s = parse_scenario(text).unwrap();
    let second = |pkt_per_s: f64, late_p99_us: f64, late_max_us: f64| DelayLineSecond {
        pkt_per_s,
        late_p99_us,
        late_max_us,
    };
    let mut outcome = Outcome {
        delay_line: vec![
            second(8000.0, 60.0, 900.0),
            second(8400.0, 280.0, 1100.0),
            second(1700.0, 40.0, 600.0),
            // Idle: a keep-alive's lateness is not the line's under load.
            second(6.0, 5000.0, 9000.0),
        ],
        ..Outcome::default()
    };
    let m = compute(&s, &outcome);
    assert_eq!(m["delay_pkt_per_s"], 8000.0);
    assert_eq!(m["delay_late_p99_us"], 60.0);
    assert_eq!(m["delay_late_p99_worst_us"], 280.0);
    assert_eq!(m["delay_late_max_us"], 900.0);
    assert_eq!(m["delay_late_max_worst_us"], 1100.0);
    outcome.delay_line.clear();
    assert!(compute(&s, &outcome).values().all(|v| v.is_nan()), "no delay line: no values");
}

/// The ceiling metrics: the ideal time of the group's bytes on the report link, goodput against
/// the monitored links' capacity, marks per packet sent.
#[test]
fn ceiling_metrics() {
    let text = r#"name = "m"
duration = "1s"
[topology]
kind = "two-path"
[report]
link = "a->dst"
metrics = ["ideal_ms", "goodput_of_ceiling", "marked_fraction", "fct_max_ms / ideal_ms"]
"#;
    let s = parse_scenario(text).unwrap();
    let link = |name: &str, marked: u64, sent_packets: u64| LinkOutcome {
        name: name.into(),
        marked,
        sent_packets,
        rate_bps: 100e6,
        queue: Some(QueueOutcome::default()),
        ..LinkOutcome::default()
    };
    let outcome = Outcome {
        flows: vec![FlowOutcome {
            // 1 MB: 80 ms at 100 Mbit/s, 100 ms at a ceiling of 0.8.
            bytes: 1_000_000,
            fct_us: Some(150_000.0),
            goodput_last_half_bps: 120e6,
            ..FlowOutcome::default()
        }],
        links: vec![
            link("a->dst", 30, 1000),
            link("b->dst", 10, 1000),
            // Not monitored (no queue samples): not in the sums.
            LinkOutcome {
                name: "src->a".into(),
                marked: 5,
                rate_bps: 1e9,
                ..LinkOutcome::default()
            },
        ],
        payload_ceiling: Some(0.8),
        ..Outcome::default()
    };
    let m = compute(&s, &outcome);
    assert_eq!(m["ideal_ms"], 100.0);
    assert_eq!(m["goodput_of_ceiling"], 0.75, "120 Mbit/s of 2 x 100 x 0.8");
    assert_eq!(m["marked_fraction"], 0.02);
    assert_eq!(m["fct_max_ms / ideal_ms"], 1.5);
}

#[test]
fn two_summaries_side_by_side() {
    let row = |labels: &[(&str, &str)], v: f64| {
        let runs: Vec<Metrics> =
            [v, v + 2.0].iter().map(|&x| [("lost".to_string(), x)].into()).collect();
        let mut r = summarize("", 0.0, &runs);
        r.labels = labels.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect();
        r
    };
    let sim = [row(&[("controller", "amp")], 1.0), row(&[("controller", "xmp")], 5.0)];
    let netns = [row(&[("controller", "xmp")], 7.0)];
    let table = comparison_table("T", ("sim", &sim), ("netns", &netns), &["lost".into()]);
    assert_eq!(
        table,
        "### T\n\n| controller | lost (sim) | lost (netns) |\n|---|---|---|\n\
         | amp | 1 (1-3) | - |\n| xmp | 5 (5-7) | 7 (7-9) |\n"
    );
}
