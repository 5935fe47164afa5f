//! The report metrics over a hand-made outcome: what each computes, per round and per job.

use mpquic_scenario::metrics::{
    comparison_table, compute, markdown_table, summarize, FlowOutcome, LinkOutcome, Outcome,
    QueueOutcome, RunRow,
};
use mpquic_scenario::parse_scenario;

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

    let row = |seed: u64, v: f64| RunRow {
        series: "amp".into(),
        x: 10.0,
        seed,
        metrics: [("fct_mean_ms".to_string(), v)].into(),
        wall_s: 0.0,
    };
    let mut summary = summarize("amp", 10.0, &[row(1, 1.0), row(2, 3.0), row(3, 2.0)]);
    summary.labels = vec![("controller".into(), "amp".into()), ("k".into(), "10".into())];
    let table = markdown_table("T", &[summary], &["fct_mean_ms".into()]);
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
metrics = ["lost", "drops_all", "marks_all", "rcvbuf_drops", "host_load", "goodput_sum_mbps", "goodput_mean_mbps", "queue_p5", "queue_p95", "queue_p50_mean", "queue_p99_max", "cpu_s_per_gb", "fct_over_200ms", "goodput_mean_mbps@multi / goodput_mean_mbps@single", "fct_max_ms / fct_over_200ms"]
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
        receiver_rcvbuf_errors: 9,
        receiver_cpu_s: Some(1.0),
        payload_ceiling: Some(0.95),
    };
    let m = compute(&s, &outcome);
    let expected = [
        ("lost", 7.0),
        ("drops_all", 3.0),
        ("marks_all", 12.0),
        ("rcvbuf_drops", 9.0),
        ("host_load", 2.5),
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
    outcome.receiver_cpu_s = None;
    let m = compute(&s, &outcome);
    assert!(m["host_load"].is_nan());
    assert!(m["cpu_s_per_gb"].is_nan());
}

#[test]
fn a_ratio_of_unknown_metrics_is_refused() {
    let text = "name = \"m\"\nduration = \"1ms\"\n[topology]\nkind = \"two-path\"\n[report]\nmetrics = [\"lost / fct_p42_ms\"]\n";
    let e = parse_scenario(text).unwrap_err().to_string();
    assert!(e.contains("report.metrics.0: unknown metric `fct_p42_ms`"), "{e}");
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
        let runs: Vec<RunRow> = [v, v + 2.0]
            .iter()
            .map(|&x| RunRow {
                series: String::new(),
                x: 0.0,
                seed: 1,
                metrics: [("lost".to_string(), x)].into(),
                wall_s: 0.0,
            })
            .collect();
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
