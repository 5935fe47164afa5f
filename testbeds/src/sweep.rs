//! The testbed as a [`Backend`] of the one sweep loop ([`mpquic_scenario::sweep`]): it runs
//! one compiled point in its namespaces into `<out>/<point>/round<i>/` (its `result.json`,
//! series and plots) and collects the run's record; the loop runs the points in interleaved
//! rounds (round 1 of every sweep point, then round 2, ...: one round per seed, so that a
//! shared machine's load drift hits every point alike), records a failed run and goes on, and
//! writes `experiment.json`, `tables.md` and `sweep.svg`. The report link's queue CDF is the
//! testbed's own plot.

use crate::experiment::{Compiled, CompiledPoint};
use crate::host;
use crate::plots;
use crate::record;
use crate::results::RunResult;
use crate::runner;
use crate::sampler::Series;
use anyhow::{bail, Context, Result};
use mpquic_scenario::analyses::{self, BackendKind};
use mpquic_scenario::sweep::{self, output, Backend, Options, Order, Ran, RunId};
use mpquic_scenario::Experiment;
use std::path::Path;

/// The testbed running `compiled`'s points into `out`.
struct Netns<'a> {
    compiled: &'a Compiled,
    out: &'a Path,
}

impl Backend for Netns<'_> {
    /// The report link's queue over the run (frames, busy samples).
    type Extra = Vec<f64>;

    fn kind(&self) -> BackendKind {
        BackendKind::Netns
    }

    fn interleaves(&self) -> bool {
        true
    }

    fn run(&self, e: &Experiment, id: RunId) -> Result<Ran<Vec<f64>>, String> {
        self.run_point(e, id).map_err(|e| format!("{e:#}"))
    }

    /// Its directory under the output.
    fn point_label(&self, _: &Experiment, point: usize) -> String {
        self.compiled.points[point].dir.clone()
    }
}

impl Netns<'_> {
    /// Runs point `id.point` in round `id.round` into `<out>/<point>/round<round>/` and
    /// collects its record and the report link's queue.
    fn run_point(&self, e: &Experiment, id: RunId) -> Result<Ran<Vec<f64>>> {
        let CompiledPoint { dir, plan, flows, job_groups } = &self.compiled.points[id.point];
        let run_dir = self.out.join(dir).join(format!("round{}", id.round));
        eprintln!("round {}: {dir} (load {:.1})", id.round, host::loadavg());
        let result = runner::run_scenario(plan, &run_dir)?;
        let steal = result.repetitions[0].host_steal_pct.filter(|&s| s > host::STEAL_SUSPECT_PCT);
        if let Some(steal) = steal {
            eprintln!(
                "warning: {dir} round {} ran with {steal:.1}% of the CPU stolen by the hypervisor",
                id.round
            );
        }
        let point = &e.points[id.point];
        let series = read_series(&run_dir)?;
        let time_scale = point.scenario.netns.as_ref().map_or(1.0, |n| n.time_scale);
        let record = record::of(&result, &series, flows, &plan.jobs, job_groups, time_scale);
        let link = e.base.report.as_ref().and_then(|r| r.link.as_deref());
        let queue = link.map(|link| busy_queue(&result, &series, link)).unwrap_or_default();
        Ok(Ran { record, dir: Some(run_dir.display().to_string()), extra: queue })
    }
}

/// Runs every point `rounds` times (default: one round per seed), interleaved; writes
/// `experiment.json`, `tables.md` and, for a file with a `[plot]`, `sweep.svg` in `out`, and
/// prints the tables.
pub fn run(c: &Compiled, out: &Path, rounds: Option<usize>) -> Result<()> {
    let e = &c.experiment;
    let report = e.base.report.as_ref();
    let notes = report.map(|r| analyses::not_computed(r, BackendKind::Netns)).unwrap_or_default();
    notes.iter().for_each(|n| eprintln!("note: {n}"));
    runner::require_root()?;
    let backend = Netns { compiled: c, out };
    let mut options = Options::of(&backend, e);
    if let Some(rounds) = rounds {
        options.order = Order::Interleaved { rounds };
    }
    let finished = sweep::run(&backend, e, &options).map_err(anyhow::Error::msg)?;
    let gathered = output::gather(finished.into_iter().map(|(_, f)| f));
    let mut command = format!("run {}", c.file);
    if let Some(n) = rounds {
        command += &format!(" --repetitions {n}");
    }
    let (results, queues) = output::write(e, BackendKind::Netns, (&c.file, command), out, gathered)
        .map_err(anyhow::Error::msg)?;
    if let Some(link) = report.and_then(|r| r.link.as_deref()) {
        let mut per_point = vec![Vec::new(); e.points.len()];
        queues.into_iter().for_each(|(id, q)| per_point[id.point].extend(q));
        let points = e.points.iter().map(|p| p.name()).zip(per_point).collect();
        plots::queue_cdf(&out.join("queue-cdf.svg"), link, points)?;
    }
    print!("{}", results.tables());
    eprintln!(
        "wrote {} and {}",
        out.join("experiment.json").display(),
        out.join("tables.md").display()
    );
    if !results.failed.is_empty() {
        let runs = results.runs.len() + results.failed.len();
        bail!("{} of {runs} runs failed (listed in experiment.json)", results.failed.len());
    }
    Ok(())
}

/// The sampled link series a run wrote in `run_dir` (`rep0-series.json`).
fn read_series(run_dir: &Path) -> Result<Vec<Series>> {
    let path = run_dir.join("rep0-series.json");
    let text = std::fs::read(&path).with_context(|| format!("reading {}", path.display()))?;
    serde_json::from_slice(&text).with_context(|| format!("parsing {}", path.display()))
}

/// The queue of link `from->to` at the run's busy samples, in frames, from its sampled
/// series; none if the run did not shape that direction.
fn busy_queue(r: &RunResult, series: &[Series], link: &str) -> Vec<f64> {
    let rep = &r.repetitions[0];
    let Some(l) = rep.links.iter().find(|l| l.name() == link) else {
        return vec![];
    };
    series
        .iter()
        .filter(|s| s.link_id == l.link_id)
        .flat_map(|s| {
            let frames = s.frames();
            s.busy().map(move |i| frames[i]).collect::<Vec<_>>()
        })
        .collect()
}
