//! The simulator's plots draw every series, in the shared palette's colour for its controller or
//! path (the same colours `mpquic report` and the testbed runner use).

use std::collections::BTreeMap;

use mpquic_plot::palette::{controller_color, path_color};
use mpquic_sim::exp::{write_sweep_plot, Panel, Spread, SummaryRow};
use mpquic_sim::plot::{write_shift_plot, ShiftPanel};
use plotters::style::RGBColor;

fn stroke(c: RGBColor) -> String {
    format!("stroke=\"#{:02X}{:02X}{:02X}\"", c.0, c.1, c.2)
}

/// Whether the SVG has `text` as a text element (captions, legends).
fn has_text(svg: &str, text: &str) -> bool {
    svg.contains(&format!(">\n{text}\n</text>"))
}

#[test]
fn a_sweep_draws_each_controller_in_its_colour_with_a_bar_per_point() {
    let controllers = ["amp", "xmp", "dctcp"];
    let summary: Vec<SummaryRow> = controllers
        .iter()
        .enumerate()
        .flat_map(|(i, c)| {
            [10.0, 20.0, 40.0].map(|x| {
                let median = x * (i + 1) as f64;
                let fct = Spread {
                    median,
                    min: median * 0.5,
                    max: median * 2.0,
                    n: 3,
                    sum: median * 3.0,
                };
                let metrics = BTreeMap::from([("fct_ms".to_string(), fct)]);
                SummaryRow { series: c.to_string(), x, labels: vec![], metrics }
            })
        })
        .collect();
    let panels = [
        Panel { metric: "fct_ms".into(), label: "mean FCT (ms)".into(), log: false },
        Panel { metric: "fct_ms".into(), label: "mean FCT (ms), log".into(), log: true },
    ];
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("sweep.svg");
    write_sweep_plot(&file, "E1 incast", "k (flows per round)", &summary, &panels).unwrap();
    let svg = std::fs::read_to_string(&file).unwrap();
    assert!(has_text(&svg, "E1 incast") && has_text(&svg, "mean FCT (ms), log"), "{svg}");
    for c in controllers {
        assert!(has_text(&svg, c), "legend names {c}");
        // Per panel: the legend's swatch, the median line and a bar per point.
        let lines = svg.matches(&stroke(controller_color(c))).count();
        assert!(lines >= 2 * (1 + 1 + 3), "{c} drawn in its colour: {lines} strokes");
    }
}

#[test]
fn the_shift_plot_draws_each_path_in_its_colour() {
    let rates: Vec<(f64, f64, f64)> = (0..80)
        .map(|t| (f64::from(t) * 0.1, 10.0 - f64::from(t) * 0.1, f64::from(t) * 0.1))
        .collect();
    let panels = [ShiftPanel {
        title: "amp: moved off path 1 in 0.8 ms".into(),
        rates,
        cross: vec![(2.0, 4.0), (4.0, 6.0)],
    }];
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("e3.svg");
    write_shift_plot(&file, &panels).unwrap();
    let svg = std::fs::read_to_string(&file).unwrap();
    assert!(has_text(&svg, "amp: moved off path 1 in 0.8 ms"), "{svg}");
    for p in [1, 2] {
        assert!(svg.contains(&format!("path {p} (cross traffic")), "legend names path {p}");
        assert!(svg.contains(&stroke(path_color(p))), "path {p} drawn in its colour");
    }
}
