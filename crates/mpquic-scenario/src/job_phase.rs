//! `job_phase` (E7, partition/aggregate beside background flows, AMP Fig. 12): the bottleneck
//! into the aggregator while the jobs ran, and what the background did meanwhile. It reads an
//! aggregator run as a process of its own ([`RunRecord::aggregators`]: the testbed's).
//!
//! The job phase is the run's time from the first job's start to the last job's end (an
//! unfinished job: to the end of the samples). The aggregator counts job times from its own
//! zero, after its process start-up and handshakes; on the run's clock that zero is its exit
//! minus the last job's end (it exits when that job ends). Of the first aggregator:
//!
//! - `answer_share`: the answers' bytes over the bytes the link into the aggregator sent in
//!   the job phase (its sampled byte counter, so with every frame's headers);
//! - `queue_p50`, `queue_p99`: that link's queue (the testbed's: 1514-byte frames of its byte
//!   backlog) over the job phase's busy samples (those where it sent), nearest rank;
//! - `connect_ms`: the aggregator's set-up of its connections (concurrent handshakes);
//!
//! and of the metric's flows (the background, `@bg`):
//!
//! - `bg_outlasted`: 1 when every one of them ended (completed or was stopped) no earlier than
//!   the aggregator, else 0: the jobs never ran beside a background that was done;
//! - `bg_paths_open`, `bg_paths`: their reported paths still open at the end, and all of them.

use crate::record::{AggregatorFacts, FlowFacts, JobFacts, LinkSample, Run, RunRecord};

/// The `job_phase` metric `metric` of the run, the given flows being the background.
pub fn compute(run: &Run, metric: &str, _: Option<&str>, flows: &[usize]) -> f64 {
    let r = run.record;
    let Some(aggregator) = r.aggregators.first() else { return f64::NAN };
    let background: Vec<&FlowFacts> = flows.iter().filter_map(|&i| r.flows.get(i)).collect();
    let paths = || background.iter().flat_map(|f| f.paths.iter().flatten());
    match metric {
        "connect_ms" => aggregator.connect_s.map_or(f64::NAN, |s| s * 1e3),
        "bg_outlasted" if !flows.is_empty() => {
            f64::from(background.iter().all(|f| f.end_s >= aggregator.end_s))
        }
        "bg_paths_open" if !flows.is_empty() => {
            paths().filter(|p| p.open_at_end == Some(true)).count() as f64
        }
        "bg_paths" if !flows.is_empty() => paths().count() as f64,
        "answer_share" | "queue_p50" | "queue_p99" => {
            link_metric(r, aggregator, metric).unwrap_or(f64::NAN)
        }
        _ => f64::NAN,
    }
}

/// The job phase on the run's clock, `[from, to]`, given when the aggregator exited.
fn window(jobs: &[JobFacts], aggregator_end_s: f64) -> Option<(f64, f64)> {
    let last_end = jobs.iter().map(|j| j.start_s + j.jct_s.unwrap_or(0.0)).reduce(f64::max)?;
    let zero = aggregator_end_s - last_end;
    let first = jobs.iter().map(|j| j.start_s).reduce(f64::min)?;
    let to =
        jobs.iter().map(|j| j.jct_s.map_or(f64::INFINITY, |x| j.start_s + x)).reduce(f64::max)?;
    Some((zero + first, zero + to))
}

/// Bytes a link sent in `[from, to]` (run's clock) and its queue at the busy samples there.
fn link_in(s: &[LinkSample], (from, to): (f64, f64)) -> (u64, Vec<f64>) {
    let sent = |i: usize| s[i].sent_bytes.unwrap_or(0);
    let inside: Vec<usize> = (1..s.len()).filter(|&i| (from..=to).contains(&s[i].t_s)).collect();
    let (Some(&first), Some(&last)) = (inside.first(), inside.last()) else {
        return (0, Vec::new());
    };
    let busy = inside.iter().filter(|&&i| sent(i) > sent(i - 1));
    (sent(last).saturating_sub(sent(first - 1)), busy.map(|&i| s[i].queue_pkts).collect())
}

/// The job phase's metrics of the link into `aggregator`.
fn link_metric(r: &RunRecord, aggregator: &AggregatorFacts, metric: &str) -> Option<f64> {
    let window = window(&aggregator.jobs, aggregator.end_s)?;
    let link = r.link_series(aggregator.into_link.as_deref()?)?;
    let (sent, queue) = link_in(&link.samples, window);
    let answers: u64 = aggregator.jobs.iter().map(|j| j.answer_bytes).sum();
    match metric {
        "answer_share" => (sent > 0).then(|| answers as f64 / sent as f64),
        "queue_p50" => mpquic_stats::quantile(&queue, 0.5),
        _ => mpquic_stats::quantile(&queue, 0.99),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(start_s: f64, jct_s: Option<f64>) -> JobFacts {
        JobFacts { start_s, jct_s, answer_bytes: 10 * 65_536 }
    }

    #[test]
    fn the_window_puts_the_aggregator_clock_on_the_run_s() {
        // The aggregator exited at 7.5 s, when its last job (0.4 + 0.1 s) ended: its zero is
        // at 7.0 s, the phase runs from the first start (0.0) to that end.
        let jobs = [job(0.0, Some(0.2)), job(0.2, Some(0.05)), job(0.4, Some(0.1))];
        assert_eq!(window(&jobs, 7.5), Some((7.0, 7.5)));
        // An unfinished job leaves the phase open to the end of the samples.
        let jobs = [job(0.0, Some(0.25)), job(0.5, None)];
        assert_eq!(window(&jobs, 9.0), Some((8.5, f64::INFINITY)));
        assert_eq!(window(&[], 9.0), None);
    }

    #[test]
    fn link_in_counts_the_bytes_and_busy_queue_inside_the_window() {
        // Samples every 0.1 s from -0.05 s (the testbed's sampler starts before the run's
        // zero). The link sends 1000 bytes per sample except from sample 4 to 5 (idle); the
        // queue is i frames at sample i.
        let samples: Vec<LinkSample> = (0..10u64)
            .map(|i| LinkSample {
                t_s: i as f64 * 0.1 - 0.05,
                queue_pkts: i as f64,
                sent_bytes: Some(1000 * (i.min(4) + i.saturating_sub(5))),
            })
            .collect();
        // [0.1, 0.6]: samples 2..=6 (run times 0.15 .. 0.55); sent from sample 1 to 6.
        let (sent, queue) = link_in(&samples, (0.1, 0.6));
        assert_eq!(sent, 4000);
        assert_eq!(queue, [2.0, 3.0, 4.0, 6.0], "sample 5 sent nothing: not busy");
        assert_eq!(link_in(&samples, (5.0, 6.0)), (0, vec![]));
    }
}
