//! SVG plots of a repetition: per-flow throughput, queue over time, FCT CDF.

use crate::results::{FlowResult, JobsResult, RepResult};
use crate::sampler::Series;
use anyhow::Result;
use mpquic_plot::chart::{self, Line, LinePlot};
use std::path::Path;

/// Write `series` as lines in the palette's order.
fn lines(
    path: &Path,
    title: &str,
    x_label: &str,
    y_label: &str,
    series: Vec<(String, Vec<(f64, f64)>)>,
) -> Result<()> {
    let lines = Line::in_order(series);
    Ok(chart::write_line_plot(path, &LinePlot { title, x_label, y_label, lines: &lines })?)
}

pub fn throughput(path: &Path, flows: &[FlowResult]) -> Result<()> {
    let s: Vec<_> = flows
        .iter()
        .filter(|f| !f.throughput.is_empty())
        .map(|f| (format!("{} {} {}", f.id, f.kind_name(), f.cc), f.throughput.clone()))
        .collect();
    lines(path, "Per-flow throughput (receiver)", "time (s)", "Mbit/s", s)
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
    lines(path, "Bottleneck queue", "time (s)", "frames (backlog / 1514 B)", s)
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
    lines(path, title, "completion time (ms)", "fraction", series)
}

/// The CDF of a link's queue per sweep point (frames over busy samples, every round pooled),
/// each curve thinned to about 400 points.
pub fn queue_cdf(path: &Path, link: &str, points: Vec<(String, Vec<f64>)>) -> Result<()> {
    let s = points
        .into_iter()
        .map(|(name, q)| {
            let cdf = mpquic_stats::Sorted::new(&q).cdf();
            let step = cdf.len().div_ceil(400).max(1);
            let last = cdf.last().copied();
            let mut thin: Vec<(f64, f64)> = cdf.into_iter().step_by(step).collect();
            thin.extend(last.filter(|l| thin.last() != Some(l)));
            (name, thin)
        })
        .collect();
    let title = format!("Queue CDF at {link}, every round");
    lines(path, &title, "queue (frames of 1514 B, busy samples)", "fraction", s)
}

/// (ms, cumulative fraction) points of durations in seconds.
fn cdf(s: Vec<f64>) -> Vec<(f64, f64)> {
    mpquic_stats::Sorted::new(&s).cdf().into_iter().map(|(x, p)| (x * 1000.0, p)).collect()
}

impl FlowResult {
    pub fn kind_name(&self) -> &'static str {
        match self.kind {
            crate::plan::FlowKind::Mpquic => "mpquic",
            crate::plan::FlowKind::KernelTcp => "tcp",
            crate::plan::FlowKind::KernelMptcp => "mptcp",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::FRAME;
    use crate::plan::FlowKind;

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

    fn flow(id: &str, cc: &str, fct_s: f64) -> FlowResult {
        FlowResult {
            id: id.into(),
            kind: FlowKind::Mpquic,
            from: "h0".into(),
            to: "h1".into(),
            cc: cc.into(),
            paths: vec![],
            start_s: 0.0,
            end_s: fct_s,
            completed: true,
            bytes: 1 << 20,
            fct_s: Some(fct_s),
            goodput_mbps: None,
            throughput: (0..20).map(|t| (f64::from(t) * 0.1, 100.0 + f64::from(t))).collect(),
            transfer_fcts_s: vec![],
            mpquic: None,
            cpu_s: None,
            error: None,
        }
    }

    #[test]
    fn throughput_and_fct_plots_draw_every_flow() {
        let dir = tempfile::tempdir().unwrap();
        let flows = [flow("f0", "amp", 0.002), flow("f1", "xmp", 0.003), flow("f2", "amp", 0.01)];
        let file = dir.path().join("throughput.svg");
        throughput(&file, &flows).unwrap();
        let svg = std::fs::read_to_string(&file).unwrap();
        for label in ["f0 mpquic amp", "f1 mpquic xmp", "f2 mpquic amp"] {
            assert!(svg.contains(label), "legend has {label}");
        }
        assert!(svg.matches("<polyline").count() >= 3, "a line per flow: {svg}");
        let file = dir.path().join("fct.svg");
        fct_cdf(&file, &flows, &[]).unwrap();
        let svg = std::fs::read_to_string(&file).unwrap();
        assert!(svg.contains("Flow completion time CDF") && svg.contains("FCT"), "{svg}");
    }
}
