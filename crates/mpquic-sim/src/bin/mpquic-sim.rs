//! `mpquic-sim run experiments/E1-incast.toml --out DIR`: run an experiment file (every sweep
//! point with every seed; `experiment.json`, `tables.md`, `sweep.svg`), or, for a file without a
//! `[report]` or with `--detail`, each run in detail (`results.json`, `traces.json`, `perf.json`,
//! SVG plots; a sweep's runs in `<point>/seed-<n>/`).
//! `mpquic-sim validate FILE...`: check files without running them.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use clap::{Parser, Subcommand};
use mpquic_scenario::error::locate;
use mpquic_scenario::metrics::short;
use mpquic_sim::plot::{write_shift_plot, ShiftPanel};
use mpquic_sim::report::{thread_cpu_time, Perf, Report, Traces};
use mpquic_sim::scenario::Dur;
use mpquic_sim::scenario::{Experiment, ScenarioError};
use mpquic_sim::shift::{path_rates, phase_shift, Criterion, PhaseShift};
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
        /// Output directory (created if missing).
        #[arg(long, default_value = "sim-out")]
        out: PathBuf,
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
    },
    /// Check experiment files: the language (file:line:column errors), then every sweep point
    /// built as the simulator builds it.
    Validate {
        /// The files (TOML).
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
    /// E3, traffic shifting: run a two-path scenario (flows `mp`, `cross-a`, `cross-b`) once per
    /// controller of `mp`; write `e3.json` (shifting times, definition), `tables.md` and `e3.svg`.
    E3 {
        /// The scenario (TOML), e.g. experiments/E3-traffic-shifting.toml.
        scenario: PathBuf,
        /// Output directory.
        #[arg(long, default_value = "e3-out")]
        out: PathBuf,
        /// Controllers of the multipath flow, comma-separated.
        #[arg(long, default_value = "amp,xmp,dcm")]
        controllers: String,
        /// Scale time: cross traffic on path 1 during (P, 2P), on path 2 during (2P, 3P), run
        /// to 4P (the scenario's own times otherwise).
        #[arg(long)]
        phase: Option<String>,
        /// "Moved": the crossed path's share below this fraction of its pre-cross value...
        #[arg(long, default_value_t = 0.5)]
        threshold: f64,
        /// ...for at least this long.
        #[arg(long, default_value = "1ms")]
        hold: String,
        /// Override the scenario's seed.
        #[arg(long)]
        seed: Option<u64>,
    },
    /// E4's sweep (its per-phase analysis is not yet a `[report]`): the scenario x controllers x
    /// seeds; writes `e4.json` (runs, median/min/max per variant) and `e4.svg`.
    Exp {
        /// e4.
        name: String,
        /// The base scenario (TOML), e.g. experiments/E4-coexistence.toml.
        scenario: PathBuf,
        /// Output directory.
        #[arg(long)]
        out: PathBuf,
        /// Seeds, comma-separated.
        #[arg(long, default_value = "1,2,3")]
        seeds: String,
        /// Controllers, comma-separated (default: the experiment's list).
        #[arg(long, default_value = "")]
        controllers: String,
        /// Override the scenario's duration.
        #[arg(long)]
        duration: Option<String>,
        /// The data-center ACK profile: set the scenario's `transport.max_ack_delay` (the delay
        /// every connection asks its peer to ACK within), e.g. `1ms`.
        #[arg(long)]
        max_ack_delay: Option<String>,
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

fn run(cli: Cli) -> Result<(), String> {
    match cli.command {
        Command::Check { scenario } => {
            let s = load(&scenario)?;
            Sim::new(s.clone()).map_err(|e| e.to_string())?;
            println!("{}", toml::to_string(&s).map_err(|e| e.to_string())?);
            Ok(())
        }
        Command::E3 { scenario, out, controllers, phase, threshold, hold, seed } => {
            let mut s = load(&scenario)?;
            if let Some(seed) = seed {
                s.seed = seed;
            }
            if let Some(p) = phase {
                let p: Dur = p.parse()?;
                for f in &mut s.flows {
                    match f.name.as_deref() {
                        Some("cross-a") => (f.start, f.stop) = (p, Some(Dur(2 * p.0))),
                        Some("cross-b") => (f.start, f.stop) = (Dur(2 * p.0), Some(Dur(3 * p.0))),
                        _ => {}
                    }
                }
                s.duration = Dur(4 * p.0);
            }
            let hold: Dur = hold.parse()?;
            e3(s, &out, &controllers, Criterion { threshold, hold: hold.0 })
        }
        Command::Exp { name, scenario, out, seeds, controllers, duration, max_ack_delay } => {
            let mut s = load(&scenario)?;
            if let Some(d) = duration {
                s.duration = d.parse()?;
            }
            if let Some(d) = max_ack_delay {
                s.transport.max_ack_delay = Some(d.parse()?);
            }
            let seeds = seeds
                .split(',')
                .map(|x| x.trim().parse::<u64>().map_err(|e| format!("seed {x}: {e}")))
                .collect::<Result<Vec<_>, _>>()?;
            let controllers =
                controllers.split(',').map(str::trim).filter(|c| !c.is_empty()).map(String::from);
            let o = mpquic_sim::experiments::ExpOptions {
                seeds,
                controllers: controllers.collect(),
                out: &out,
                command: std::env::args().skip(1).collect::<Vec<_>>().join(" "),
            };
            let wall = Instant::now();
            let r = match name.as_str() {
                "e4" => mpquic_sim::experiments::e4(&s, &o),
                _ => Err(format!(
                    "unknown experiment {name} (E1, E2, E6, E7: `mpquic-sim run experiments/...`)"
                )),
            };
            eprintln!("{name}: {:.0} s wall", wall.elapsed().as_secs_f64());
            r
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
        Command::Run { scenario, out, seed, duration, no_plots, detail } => {
            let mut e = Experiment::load(&scenario).map_err(|e| e.to_string())?;
            if let Some(seed) = seed {
                e.base.seeds = vec![seed];
            }
            if let Some(d) = duration {
                let d: Dur = d.parse()?;
                e.points.iter_mut().for_each(|p| p.scenario.duration = d);
            }
            if e.base.report.is_some() && !detail {
                let command = std::env::args().skip(1).collect::<Vec<_>>().join(" ");
                let wall = Instant::now();
                let file = scenario.display().to_string();
                mpquic_sim::exp::run_experiment(&e, &file, &out, &command)?;
                eprintln!(
                    "{}: {:.0} s wall; wrote {}",
                    e.base.name,
                    wall.elapsed().as_secs_f64(),
                    out.display()
                );
                return Ok(());
            }
            let runs: Vec<(String, Scenario)> = e
                .runs()
                .map(|(p, s)| {
                    (
                        format!(
                            "{}seed-{}",
                            if p.labels.is_empty() {
                                String::new()
                            } else {
                                format!("{}/", p.name())
                            },
                            s.seed
                        ),
                        s,
                    )
                })
                .collect();
            let single = runs.len() == 1;
            for (dir, s) in runs {
                run_one(s, &if single { out.clone() } else { out.join(dir) }, no_plots)?;
            }
            Ok(())
        }
    }
}

fn e3(s: Scenario, out: &Path, controllers: &str, criterion: Criterion) -> Result<(), String> {
    let cross = |name: &str| {
        s.flows
            .iter()
            .find(|f| f.name.as_deref() == Some(name))
            .map(|f| (f.start.0, f.stop.map_or(s.duration.0, |t| t.0)))
            .ok_or_else(|| format!("the scenario needs a flow named {name}"))
    };
    let (a, b) = (cross("cross-a")?, cross("cross-b")?);
    if !s.flows.iter().any(|f| f.name.as_deref() == Some("mp")) {
        return Err("the scenario needs a flow named mp".into());
    }
    std::fs::create_dir_all(out).map_err(|e| format!("{}: {e}", out.display()))?;
    let links = ["src->a", "src->b"];
    let mut runs = vec![];
    let mut rows = vec![];
    let mut panels = vec![];
    for controller in controllers.split(',').map(str::trim).filter(|c| !c.is_empty()) {
        let mut sc = s.clone();
        for f in &mut sc.flows {
            if f.name.as_deref() == Some("mp") {
                f.controller = Some(controller.to_string());
            }
        }
        let mut sim = Sim::new(sc).map_err(|e| e.to_string())?;
        let wall = Instant::now();
        sim.run();
        let wall_s = wall.elapsed().as_secs_f64();
        let report = Report::new(&mut sim);
        if let Some(f) = report.flows.iter().find(|f| f.error.is_some()) {
            return Err(format!("{controller}: flow {} failed: {:?}", f.name, f.error));
        }
        let phases = [
            phase_shift(&sim, links, 0, (0, a.0, a.1), criterion),
            phase_shift(&sim, links, 1, (a.0, b.0, b.1), criterion),
        ];
        let fmt = |p: &PhaseShift| p.shift_ms.map_or("not moved".into(), |t| format!("{t:.1} ms"));
        let goodput = report.flow("mp").map_or(f64::NAN, |f| f.goodput_bps / 1e9);
        let share = |p: &PhaseShift| format!("{} -> {}", short(p.pre_share), short(p.during_share));
        rows.push(format!(
            "| {controller} | {} | {} | {} | {} | {} |",
            fmt(&phases[0]),
            share(&phases[0]),
            fmt(&phases[1]),
            share(&phases[1]),
            short(goodput)
        ));
        println!(
            "{controller:>8}: path 1 {} (share {:.3} -> {:.3}), path 2 {} (share {:.3} -> {:.3}); {:.2} s simulated in {:.1} s wall",
            fmt(&phases[0]),
            phases[0].pre_share,
            phases[0].during_share,
            fmt(&phases[1]),
            phases[1].pre_share,
            phases[1].during_share,
            report.simulated_s,
            wall_s
        );
        std::fs::write(out.join(format!("results-{controller}.json")), report.to_json())
            .map_err(|e| e.to_string())?;
        let bucket_ms = sim.scenario.output.goodput_interval.0 as f64 / 1e9;
        let every = ((s.duration.0 as f64 / 1e9 / bucket_ms) / 2000.0).ceil() as usize;
        panels.push(ShiftPanel {
            title: format!(
                "{controller}: moved off path 1 in {}, off path 2 in {}",
                fmt(&phases[0]),
                fmt(&phases[1])
            ),
            rates: path_rates(&sim, links, every),
            cross: vec![(a.0 as f64 / 1e9, a.1 as f64 / 1e9), (b.0 as f64 / 1e9, b.1 as f64 / 1e9)],
        });
        runs.push(serde_json::json!({
            "controller": controller,
            "phases": phases,
            "mp_goodput_bps": report.flow("mp").map(|f| f.goodput_bps),
            "episodes": report.flow("mp").map(|f| f.episodes.len()),
            "simulated_s": report.simulated_s,
            "wall_s": wall_s,
        }));
    }
    let definition = format!(
        "share(t) = the crossed path's fraction of the multipath flow's wire bytes (access links \
         src->a, src->b) in bucket t of {} us; pre = its mean share over the last half of the time \
         between the previous phase change and the cross flow's start. The flow has moved its \
         traffic at the end of the first bucket that begins a run of at least {} us in which every \
         bucket has share < {} * pre. Shifting time = that instant - the cross flow's start.",
        s.output.goodput_interval.0 as f64 / 1e6,
        criterion.hold as f64 / 1e6,
        criterion.threshold
    );
    let doc = serde_json::json!({
        "experiment": "E3 traffic shifting",
        "scenario": s,
        "definition": definition,
        "threshold": criterion.threshold,
        "hold_us": criterion.hold as f64 / 1e6,
        "runs": runs,
    });
    std::fs::write(
        out.join("e3.json"),
        serde_json::to_string_pretty(&doc).map_err(|e| e.to_string())?,
    )
    .map_err(|e| e.to_string())?;
    let table = format!(
        "### E3: shifting times (seed {}), shares of the crossed path before -> during its cross \
         traffic\n\n| controller | moved off path 1 | share | moved off path 2 | share | goodput \
         Gbps |\n|---|---|---|---|---|---|\n{}\n",
        s.seed,
        rows.join("\n")
    );
    std::fs::write(out.join("tables.md"), table).map_err(|e| e.to_string())?;
    write_shift_plot(&out.join("e3.svg"), &panels)?;
    println!("definition: {definition}");
    let dir = out.display();
    println!("wrote {dir}/e3.json, {dir}/tables.md, {dir}/e3.svg");
    Ok(())
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
