//! The soak (`mpquic-testbed soak`, issue 41): one `mpquic serve` with mutual TLS and many
//! clients, each over 2-4 of four paths, for a set time, under churn and faults; then a table
//! of what happened and whether it held.
//!
//! Meanwhile, at seeded moments: clients SIGKILLed and run again at once (resume), paths
//! black-holed and healed (`tc qdisc replace dev X root blackhole`, `fault::LinkFault`), a
//! path gone gray (an iptables `statistic` rule dropping 5-30%), and the server stopped with
//! SIGTERM and started again. What is checked (`report`): every transfer started, completed,
//! resumed or failed with its reason; every completed file byte for byte its source; no file
//! visible under its final name before it is whole (`watch`); the server's RSS and open
//! descriptors over time (from /proc); no panic in any log; the Prometheus counters of every
//! server instance against the commands the clients ran.
//!
//! Why a testbed command in Rust rather than a script: the faults are the testbed's own
//! (`fault`: black hole and loss on a link's both directions), as are the namespaces and their
//! teardown on any exit (`cleanup`), and the programs pinned for the run (`programs`); the
//! metrics are scraped from a thread inside the server's namespace, and clients are killed and
//! classified by exit code while a watcher polls the directories, which a shell script would do
//! with races and `sleep`s. `scripts/soak` is the short way to build and run it.
//!
//! `--loopback` runs without namespaces: every path is a pair of loopback addresses, which
//! share one device, so no path can fail alone; path faults are skipped and the table says so.
//! Client kills and server restarts still run.

mod client;
mod report;
mod schedule;
mod server;
mod site;
mod watch;

use crate::{cleanup, flows};
use anyhow::{bail, Context, Result};
use client::{Client, Ctx, Kind};
use schedule::Action;
use server::{Sample, Server};
use site::Site;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The name the server's certificate carries (clients connect by address).
pub const SERVER_NAME: &str = "files.lab";
/// How often the server is sampled.
const SAMPLE_EVERY: Duration = Duration::from_secs(2);
/// How long the end waits for the server's connections to close (a killed client's lingers
/// until the server's idle timeout).
const QUIESCE: Duration = Duration::from_secs(60);
/// How long a quiet server may take to close its last descriptors (a metrics scrape's socket,
/// a stream's file a cut connection held) before the count is compared with idle.
const FD_SETTLE: Duration = Duration::from_secs(15);

#[derive(clap::Args, Debug, Clone, serde::Serialize)]
pub struct SoakArgs {
    /// How long clients start new commands, seconds (running ones may finish within --grace-s).
    #[arg(long, default_value_t = 1800.0)]
    pub duration_s: f64,
    /// Clients running at once (each one command at a time, over 2, 3 or 4 paths).
    #[arg(long, default_value_t = 8)]
    pub clients: usize,
    /// Seed of everything drawn: commands, sizes, kills, faults and their times.
    #[arg(long, default_value_t = 41)]
    pub seed: u64,
    /// Server restarts (SIGTERM, then start again), spread over 20-70% of the run.
    #[arg(long, default_value_t = 2)]
    pub restarts: u32,
    /// Loopback addresses instead of namespaces: no path faults (see the module docs).
    #[arg(long)]
    pub loopback: bool,
    /// Each client command's `--bwlimit`, so that the clients share the machine.
    #[arg(long, default_value = "2M")]
    pub bwlimit: String,
    /// The largest uploaded file, bytes (sizes are log-uniform from 16 KiB).
    #[arg(long, default_value_t = 16_000_000)]
    pub max_file: u64,
    /// The chance that a run of a command is SIGKILLed 0.2-2 s after it starts.
    #[arg(long, default_value_t = 0.15)]
    pub kill_probability: f64,
    /// How long commands still running at the end may take to finish, seconds.
    #[arg(long, default_value_t = 120.0)]
    pub grace_s: f64,
    /// The server's RSS at the end may differ by this much from its level after warm-up, %.
    #[arg(long, default_value_t = 10.0)]
    pub rss_tolerance_pct: f64,
    /// At the end, once the server is quiet, have its allocator return its free memory
    /// (glibc's `malloc_trim(0)`, called through `gdb`) and check the RSS left, the memory the
    /// server still holds, instead of the plain RSS (reported beside it): it tells a leak from
    /// a heap that keeps freed pages. Needs gdb.
    #[arg(long)]
    pub trim_at_end: bool,
    /// Where soak.md (the table), soak.json and logs/ go; the data lives in <out>/work.
    #[arg(long)]
    pub out: PathBuf,
    /// Keep <out>/work (sources, the server's directory) after the run.
    #[arg(long)]
    pub keep_files: bool,
}

/// One command of one client, from its first run to its check.
#[derive(Debug, Clone, serde::Serialize)]
pub struct OpRecord {
    pub client: usize,
    pub kind: &'static str,
    pub name: String,
    pub started_s: f64,
    pub ended_s: f64,
    pub attempts: u32,
    pub kills: u32,
    pub busy: u32,
    pub connection_failures: u32,
    pub other_errors: u32,
    /// An earlier run was cut off (killed, or its connection failed).
    pub cut: bool,
    pub resumed_from: u64,
    /// File bytes its completing run moved (after any resumed prefix).
    pub payload: u64,
    pub identical: u32,
    pub corrupt: Vec<String>,
    pub missing: Vec<String>,
    pub last_error: Option<String>,
    /// Why it did not complete, if it did not.
    pub failure: Option<String>,
}

impl OpRecord {
    fn new(client: usize, kind: Kind, name: &str, started_s: f64) -> OpRecord {
        OpRecord {
            client,
            kind: kind.name(),
            name: name.into(),
            started_s,
            ended_s: started_s,
            attempts: 0,
            kills: 0,
            busy: 0,
            connection_failures: 0,
            other_errors: 0,
            cut: false,
            resumed_from: 0,
            payload: 0,
            identical: 0,
            corrupt: Vec::new(),
            missing: Vec::new(),
            last_error: None,
            failure: None,
        }
    }

    pub fn completed(&self) -> bool {
        self.failure.is_none()
    }
}

/// What the clients report as they go: every command, and every run of one (start, end,
/// how it ended).
#[derive(Default)]
pub struct Tally {
    pub ops: Vec<OpRecord>,
    pub attempts: Vec<(f64, f64, &'static str)>,
}

pub type Shared = Arc<Mutex<Tally>>;

/// Runs the soak; writes `<out>/soak.md`, `<out>/soak.json` and the logs. Returns the table
/// and whether every check held.
pub fn run_soak(args: &SoakArgs, run_id: u32) -> Result<(String, bool)> {
    if !args.loopback {
        crate::runner::require_root()?;
        cleanup::claim_run(run_id)?;
        cleanup::cleanup_stale(false);
    }
    let program = flows::mpquic_bin()?;
    if args.trim_at_end && std::process::Command::new("gdb").arg("--version").output().is_err() {
        bail!("--trim-at-end calls malloc_trim in the server through gdb, which is not installed");
    }
    let logs = args.out.join("logs");
    let work = args.out.join("work");
    let _ = std::fs::remove_dir_all(&work);
    for d in [&logs, &work.join("src"), &work.join("server"), &work.join("got")] {
        std::fs::create_dir_all(d).with_context(|| format!("creating {}", d.display()))?;
    }
    make_certs(&program, &work.join("certs"), args.clients)?;
    let site = if args.loopback { Site::loopback()? } else { Site::netns(run_id)? };
    let result = soak(args, &site, &program, &work, &logs);
    drop(site);
    if !args.loopback {
        cleanup::cleanup_run(run_id);
    }
    if !args.keep_files {
        let _ = std::fs::remove_dir_all(&work);
    }
    let (table, json, ok) = result?;
    std::fs::write(args.out.join("soak.md"), &table)?;
    std::fs::write(args.out.join("soak.json"), serde_json::to_string_pretty(&json)?)?;
    Ok((table, ok))
}

/// The run itself, on `site`.
fn soak(
    args: &SoakArgs,
    site: &Site,
    program: &str,
    work: &Path,
    logs: &Path,
) -> Result<(String, serde_json::Value, bool)> {
    let (commit, date) = (report::commit(), utc_now());
    let t0 = Instant::now();
    let server_dir = work.join("server");
    let certs = work.join("certs");
    let server = Server::new(program, site, &server_dir, &certs, logs, t0)?;
    let server = Arc::new(Mutex::new(server));
    server.lock().unwrap().start()?;
    let expected = watch::Expected::default();
    let watch = watch::Watch::start(vec![server_dir.clone(), work.join("got")], expected.clone());
    let monitor = Monitor::start(server.clone());
    let ctx = Arc::new(Ctx {
        program: program.into(),
        ns: site.client_ns().map(String::from),
        certs,
        src: work.join("src"),
        server_dir,
        got: work.join("got"),
        logs: logs.into(),
        expected,
        shared: Shared::default(),
        t0,
        end: t0 + Duration::from_secs_f64(args.duration_s),
        give_up: t0 + Duration::from_secs_f64(args.duration_s + args.grace_s),
        bwlimit: args.bwlimit.clone(),
        max_file: args.max_file,
        kill_probability: args.kill_probability,
    });
    let (samples, events, client_errors, load_end_s) = drive(args, site, &server, &ctx, monitor)?;
    let findings = watch.finish();
    let tally = std::mem::take(&mut *ctx.shared.lock().unwrap());
    let instances = server.lock().unwrap().instances.clone();
    let run = report::Run {
        args,
        site: site.describe(),
        faultable: site.faultable(),
        timeline: &schedule::timeline(args.seed, args.duration_s, site.pairs.len(), args.restarts),
        events,
        tally,
        instances,
        samples,
        load_end_s,
        findings,
        panics: report::panics(logs),
        client_errors,
        command: std::env::args().collect::<Vec<_>>().join(" "),
        commit,
        date,
    };
    Ok(report::render(&run))
}

/// Output of `drive`: the server's samples, the faults applied, the clients' harness errors,
/// and when the last client finished.
type Driven = (report::Samples, Vec<(f64, String)>, Vec<String>, f64);

/// The clients and the faults, from the warm-up until the server is quiet and stopped.
fn drive(
    args: &SoakArgs,
    site: &Site,
    server: &Arc<Mutex<Server>>,
    ctx: &Arc<Ctx>,
    monitor: Monitor,
) -> Result<Driven> {
    let t0 = ctx.t0;
    let mut clients = make_clients(args, site, ctx)?;
    // One listing first, so that what a server opens at its first connection counts in its
    // idle level of descriptors and memory (the level a quiet server returns to).
    clients[0].warm_up(ctx)?;
    quiesce(server);
    let idle = server.lock().unwrap().sample().context("the server's idle sample")?;
    let idle_fds = server.lock().unwrap().pid().map(server::fd_targets).unwrap_or_default();
    let timeline = schedule::timeline(args.seed, args.duration_s, site.pairs.len(), args.restarts);
    let faults = run_faults(site, server, &timeline, t0);
    let clients = start_clients(clients, ctx);
    let mut client_errors = Vec::new();
    for (i, c) in clients.into_iter().enumerate() {
        match c.join() {
            Ok(Ok(())) => {}
            Ok(Err(e)) => client_errors.push(format!("client {i}: {e:#}")),
            Err(_) => client_errors.push(format!("client {i}: its thread panicked")),
        }
    }
    let load_end_s = t0.elapsed().as_secs_f64();
    let events = faults.join().map_err(|_| anyhow::anyhow!("the fault thread panicked"))??;
    let quiet = quiesce(server);
    let mut samples = monitor.finish(idle, quiet);
    settle_fds(server, &mut samples, idle_fds);
    if args.trim_at_end {
        let pid = server.lock().unwrap().pid().context("no server to trim")?;
        samples.trimmed_rss_kib = Some(server::rss_after_trim(pid)?);
    }
    server.lock().unwrap().stop()?;
    Ok((samples, events, client_errors, load_end_s))
}

/// Every client, each over 2, 3 or 4 of the paths (by its number), path 0 drawn.
fn make_clients(args: &SoakArgs, site: &Site, ctx: &Ctx) -> Result<Vec<Client>> {
    let mut clients = Vec::new();
    let mut rng = fastrand::Rng::with_seed(args.seed);
    for id in 0..args.clients {
        let mut paths: Vec<usize> = (0..site.pairs.len()).collect();
        rng.shuffle(&mut paths);
        paths.truncate(2 + id % 3);
        let mut options = vec!["--server".to_string(), site.server_addr(paths[0]).to_string()];
        for &p in &paths {
            let (local, _) = site.pairs[p];
            options.extend(["--path".into(), format!("{local}={}", site.server_addr(p))]);
        }
        clients.push(Client::new(id, args.seed, ctx, options)?);
    }
    Ok(clients)
}

/// Every client's thread.
fn start_clients(clients: Vec<Client>, ctx: &Arc<Ctx>) -> Vec<std::thread::JoinHandle<Result<()>>> {
    let mut threads = Vec::new();
    for client in clients {
        let ctx = ctx.clone();
        threads.push(std::thread::spawn(move || client.run(&ctx)));
        // Staggered, so that the first handshakes do not all land at once.
        std::thread::sleep(Duration::from_millis(200));
    }
    threads
}

/// The fault thread: runs the timeline at its times; returns what it did, when (a path fault
/// on loopback is noted as skipped).
fn run_faults(
    site: &Site,
    server: &Arc<Mutex<Server>>,
    timeline: &schedule::Timeline,
    t0: Instant,
) -> std::thread::JoinHandle<Result<Vec<(f64, String)>>> {
    let (faults, server, timeline) = (site.faults.clone(), server.clone(), timeline.clone());
    std::thread::spawn(move || {
        let mut done = Vec::new();
        for (at, action) in timeline {
            let wait = at - t0.elapsed().as_secs_f64();
            if wait > 0.0 {
                std::thread::sleep(Duration::from_secs_f64(wait));
            }
            let now = t0.elapsed().as_secs_f64();
            let what = schedule::describe(now, &action);
            match apply(&faults, &server, &action) {
                Ok(note) => done.push((now, format!("{what}{note}"))),
                Err(e) => done.push((now, format!("{what}: FAILED: {e:#}"))),
            }
        }
        Ok(done)
    })
}

/// Does one action; a note for the table (" (skipped: ...)" where it cannot be done).
fn apply(
    faults: &[crate::fault::LinkFault],
    server: &Arc<Mutex<Server>>,
    action: &Action,
) -> Result<String> {
    let path = |p: &usize| faults.get(*p);
    let skipped = " (skipped: loopback paths share one device; no per-path fault)";
    match action {
        Action::Blackhole(p) => path(p).map(|f| f.blackhole()),
        Action::Restore(p) => path(p).map(|f| f.restore()),
        Action::Lose(p, pct) => path(p).map(|f| f.lose(*pct)),
        Action::Heal(p, pct) => path(p).map(|f| f.stop_losing(*pct)),
        Action::Restart { down_s } => {
            let mut server = server.lock().unwrap();
            server.stop()?;
            std::thread::sleep(Duration::from_secs_f64(*down_s));
            server.start()?;
            return Ok(String::new());
        }
    }
    .transpose()
    .map(|done| if done.is_some() { String::new() } else { skipped.into() })
}

/// Waits until the server holds no connection (or `QUIESCE`); the gauge's last value.
fn quiesce(server: &Arc<Mutex<Server>>) -> Option<f64> {
    let start = Instant::now();
    loop {
        let connections = server.lock().unwrap().sample().and_then(|s| s.connections);
        if connections == Some(0.0) || start.elapsed() > QUIESCE {
            return connections;
        }
        std::thread::sleep(Duration::from_secs(1));
    }
}

/// Waits up to `FD_SETTLE` for the quiet server's descriptors to come back to the idle count,
/// then keeps its last sample as the run's end and names the descriptors held beyond idle.
fn settle_fds(server: &Arc<Mutex<Server>>, samples: &mut report::Samples, idle_fds: Vec<String>) {
    let start = Instant::now();
    let mut last = None;
    while start.elapsed() < FD_SETTLE {
        last = server.lock().unwrap().sample();
        if last.as_ref().is_some_and(|s| s.fds <= samples.idle.fds) {
            break;
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    let end_fds = server.lock().unwrap().pid().map(server::fd_targets).unwrap_or_default();
    samples.extra_fds = report::extra(&end_fds, &idle_fds);
    samples.during.extend(last);
}

/// Samples the server every `SAMPLE_EVERY` in a thread of its own.
struct Monitor {
    stop: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<Vec<Sample>>,
}

impl Monitor {
    fn start(server: Arc<Mutex<Server>>) -> Monitor {
        let stop = Arc::new(AtomicBool::new(false));
        let stopping = stop.clone();
        let thread = std::thread::spawn(move || {
            let mut samples = Vec::new();
            while !stopping.load(Ordering::Relaxed) {
                samples.extend(server.lock().unwrap().sample());
                std::thread::sleep(SAMPLE_EVERY);
            }
            samples
        });
        Monitor { stop, thread }
    }

    /// The samples: the idle one before the clients, the monitor's, and a last one once quiet
    /// (its connections gauge `quiet`).
    fn finish(self, idle: Sample, quiet: Option<f64>) -> report::Samples {
        self.stop.store(true, Ordering::Relaxed);
        let during = self.thread.join().unwrap_or_default();
        report::Samples {
            idle,
            during,
            quiet_connections: quiet,
            extra_fds: Vec::new(),
            trimmed_rss_kib: None,
        }
    }
}

/// A lab CA, the server's certificate and one per client (`mpquic cert`).
fn make_certs(program: &str, dir: &Path, clients: usize) -> Result<()> {
    let d = |name: &str| dir.join(name).display().to_string();
    let mut runs = vec![
        vec!["cert".into(), "--out".into(), d("ca"), "--new-ca".into()],
        vec!["cert".into(), "--out".into(), d("server"), "--ca-dir".into(), d("ca")],
    ];
    runs[1].extend(["--name".into(), SERVER_NAME.into()]);
    for i in 0..clients {
        let (out, name) = (d(&format!("c{i}")), format!("c{i}"));
        let ca = ["--ca-dir".into(), d("ca"), "--client".into(), "--name".into(), name];
        runs.push([vec!["cert".into(), "--out".into(), out], ca.to_vec()].concat());
    }
    for args in runs {
        let out = std::process::Command::new(program).args(&args).output()?;
        if !out.status.success() {
            bail!("mpquic {}: {}", args.join(" "), String::from_utf8_lossy(&out.stderr).trim());
        }
    }
    Ok(())
}

/// The time now, UTC, as `date -u` prints it.
fn utc_now() -> String {
    let out = std::process::Command::new("date").args(["-u", "+%Y-%m-%d %H:%M UTC"]).output();
    out.map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string()).unwrap_or_default()
}

/// Every file beneath `dir`.
pub fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for entry in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            match entry.file_type() {
                Ok(t) if t.is_dir() => todo.push(entry.path()),
                Ok(_) => files.push(entry.path()),
                Err(_) => {}
            }
        }
    }
    files
}
