//! SVG plots of a run: goodput per flow, queue length per monitored link, windows per path.

use std::path::Path;

use serde::{Deserialize, Serialize};

use mpquic_plot::chart::{self, Axes, Line, LinePlot};
use mpquic_plot::palette::path_color;
use plotters::prelude::*;

use crate::report::Traces;

/// Write `lines` over time (ms) as `dir/file` unless they have no point; note it in `written`.
fn time_plot(
    dir: &Path,
    file: &str,
    title: &str,
    y_label: &str,
    lines: &[Line],
    written: &mut Vec<String>,
) -> Result<(), String> {
    if lines.iter().all(|l| l.points.is_empty()) {
        return Ok(());
    }
    let plot = LinePlot { title, x_label: "time (ms)", y_label, lines };
    chart::write_line_plot(&dir.join(file), &plot).map_err(|e| e.to_string())?;
    written.push(file.into());
    Ok(())
}

/// Write `goodput.svg`, `queues.svg` and `windows.svg` into `dir` (plots with no data are
/// skipped). At most `max_flows` flows are drawn per plot.
pub fn write_plots(traces: &Traces, dir: &Path, max_flows: usize) -> Result<Vec<String>, String> {
    let mut written = vec![];
    let goodput = Line::in_order(traces.goodput.iter().take(max_flows).map(|(name, pts)| {
        (name.clone(), pts.iter().map(|&(t, bps)| (t / 1000.0, bps / 1e9)).collect())
    }));
    time_plot(dir, "goodput.svg", "Goodput per flow", "Gbit/s", &goodput, &mut written)?;
    let queues = Line::in_order(traces.queues.iter().map(|(name, pts)| {
        (name.clone(), pts.iter().map(|&(t, q)| (t / 1000.0, f64::from(q))).collect())
    }));
    time_plot(dir, "queues.svg", "Queue length", "packets", &queues, &mut written)?;
    let windows =
        Line::in_order(traces.windows.iter().take(max_flows).flat_map(|(flow, paths)| {
            paths.iter().map(move |(p, pts)| {
                let points = pts.iter().map(|p| (p.t_us / 1000.0, p.window as f64 / 1000.0));
                (format!("{flow} path {p}"), points.collect())
            })
        }));
    let title = "Congestion window per path";
    time_plot(dir, "windows.svg", title, "KB", &windows, &mut written)?;
    Ok(written)
}

/// One panel of the E3 plot: a controller's run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ShiftPanel {
    /// Title (controller and shifting times).
    pub title: String,
    /// (time ms, multipath rate on path 1, on path 2), Gbps.
    pub rates: Vec<(f64, f64, f64)>,
    /// Cross-traffic intervals, ms (shaded).
    pub cross: Vec<(f64, f64)>,
}

/// The axes of a rate plot: time (ms) on x up to `x_max`, Gbps on y up to `y_max`.
fn rate_axes(x_max: f64, y_max: f64) -> Axes<'static, std::ops::Range<f64>> {
    Axes { x_label: "time (ms)", y_label: "Gbps", x: 0.0..x_max, y: 0.0..y_max }
}

/// E3: the multipath flow's rate per path over time, one panel per controller, cross-traffic
/// phases shaded in the colour of the path they cross.
pub fn write_shift_plot(path: &Path, panels: &[ShiftPanel]) -> Result<(), String> {
    let e = |e: &dyn std::fmt::Display| e.to_string();
    let areas = chart::stacked_svg(path, 1000, 300, panels.len(), None).map_err(|x| e(&x))?;
    for (panel, area) in panels.iter().zip(areas.iter()) {
        let x_max = panel.rates.last().map_or(1.0, |r| r.0).max(1e-9);
        let y_max = panel.rates.iter().map(|r| r.1.max(r.2)).fold(10.0f64, f64::max) * 1.05;
        let mut chart =
            chart::panel(area, Some(&panel.title), rate_axes(x_max, y_max)).map_err(|x| e(&x))?;
        for (i, &(from, to)) in panel.cross.iter().enumerate() {
            let color = path_color(i as u64 + 1).mix(0.08);
            chart
                .draw_series([Rectangle::new([(from, 0.0), (to, y_max)], color.filled())])
                .map_err(|x| e(&x))?;
        }
        let paths = [(1u64, "path 1 (cross traffic 1st)"), (2, "path 2 (cross traffic 2nd)")];
        let lines: Vec<Line> = paths
            .into_iter()
            .map(|(p, name)| Line {
                name: name.into(),
                color: path_color(p),
                width: 1,
                points: panel.rates.iter().map(|r| (r.0, if p == 1 { r.1 } else { r.2 })).collect(),
            })
            .collect();
        chart::draw_lines(&mut chart, &lines).map_err(|x| e(&x))?;
        chart::draw_legend(&mut chart, SeriesLabelPosition::MiddleRight).map_err(|x| e(&x))?;
    }
    areas.first().map_or(Ok(()), |a| a.present().map_err(|x| e(&x)))
}

/// Per flow: its name and (time ms, Gbps) points.
pub type FlowRates = Vec<(String, Vec<(f64, f64)>)>;

/// One panel of a timeline plot: a run's per-flow rates over time, with marked instants.
#[derive(Debug, Clone, Serialize, Deserialize)]
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
    let areas =
        chart::stacked_svg(path, 1000, 300, panels.len(), Some(title)).map_err(|x| e(&x))?;
    for (panel, area) in panels.iter().zip(areas.iter()) {
        let points = panel.flows.iter().flat_map(|(_, pts)| pts.iter());
        let (x_max, y_max) =
            points.fold((1e-9f64, 1e-9f64), |(x, y), &(px, py)| (x.max(px), y.max(py)));
        let y_max = y_max * 1.15;
        let mut chart =
            chart::panel(area, Some(&panel.title), rate_axes(x_max, y_max)).map_err(|x| e(&x))?;
        for (at, label) in &panel.marks {
            let dashes = (0..40).map(|i| {
                let y0 = y_max * i as f64 / 40.0;
                PathElement::new(vec![(*at, y0), (*at, y0 + y_max / 80.0)], BLACK.mix(0.6))
            });
            chart.draw_series(dashes).map_err(|x| e(&x))?;
            chart
                .draw_series([Text::new(label.clone(), (*at, y_max * 0.98), ("sans-serif", 12))])
                .map_err(|x| e(&x))?;
        }
        let flows = panel.flows.iter().map(|(name, pts)| (name.clone(), pts.clone()));
        let mut flows = Line::in_order(flows);
        flows.iter_mut().for_each(|l| l.width = 2);
        chart::draw_lines(&mut chart, &flows).map_err(|x| e(&x))?;
        chart::draw_legend(&mut chart, SeriesLabelPosition::UpperRight).map_err(|x| e(&x))?;
    }
    areas.first().map_or(Ok(()), |a| a.present().map_err(|x| e(&x)))
}
