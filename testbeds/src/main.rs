//! `mpquic-testbed`: network-namespace testbeds for mpquic (see testbeds/README.md).

mod backend;
mod cleanup;
mod compile;
mod delay;
mod experiment;
mod failover;
mod fault;
mod flows;
mod marker;
mod netns;
mod plots;
mod results;
mod runner;
mod sampler;
mod spec;
mod stall;
mod topology;

use anyhow::Result;
use clap::{Parser, Subcommand};
use std::path::PathBuf;

#[derive(Parser)]
#[command(name = "mpquic-testbed", about = "Network-namespace testbeds for mpquic")]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Run an experiment file (experiments/*.toml): every sweep point in interleaved rounds,
    /// one per seed; per run result.json and SVG plots, then experiment.json and tables.md (as mpquic-sim run).
    /// (A file of the old testbed dialect runs its repetitions back to back.)
    Run {
        scenario: PathBuf,
        /// Output directory (default: testbed-results/<name>)
        #[arg(long)]
        out: Option<PathBuf>,
        /// Override the rounds (repetitions).
        #[arg(long)]
        repetitions: Option<u32>,
    },
    /// Two experiment.json files of one experiment file side by side, e.g. `mpquic-sim run`'s
    /// and `mpquic-testbed run`'s: the first's report tables with both files' medians (min-max).
    Compare { a: PathBuf, b: PathBuf },
    /// Check scenario files without building anything: parameters, host and link names,
    /// controllers, ECN modes and schedulers (by the library that will parse them).
    Validate { scenarios: Vec<PathBuf> },
    /// Remove namespaces and scratch files left by runs whose process is gone (--all: every run's).
    Cleanup {
        #[arg(long)]
        all: bool,
    },
    /// Black-hole one of two shaped paths under an `mpquic send` and restore it: the receiver's
    /// longest stall, the failure and recovery reports (issue #12). Prints one JSON line.
    Failover(failover::FailoverArgs),
    /// Print which link backend this kernel supports.
    Detect,
    /// One Markdown table row per scenario: goodput and queue (medians over repetitions), CE
    /// error. Results of the same scenario (e.g. interleaved single-repetition runs) merge.
    Table {
        /// result.json files or the directories holding them.
        results: Vec<PathBuf>,
    },
    /// The NFQUEUE delay line of one router namespace (started by `run`, see `delay`).
    #[command(name = "__delay-line", hide = true)]
    DelayLine {
        /// NUM:DELAY_US:JITTER_US, one per delayed link direction.
        #[arg(long = "queue")]
        queues: Vec<delay::QueueSpec>,
    },
    #[command(name = "__sink", hide = true)]
    Sink {
        #[arg(long)]
        listen: String,
        #[arg(long)]
        proto: String,
        #[arg(long, default_value_t = 20)]
        interval_ms: u64,
    },
    #[command(name = "__send", hide = true)]
    Send {
        #[arg(long)]
        server: String,
        #[arg(long)]
        proto: String,
        #[arg(long, default_value = "cubic")]
        cc: String,
        #[arg(long, default_value_t = 0)]
        bytes: u64,
        #[arg(long, default_value_t = 0.0)]
        for_s: f64,
    },
}

fn main() -> Result<()> {
    let cli = Cli::parse();
    match cli.cmd {
        Cmd::Run { scenario, out, repetitions } => {
            let mut sc = match load(&scenario)? {
                File::Experiment(c) => {
                    let name = &c.experiment.base.name;
                    let out = out.unwrap_or_else(|| PathBuf::from("testbed-results").join(name));
                    let rounds = repetitions.map(|r| r as usize);
                    return torn_down(|_| experiment::run(&c, &out, rounds));
                }
                File::Legacy(sc) => *sc,
            };
            if let Some(r) = repetitions {
                sc.repetitions = r;
            }
            let out = out.unwrap_or_else(|| PathBuf::from("testbed-results").join(&sc.name));
            torn_down(|_| {
                let res = runner::run_scenario(&sc, &out)?;
                println!("{}", serde_json::to_string(&summary(&res))?);
                eprintln!("wrote {}", out.join("result.json").display());
                Ok(())
            })?;
        }
        Cmd::Compare { a, b } => print!("{}", experiment::compare(&a, &b)?),
        Cmd::Validate { scenarios } => {
            let mut failed = 0;
            for s in &scenarios {
                match load(s) {
                    Ok(File::Experiment(c)) => {
                        println!("{}: ok ({} points)", s.display(), c.points.len())
                    }
                    Ok(File::Legacy(_)) => println!("{}: ok (old testbed dialect)", s.display()),
                    Err(e) => {
                        eprintln!("{e:#}");
                        failed += 1;
                    }
                }
            }
            if failed > 0 {
                anyhow::bail!("{failed} of {} files failed", scenarios.len());
            }
        }
        Cmd::Failover(args) => {
            let res = torn_down(|run_id| failover::run_failover(&args, run_id))?;
            println!("{}", serde_json::to_string(&res)?);
            eprintln!("wrote {}", args.out.join("result.json").display());
        }
        Cmd::Cleanup { all } => {
            let removed = cleanup::cleanup_stale(all);
            println!("removed {} item(s): {:?}", removed.len(), removed);
        }
        Cmd::Detect => {
            runner::require_root()?;
            let caps = backend::detect(std::process::id())?;
            println!("{}", serde_json::to_string_pretty(&caps)?);
        }
        Cmd::Table { results } => {
            let mut all = Vec::new();
            for p in results {
                let p = if p.is_dir() { p.join("result.json") } else { p };
                let text = std::fs::read_to_string(&p)
                    .map_err(|e| anyhow::anyhow!("reading {}: {e}", p.display()))?;
                all.push(
                    serde_json::from_str::<serde_json::Value>(&text)
                        .map_err(|e| anyhow::anyhow!("parsing {}: {e}", p.display()))?,
                );
            }
            println!("{}", results::TABLE_HEADER);
            for v in results::merge_by_scenario(all) {
                println!("{}", results::table_row(&v));
            }
        }
        Cmd::DelayLine { queues } => delay::serve(queues)?,
        Cmd::Sink { listen, proto, interval_ms } => {
            flows::sink_main(runner::parse_addr(&listen)?, proto == "mptcp", interval_ms)?
        }
        Cmd::Send { server, proto, cc, bytes, for_s } => {
            flows::send_main(runner::parse_addr(&server)?, proto == "mptcp", &cc, bytes, for_s)?
        }
    }
    Ok(())
}

/// A scenario file: the shared experiment language, or the testbed's old dialect.
enum File {
    Experiment(Box<experiment::Compiled>),
    Legacy(Box<spec::Scenario>),
}

/// Reads `path` in the experiment language, else in the old dialect; a file that is neither
/// gets the experiment language's error (`file:line:column: reason`).
fn load(path: &std::path::Path) -> Result<File> {
    match experiment::load(path) {
        Ok(c) => Ok(File::Experiment(Box::new(c))),
        Err(e) => {
            spec::Scenario::load(path).map(|s| File::Legacy(Box::new(s))).map_err(|_| e.into())
        }
    }
}

/// Runs `f` with this process's run id and removes the run's namespaces afterwards, also on
/// Ctrl-C.
fn torn_down<T>(f: impl FnOnce(u32) -> Result<T>) -> Result<T> {
    let run_id = std::process::id();
    // The handler's teardown kills the flows, which can let the run finish while the handler
    // still works: the flag keeps that from passing for a completed run.
    static INTERRUPTED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    ctrlc::set_handler(move || {
        INTERRUPTED.store(true, std::sync::atomic::Ordering::SeqCst);
        eprintln!("interrupted: tearing down");
        cleanup::cleanup_run(run_id);
        std::process::exit(130);
    })?;
    let res = f(run_id);
    cleanup::cleanup_run(run_id);
    if INTERRUPTED.load(std::sync::atomic::Ordering::SeqCst) {
        anyhow::bail!("interrupted");
    }
    res
}

/// A one-line digest of a run for the terminal.
fn summary(r: &results::RunResult) -> serde_json::Value {
    serde_json::json!({
        "scenario": r.scenario.name,
        "backend": r.backend,
        "median_goodput_fraction": r.median_goodput_fraction,
        "median_queue_frames_median": r.median_queue_frames_median,
        "median_queue_frames_p99": r.median_queue_frames_p99,
        "median_ce_sender_error": r.median_ce_sender_error,
        "median_ce_receiver_error": r.median_ce_receiver_error,
        "reps": r.repetitions.iter().map(|x| serde_json::json!({
            "goodput_mbps": x.total_goodput_mbps,
            "fraction": x.goodput_fraction_of_link_sum,
            "queue_frames": x.links.iter().map(|l| (l.queue_frames_busy.median, l.queue_frames_busy.p99)).collect::<Vec<_>>(),
            "model_minus_real_median": x.links.iter().map(|l| l.model_minus_real_pkts.map(|m| m.median)).collect::<Vec<_>>(),
            "ce": x.ce,
            "mpquic": x.flows.iter().filter_map(|f| f.mpquic.as_ref()).map(|m| serde_json::json!({
                "goodput_mbps": m["goodput_mbps"],
                "exact_ecn": m["exact_ecn"],
                "paths": m["paths"].as_array().map(|ps| ps.iter().map(|p| serde_json::json!([p["remote"], p["bytes_sent"], p["cwnd"], p["ce_events"], p["ce_marked"], p["lost_packets"]])).collect::<Vec<_>>()),
                "suppressions": m["controller_state"]["suppressions"],
            })).collect::<Vec<_>>(),
            "errors": x.flows.iter().filter_map(|f| f.error.clone()).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
    })
}
