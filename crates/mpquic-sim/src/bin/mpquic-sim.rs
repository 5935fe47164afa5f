//! `mpquic-sim run scenario.toml --out DIR`: run a scenario, write `results.json`,
//! `traces.json`, `perf.json` and SVG plots.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use clap::{Parser, Subcommand};
use mpquic_sim::report::{Perf, Report, Traces};
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
    /// Run a scenario file.
    Run {
        /// The scenario (TOML).
        scenario: PathBuf,
        /// Output directory (created if missing).
        #[arg(long, default_value = "sim-out")]
        out: PathBuf,
        /// Override the scenario's seed.
        #[arg(long)]
        seed: Option<u64>,
        /// Override the scenario's duration, e.g. `50ms`.
        #[arg(long)]
        duration: Option<String>,
        /// Skip the plots.
        #[arg(long)]
        no_plots: bool,
    },
    /// Parse a scenario and print it with every default filled in.
    Check {
        /// The scenario (TOML).
        scenario: PathBuf,
    },
}

fn load(path: &PathBuf) -> Result<Scenario, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    Scenario::from_toml(&text).map_err(|e| format!("{}: {e}", path.display()))
}

fn run(cli: Cli) -> Result<(), String> {
    match cli.command {
        Command::Check { scenario } => {
            let s = load(&scenario)?;
            Sim::new(s.clone()).map_err(|e| e.to_string())?;
            println!("{}", toml::to_string(&s).map_err(|e| e.to_string())?);
            Ok(())
        }
        Command::Run { scenario, out, seed, duration, no_plots } => {
            let mut s = load(&scenario)?;
            if let Some(seed) = seed {
                s.seed = seed;
            }
            if let Some(d) = duration {
                s.duration = d.parse()?;
            }
            std::fs::create_dir_all(&out).map_err(|e| format!("{}: {e}", out.display()))?;
            let mut sim = Sim::new(s).map_err(|e| e.to_string())?;
            let wall = Instant::now();
            sim.run();
            let wall_s = wall.elapsed().as_secs_f64();
            let report = Report::new(&mut sim);
            let traces = Traces::new(&sim);
            let perf = Perf {
                simulated_s: report.simulated_s,
                wall_s,
                speed: report.simulated_s / wall_s,
                events_per_s: report.events as f64 / wall_s,
            };
            let write = |name: &str, text: String| {
                std::fs::write(out.join(name), text).map_err(|e| format!("{name}: {e}"))
            };
            write("results.json", report.to_json())?;
            write("traces.json", serde_json::to_string(&traces).map_err(|e| e.to_string())?)?;
            write("perf.json", serde_json::to_string_pretty(&perf).map_err(|e| e.to_string())?)?;
            let plots =
                if no_plots { vec![] } else { mpquic_sim::plot::write_plots(&traces, &out, 12)? };
            summarize(&report, &perf, &plots);
            Ok(())
        }
    }
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
