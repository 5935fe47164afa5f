//! `mpquic-sim run experiments/E1-incast.toml --out DIR`: run an experiment file (every sweep
//! point with every seed; `experiment.json`, `tables.md`, `sweep.svg`), or, for a file without a
//! `[report]` or with `--detail`, each run in detail (`results.json`, `traces.json`, `perf.json`,
//! SVG plots; a sweep's runs in `<point>/seed-<n>/`). `--jobs N` runs N of a sweep's runs at
//! once (default: every core); `--shard I/N` runs one share of them into a partial result.
//! `mpquic-sim merge DIR... --out DIR`: join the partial results of every shard.
//! `mpquic-sim validate FILE...`: check files without running them.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use clap::{Parser, Subcommand};
use mpquic_scenario::error::locate;
use mpquic_scenario::sweep::{self, Order, RunId};
use mpquic_sim::exp::SweepOptions;
use mpquic_sim::report::{thread_cpu_time, Perf, Report, Traces};
use mpquic_sim::scenario::{Experiment, ScenarioError};
use mpquic_sim::shard::Shard;
use mpquic_sim::{Scenario, Sim};

#[derive(Parser)]
#[command(
    name = "mpquic-sim",
    about = "Run noq-proto multipath QUIC over simulated links in virtual time"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run an experiment or scenario file.
    Run {
        /// The file (TOML).
        scenario: PathBuf,
        /// Output directory (created if missing; default: results/<file name>/sim, see
        /// results/README.md).
        #[arg(long)]
        out: Option<PathBuf>,
        /// Run only this seed instead of the file's `seeds`.
        #[arg(long)]
        seed: Option<u64>,
        /// Override the duration of every run, e.g. `50ms`.
        #[arg(long)]
        duration: Option<String>,
        /// Skip the plots of detailed runs.
        #[arg(long)]
        no_plots: bool,
        /// Write each run in detail even when the file has a `[report]` (for tools that read
        /// per-run `results.json`, e.g. the cross-check's summary), instead of its tables.
        #[arg(long)]
        detail: bool,
        /// Runs of an experiment's sweep at once (default: every core). The output does not
        /// depend on it.
        #[arg(long)]
        jobs: Option<usize>,
        /// Run only shard I of N of the sweep (the runs k with k mod N = I, numbered in the
        /// sweep's order from 0) and write `partial-I-of-N.cbor` for `merge`.
        #[arg(long, value_name = "I/N")]
        shard: Option<Shard>,
    },
    /// Join the partial results of `run --shard I/N` (all N of them) into the sweep's output,
    /// the same as one `run` would have written. Run it where the experiment file is at the
    /// path the shards were given.
    Merge {
        /// Partial results: `partial-*.cbor` files, or directories holding them.
        #[arg(required = true)]
        partials: Vec<PathBuf>,
        /// Output directory (created if missing; default: results/<file name>/sim of the
        /// experiment file the shards ran).
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Check experiment files: the language (file:line:column errors), then every sweep point
    /// built as the simulator builds it.
    Validate {
        /// The files (TOML).
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
    /// Parse a scenario and print it with every default filled in.
    Check {
        /// The scenario (TOML).
        scenario: PathBuf,
    },
}

/// The file's scenario as written (no sweep applied), with its first seed.
fn load(path: &Path) -> Result<Scenario, String> {
    let mut s = Experiment::load(path).map_err(|e| e.to_string())?.base;
    s.seed = s.seeds[0];
    Ok(s)
}

/// Check a file and build every point of its sweep.
/// A point's refusal at a field is placed in the file (`file:line:column: [point] reason`).
fn validate(path: &Path) -> Result<String, String> {
    let e = Experiment::load(path).map_err(|e| e.to_string())?;
    let file = path.display().to_string();
    let text = std::fs::read_to_string(path).unwrap_or_default();
    for p in &e.points {
        let point = if p.labels.is_empty() { String::new() } else { format!("[{}] ", p.name()) };
        Sim::new(p.scenario.clone()).map_err(|err| match err {
            ScenarioError::At { path, message } => {
                let e = ScenarioError::At { path, message: format!("{point}{message}") };
                locate(e, &file, &text).to_string()
            }
            other => format!("{file}: {point}{other}"),
        })?;
    }
    let seeds = e.base.seeds.len();
    Ok(format!(
        "{}: ok ({} points x {seeds} seeds = {} runs)",
        path.display(),
        e.points.len(),
        e.points.len() * seeds
    ))
}

/// One run in detail: results, traces, perf and plots into `out`.
fn run_one(s: Scenario, out: &Path, no_plots: bool) -> Result<(), String> {
    std::fs::create_dir_all(out).map_err(|e| format!("{}: {e}", out.display()))?;
    let mut sim = Sim::new(s).map_err(|e| e.to_string())?;
    let wall = Instant::now();
    let cpu = thread_cpu_time();
    sim.run();
    let wall_s = wall.elapsed().as_secs_f64();
    let cpu_s = cpu.zip(thread_cpu_time()).map(|(start, end)| (end - start).as_secs_f64());
    let report = Report::new(&mut sim);
    let traces = Traces::new(&sim);
    let perf = Perf {
        simulated_s: report.simulated_s,
        wall_s,
        speed: report.simulated_s / wall_s,
        events_per_s: report.events as f64 / wall_s,
        cpu_s,
        speed_per_cpu_s: cpu_s.map(|cpu| report.simulated_s / cpu),
    };
    let write = |name: &str, text: String| {
        std::fs::write(out.join(name), text).map_err(|e| format!("{name}: {e}"))
    };
    write("results.json", report.to_json())?;
    write("traces.json", serde_json::to_string(&traces).map_err(|e| e.to_string())?)?;
    write("perf.json", serde_json::to_string_pretty(&perf).map_err(|e| e.to_string())?)?;
    let plots = if no_plots { vec![] } else { mpquic_sim::plot::write_plots(&traces, out, 12)? };
    summarize(&report, &perf, &plots);
    Ok(())
}

/// The cores this process may use (1 if the platform cannot say).
fn every_core() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Run an experiment's sweep (or its shard) on `jobs` threads into `out`.
fn sweep(
    e: &Experiment,
    scenario: &Path,
    out: &Path,
    options: &SweepOptions,
    jobs: usize,
    shard: Option<Shard>,
) -> Result<(), String> {
    let wall = Instant::now();
    let file = scenario.display().to_string();
    let wrote = match shard {
        Some(shard) => mpquic_sim::shard::run_shard(e, &file, out, options, shard, jobs)?,
        None => {
            mpquic_sim::exp::run_experiment(e, &file, out, options, jobs)?;
            out.to_path_buf()
        }
    };
    let took = wall.elapsed().as_secs_f64();
    eprintln!("{}: {took:.0} s wall; wrote {}", e.base.name, wrote.display());
    Ok(())
}

fn run(cli: Cli) -> Result<(), String> {
    match cli.command {
        Command::Check { scenario } => {
            let s = load(&scenario)?;
            Sim::new(s.clone()).map_err(|e| e.to_string())?;
            println!("{}", toml::to_string(&s).map_err(|e| e.to_string())?);
            Ok(())
        }
        Command::Validate { files } => {
            let mut failed = 0;
            for f in &files {
                match validate(f) {
                    Ok(line) => println!("{line}"),
                    Err(e) => {
                        eprintln!("{e}");
                        failed += 1;
                    }
                }
            }
            match failed {
                0 => Ok(()),
                n => Err(format!("{n} of {} files invalid", files.len())),
            }
        }
        Command::Merge { partials, out } => {
            let out = mpquic_sim::shard::merge(&partials, out.as_deref())?;
            eprintln!("merged {} into {}", partials.len(), out.display());
            Ok(())
        }
        Command::Run { scenario, out, seed, duration, no_plots, detail, jobs, shard } => {
            let out = out.unwrap_or_else(|| mpquic_scenario::default_out(&scenario, "sim"));
            let mut e = Experiment::load(&scenario).map_err(|e| e.to_string())?;
            let options = SweepOptions { seed, duration };
            options.apply(&mut e)?;
            if e.base.report.is_some() && !detail {
                let jobs = jobs.unwrap_or_else(every_core);
                return sweep(&e, &scenario, &out, &options, jobs, shard);
            }
            if shard.is_some() {
                return Err(
                    "--shard splits an experiment's sweep: this run has no [report] or is --detail"
                        .into(),
                );
            }
            let runs: Vec<(String, Scenario)> =
                sweep::runs(&e, Order::Sweep).into_iter().map(|id| detail_run(&e, id)).collect();
            let single = runs.len() == 1;
            for (dir, s) in runs {
                run_one(s, &if single { out.clone() } else { out.join(dir) }, no_plots)?;
            }
            Ok(())
        }
    }
}

/// A run written in detail: its directory (`<point>/seed-<n>`) and scenario with its seed.
fn detail_run(e: &Experiment, id: RunId) -> (String, Scenario) {
    let p = &e.points[id.point];
    let point = if p.labels.is_empty() { String::new() } else { format!("{}/", p.name()) };
    let mut s = p.scenario.clone();
    s.seed = id.seed;
    (format!("{point}seed-{}", id.seed), s)
}

fn summarize(r: &Report, perf: &Perf, plots: &[String]) {
    println!(
        "{}: {:.4} s simulated in {:.2} s wall ({:.3} sim-s per wall-s, {:.0} events/s)",
        r.scenario.name, perf.simulated_s, perf.wall_s, perf.speed, perf.events_per_s
    );
    let shown = r.flows.len().min(20);
    for f in &r.flows[..shown] {
        let fct = f.fct_us.map_or(String::new(), |x| format!(" fct {x:.1} us"));
        let err = f.error.as_ref().map_or(String::new(), |e| format!(" ERROR {e}"));
        println!(
            "  {:<24} {:>8} x{} goodput {:>7.3} Gbps (last half {:>7.3}){fct}{err}",
            f.name,
            f.controller,
            f.paths,
            f.goodput_bps / 1e9,
            f.goodput_last_half_bps / 1e9
        );
    }
    if r.flows.len() > shown {
        println!("  ... {} more flows", r.flows.len() - shown);
    }
    for g in &r.groups {
        if let Some(p) = &g.fct_us {
            println!(
                "  group {}: {}/{} done, FCT mean {:.1} us p50 {} p99 {} max {}",
                g.group, g.completed, g.flows, p.mean, p.p50, p.p99, p.max
            );
        }
        if let Some(p) = &g.jct_us {
            println!(
                "  group {} jobs: JCT mean {:.1} us p50 {} p90 {}",
                g.group, p.mean, p.p50, p.p90
            );
        }
    }
    if let Some(j) = r.jain_bulk {
        println!("  Jain index (bulk, last half): {j:.4}");
    }
    for l in r.links.iter().filter(|l| l.queue.is_some()) {
        let q = l.queue.as_ref().expect("filtered");
        println!(
            "  link {:<10} util {:.3} marks {} drops {} queue p50 {} p99 {}",
            l.name, l.utilization, l.marked, l.dropped_overflow, q.p50, q.p99
        );
    }
    if !plots.is_empty() {
        println!("  plots: {}", plots.join(", "));
    }
}

fn main() -> ExitCode {
    match run(Cli::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("mpquic-sim: {e}");
            ExitCode::FAILURE
        }
    }
}
