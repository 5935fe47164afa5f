//! SVG plots of a run: goodput per flow, queue length per monitored link, windows per path.

use std::path::Path;

use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
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

/// A panel's chart of rates over time: time (ms) on x up to `x_max`, Gbps on y up to `y_max`.
fn rate_chart<'a, DB: DrawingBackend>(
    area: &'a DrawingArea<DB, Shift>,
    title: &str,
    x_max: f64,
    y_max: f64,
) -> Result<ChartContext<'a, DB, Cartesian2d<RangedCoordf64, RangedCoordf64>>, String> {
    let e = |e: &dyn std::fmt::Display| e.to_string();
    let mut chart = ChartBuilder::on(area)
        .caption(title, ("sans-serif", 18))
        .margin(10)
        .x_label_area_size(35)
        .y_label_area_size(55)
        .build_cartesian_2d(0.0..x_max, 0.0..y_max)
        .map_err(|x| e(&x))?;
    chart.configure_mesh().x_desc("time (ms)").y_desc("Gbps").draw().map_err(|x| e(&x))?;
    Ok(chart)
}

/// One panel of the E3 plot: a controller's run.
pub struct ShiftPanel {
    /// Title (controller and shifting times).
    pub title: String,
    /// (time ms, multipath rate on path 1, on path 2), Gbps.
    pub rates: Vec<(f64, f64, f64)>,
    /// Cross-traffic intervals, ms (shaded).
    pub cross: Vec<(f64, f64)>,
}

/// E3: the multipath flow's rate per path over time, one panel per controller, cross-traffic
/// phases shaded.
pub fn write_shift_plot(path: &Path, panels: &[ShiftPanel]) -> Result<(), String> {
    let e = |e: &dyn std::fmt::Display| e.to_string();
    let height = 300 * panels.len().max(1) as u32;
    let root = SVGBackend::new(path, (1000, height)).into_drawing_area();
    root.fill(&WHITE).map_err(|x| e(&x))?;
    let areas = root.split_evenly((panels.len().max(1), 1));
    for (panel, area) in panels.iter().zip(areas.iter()) {
        let x_max = panel.rates.last().map_or(1.0, |r| r.0).max(1e-9);
        let y_max = panel.rates.iter().map(|r| r.1.max(r.2)).fold(10.0f64, f64::max) * 1.05;
        let mut chart = rate_chart(area, &panel.title, x_max, y_max)?;
        for (i, &(from, to)) in panel.cross.iter().enumerate() {
            let color = if i == 0 { RED.mix(0.08) } else { BLUE.mix(0.08) };
            chart
                .draw_series(std::iter::once(Rectangle::new(
                    [(from, 0.0), (to, y_max)],
                    color.filled(),
                )))
                .map_err(|x| e(&x))?;
        }
        for (name, pick, color) in
            [("path 1 (cross traffic 1st)", 1usize, RED), ("path 2 (cross traffic 2nd)", 2, BLUE)]
        {
            let points: Vec<(f64, f64)> =
                panel.rates.iter().map(|r| (r.0, if pick == 1 { r.1 } else { r.2 })).collect();
            chart
                .draw_series(LineSeries::new(points, color.stroke_width(1)))
                .map_err(|x| e(&x))?
                .label(name)
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], color));
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .draw()
            .map_err(|x| e(&x))?;
    }
    root.present().map_err(|x| e(&x))
}

/// Per flow: its name and (time ms, Gbps) points.
pub type FlowRates = Vec<(String, Vec<(f64, f64)>)>;

/// One panel of a timeline plot: a run's per-flow rates over time, with marked instants.
pub struct TimelinePanel {
    /// Title (e.g. the controller).
    pub title: String,
    /// Per flow: name and (time ms, Gbps) points.
    pub flows: FlowRates,
    /// Instants to mark with a dashed vertical line (time ms, label), e.g. a path opening.
    pub marks: Vec<(f64, String)>,
}

/// Per-flow rate over time, one panel per run, the timeline's instants marked (E4).
pub fn write_timeline_plot(
    path: &Path,
    title: &str,
    panels: &[TimelinePanel],
) -> Result<(), String> {
    let e = |e: &dyn std::fmt::Display| e.to_string();
    let height = 300 * panels.len().max(1) as u32 + 40;
    let root = SVGBackend::new(path, (1000, height)).into_drawing_area();
    root.fill(&WHITE).map_err(|x| e(&x))?;
    let root = root.titled(title, ("sans-serif", 20)).map_err(|x| e(&x))?;
    let areas = root.split_evenly((panels.len().max(1), 1));
    for (panel, area) in panels.iter().zip(areas.iter()) {
        let points = panel.flows.iter().flat_map(|(_, pts)| pts.iter());
        let (x_max, y_max) =
            points.fold((1e-9f64, 1e-9f64), |(x, y), &(px, py)| (x.max(px), y.max(py)));
        let y_max = y_max * 1.15;
        let mut chart = rate_chart(area, &panel.title, x_max, y_max)?;
        for (at, label) in &panel.marks {
            let dashes = (0..40).map(|i| {
                let y0 = y_max * i as f64 / 40.0;
                PathElement::new(vec![(*at, y0), (*at, y0 + y_max / 80.0)], BLACK.mix(0.6))
            });
            chart.draw_series(dashes).map_err(|x| e(&x))?;
            chart
                .draw_series(std::iter::once(Text::new(
                    label.clone(),
                    (*at, y_max * 0.98),
                    ("sans-serif", 12),
                )))
                .map_err(|x| e(&x))?;
        }
        for (i, (name, pts)) in panel.flows.iter().enumerate() {
            let color = Palette99::pick(i).to_rgba();
            chart
                .draw_series(LineSeries::new(pts.iter().copied(), color.stroke_width(2)))
                .map_err(|x| e(&x))?
                .label(name.as_str())
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], color));
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .draw()
            .map_err(|x| e(&x))?;
    }
    root.present().map_err(|x| e(&x))
}
