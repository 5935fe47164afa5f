//! SVG plots of a run: goodput per flow, queue length per monitored link, windows per path.

use std::path::Path;

use plotters::prelude::*;

use crate::report::Traces;

/// One line of a plot.
struct Series<'a> {
    name: &'a str,
    points: Vec<(f64, f64)>,
}

fn line_plot(path: &Path, title: &str, y_label: &str, series: &[Series]) -> Result<(), String> {
    let points = series.iter().flat_map(|s| s.points.iter());
    let (mut x_max, mut y_max) = (0.0f64, 0.0f64);
    for &(x, y) in points {
        x_max = x_max.max(x);
        y_max = y_max.max(y);
    }
    let (x_max, y_max) = (x_max.max(1e-9), (y_max * 1.05).max(1e-9));
    let root = SVGBackend::new(path, (960, 540)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| e.to_string())?;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d(0.0..x_max, 0.0..y_max)
        .map_err(|e| e.to_string())?;
    chart.configure_mesh().x_desc("time (ms)").y_desc(y_label).draw().map_err(|e| e.to_string())?;
    for (i, s) in series.iter().enumerate() {
        let color = Palette99::pick(i).to_rgba();
        chart
            .draw_series(LineSeries::new(s.points.iter().copied(), color.stroke_width(1)))
            .map_err(|e| e.to_string())?
            .label(s.name)
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], color));
    }
    if series.len() <= 16 {
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .draw()
            .map_err(|e| e.to_string())?;
    }
    root.present().map_err(|e| e.to_string())
}

/// Write `goodput.svg`, `queues.svg` and `windows.svg` into `dir` (plots with no data are
/// skipped). At most `max_flows` flows are drawn per plot.
pub fn write_plots(traces: &Traces, dir: &Path, max_flows: usize) -> Result<Vec<String>, String> {
    let mut written = vec![];
    let goodput: Vec<Series> = traces
        .goodput
        .iter()
        .take(max_flows)
        .map(|(name, pts)| Series {
            name,
            points: pts.iter().map(|&(t, bps)| (t / 1000.0, bps / 1e9)).collect(),
        })
        .collect();
    if goodput.iter().any(|s| !s.points.is_empty()) {
        line_plot(&dir.join("goodput.svg"), "Goodput per flow", "Gbit/s", &goodput)?;
        written.push("goodput.svg".into());
    }
    let queues: Vec<Series> = traces
        .queues
        .iter()
        .map(|(name, pts)| Series {
            name,
            points: pts.iter().map(|&(t, q)| (t / 1000.0, f64::from(q))).collect(),
        })
        .collect();
    if queues.iter().any(|s| !s.points.is_empty()) {
        line_plot(&dir.join("queues.svg"), "Queue length", "packets", &queues)?;
        written.push("queues.svg".into());
    }
    let names: Vec<String> = traces
        .windows
        .iter()
        .take(max_flows)
        .flat_map(|(flow, paths)| paths.keys().map(move |p| format!("{flow} path {p}")))
        .collect();
    let windows: Vec<Series> = traces
        .windows
        .iter()
        .take(max_flows)
        .flat_map(|(_, paths)| paths.values())
        .zip(&names)
        .map(|(pts, name)| Series {
            name,
            points: pts.iter().map(|p| (p.t_us / 1000.0, p.window as f64 / 1000.0)).collect(),
        })
        .collect();
    if windows.iter().any(|s| !s.points.is_empty()) {
        line_plot(&dir.join("windows.svg"), "Congestion window per path", "KB", &windows)?;
        written.push("windows.svg".into());
    }
    Ok(written)
}
