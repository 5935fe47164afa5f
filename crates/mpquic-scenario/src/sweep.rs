//! The one sweep loop of both backends: every (point, seed) of an experiment through a
//! [`Backend`], each run's record measured once ([`measure`]: the catalogue's metrics and the
//! report's analyses), the runs gathered and written once ([`output`]). What differs between
//! the simulator and the testbed is how they build, run and collect one run; how runs are
//! spread and ordered is an [`Options`] of this loop, open to either: threads (`jobs`), a
//! shard of the runs for another machine ([`Shard`]), interleaved rounds ([`Order`]), and
//! whether a failed run stops the sweep or is recorded and the sweep goes on ([`Failures`]).

mod measure;
pub mod output;
mod parallel;
mod run;
mod shard;

use std::time::Instant;

use crate::analyses::BackendKind;
use crate::results::FailedRun;
use crate::Experiment;

pub use run::{Done, Finished, Ran, RunId};
pub use shard::Shard;

/// A backend that runs experiment files: it builds, runs and collects one (point, seed) into
/// a [`Ran`] (its [`crate::record::RunRecord`]); the loop does the rest.
pub trait Backend: Sync {
    /// What a run yields beside its record that only this backend uses (the simulator: the
    /// analyses' panels it draws; the testbed: the queue samples of its CDF plot).
    type Extra: Send;

    /// Which backend it is: the name its output carries and what it measures (the analyses
    /// whose [`crate::analyses::Analysis::backends`] name it).
    fn kind(&self) -> BackendKind;

    /// Whether its runs go in interleaved rounds by default (round 1 of every point, then
    /// round 2, ...), so that a shared machine's load drift hits every point alike.
    fn interleaves(&self) -> bool;

    /// Run `id` of `e`: build, run and collect it.
    fn run(&self, e: &Experiment, id: RunId) -> Result<Ran<Self::Extra>, String>;

    /// How failures and analysis rows name point `point` (default: its `axis=value,...`).
    fn point_label(&self, e: &Experiment, point: usize) -> String {
        e.points[point].name()
    }
}

/// The order of a sweep's runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Order {
    /// Point after point, each with every seed (the file's order).
    Sweep,
    /// `rounds` rounds of every point; round `r` (from 1) runs seed `r` of the file's seeds
    /// (again from the first when there are more rounds than seeds).
    Interleaved {
        /// How many.
        rounds: usize,
    },
}

/// What a run that fails does to the sweep.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failures {
    /// The sweep fails with the first failed run's error (after every run ran).
    Abort,
    /// The failure is recorded in the output and the other runs count (a long unattended
    /// sweep).
    Record,
}

/// How a sweep's runs are spread and ordered; none changes a run's result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Options {
    /// The runs' order.
    pub order: Order,
    /// Runs at once, on as many threads (1: on the calling thread).
    pub jobs: usize,
    /// Run only this shard of the runs.
    pub shard: Option<Shard>,
    /// What a failed run does.
    pub failures: Failures,
}

impl Options {
    /// `backend`'s defaults for `e`: its order (one round per seed when it interleaves), one
    /// run at a time, every run, failures recorded when it interleaves (a long testbed sweep)
    /// and fatal otherwise.
    pub fn of(backend: &impl Backend, e: &Experiment) -> Options {
        let interleaved = backend.interleaves();
        Options {
            order: if interleaved {
                Order::Interleaved { rounds: e.base.seeds.len() }
            } else {
                Order::Sweep
            },
            jobs: 1,
            shard: None,
            failures: if interleaved { Failures::Record } else { Failures::Abort },
        }
    }
}

/// Every run of `e` in `order`: the one place a sweep's points meet its seeds.
pub fn runs(e: &Experiment, order: Order) -> Vec<RunId> {
    let seeds = &e.base.seeds;
    let points = 0..e.points.len();
    match order {
        Order::Sweep => points
            .flat_map(|point| {
                let seeds = seeds.iter().enumerate();
                seeds.map(move |(i, &seed)| RunId { point, seed, round: i + 1 })
            })
            .collect(),
        Order::Interleaved { rounds } => (1..=rounds)
            .flat_map(|round| {
                let seed = seeds[(round - 1) % seeds.len()];
                points.clone().map(move |point| RunId { point, seed, round })
            })
            .collect(),
    }
}

/// Runs, each with its number in the whole sweep (in the sweep's order, from 0).
pub type Numbered<X> = Vec<(usize, Finished<X>)>;

/// Run `e`'s runs (those of `options.shard`) through `backend`: each run's number in the whole
/// sweep (in `options.order`) with what it gave, in that order.
pub fn run<B: Backend>(
    backend: &B,
    e: &Experiment,
    options: &Options,
) -> Result<Numbered<B::Extra>, String> {
    let all = runs(e, options.order);
    let mine: Vec<usize> =
        (0..all.len()).filter(|&k| options.shard.is_none_or(|s| s.owns(k))).collect();
    let finished = parallel::map(&mine, options.jobs, |&k| run_one(backend, e, all[k], options));
    if options.failures == Failures::Abort {
        if let Some(Err(failed)) = finished.iter().find(|f| f.is_err()) {
            return Err(failed.error.clone());
        }
    }
    Ok(mine.into_iter().zip(finished).collect())
}

/// One run through `backend`, measured; a failure as the record of it.
fn run_one<B: Backend>(
    backend: &B,
    e: &Experiment,
    id: RunId,
    options: &Options,
) -> Finished<B::Extra> {
    let label = backend.point_label(e, id.point);
    let wall = Instant::now();
    let ran = backend.run(e, id).map_err(|error| {
        eprintln!("FAILED: {label} round {}: {error}", id.round);
        FailedRun { point: label.clone(), round: id.round, analysis: None, error }
    })?;
    let wall_s = wall.elapsed().as_secs_f64();
    let interleaved = matches!(options.order, Order::Interleaved { .. });
    let done = measure::measure(e, id, ran, backend.kind(), &label, interleaved);
    let m = &done.entry;
    let short: Vec<String> = m.metrics.iter().take(6).map(|(k, v)| format!("{k}={v:.3}")).collect();
    // Wall time goes to the log only: the output is the same however fast a run went.
    eprintln!(
        "  {:<10} x={:<5} seed {}: {} ({wall_s:.1} s wall)",
        m.series,
        m.x,
        id.seed,
        short.join(" ")
    );
    Ok(done)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Three points (a sweep of three controllers) with seeds 1 and 2.
    fn experiment() -> Experiment {
        let text = [
            r#"name = "s""#,
            r#"duration = "1s""#,
            "seeds = [1, 2]",
            r#"flows = [{ from = "src", to = "dst" }]"#,
            r#"sweep = [{ name = "c", values = ["lia", "olia", "xmp"], set = ["controller"] }]"#,
            r#"topology = { kind = "two-path" }"#,
        ];
        Experiment::parse(&text.join("\n"), "s.toml").unwrap()
    }

    fn ids(runs: &[RunId]) -> Vec<(usize, u64, usize)> {
        runs.iter().map(|r| (r.point, r.seed, r.round)).collect()
    }

    #[test]
    fn the_sweep_order_is_point_after_point() {
        let got = ids(&runs(&experiment(), Order::Sweep));
        assert_eq!(got, [(0, 1, 1), (0, 2, 2), (1, 1, 1), (1, 2, 2), (2, 1, 1), (2, 2, 2)]);
    }

    #[test]
    fn interleaved_rounds_cycle_the_seeds() {
        let got = ids(&runs(&experiment(), Order::Interleaved { rounds: 3 }));
        let want = [(0, 1, 1), (1, 1, 1), (2, 1, 1), (0, 2, 2), (1, 2, 2), (2, 2, 2)];
        assert_eq!(got[..6], want);
        assert_eq!(got[6..], [(0, 1, 3), (1, 1, 3), (2, 1, 3)]);
    }
}
