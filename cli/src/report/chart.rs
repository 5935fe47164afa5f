//! What each plot shows, independent of how it is drawn: the panels, their lines (points in plot
//! units, coloured from `mpquic_plot`'s palette) and the fitted y axes. The static SVGs (`plots`)
//! and the interactive page (`interactive`) both draw from here, so they cannot disagree.

use mpquic::mpquic_cc::Notice;
use mpquic_plot::palette::path_color;
use plotters::style::RGBColor;

use super::connection::{Connection, PathData};
use super::fit::YAxis;
use super::series::Series;

/// Colour of connection-wide series (losses).
pub const CONNECTION_COLOR: RGBColor = RGBColor(0, 0, 0);

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

/// How a line is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    /// Solid line.
    Solid,
    /// Dashed line.
    Dashed,
    /// Markers only (events counted per bin).
    Marks,
}

/// One series of a plot.
#[derive(Debug, Clone)]
pub struct Line {
    /// Legend text.
    pub label: String,
    /// The path it belongs to (`None`: the whole connection).
    pub path: Option<u64>,
    /// Colour.
    pub color: RGBColor,
    /// How it is drawn.
    pub style: Style,
    /// (ms, value) in plot units, in time order.
    pub points: Vec<(f64, f64)>,
    /// (ms, min, max) of the samples behind each point, where they differ (value series).
    pub spans: Vec<(f64, f64, f64)>,
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

    /// Whether the panel has anything to show in any of `conns`.
    pub fn has_data<'a>(self, mut conns: impl Iterator<Item = &'a Connection>) -> bool {
        match self {
            Panel::Alpha => conns.any(|c| c.paths.values().any(|p| !p.alpha.is_empty())),
            _ => true,
        }
    }

    /// The lines of this panel for `conn` (none for `Episodes`, drawn as lanes instead).
    /// Counters become rates on the time grid `grid` (ms bins from 0).
    pub fn lines(self, conn: &Connection, grid: f64) -> Vec<Line> {
        let per_path = |f: &dyn Fn(u64, &PathData) -> Line| -> Vec<Line> {
            conn.paths.iter().map(|(&id, p)| f(id, p)).collect()
        };
        const KIB: f64 = 1.0 / 1024.0;
        match self {
            Panel::Cwnd => per_path(&|id, p| values(id, &p.cwnd, KIB, Style::Solid, "")),
            Panel::InFlight => {
                per_path(&|id, p| values(id, &p.bytes_in_flight, KIB, Style::Solid, ""))
            }
            Panel::Alpha => per_path(&|id, p| values(id, &p.alpha, 1.0, Style::Solid, "")),
            Panel::Rtt => conn
                .paths
                .iter()
                .flat_map(|(&id, p)| {
                    [
                        values(id, &p.srtt, 1.0, Style::Solid, " srtt"),
                        values(id, &p.min_rtt, 1.0, Style::Dashed, " min"),
                    ]
                })
                .collect(),
            Panel::Rate => per_path(&|id, p| Line {
                points: rate(&p.sent, 8.0 / 1e6, grid, conn.end_time),
                ..line(id, Style::Solid, "")
            }),
            Panel::Signals => {
                let mut lines = per_path(&|id, p| Line {
                    points: rate(&p.ce, 1.0, grid, conn.end_time),
                    ..line(id, Style::Solid, " CE")
                });
                if conn.lost_total > 0 {
                    let points = rate(&conn.losses, 1.0, grid, conn.end_time);
                    lines.push(Line {
                        label: "lost (all paths)".into(),
                        path: None,
                        color: CONNECTION_COLOR,
                        style: Style::Marks,
                        points: points.into_iter().filter(|p| p.1 > 0.0).collect(),
                        spans: Vec::new(),
                    });
                }
                lines
            }
            Panel::Episodes => Vec::new(),
        }
    }

    /// The y axes of one row: this panel for each run's connection (`None`: the run has no
    /// such connection), fitted to their lines (see `YAxis::row`).
    pub fn row_axes(self, plots: &[Option<(&Connection, &[Line])>]) -> Vec<YAxis> {
        match self {
            Panel::Alpha => vec![YAxis::fixed(1.0); plots.len()],
            Panel::Episodes => {
                // One lane per path.
                let lanes = plots.iter().flatten().filter_map(|(c, _)| c.paths.keys().max());
                vec![YAxis::fixed(lanes.max().map_or(1, |m| m + 1) as f64); plots.len()]
            }
            _ => {
                let values = |lines: &[Line]| -> Vec<f64> {
                    let points = lines.iter().flat_map(|l| l.points.iter().map(|p| p.1));
                    points.chain(lines.iter().flat_map(|l| l.spans.iter().map(|s| s.2))).collect()
                };
                let values: Vec<Vec<f64>> =
                    plots.iter().map(|p| p.map_or(Vec::new(), |(_, l)| values(l))).collect();
                YAxis::row(&values)
            }
        }
    }
}

/// Suppression / elimination intervals, per path: (path, from, to, eliminated?).
pub fn intervals(conn: &Connection, x_end: f64) -> Vec<(u64, f64, f64, bool)> {
    let mut open: Vec<(u64, f64, bool)> = Vec::new();
    let mut done = Vec::new();
    for e in &conn.episodes {
        match &e.notice {
            Notice::Suppressed { .. } | Notice::Eliminated { .. } => {
                let eliminated = matches!(e.notice, Notice::Eliminated { .. });
                for &p in &e.paths {
                    if !open.iter().any(|o| o.0 == p) {
                        open.push((p, e.time, eliminated));
                    }
                }
            }
            Notice::Released { .. } => {
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

fn line(path: u64, style: Style, suffix: &str) -> Line {
    Line {
        label: format!("path {path}{suffix}"),
        path: Some(path),
        color: path_color(path),
        style,
        points: Vec::new(),
        spans: Vec::new(),
    }
}

/// A value series (window, RTT, alpha): the last sample of each bucket at its time, and the
/// bucket's min-max where the samples differ.
fn values(path: u64, s: &Series, scale: f64, style: Style, suffix: &str) -> Line {
    Line {
        points: s.buckets().map(|(_, b)| (b.t_last, b.last * scale)).collect(),
        spans: s
            .buckets()
            .filter(|(_, b)| b.max > b.min)
            .map(|(_, b)| (b.t_last, b.min * scale, b.max * scale))
            .collect(),
        ..line(path, style, suffix)
    }
}

/// Buckets per bin of the grid rates are computed on: rates over a few buckets read better
/// than per-bucket bursts.
const BUCKETS_PER_RATE_BIN: usize = 4;

/// The bin width (ms) of the one time grid all rates of a report are computed on: a report
/// spanning `x_max` ms with series of `buckets` buckets. It is a whole multiple of every
/// series' bucket width, so no bucket straddles two bins.
pub fn rate_grid(x_max: f64, buckets: usize) -> f64 {
    Series::width_for(x_max, (buckets / BUCKETS_PER_RATE_BIN).max(2))
}

/// A counter as a rate per second (× `scale`) on the grid of `width` ms bins from 0 to `end`,
/// empty bins included as zeros (idle is a rate of 0, not a gap to draw across).
///
/// The grid is the same for every series of the report: dividing each series' sum by its own
/// bucket width made a series whose samples all lie early (a path that stopped sending, the CE
/// marks of slow start) a rate over microsecond buckets: one packet in 1 µs is 12 Gbit/s.
pub fn rate(s: &Series, scale: f64, width: f64, end: f64) -> Vec<(f64, f64)> {
    let bins = ((end / width).floor() as usize + 1).max(1);
    let mut sums = vec![0.0; bins];
    for (start, b) in s.buckets() {
        // Bucket widths are powers of two of the same unit as `width` and no wider, so every
        // bucket lies inside one bin; the midpoint keeps float error away from bin edges.
        let i = ((start + s.width() / 2.0) / width) as usize;
        sums[i.min(bins - 1)] += b.sum;
    }
    let per_second = scale * 1000.0 / width;
    sums.iter().enumerate().map(|(i, sum)| ((i as f64 + 0.5) * width, sum * per_second)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_of_series_with_different_bucket_widths_share_one_grid() {
        // Path A sends 1500 B every ms for 4 s; path B sends 10 packets in the first 10 µs
        // only, so its own buckets stay 1 µs wide (the old plot showed it at 12 Gbit/s).
        let (mut a, mut b) = (Series::new(1000), Series::new(1000));
        for ms in 0..4000 {
            a.push(ms as f64, 1500.0);
        }
        for us in 0..10 {
            b.push(us as f64 / 1000.0, 1500.0);
        }
        assert!(b.width() < a.width() / 1000.0);
        let grid = Series::width_for(4000.0, 1000);
        assert_eq!(grid, a.width());
        assert_eq!(rate_grid(4000.0, 1000), grid * 4.0);
        let ra = rate(&a, 8.0 / 1e6, grid, 4000.0);
        let rb = rate(&b, 8.0 / 1e6, grid, 4000.0);
        assert_eq!(ra.len(), rb.len());
        assert_eq!(
            ra.iter().map(|p| p.0).collect::<Vec<_>>(),
            rb.iter().map(|p| p.0).collect::<Vec<_>>()
        );
        // 1500 B/ms = 12 Mbit/s in every full bin.
        for &(t, r) in &ra[..ra.len() - 1] {
            assert!((r - 12.0).abs() < 12.0 * 0.26, "{t}: {r}");
        }
        // Path B: all 15000 B in the first bin, then idle (zeros, not gaps).
        assert!((rb[0].1 - 15000.0 * 8.0 / 1e6 / (grid / 1000.0)).abs() < 1e-9);
        assert!(rb[1..].iter().all(|p| p.1 == 0.0));
        // Nothing is lost: rate × bin width sums back to the bytes.
        let bytes: f64 = ra.iter().map(|p| p.1 * 1e6 / 8.0 * grid / 1000.0).sum();
        assert!((bytes - 4000.0 * 1500.0).abs() < 1e-3, "{bytes}");
    }
}
