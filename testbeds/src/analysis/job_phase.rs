//! `job_phase` (E7, partition/aggregate beside background flows, AMP Fig. 12): the bottleneck
//! into the aggregator while the jobs ran, and what the background did meanwhile.
//!
//! The job phase is the run's time from the first job's start to the last job's end (an
//! unfinished job: to the end of the samples). The aggregator counts job times from its own
//! zero, after its process start-up and handshakes; on the run's clock that zero is its exit
//! minus the last job's end (it exits when that job ends). Of the first partition-aggregate
//! workload's aggregator:
//!
//! - `answer_share`: the answers' bytes over the bytes the shaped direction into the aggregator
//!   sent in the job phase (its sampled byte counter, so with every frame's headers);
//! - `queue_p50`, `queue_p99`: that direction's queue in 1514-byte frames over the job phase's
//!   busy samples (those where it sent), nearest rank;
//! - `connect_ms`: the aggregator's set-up of its connections (concurrent handshakes);
//!
//! and of the metric's flows (the background, `@bg`):
//!
//! - `bg_outlasted`: 1 when every one of them ended (completed or was stopped) no earlier than
//!   the aggregator, else 0: the jobs never ran beside a background that was done;
//! - `bg_paths_open`, `bg_paths`: their mpquic paths still open at the end, and all of them.

use super::{Analysis, Run};
use crate::backend::FRAME;
use crate::results::JobsResult;
use crate::sampler::Series;

pub const JOB_PHASE: Analysis = Analysis { name: "job_phase", compute, table: None };

/// One job as the aggregator reports it.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Job {
    /// Since the aggregator's zero, seconds.
    start_s: f64,
    /// None: an answer failed.
    jct_s: Option<f64>,
    /// Its answers' bytes.
    answer_bytes: u64,
}

/// The jobs of an aggregator's report (`mpquic aggregate --json`); none without a report.
fn jobs(j: &JobsResult) -> Vec<Job> {
    let list = j.report.as_ref().and_then(|r| r["jobs"].as_array());
    list.into_iter()
        .flatten()
        .map(|job| Job {
            start_s: job["start_s"].as_f64().unwrap_or(f64::NAN),
            jct_s: job["jct_s"].as_f64(),
            answer_bytes: job["response_bytes"]
                .as_array()
                .map_or(0, |b| b.iter().filter_map(|x| x.as_u64()).sum()),
        })
        .collect()
}

/// The job phase on the run's clock, `[from, to]`, given when the aggregator exited.
fn window(jobs: &[Job], aggregator_end_s: f64) -> Option<(f64, f64)> {
    let last_end = jobs.iter().map(|j| j.start_s + j.jct_s.unwrap_or(0.0)).reduce(f64::max)?;
    let zero = aggregator_end_s - last_end;
    let first = jobs.iter().map(|j| j.start_s).reduce(f64::min)?;
    let to =
        jobs.iter().map(|j| j.jct_s.map_or(f64::INFINITY, |x| j.start_s + x)).reduce(f64::max)?;
    Some((zero + first, zero + to))
}

/// Bytes a direction sent in `[from, to]` (run's clock; `lead_s`: how long the sampler ran
/// before its zero) and its queue in frames at the busy samples there.
fn link_in(s: &Series, lead_s: f64, (from, to): (f64, f64)) -> (u64, Vec<f64>) {
    let n = s.t.len().min(s.bytes.len()).min(s.backlog.len());
    let inside: Vec<usize> = (1..n).filter(|&i| (from..=to).contains(&(s.t[i] - lead_s))).collect();
    let (Some(&first), Some(&last)) = (inside.first(), inside.last()) else {
        return (0, Vec::new());
    };
    let sent = s.bytes[last].saturating_sub(s.bytes[first - 1]);
    let busy = inside.iter().filter(|&&i| s.bytes[i] > s.bytes[i - 1]);
    (sent, busy.map(|&i| s.backlog[i] as f64 / FRAME as f64).collect())
}

fn compute(run: &Run, metric: &str, _: Option<&str>, flows: &[usize]) -> f64 {
    let rep = run.rep;
    let background = || flows.iter().map(|&i| &rep.flows[i]);
    let Some(aggregator) = rep.jobs.first() else { return f64::NAN };
    let paths = || {
        background().flat_map(|f| {
            f.mpquic.as_ref().and_then(|m| m["paths"].as_array()).cloned().unwrap_or_default()
        })
    };
    match metric {
        "connect_ms" => aggregator
            .report
            .as_ref()
            .and_then(|r| r["connect_s"].as_f64())
            .map_or(f64::NAN, |s| s * 1e3),
        "bg_outlasted" if !flows.is_empty() => {
            f64::from(background().all(|f| f.end_s >= aggregator.end_s))
        }
        "bg_paths_open" if !flows.is_empty() => {
            paths().filter(|p| p["open"].as_bool() == Some(true)).count() as f64
        }
        "bg_paths" if !flows.is_empty() => paths().count() as f64,
        "answer_share" | "queue_p50" | "queue_p99" => {
            phase_metric(run, aggregator, metric).unwrap_or(f64::NAN)
        }
        _ => f64::NAN,
    }
}

/// The job phase's link metrics of the direction into `aggregator`.
fn phase_metric(run: &Run, aggregator: &JobsResult, metric: &str) -> Option<f64> {
    let jobs = jobs(aggregator);
    let window = window(&jobs, aggregator.end_s)?;
    let node = run.net.node(&aggregator.aggregator)?;
    let into = run.net.bottlenecks().into_iter().find(|d| d.to.node == node)?;
    let series = run.series.iter().find(|s| s.link_id == into.id)?;
    let (sent, queue) = link_in(series, run.rep.sampler_lead_s, window);
    let answers: u64 = jobs.iter().map(|j| j.answer_bytes).sum();
    match metric {
        "answer_share" => (sent > 0).then(|| answers as f64 / sent as f64),
        "queue_p50" => mpquic_stats::quantile(&queue, 0.5),
        _ => mpquic_stats::quantile(&queue, 0.99),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(start_s: f64, jct_s: Option<f64>) -> Job {
        Job { start_s, jct_s, answer_bytes: 10 * 65_536 }
    }

    #[test]
    fn the_window_puts_the_aggregator_clock_on_the_run_s() {
        // The aggregator exited at 7.5 s, when its last job (0.4 + 0.1 s) ended: its zero is
        // at 7.0 s, the phase runs from the first start (0.0) to that end.
        let jobs = [job(0.0, Some(0.2)), job(0.2, Some(0.05)), job(0.4, Some(0.1))];
        let (from, to) = window(&jobs, 7.5).unwrap();
        assert_eq!((from, to), (7.0, 7.5));
        // An unfinished job leaves the phase open to the end of the samples.
        let jobs = [job(0.0, Some(0.25)), job(0.5, None)];
        assert_eq!(window(&jobs, 9.0).unwrap(), (8.5, f64::INFINITY));
        assert_eq!(window(&[], 9.0), None);
    }

    #[test]
    fn link_in_counts_the_bytes_and_busy_queue_inside_the_window() {
        // Samples every 0.1 s from the sampler's start, 0.05 s before the run's zero: run
        // times -0.05, 0.05, 0.15, ... The link sends 1000 bytes per sample except from
        // sample 4 to 5 (idle); the backlog is i frames at sample i.
        let mut s = Series::default();
        for i in 0..10u32 {
            s.t.push(i as f64 * 0.1);
            s.bytes.push(1000 * u64::from(i.min(4) + i.saturating_sub(5)));
            s.backlog.push(i * FRAME as u32);
        }
        // [0.1, 0.6]: samples 2..=6 (run times 0.15 .. 0.55); sent from sample 1 to 6.
        let (sent, queue) = link_in(&s, 0.05, (0.1, 0.6));
        assert_eq!(sent, 4000);
        assert_eq!(queue, [2.0, 3.0, 4.0, 6.0], "sample 5 sent nothing: not busy");
        assert_eq!(link_in(&s, 0.05, (5.0, 6.0)), (0, vec![]));
    }

    #[test]
    fn jobs_read_the_aggregator_report() {
        let report = serde_json::json!({"connect_s": 0.012, "jobs": [
            {"start_s": 0.0, "jct_s": 0.02, "response_bytes": [65536, 65536]},
            {"start_s": 0.02, "jct_s": null, "response_bytes": [65536, 0]},
        ]});
        let j = JobsResult {
            id: "jobs0".into(),
            aggregator: "r".into(),
            workers: vec!["s0".into(), "s1".into()],
            cc: "dctcp".into(),
            start_s: 0.0,
            end_s: 3.0,
            completed: false,
            report: Some(report),
            cpu_s: None,
            error: None,
        };
        assert_eq!(
            jobs(&j),
            [
                Job { start_s: 0.0, jct_s: Some(0.02), answer_bytes: 131_072 },
                Job { start_s: 0.02, jct_s: None, answer_bytes: 65_536 },
            ]
        );
    }
}
