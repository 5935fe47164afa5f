//! The simulator's own plots draw every series, in the shared palette's colour for its path (the
//! same colours `mpquic report` and the testbed runner use). Its sweep plot is mpquic-plot's.

use mpquic_plot::palette::path_color;
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
