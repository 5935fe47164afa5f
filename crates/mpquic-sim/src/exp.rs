//! Experiment sweeps: a list of variants (series x point), several seeds each; per run the
//! report's metrics, from the [`Report`] (the catalogue) and the finished simulation (the
//! report's [`analysis`] metrics); per variant the median, min and max over seeds; one JSON
//! file, the markdown tables and the SVGs. [`run_experiment`] runs an experiment file (its
//! points, seeds and `[report]`).

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Instant;

use mpquic_plot::sweep::write_sweep_plot;

use mpquic_scenario::analyses;
use mpquic_scenario::experiment::TableSpec;
use mpquic_scenario::metrics::{compute, summarize, CATALOGUE};
use mpquic_scenario::tables::markdown;
use mpquic_scenario::Experiment;

use crate::analysis;
use crate::report::Report;
use crate::scenario::Scenario;
use crate::Sim;

/// One point of a sweep: a series (usually the controller) at an x value.
struct Variant {
    /// Series, e.g. the controller.
    pub series: String,
    /// X value, e.g. k or the path count.
    pub x: f64,
    /// The scenario to run (its seed is replaced per repetition).
    pub scenario: Scenario,
}

pub use mpquic_scenario::metrics::{Metrics, RunRow, Spread, SummaryRow};

/// What [`sweep`] returns: the runs, the per-variant summary, and the extractor's own output
/// per run (in run order).
type SweepOutput<T> = (Vec<RunRow>, Vec<SummaryRow>, Vec<T>);

/// Run every variant with every seed; `extract` takes a run's metrics from its report and the
/// finished simulation, and what it returns beside them (e.g. a plot's panels) is handed back
/// per run, in run order.
fn sweep<T>(
    variants: &[Variant],
    seeds: &[u64],
    extract: &dyn Fn(&Report, &Sim) -> (Metrics, T),
) -> Result<SweepOutput<T>, String> {
    let mut rows = vec![];
    let mut summary = vec![];
    let mut extras = vec![];
    for v in variants {
        let mut mine = vec![];
        for &seed in seeds {
            let mut s = v.scenario.clone();
            s.seed = seed;
            let mut sim = Sim::new(s).map_err(|e| e.to_string())?;
            let wall = Instant::now();
            sim.run();
            let wall_s = wall.elapsed().as_secs_f64();
            let report = Report::new(&mut sim);
            let (m, extra) = extract(&report, &sim);
            extras.push(extra);
            let short: Vec<String> = m.iter().take(6).map(|(k, v)| format!("{k}={v:.3}")).collect();
            eprintln!(
                "  {:<10} x={:<5} seed {seed}: {} ({:.1} s wall)",
                v.series,
                v.x,
                short.join(" "),
                wall_s
            );
            mine.push(RunRow { series: v.series.clone(), x: v.x, seed, metrics: m, wall_s });
        }
        summary.push(summarize(&v.series, v.x, &mine));
        rows.extend(mine);
    }
    Ok((rows, summary, extras))
}

/// Write `<name>.json` with the definition, the runs and the summary.
fn write_json(
    path: &Path,
    doc: serde_json::Value,
    rows: &[RunRow],
    summary: &[SummaryRow],
) -> Result<(), String> {
    let mut doc = doc;
    // Wall times are not deterministic: keep them apart from the per-run metrics.
    doc["runs"] = serde_json::to_value(rows).map_err(|e| e.to_string())?;
    doc["summary"] = serde_json::to_value(summary).map_err(|e| e.to_string())?;
    std::fs::write(path, serde_json::to_string_pretty(&doc).map_err(|e| e.to_string())?)
        .map_err(|e| format!("{}: {e}", path.display()))
}

/// Run an experiment file: every point of its sweep with every seed. Writes into `out`:
/// `experiment.json` (the file's scenario, sweep, metric definitions, every run and the median,
/// min and max over seeds per point), `tables.md` (the report's tables), `<analysis>.svg` for
/// each of the report's analyses that draws (a panel per point, its first seed) and `sweep.svg`
/// (the plot, if the file has one).
pub fn run_experiment(e: &Experiment, file: &str, out: &Path, command: &str) -> Result<(), String> {
    let s = &e.base;
    let report = s.report.as_ref().ok_or("the file has no [report]: nothing to compute")?;
    let variants: Vec<Variant> = e
        .points
        .iter()
        .map(|p| {
            let (series, x) = p.place(&e.base);
            Variant { series, x, scenario: p.scenario.clone() }
        })
        .collect();
    eprintln!("{}: {} points x {} seeds", s.name, variants.len(), s.seeds.len());
    let notes = analysis::notes(report);
    notes.iter().for_each(|n| eprintln!("  note: {n}"));
    let extract = |r: &Report, sim: &Sim| {
        let run = analysis::Run { sim, report: r, file: s };
        let mut m = compute(&r.scenario, &r.outcome());
        m.extend(analysis::compute(report, &run));
        (m, analysis::panels(report, &run))
    };
    let (rows, mut summary, panels) = sweep(&variants, &s.seeds, &extract)?;
    for (row, point) in summary.iter_mut().zip(&e.points) {
        row.labels = point.labels.clone();
    }
    std::fs::create_dir_all(out).map_err(|e| format!("{}: {e}", out.display()))?;
    let mut definitions: BTreeMap<String, String> = CATALOGUE
        .iter()
        .filter(|(k, _)| report.metrics.iter().any(|m| m.split('@').next() == Some(k)))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    definitions.extend(analyses::definitions(report));
    write_json(
        &out.join("experiment.json"),
        serde_json::json!({
            "experiment": s.name,
            "backend": "sim",
            "file": file,
            "command": command,
            "scenario": s,
            "sweep": s.sweep,
            "seeds": s.seeds,
            "report": report,
            "metrics": definitions,
            "notes": notes,
        }),
        &rows,
        &summary,
    )?;
    let tables: Vec<TableSpec> = if report.table.is_empty() {
        let metrics = report.metrics.clone();
        vec![TableSpec {
            title: s.name.clone(),
            metrics,
            only: Default::default(),
            sum: vec![],
            compare: vec![],
        }]
    } else {
        report.table.clone()
    };
    let md: Vec<String> = tables.iter().map(|t| markdown(t, &summary)).collect();
    std::fs::write(out.join("tables.md"), md.join("\n")).map_err(|e| e.to_string())?;
    // Each point's first seed draws the analyses' panels.
    let firsts = panels.into_iter().step_by(s.seeds.len().max(1));
    let titled = e.points.iter().zip(firsts).map(|(p, panels)| {
        let seed = s.seeds.first().copied().unwrap_or(0);
        let point = if p.labels.is_empty() { s.name.clone() } else { p.name() };
        (format!("{point} (seed {seed})"), panels)
    });
    analysis::write_plots(out, titled.collect())?;
    write_sweep_plot(&out.join("sweep.svg"), e, &summary).map_err(|e| e.to_string())
}
