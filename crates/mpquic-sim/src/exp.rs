//! The simulator as a [`Backend`] of the one sweep loop ([`mpquic_scenario::sweep`]): it
//! builds, runs and collects one (point, seed) into its record, and draws the analyses'
//! panels of each point's first seed; the loop measures and writes.
//!
//! A sweep's runs are independent and each is deterministic for its seed, so they run on
//! several threads ([`run_experiment`]'s `jobs`) or on several machines ([`crate::shard`]), and
//! the output is written from the runs in the sweep's order: it is the same, byte for byte,
//! however the runs were spread.

use std::path::Path;

use serde::{Deserialize, Serialize};

use mpquic_scenario::analyses::{self, BackendKind};
use mpquic_scenario::sweep::{self, output, Backend, Finished, Options, Ran, RunId};
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

/// Per analysis that draws, its panel of a run (of a point's first seed; none for the others).
pub type Panels = Vec<(String, Panel)>;

/// The simulator as a backend of the sweep loop.
pub struct SimBackend;

impl Backend for SimBackend {
    type Extra = Panels;

    fn kind(&self) -> BackendKind {
        BackendKind::Sim
    }

    fn interleaves(&self) -> bool {
        false
    }

    fn run(&self, e: &Experiment, id: RunId) -> Result<Ran<Panels>, String> {
        let file = &e.base;
        let report = file.report.as_ref().ok_or("the file has no [report]: nothing to compute")?;
        let mut scenario = e.points[id.point].scenario.clone();
        scenario.seed = id.seed;
        let mut sim = Sim::new(scenario).map_err(|e| e.to_string())?;
        sim.run();
        let record = Report::new(&mut sim).record(&sim);
        let first = file.seeds.first() == Some(&id.seed);
        let run = analyses::Run { record: &record, point: &sim.scenario, file };
        let extra = if first { panels::panels(report, &run) } else { vec![] };
        Ok(Ran { record, dir: None, extra })
    }
}

/// The loop's options for the simulator: the sweep's order on `jobs` threads, the runs of
/// `shard` (all: None), a failed run failing the sweep.
pub fn loop_options(e: &Experiment, jobs: usize, shard: Option<sweep::Shard>) -> Options {
    Options { jobs, shard, ..Options::of(&SimBackend, e) }
}

/// Run an experiment file on `jobs` threads and write its output into `out` (see [`write`]).
pub fn run_experiment(
    e: &Experiment,
    file: &str,
    out: &Path,
    options: &SweepOptions,
    jobs: usize,
) -> Result<(), String> {
    eprintln!(
        "{}: {} points x {} seeds on {jobs} threads",
        e.base.name,
        e.points.len(),
        e.base.seeds.len()
    );
    let finished = sweep::run(&SimBackend, e, &loop_options(e, jobs, None))?;
    write(e, file, out, options, finished.into_iter().map(|(_, f)| f))
}

/// Write the output of a whole sweep from its runs, in the sweep's order: into `out` what the
/// loop's writer writes ([`output::write`]: `experiment.json`, `tables.md`, `sweep.svg`) and
/// `<analysis>.svg` for each of the report's analyses that draws (a panel per point, its
/// first seed).
pub fn write(
    e: &Experiment,
    file: &str,
    out: &Path,
    options: &SweepOptions,
    finished: impl IntoIterator<Item = Finished<Panels>>,
) -> Result<(), String> {
    let s = &e.base;
    if s.report.is_none() {
        return Err("the file has no [report]: nothing to compute".into());
    }
    let command = options.command(file);
    let gathered = output::gather(finished);
    let (output, extras) = output::write(e, BackendKind::Sim, (file, command), out, gathered)?;
    output.notes.iter().for_each(|n| eprintln!("  note: {n}"));
    // Each point's first seed draws the analyses' panels.
    let firsts = extras.into_iter().filter(|(id, _)| id.round == 1);
    let titled = firsts.map(|(id, panels)| {
        let (p, seed) = (&e.points[id.point], s.seeds.first().copied().unwrap_or(0));
        let point = if p.labels.is_empty() { s.name.clone() } else { p.name() };
        (format!("{point} (seed {seed})"), panels)
    });
    panels::write_plots(out, titled.collect())
}
