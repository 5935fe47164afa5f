//! An experiment's sweep plot, as its `[plot]` section asks: panels of metrics stacked, x the
//! plot's axis, one line per series (the values of the other axes) in its controller's colour,
//! the median over seeds with a min-max bar. The simulator's and the testbed's `run` both draw
//! it, as `sweep.svg`.

use std::path::Path;

use mpquic_plot::chart::{self, Axes, PlotError, SweepLine, SweepPoint};
use mpquic_plot::palette::controller_color;
use plotters::prelude::{IntoLogRange, SeriesLabelPosition};

use crate::metrics::SummaryRow;
use crate::sections::PanelSpec;
use crate::Experiment;

/// Draw the `[plot]` of `e` into `path` from `summary`, one row per point of `e` in order (its
/// series and x are the point's place, [`crate::experiment::Point::place`]). Draws
/// nothing when the file has no `[plot]`.
pub fn write_sweep_plot(
    path: &Path,
    e: &Experiment,
    summary: &[SummaryRow],
) -> Result<(), PlotError> {
    let Some(plot) = &e.base.plot else { return Ok(()) };
    let placed: Vec<(String, f64, &SummaryRow)> = e
        .points
        .iter()
        .zip(summary)
        .map(|(point, row)| {
            let (series, x) = point.place(&e.base);
            (series, x, row)
        })
        .collect();
    let mut series: Vec<&str> = vec![];
    for (name, _, _) in &placed {
        if !series.contains(&name.as_str()) {
            series.push(name);
        }
    }
    let lines_of = |panel: &PanelSpec| -> Vec<SweepLine> {
        series
            .iter()
            .enumerate()
            .map(|(i, &name)| SweepLine {
                name: name.to_string(),
                color: controller_color(name),
                dashed: series[..i].iter().any(|s| controller_color(s) == controller_color(name)),
                points: placed
                    .iter()
                    .filter(|(s, _, _)| s == name)
                    .filter_map(|&(_, x, row)| {
                        let s = row.metrics.get(&panel.metric)?;
                        Some(SweepPoint { x, min: s.min, median: s.median, max: s.max })
                    })
                    .collect(),
            })
            .collect()
    };
    let areas = chart::stacked_svg(path, 900, 320, plot.panels.len(), Some(&plot.title))?;
    let (x_lo, x_hi) =
        placed.iter().fold((f64::MAX, f64::MIN), |(lo, hi), &(_, x, _)| (lo.min(x), hi.max(x)));
    let pad = ((x_hi - x_lo) * 0.08).max(0.5);
    // Room on the left for the legend, so that it covers no point.
    let legend_room = (x_hi - x_lo + 2.0 * pad) * 0.3;
    let x_label = plot.x_label.as_deref().unwrap_or(&plot.x);
    for (panel, area) in plot.panels.iter().zip(areas.iter()) {
        let lines = lines_of(panel);
        let vals = lines.iter().flat_map(|l| &l.points);
        let y_hi = vals.clone().map(|p| p.max).fold(0.0f64, f64::max).max(1e-6) * 1.1;
        let y_lo_log = vals.map(|p| p.min).filter(|&v| v > 0.0).fold(f64::MAX, f64::min);
        let y_lo_log = if y_lo_log == f64::MAX { 1e-3 } else { y_lo_log * 0.8 };
        let y_label = panel.label.as_str();
        let spread = pad * 0.06;
        if panel.log {
            let lo = y_lo_log;
            let y = (lo..y_hi.max(lo * 10.0)).log_scale();
            let axes = Axes { x_label, y_label, x: (x_lo - pad)..(x_hi + pad), y };
            let mut chart = chart::panel(area, None, axes)?;
            chart::draw_sweep_lines(&mut chart, &lines, spread, |v| v.max(lo))?;
            chart::draw_legend(&mut chart, SeriesLabelPosition::UpperLeft)?;
        } else {
            let x = (x_lo - pad - legend_room)..(x_hi + pad);
            let mut chart = chart::panel(area, None, Axes { x_label, y_label, x, y: 0.0..y_hi })?;
            chart::draw_sweep_lines(&mut chart, &lines, spread, |v| v)?;
            chart::draw_legend(&mut chart, SeriesLabelPosition::UpperLeft)?;
        }
    }
    areas.first().map_or(Ok(()), |a| a.present().map_err(PlotError::of))
}
