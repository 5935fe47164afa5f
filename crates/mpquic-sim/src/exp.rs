//! Experiment sweeps: every point of an experiment file's sweep with every seed; per run the
//! report's metrics, from the run's record (the catalogue's from its outcome, the report's
//! analyses' from the rest: [`mpquic_scenario::analyses`]); per point the median, min and max over seeds; one JSON
//! file, the markdown tables and the SVGs.
//!
//! A sweep's runs are independent and each is deterministic for its seed, so they run on
//! several threads ([`run_experiment`]'s `jobs`) or on several machines ([`crate::shard`]), and
//! the output is written from the runs in the sweep's order: it is the same, byte for byte,
//! however the runs were spread.

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use serde::{Deserialize, Serialize};

use mpquic_scenario::sweep_plot::write_sweep_plot;

use mpquic_scenario::analyses::{self, Backend};
use mpquic_scenario::metrics::compute;
use mpquic_scenario::results::{ExperimentResults, RunEntry};
use mpquic_scenario::Experiment;

use crate::panels::{self, Panel};
use crate::report::Report;
use crate::scenario::Dur;
use crate::Sim;

pub use mpquic_scenario::metrics::{Metrics, Spread, SummaryRow};

/// What a sweep's command line changes in the file's runs: the options a partial result
/// records, so that its merge rebuilds the same runs and writes the same `command`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SweepOptions {
    /// Run only this seed instead of the file's `seeds`.
    pub seed: Option<u64>,
    /// The duration of every run instead of the file's, e.g. `50ms`.
    pub duration: Option<String>,
}

impl SweepOptions {
    /// Apply the options to a loaded file.
    pub fn apply(&self, e: &mut Experiment) -> Result<(), String> {
        if let Some(seed) = self.seed {
            e.base.seeds = vec![seed];
        }
        if let Some(d) = &self.duration {
            let d: Dur = d.parse()?;
            e.points.iter_mut().for_each(|p| p.scenario.duration = d);
        }
        Ok(())
    }

    /// The command that reproduces the sweep of `file`, as `experiment.json` records it: the
    /// options that change results, none that only say where or how fast it ran (`--out`,
    /// `--jobs`, `--shard`), so that those leave the output unchanged.
    pub fn command(&self, file: &str) -> String {
        let mut command = format!("run {file}");
        if let Some(seed) = self.seed {
            command += &format!(" --seed {seed}");
        }
        if let Some(d) = &self.duration {
            command += &format!(" --duration {d}");
        }
        command
    }
}

/// One run of a sweep: a point of the file (its index) with a seed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunId {
    /// Index into the experiment's points.
    pub point: usize,
    /// The seed.
    pub seed: u64,
}

/// Every run of the experiment, in the sweep's order: point after point, each with every seed.
pub fn runs(e: &Experiment) -> Vec<RunId> {
    let seeds = &e.base.seeds;
    (0..e.points.len())
        .flat_map(|point| seeds.iter().map(move |&seed| RunId { point, seed }))
        .collect()
}

/// A finished run: its entry in `experiment.json`, and the analyses' panels when it is its
/// point's first seed (the run the plots show).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunResult {
    /// Its metrics.
    pub run: RunEntry,
    /// Per analysis that draws: its panel (empty for the other seeds).
    pub panels: Vec<(String, Panel)>,
}

/// Run one (point, seed) of `e` and compute its metrics (and panels, for a first seed).
pub fn run_one(e: &Experiment, id: RunId) -> Result<RunResult, String> {
    let file = &e.base;
    let report = file.report.as_ref().ok_or("the file has no [report]: nothing to compute")?;
    let point = &e.points[id.point];
    let mut scenario = point.scenario.clone();
    scenario.seed = id.seed;
    let mut sim = Sim::new(scenario).map_err(|e| e.to_string())?;
    let wall = Instant::now();
    sim.run();
    let wall_s = wall.elapsed().as_secs_f64();
    let r = Report::new(&mut sim);
    let record = r.record(&sim);
    let run = analyses::Run { record: &record, point: &sim.scenario, file };
    let mut metrics = compute(&r.scenario, &record.outcome);
    metrics.extend(analyses::compute(report, &run, Backend::Sim));
    let first = file.seeds.first() == Some(&id.seed);
    let panels = if first { panels::panels(report, &run) } else { vec![] };
    let (series, x) = point.place(file);
    let short: Vec<String> = metrics.iter().take(6).map(|(k, v)| format!("{k}={v:.3}")).collect();
    // Wall time goes to the log only: the output is the same however fast a run went.
    eprintln!("  {series:<10} x={x:<5} seed {}: {} ({wall_s:.1} s wall)", id.seed, short.join(" "));
    let run =
        RunEntry { point: point.name(), series, x, seed: id.seed, metrics, ..RunEntry::default() };
    Ok(RunResult { run, panels })
}

/// `f` of every item on `jobs` threads (at least one), the results in the items' order.
fn parallel_map<I: Sync, R: Send>(items: &[I], jobs: usize, f: impl Fn(&I) -> R + Sync) -> Vec<R> {
    let next = AtomicUsize::new(0);
    let slots: Vec<Mutex<Option<R>>> = items.iter().map(|_| Mutex::new(None)).collect();
    std::thread::scope(|scope| {
        for _ in 0..jobs.clamp(1, items.len().max(1)) {
            // The main thread's stack size: a simulated run should not overflow on a worker
            // where it would not on the main thread.
            let builder = std::thread::Builder::new().stack_size(8 << 20);
            // Each thread takes the next run not yet taken, so a slow run holds up only itself.
            builder
                .spawn_scoped(scope, || loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(item) = items.get(i) else { break };
                    let r = f(item);
                    *slots[i].lock().unwrap_or_else(|p| p.into_inner()) = Some(r);
                })
                .expect("spawn a sweep thread");
        }
    });
    slots
        .into_iter()
        .map(|s| s.into_inner().unwrap_or_else(|p| p.into_inner()).expect("every run ran"))
        .collect()
}

/// Run `ids` of `e` on `jobs` threads; the results in the order of `ids`.
pub fn run_all(e: &Experiment, ids: &[RunId], jobs: usize) -> Result<Vec<RunResult>, String> {
    parallel_map(ids, jobs, |&id| run_one(e, id)).into_iter().collect()
}

/// Run an experiment file on `jobs` threads and write its output into `out` (see [`write`]).
pub fn run_experiment(
    e: &Experiment,
    file: &str,
    out: &Path,
    options: &SweepOptions,
    jobs: usize,
) -> Result<(), String> {
    let ids = runs(e);
    eprintln!(
        "{}: {} points x {} seeds on {jobs} threads",
        e.base.name,
        e.points.len(),
        e.base.seeds.len()
    );
    let results = run_all(e, &ids, jobs)?;
    write(e, file, out, options, results)
}

/// Write the output of a whole sweep from its runs' results, in the sweep's order: into `out`,
/// `experiment.json` (the file's scenario, sweep, metric definitions, every run and the median,
/// min and max over seeds per point), `tables.md` (the report's tables), `<analysis>.svg` for
/// each of the report's analyses that draws (a panel per point, its first seed) and `sweep.svg`
/// (the plot, if the file has one).
pub fn write(
    e: &Experiment,
    file: &str,
    out: &Path,
    options: &SweepOptions,
    results: Vec<RunResult>,
) -> Result<(), String> {
    let s = &e.base;
    if s.report.is_none() {
        return Err("the file has no [report]: nothing to compute".into());
    }
    let (runs, panels): (Vec<RunEntry>, Vec<_>) =
        results.into_iter().map(|r| (r.run, r.panels)).unzip();
    let output = ExperimentResults::new(e, Backend::Sim, file, Some(options.command(file)), runs);
    output.notes.iter().for_each(|n| eprintln!("  note: {n}"));
    output.write(out)?;
    // Each point's first seed draws the analyses' panels.
    let firsts = panels.into_iter().step_by(s.seeds.len().max(1));
    let titled = e.points.iter().zip(firsts).map(|(p, panels)| {
        let seed = s.seeds.first().copied().unwrap_or(0);
        let point = if p.labels.is_empty() { s.name.clone() } else { p.name() };
        (format!("{point} (seed {seed})"), panels)
    });
    panels::write_plots(out, titled.collect())?;
    write_sweep_plot(&out.join("sweep.svg"), e, &output.summary).map_err(|e| e.to_string())
}
