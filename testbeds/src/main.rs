//! `mpquic-testbed`: network-namespace testbeds for mpquic (see testbeds/README.md).

mod backend;
mod cleanup;
mod compile;
mod delay;
mod experiment;
mod failover;
mod fault;
mod flows;
mod host;
mod limits;
mod marker;
mod netns;
mod plan;
mod plots;
mod programs;
mod record;
mod results;
mod roundtrip;
mod runner;
mod sampler;
mod soak;
mod stall;
mod startup;
mod sweep;
mod topology;

use anyhow::Result;
use clap::{Parser, Subcommand};
use std::io::Write;
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
    Run {
        scenario: PathBuf,
        /// Output directory (default: results/<file name>/netns, see results/README.md)
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
    /// Print what `run` would run, building nothing: each point's directory and plan (the
    /// runner's topology, links, flows and jobs) as one JSON line.
    Plan { scenario: PathBuf },
    /// Remove namespaces and scratch files left by runs whose process is gone (--all: every run's).
    Cleanup {
        #[arg(long)]
        all: bool,
    },
    /// Black-hole one of two shaped paths under an `mpquic send` and restore it: the receiver's
    /// longest stall, the failure and recovery reports (issue #12). Prints one JSON line.
    Failover(failover::FailoverArgs),
    /// A nested directory of 1,000 files (1 KB to 100 MB, ~290 MB) up with `mpquic send` and
    /// back with `mpquic get -r` over two shaped paths: compares the trees, reports each
    /// command's time and per-path bytes (issue 25). Prints one JSON line.
    Roundtrip(roundtrip::RoundtripArgs),
    /// E7's start-up check: jobs of `mpquic get` processes (one per answer) against warm
    /// connections (`mpquic aggregate`) on an unshaped veth pair; writes startup.json and
    /// startup.md, prints the table.
    Startup(startup::StartupArgs),
    /// Issue 41's soak: one `mpquic serve` (mutual TLS) and many clients over 2-4 paths for a
    /// set time, with clients SIGKILLed and resumed, paths black-holed and gray, and the server
    /// restarted; writes <out>/soak.md (the table), soak.json and logs/, prints the table, and
    /// fails unless every check held.
    Soak(soak::SoakArgs),
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
        /// The kernel's congestion control module (set per socket).
        #[arg(long)]
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
            let c = experiment::load(&scenario)?;
            let out = out.unwrap_or_else(|| mpquic_scenario::default_out(&scenario, "netns"));
            let rounds = repetitions.map(|r| r as usize);
            torn_down(|_| sweep::run(&c, &out, rounds))?;
        }
        Cmd::Compare { a, b } => print!("{}", experiment::compare(&a, &b)?),
        Cmd::Validate { scenarios } => {
            let mut failed = 0;
            for s in &scenarios {
                match experiment::load(s) {
                    Ok(c) => println!("{}: ok ({} points)", s.display(), c.points.len()),
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
        Cmd::Plan { scenario } => print_plans(&scenario)?,
        Cmd::Failover(args) => {
            let res = torn_down(|run_id| failover::run_failover(&args, run_id))?;
            println!("{}", serde_json::to_string(&res)?);
            eprintln!("wrote {}", args.out.join("result.json").display());
        }
        Cmd::Roundtrip(args) => {
            let res = torn_down(|run_id| roundtrip::run_roundtrip(&args, run_id))?;
            println!("{}", serde_json::to_string(&res)?);
            eprintln!("wrote {}", args.out.join("result.json").display());
        }
        Cmd::Startup(args) => {
            print!("{}", torn_down(|run_id| startup::run_startup(&args, run_id))?);
            eprintln!("wrote {}", args.out.join("startup.md").display());
        }
        Cmd::Soak(args) => soak_main(&args)?,
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

/// `soak`: the table on stdout; an error when a check failed.
fn soak_main(args: &soak::SoakArgs) -> Result<()> {
    let (table, ok) = torn_down(|run_id| soak::run_soak(args, run_id))?;
    print!("{table}");
    eprintln!("wrote {}", args.out.join("soak.md").display());
    if !ok {
        anyhow::bail!("the soak failed a check (see the table)");
    }
    Ok(())
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

/// `plan`: each point's directory and plan as one JSON line.
fn print_plans(scenario: &std::path::Path) -> Result<()> {
    let mut out = std::io::stdout().lock();
    for p in experiment::load(scenario)?.points {
        let line = serde_json::json!({ "dir": p.dir, "plan": p.plan });
        match writeln!(out, "{line}") {
            // A reader that stopped early (`| head`) has all it wanted.
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => return Ok(()),
            written => written?,
        }
    }
    Ok(())
}
