//! SVG plots of one connection's series (plotters), with axes shared across all runs.

use anyhow::{anyhow, Result};
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;

use super::connection::{Connection, PathData, CAUSES};
use super::series::Series;

/// Plot size, pixels.
pub const WIDTH: u32 = 620;
/// Plot height, pixels.
pub const HEIGHT: u32 = 210;

/// Colours of paths 0, 1, 2, ... (repeating).
pub const PATH_COLORS: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(23, 190, 207),
];

/// The colour of a path.
pub fn path_color(path: u64) -> RGBColor {
    PATH_COLORS[path as usize % PATH_COLORS.len()]
}

const CAUSE_COLORS: [RGBColor; 3] = [RGBColor(230, 120, 0), RGBColor(0, 0, 0), RGBColor(200, 0, 0)];
const SUPPRESSED: RGBColor = RGBColor(220, 50, 50);
const ELIMINATED: RGBColor = RGBColor(130, 60, 170);

/// One row of plots.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Panel {
    /// Congestion window per path.
    Cwnd,
    /// Bytes in flight per path.
    InFlight,
    /// Smoothed and minimum RTT per path.
    Rtt,
    /// Sending rate per path.
    Rate,
    /// CE marks per path and losses (connection).
    Signals,
    /// DCTCP/DCM alpha per path.
    Alpha,
    /// Controller episodes: suppression, elimination, reductions, slow-start exits.
    Episodes,
}

impl Panel {
    /// Every panel, top to bottom.
    pub const ALL: [Panel; 7] = [
        Panel::Cwnd,
        Panel::InFlight,
        Panel::Rtt,
        Panel::Rate,
        Panel::Signals,
        Panel::Alpha,
        Panel::Episodes,
    ];

    /// File-name slug.
    pub fn slug(self) -> &'static str {
        match self {
            Panel::Cwnd => "cwnd",
            Panel::InFlight => "inflight",
            Panel::Rtt => "rtt",
            Panel::Rate => "rate",
            Panel::Signals => "signals",
            Panel::Alpha => "alpha",
            Panel::Episodes => "episodes",
        }
    }

    /// Caption.
    pub fn title(self) -> &'static str {
        match self {
            Panel::Cwnd => "congestion window (KiB; line: last, bar: min-max per bucket)",
            Panel::InFlight => "bytes in flight (KiB; line: last, bar: min-max per bucket)",
            Panel::Rtt => "RTT (ms; solid: smoothed, dashed: min)",
            Panel::Rate => "sending rate (Mbit/s)",
            Panel::Signals => "CE marks per path (lines) and lost packets, all paths (x), per s",
            Panel::Alpha => "DCTCP/DCM alpha",
            Panel::Episodes => "controller episodes per path",
        }
    }

    /// The largest y value this panel needs for `conn`.
    pub fn y_max(self, conn: &Connection) -> f64 {
        let over_paths = |f: &dyn Fn(&PathData) -> Option<f64>| {
            conn.paths.values().filter_map(f).fold(0.0, f64::max)
        };
        match self {
            Panel::Cwnd => over_paths(&|p| p.cwnd.max()) / 1024.0,
            Panel::InFlight => over_paths(&|p| p.bytes_in_flight.max()) / 1024.0,
            // The first sample of each RTT series is the stack's initial estimate (333 ms before
            // any ACK); it is drawn clipped so that it does not flatten the measured RTTs.
            Panel::Rtt => over_paths(&|p| {
                let rest =
                    |s: &Series| s.buckets().skip(1).map(|(_, b)| b.last).collect::<Vec<_>>();
                rest(&p.srtt).into_iter().chain(rest(&p.min_rtt)).reduce(f64::max)
            }),
            Panel::Rate => {
                over_paths(&|p| rate_points(&p.sent, 8.0 / 1e6).map(|x| x.1).reduce(f64::max))
            }
            Panel::Signals => over_paths(&|p| per_second(&p.ce).map(|x| x.1).reduce(f64::max))
                .max(per_second(&conn.losses).map(|x| x.1).fold(0.0, f64::max)),
            Panel::Alpha => 1.0,
            Panel::Episodes => conn.paths.keys().max().map_or(1.0, |m| *m as f64 + 1.0),
        }
    }

    /// Whether the panel has anything to show in any of `conns`.
    pub fn has_data<'a>(self, mut conns: impl Iterator<Item = &'a Connection>) -> bool {
        match self {
            Panel::Alpha => conns.any(|c| c.paths.values().any(|p| !p.alpha.is_empty())),
            _ => true,
        }
    }
}

/// Points (bucket middle, sum × scale per second of bucket width).
fn rate_points(s: &Series, scale: f64) -> impl Iterator<Item = (f64, f64)> + '_ {
    let w = s.width();
    s.buckets().map(move |(start, b)| (start + w / 2.0, b.sum * scale / (w / 1000.0)))
}

fn per_second(s: &Series) -> impl Iterator<Item = (f64, f64)> + '_ {
    rate_points(s, 1.0)
}

fn plot_err(e: impl std::fmt::Debug) -> anyhow::Error {
    anyhow!("plotting failed: {e:?}")
}

type Chart<'a, 'b> = ChartContext<'a, SVGBackend<'b>, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

/// Draw `panel` for `conn` with the shared ranges; returns the SVG text.
pub fn render(panel: Panel, conn: &Connection, x_max: f64, y_max: f64) -> Result<String> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, HEIGHT)).into_drawing_area();
        root.fill(&WHITE).map_err(plot_err)?;
        let y_max = if y_max > 0.0 { y_max * 1.05 } else { 1.0 };
        let mut chart = ChartBuilder::on(&root)
            .caption(panel.title(), ("sans-serif", 13))
            .margin(6)
            .x_label_area_size(30)
            .y_label_area_size(if panel == Panel::Episodes { 10 } else { 50 })
            .build_cartesian_2d(0f64..x_max.max(1e-3), 0f64..y_max)
            .map_err(plot_err)?;
        let mut mesh = chart.configure_mesh();
        mesh.x_desc("time since trace start (ms)").light_line_style(RGBColor(235, 235, 235));
        if panel == Panel::Episodes {
            mesh.disable_y_mesh().y_labels(0);
        }
        mesh.draw().map_err(plot_err)?;
        backdrop(&mut chart, conn, y_max, x_max)?;
        draw(panel, &mut chart, conn, x_max, y_max)?;
        root.present().map_err(plot_err)?;
    }
    Ok(svg)
}

/// Suppression / elimination intervals, per path: (path, from, to, eliminated?).
pub fn intervals(conn: &Connection, x_end: f64) -> Vec<(u64, f64, f64, bool)> {
    let mut open: Vec<(u64, f64, bool)> = Vec::new();
    let mut done = Vec::new();
    for e in &conn.episodes {
        match e.kind.as_str() {
            "suppressed" | "eliminated" => {
                for &p in &e.paths {
                    if !open.iter().any(|o| o.0 == p) {
                        open.push((p, e.time, e.kind == "eliminated"));
                    }
                }
            }
            "released" => {
                for &p in &e.paths {
                    if let Some(i) = open.iter().position(|o| o.0 == p) {
                        let (p, from, elim) = open.remove(i);
                        done.push((p, from, e.time, elim));
                    }
                }
            }
            _ => {}
        }
    }
    done.extend(open.into_iter().map(|(p, from, elim)| (p, from, x_end, elim)));
    done
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
            conn.episodes.iter().filter(|e| e.kind == "phase_switched").map(|e| {
                PathElement::new(vec![(e.time, 0.0), (e.time, y_max)], BLUE.stroke_width(1))
            }),
        )
        .map_err(plot_err)?;
    Ok(())
}

fn value_lines(
    chart: &mut Chart<'_, '_>,
    conn: &Connection,
    pick: fn(&PathData) -> &Series,
    scale: f64,
) -> Result<()> {
    for (&id, p) in &conn.paths {
        let s = pick(p);
        let c = path_color(id);
        chart
            .draw_series(s.buckets().filter(|(_, b)| b.max > b.min).map(|(_, b)| {
                PathElement::new(
                    vec![(b.t_last, b.min * scale), (b.t_last, b.max * scale)],
                    c.mix(0.3),
                )
            }))
            .map_err(plot_err)?;
        chart
            .draw_series(LineSeries::new(
                s.buckets().map(|(_, b)| (b.t_last, b.last * scale)),
                c.stroke_width(1),
            ))
            .map_err(plot_err)?;
    }
    Ok(())
}

fn draw(
    panel: Panel,
    chart: &mut Chart<'_, '_>,
    conn: &Connection,
    x_max: f64,
    y_top: f64,
) -> Result<()> {
    match panel {
        Panel::Cwnd => value_lines(chart, conn, |p| &p.cwnd, 1.0 / 1024.0),
        Panel::InFlight => value_lines(chart, conn, |p| &p.bytes_in_flight, 1.0 / 1024.0),
        Panel::Alpha => value_lines(chart, conn, |p| &p.alpha, 1.0),
        Panel::Rtt => {
            for (&id, p) in &conn.paths {
                let c = path_color(id);
                chart
                    .draw_series(LineSeries::new(
                        p.srtt.buckets().map(|(_, b)| (b.t_last, b.last.min(y_top))),
                        c.stroke_width(1),
                    ))
                    .map_err(plot_err)?;
                let pts: Vec<_> =
                    p.min_rtt.buckets().map(|(_, b)| (b.t_last, b.last.min(y_top))).collect();
                chart
                    .draw_series(DashedLineSeries::new(pts, 4, 3, c.stroke_width(1)))
                    .map_err(plot_err)?;
            }
            Ok(())
        }
        Panel::Rate => {
            for (&id, p) in &conn.paths {
                chart
                    .draw_series(LineSeries::new(
                        rate_points(&p.sent, 8.0 / 1e6),
                        path_color(id).stroke_width(1),
                    ))
                    .map_err(plot_err)?;
            }
            Ok(())
        }
        Panel::Signals => {
            for (&id, p) in &conn.paths {
                chart
                    .draw_series(LineSeries::new(per_second(&p.ce), path_color(id).stroke_width(1)))
                    .map_err(plot_err)?;
            }
            chart
                .draw_series(
                    per_second(&conn.losses).map(|pt| Cross::new(pt, 3, BLACK.stroke_width(1))),
                )
                .map_err(plot_err)?;
            Ok(())
        }
        Panel::Episodes => episodes(chart, conn, x_max),
    }
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
        .draw_series(conn.episodes.iter().filter(|e| e.kind == "slow_start_exited").flat_map(|e| {
            e.paths
                .iter()
                .map(move |&p| TriangleMarker::new((e.time, p as f64 + 0.5), 5, GREEN.filled()))
        }))
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
        swatch(CAUSE_COLORS[0], &format!("window cut: {}", CAUSES[0])),
        swatch(CAUSE_COLORS[1], &format!("window cut: {}", CAUSES[1])),
        swatch(CAUSE_COLORS[2], "window cut: persistent congestion"),
        swatch(GREEN, "slow start exited"),
        swatch(BLUE, "phase switched (MMPTCP)"),
    ]
    .join(" ")
}
