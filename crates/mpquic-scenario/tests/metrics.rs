//! The report metrics over a hand-made outcome: what each computes, per round and per job.

use mpquic_scenario::metrics::{
    compute, markdown_table, summarize, FlowOutcome, LinkOutcome, Outcome, RunRow,
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
