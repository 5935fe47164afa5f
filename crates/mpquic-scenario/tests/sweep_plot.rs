//! An experiment's `[plot]` drawn from its summary rows: a panel per metric, a line per series
//! in its controller's colour, a bar per point.

use std::collections::BTreeMap;

use mpquic_plot::palette::controller_color;
use mpquic_scenario::metrics::{Spread, SummaryRow};
use mpquic_scenario::sweep_plot::write_sweep_plot;
use mpquic_scenario::Experiment;

const INCAST: &str = r#"name = "E1 incast"
duration = "100ms"
[topology]
kind = "many-to-one"
senders = 4
[[workloads]]
kind = "incast"
receiver = "r"
bytes = "128KB"
rounds = 2
interval = "30ms"
[[sweep]]
name = "controller"
values = ["amp", "xmp", "dctcp"]
set = ["workloads.0.controller"]
[[sweep]]
name = "k"
values = [1, 2, 4]
set = ["workloads.0.k"]
[report]
metrics = ["fct_p99_ms"]
[plot]
x = "k"
x_label = "k (flows per round)"
title = "E1 incast"
panels = [
    { metric = "fct_p99_ms", label = "FCT p99 (ms)" },
    { metric = "fct_p99_ms", label = "FCT p99 (ms), log", log = true },
]
"#;

/// Whether the SVG has `text` as a text element (captions, legends).
fn has_text(svg: &str, text: &str) -> bool {
    svg.contains(&format!(">\n{text}\n</text>"))
}

#[test]
fn a_sweep_draws_each_controller_in_its_colour_with_a_bar_per_point() {
    let e = Experiment::parse(INCAST, "e.toml").unwrap();
    // The rows' own series and x are the backend's (the testbed leaves them blank): the plot
    // places each point itself.
    let summary: Vec<SummaryRow> = e
        .points
        .iter()
        .enumerate()
        .map(|(i, _)| {
            let median = (i + 1) as f64;
            let fct =
                Spread { median, min: median * 0.5, max: median * 2.0, n: 3, sum: 0.0, ci95: None };
            let metrics = BTreeMap::from([("fct_p99_ms".to_string(), fct)]);
            SummaryRow { series: String::new(), x: 0.0, labels: vec![], metrics }
        })
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("sweep.svg");
    write_sweep_plot(&file, &e, &summary).unwrap();
    let svg = std::fs::read_to_string(&file).unwrap();
    for text in ["E1 incast", "FCT p99 (ms), log", "k (flows per round)"] {
        assert!(has_text(&svg, text), "{text}: {svg}");
    }
    for c in ["amp", "xmp", "dctcp"] {
        assert!(has_text(&svg, c), "legend names {c}");
        // Per panel: the legend's swatch, the median line and a bar per point (k = 1, 2, 4).
        let color = controller_color(c);
        let stroke = format!("stroke=\"#{:02X}{:02X}{:02X}\"", color.0, color.1, color.2);
        let lines = svg.matches(&stroke).count();
        assert!(lines >= 2 * (1 + 1 + 3), "{c} drawn in its colour: {lines} strokes");
    }
}

#[test]
fn a_file_without_a_plot_draws_nothing() {
    let text = INCAST.split("[plot]").next().unwrap();
    let e = Experiment::parse(text, "e.toml").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("sweep.svg");
    write_sweep_plot(&file, &e, &[]).unwrap();
    assert!(!file.exists());
}
