//! SVG plots of one connection's series (plotters), with axes shared across all runs.

use anyhow::{anyhow, Result};
use mpquic::mpquic_cc::{Notice, ReductionCause};
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;

use mpquic_plot::palette::path_color;

use super::chart::{intervals, Line, Panel, Style};
use super::connection::Connection;
use super::fit::YAxis;

/// Plot size, pixels.
pub const WIDTH: u32 = 620;
/// Plot height, pixels.
pub const HEIGHT: u32 = 210;

const CAUSE_COLORS: [RGBColor; 3] = [RGBColor(230, 120, 0), RGBColor(0, 0, 0), RGBColor(200, 0, 0)];
const SUPPRESSED: RGBColor = RGBColor(220, 50, 50);
const ELIMINATED: RGBColor = RGBColor(130, 60, 170);

fn plot_err(e: impl std::fmt::Debug) -> anyhow::Error {
    anyhow!("plotting failed: {e:?}")
}

type Chart<'a, 'b> = ChartContext<'a, SVGBackend<'b>, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

/// Draw `panel` for `conn` (its `lines`, from `Panel::lines`) on the shared time range and y
/// axis; returns the SVG text.
pub fn render(
    panel: Panel,
    conn: &Connection,
    lines: &[Line],
    x_max: f64,
    axis: YAxis,
) -> Result<String> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, HEIGHT)).into_drawing_area();
        root.fill(&WHITE).map_err(plot_err)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(panel.title(), ("sans-serif", 13))
            .margin(6)
            .x_label_area_size(30)
            .y_label_area_size(if panel == Panel::Episodes { 10 } else { 50 })
            .build_cartesian_2d(0f64..x_max.max(1e-3), 0f64..axis.top)
            .map_err(plot_err)?;
        let mut mesh = chart.configure_mesh();
        mesh.x_desc("time since trace start (ms)").light_line_style(RGBColor(235, 235, 235));
        if panel == Panel::Episodes {
            mesh.disable_y_mesh().y_labels(0);
        }
        mesh.draw().map_err(plot_err)?;
        backdrop(&mut chart, conn, axis.top, x_max)?;
        if panel == Panel::Episodes {
            episodes(&mut chart, conn, x_max)?;
        } else {
            draw_lines(&mut chart, lines, axis)?;
        }
        if let Some(note) = axis.note() {
            let font = ("sans-serif", 11).into_font().color(&RGBColor(190, 0, 0));
            chart
                .draw_series([Text::new(note, (x_max * 0.3, axis.top * 0.99), font)])
                .map_err(plot_err)?;
        }
        root.present().map_err(plot_err)?;
    }
    Ok(svg)
}

/// Light bands where any path is suppressed or eliminated; phase switches as vertical lines.
fn backdrop(chart: &mut Chart<'_, '_>, conn: &Connection, y_max: f64, x_max: f64) -> Result<()> {
    let mut bands = intervals(conn, conn.end_time.min(x_max));
    // Paths suppressed together share one band.
    bands.dedup_by(|a, b| (a.1, a.2, a.3) == (b.1, b.2, b.3));
    chart
        .draw_series(bands.iter().map(|&(_, from, to, elim)| {
            let c = if elim { ELIMINATED } else { SUPPRESSED };
            Rectangle::new([(from, 0.0), (to, y_max)], c.mix(0.08).filled())
        }))
        .map_err(plot_err)?;
    chart
        .draw_series(
            conn.episodes.iter().filter(|e| matches!(e.notice, Notice::PhaseSwitched { .. })).map(
                |e| PathElement::new(vec![(e.time, 0.0), (e.time, y_max)], BLUE.stroke_width(1)),
            ),
        )
        .map_err(plot_err)?;
    Ok(())
}

/// The lines, values above the axis drawn at its top.
fn draw_lines(chart: &mut Chart<'_, '_>, lines: &[Line], axis: YAxis) -> Result<()> {
    for l in lines {
        let c = l.color;
        chart
            .draw_series(l.spans.iter().map(|&(t, lo, hi)| {
                PathElement::new(vec![(t, axis.clip(lo)), (t, axis.clip(hi))], c.mix(0.3))
            }))
            .map_err(plot_err)?;
        let points = l.points.iter().map(|&(t, v)| (t, axis.clip(v)));
        match l.style {
            Style::Solid => {
                chart.draw_series(LineSeries::new(points, c.stroke_width(1))).map_err(plot_err)?;
            }
            Style::Dashed => {
                let points: Vec<_> = points.collect();
                chart
                    .draw_series(DashedLineSeries::new(points, 4, 3, c.stroke_width(1)))
                    .map_err(plot_err)?;
            }
            Style::Marks => {
                chart
                    .draw_series(points.map(|p| Cross::new(p, 3, c.stroke_width(1))))
                    .map_err(plot_err)?;
            }
        }
    }
    Ok(())
}

/// One lane per path (lane i spans y in [i, i+1]).
fn episodes(chart: &mut Chart<'_, '_>, conn: &Connection, x_max: f64) -> Result<()> {
    let end = conn.end_time.min(x_max);
    for (id, from, to, elim) in intervals(conn, end) {
        let y = id as f64;
        let c = if elim { ELIMINATED } else { SUPPRESSED };
        chart
            .draw_series([Rectangle::new([(from, y + 0.55), (to, y + 0.85)], c.mix(0.7).filled())])
            .map_err(plot_err)?;
    }
    for (&id, p) in &conn.paths {
        let y = id as f64;
        chart
            .draw_series([PathElement::new(
                vec![(0.0, y + 0.5), (end, y + 0.5)],
                path_color(id).mix(0.5),
            )])
            .map_err(plot_err)?;
        chart
            .draw_series([Text::new(
                format!("path {id}"),
                (x_max * 0.005, y + 0.95),
                ("sans-serif", 11).into_font().color(&path_color(id)),
            )])
            .map_err(plot_err)?;
        for (ci, series) in p.reductions.iter().enumerate() {
            let c = CAUSE_COLORS[ci];
            let (lo, hi) = (y + 0.1 + ci as f64 * 0.12, y + 0.2 + ci as f64 * 0.12);
            chart
                .draw_series(series.buckets().map(|(_, b)| {
                    PathElement::new(vec![(b.t_last, lo), (b.t_last, hi)], c.stroke_width(1))
                }))
                .map_err(plot_err)?;
        }
    }
    chart
        .draw_series(
            conn.episodes
                .iter()
                .filter(|e| matches!(e.notice, Notice::SlowStartExited { .. }))
                .flat_map(|e| {
                    e.paths.iter().map(move |&p| {
                        TriangleMarker::new((e.time, p as f64 + 0.5), 5, GREEN.filled())
                    })
                }),
        )
        .map_err(plot_err)?;
    Ok(())
}

/// Legend text for the episodes panel (HTML).
pub fn episode_legend() -> String {
    let swatch = |c: RGBColor, text: &str| {
        format!(
            "<span class=\"sw\" style=\"background:rgb({},{},{})\"></span>{text}",
            c.0, c.1, c.2
        )
    };
    [
        swatch(SUPPRESSED, "suppressed (AMP)"),
        swatch(ELIMINATED, "eliminated (MPTCP-D)"),
        swatch(CAUSE_COLORS[0], &format!("window cut: {}", ReductionCause::Ecn.name())),
        swatch(CAUSE_COLORS[1], &format!("window cut: {}", ReductionCause::Loss.name())),
        swatch(CAUSE_COLORS[2], "window cut: persistent congestion"),
        swatch(GREEN, "slow start exited"),
        swatch(BLUE, "phase switched (MMPTCP)"),
    ]
    .join(" ")
}
