//! SVG plots of a repetition: per-flow throughput, queue over time, FCT CDF.

use crate::results::{FlowResult, JobsResult, RepResult};
use crate::sampler::Series;
use anyhow::{anyhow, Result};
use plotters::prelude::*;
use std::path::Path;

const COLORS: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
];

fn lines(
    path: &Path,
    title: &str,
    xl: &str,
    yl: &str,
    series: &[(String, Vec<(f64, f64)>)],
) -> Result<()> {
    let root = SVGBackend::new(path, (900, 480)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| anyhow!("{e}"))?;
    let xmax = series.iter().flat_map(|s| s.1.iter().map(|p| p.0)).fold(0.0f64, f64::max).max(1e-3);
    let ymax =
        series.iter().flat_map(|s| s.1.iter().map(|p| p.1)).fold(0.0f64, f64::max).max(1e-3) * 1.1;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(0.0..xmax, 0.0..ymax)
        .map_err(|e| anyhow!("{e}"))?;
    chart.configure_mesh().x_desc(xl).y_desc(yl).draw().map_err(|e| anyhow!("{e}"))?;
    for (i, (name, pts)) in series.iter().enumerate() {
        let c = COLORS[i % COLORS.len()];
        chart
            .draw_series(LineSeries::new(pts.iter().copied(), c.stroke_width(1)))
            .map_err(|e| anyhow!("{e}"))?
            .label(name.clone())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], c));
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()
        .map_err(|e| anyhow!("{e}"))?;
    root.present().map_err(|e| anyhow!("{e}"))?;
    Ok(())
}

pub fn throughput(path: &Path, flows: &[FlowResult]) -> Result<()> {
    let s: Vec<_> = flows
        .iter()
        .filter(|f| !f.throughput.is_empty())
        .map(|f| (format!("{} {} {}", f.id, f.kind_name(), f.cc), f.throughput.clone()))
        .collect();
    lines(path, "Per-flow throughput (receiver)", "time (s)", "Mbit/s", &s)
}

/// Each bottleneck's queue over time, in frames (see [`queue_points`]).
pub fn queue(path: &Path, rep: &RepResult, series: &[Series]) -> Result<()> {
    let s: Vec<_> = series
        .iter()
        .map(|se| {
            let l = rep.links.iter().find(|l| l.link_id == se.link_id);
            let name = l.map(|l| format!("{} -> {}", l.from, l.to)).unwrap_or_default();
            (name, queue_points(se))
        })
        .collect();
    lines(path, "Bottleneck queue", "time (s)", "frames (backlog / 1514 B)", &s)
}

/// (s, frames) points of a bottleneck's queue: the byte backlog, not the qdisc's skb count,
/// which with sender offload counts a GSO batch once.
fn queue_points(se: &Series) -> Vec<(f64, f64)> {
    se.t.iter().copied().zip(se.frames()).collect()
}

/// The flows' FCT CDF, and each `[[jobs]]` entry's JCT CDF.
pub fn fct_cdf(path: &Path, flows: &[FlowResult], jobs: &[JobsResult]) -> Result<()> {
    let fcts: Vec<f64> = flows.iter().filter_map(|f| f.fct_s).collect();
    let mut series = vec![("FCT".to_string(), cdf(fcts))];
    for j in jobs {
        let jcts = j
            .report
            .as_ref()
            .and_then(|r| r["jobs"].as_array())
            .map(|js| js.iter().filter_map(|x| x["jct_s"].as_f64()).collect::<Vec<f64>>());
        series.push((format!("JCT {} ({})", j.id, j.cc), cdf(jcts.unwrap_or_default())));
    }
    let title =
        if jobs.is_empty() { "Flow completion time CDF" } else { "Flow / job completion time CDF" };
    lines(path, title, "completion time (ms)", "fraction", &series)
}

/// (ms, cumulative fraction) points of durations in seconds.
fn cdf(s: Vec<f64>) -> Vec<(f64, f64)> {
    mpquic_stats::Sorted::new(&s).cdf().into_iter().map(|(x, p)| (x * 1000.0, p)).collect()
}

impl FlowResult {
    pub fn kind_name(&self) -> &'static str {
        match self.kind {
            crate::spec::FlowKind::Mpquic => "mpquic",
            crate::spec::FlowKind::KernelTcp => "tcp",
            crate::spec::FlowKind::KernelMptcp => "mptcp",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::FRAME;

    /// With sender offload one skb in the qdisc can be a GSO batch of several packets: the plot
    /// shows the frames queued, not the skbs.
    #[test]
    fn the_queue_is_plotted_in_frames_not_skbs() {
        let se = Series {
            t: vec![0.001, 0.002, 0.003],
            qlen: vec![0, 1, 2],
            backlog: vec![0, 6 * FRAME as u32, 13 * FRAME as u32],
            ..Default::default()
        };
        assert_eq!(queue_points(&se), vec![(0.001, 0.0), (0.002, 6.0), (0.003, 13.0)]);
    }
}
