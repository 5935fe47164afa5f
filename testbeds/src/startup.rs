//! E7's start-up check (`mpquic-testbed startup`, docs/results/E7-netns.md): what a
//! partition/aggregate job costs when every answer is its own `mpquic get` process (spawn, TLS
//! handshake, transfer, exit) against warm connections (`mpquic aggregate`). On an unshaped veth
//! pair between two namespaces of its own, so that `answers` x 64 KB take almost no network
//! time: what is left is start-up. Not an experiment of the language: it compares two ways of
//! running the CLI, not a network.

use crate::cleanup::{self, NsGuard};
use crate::flows::{self, Proc};
use crate::host::HostSpan;
use crate::netns::{ns_name, run};
use crate::results::Summary;
use anyhow::{bail, Context, Result};
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const WORKER_ADDR: &str = "10.77.0.2";
const PORT: u16 = 4500;
/// The answer file's name on the worker.
const NAME: &str = "answer";
/// How long one `get` or the whole `aggregate` may take before the check fails.
const PROCESS_DEADLINE: Duration = Duration::from_secs(60);

#[derive(clap::Args, Debug, Clone)]
pub struct StartupArgs {
    /// Answers per job.
    #[arg(long, default_value_t = 10)]
    pub answers: usize,
    /// Jobs each way (cold and warm).
    #[arg(long, default_value_t = 20)]
    pub jobs: usize,
    /// Bytes per answer.
    #[arg(long, default_value_t = 65_536)]
    pub answer_bytes: u64,
    /// Output directory: startup.json and startup.md.
    #[arg(long)]
    pub out: PathBuf,
}

/// What the check measured, in ms.
#[derive(Debug, Serialize)]
pub struct StartupResult {
    pub answers: usize,
    pub jobs: usize,
    pub load_1min: [f64; 2],
    /// The hypervisor's CPU steal over the jobs, % of the host's CPU time (none: not read).
    pub host_steal_pct: Option<f64>,
    /// Per cold job: from starting its `answers` processes to the last one's exit.
    pub cold_job_wall_ms: Vec<f64>,
    /// Per cold job: the slowest get's own FCT (stream open to last byte, after its handshake).
    pub cold_slowest_get_fct_ms: Vec<f64>,
    /// The warm connections' set-up (concurrent handshakes, once).
    pub warm_connect_ms: f64,
    /// Per warm job: its JCT.
    pub warm_jct_ms: Vec<f64>,
}

/// Runs the check in namespaces `mqtb-<run_id>-startup-*`; writes `startup.json` and
/// `startup.md` in `args.out` and returns the table.
pub fn run_startup(args: &StartupArgs, run_id: u32) -> Result<String> {
    crate::runner::require_root()?;
    if args.answers == 0 || args.jobs == 0 {
        bail!("--answers and --jobs must be >= 1");
    }
    cleanup::claim_run(run_id)?;
    let mpquic = flows::mpquic_bin()?;
    let dir = cleanup::run_dir(run_id).join("startup");
    std::fs::create_dir_all(&dir)?;
    let (agg, wrk) = (ns_name(run_id, "startup-agg"), ns_name(run_id, "startup-wrk"));
    let _guards = [NsGuard(agg.clone()), NsGuard(wrk.clone())];
    veth_pair(&agg, &wrk)?;
    std::fs::write(dir.join(NAME), vec![0x5a; args.answer_bytes as usize])?;
    let aggregator =
        Aggregator { ns: &agg, mpquic: &mpquic, server: format!("{WORKER_ADDR}:{PORT}") };
    let worker = aggregator.start_worker(&wrk, &dir)?;
    let host = HostSpan::start();
    let (mut cold_wall, mut cold_fct) = (Vec::new(), Vec::new());
    for _ in 0..args.jobs {
        let started = Instant::now();
        let slowest = aggregator.cold_job(args.answers, &dir)?;
        cold_wall.push(started.elapsed().as_secs_f64() * 1e3);
        cold_fct.push(slowest * 1e3);
    }
    let warm = aggregator.warm_jobs(args)?;
    let warm_jct_ms = warm["jobs"]
        .as_array()
        .context("no jobs in the aggregate report")?
        .iter()
        .map(|j| j["jct_s"].as_f64().map(|s| s * 1e3).context("a warm job failed"))
        .collect::<Result<Vec<_>>>()?;
    worker.stop();
    let (load_1min, host_steal_pct) = host.end();
    let result = StartupResult {
        answers: args.answers,
        jobs: args.jobs,
        load_1min,
        host_steal_pct,
        cold_job_wall_ms: cold_wall,
        cold_slowest_get_fct_ms: cold_fct,
        warm_connect_ms: warm["connect_s"].as_f64().unwrap_or(f64::NAN) * 1e3,
        warm_jct_ms,
    };
    std::fs::create_dir_all(&args.out)?;
    std::fs::write(args.out.join("startup.json"), serde_json::to_string_pretty(&result)?)?;
    let table = markdown(&result);
    std::fs::write(args.out.join("startup.md"), &table)?;
    Ok(table)
}

/// The aggregator's side of the check: `mpquic` commands run in its namespace against the
/// worker's server, all with DCTCP and exact ECN counts.
struct Aggregator<'a> {
    ns: &'a str,
    mpquic: &'a str,
    server: String,
}

impl Aggregator<'_> {
    fn transport() -> [String; 5] {
        ["--cc", "dctcp", "--ecn", "exact", "--insecure"].map(String::from)
    }

    /// The worker: `mpquic serve` of `dir` in namespace `wrk`, once it says it is serving.
    fn start_worker(&self, wrk: &str, dir: &Path) -> Result<Proc> {
        let mut serve: Vec<String> =
            ["serve", "--listen", &self.server, "--dir"].map(String::from).into();
        serve.push(dir.display().to_string());
        serve.extend(["--allow-anonymous", "--read-only"].map(String::from));
        serve.extend(Self::transport());
        let mut worker = Proc::spawn(wrk, self.mpquic, &serve)?;
        if !worker.wait_err_line(Duration::from_secs(10), |l| l.starts_with("mpquic: serving on")) {
            bail!("mpquic serve did not start: {}", worker.stop().1.trim());
        }
        Ok(worker)
    }

    /// One cold job: `answers` concurrent `mpquic get`s, each on its own new connection; the
    /// slowest one's FCT in seconds.
    fn cold_job(&self, answers: usize, dir: &Path) -> Result<f64> {
        let gets = (0..answers)
            .map(|i| {
                let out = dir.join(format!("out{i}")).display().to_string();
                let mut get: Vec<String> =
                    ["get", NAME, "-o", &out, "--force", "--server", &self.server, "--json"]
                        .map(String::from)
                        .into();
                get.extend(Self::transport());
                Proc::spawn(self.ns, self.mpquic, &get)
            })
            .collect::<Result<Vec<_>>>()?;
        let mut slowest: f64 = 0.0;
        for g in gets {
            let (lines, err, ok, _) = g.finish(PROCESS_DEADLINE)?;
            if !ok {
                bail!("mpquic get failed: {}", err.trim());
            }
            slowest = slowest.max(last_json(&lines)?["fct_s"].as_f64().context("no fct_s")?);
        }
        Ok(slowest)
    }

    /// Every warm job in one `mpquic aggregate` over connections set up once: its JSON report.
    fn warm_jobs(&self, args: &StartupArgs) -> Result<serde_json::Value> {
        let mut aggregate: Vec<String> =
            ["aggregate", "--name", NAME, "--jobs"].map(String::from).into();
        aggregate.push(args.jobs.to_string());
        for _ in 0..args.answers {
            aggregate.extend(["--server".to_string(), self.server.clone()]);
        }
        aggregate.extend(Self::transport());
        aggregate.push("--json".into());
        let (lines, err, ok, _) =
            Proc::spawn(self.ns, self.mpquic, &aggregate)?.finish(PROCESS_DEADLINE)?;
        if !ok {
            bail!("mpquic aggregate failed: {}", err.trim());
        }
        last_json(&lines)
    }
}

/// Two namespaces joined by one veth pair, without any qdisc of ours.
fn veth_pair(agg: &str, wrk: &str) -> Result<()> {
    for ns in [agg, wrk] {
        run("ip", &["netns", "add", ns])?;
        run("ip", &["-n", ns, "link", "set", "lo", "up"])?;
    }
    run(
        "ip",
        &["link", "add", "su0", "netns", agg, "type", "veth", "peer", "name", "su1", "netns", wrk],
    )?;
    for (ns, dev, addr) in [(agg, "su0", "10.77.0.1/24"), (wrk, "su1", "10.77.0.2/24")] {
        run("ip", &["-n", ns, "addr", "add", addr, "dev", dev])?;
        run("ip", &["-n", ns, "link", "set", dev, "up"])?;
    }
    Ok(())
}

/// The last JSON line a CLI process printed.
fn last_json(lines: &[String]) -> Result<serde_json::Value> {
    let line = lines.iter().rev().find(|l| l.starts_with('{')).context("no JSON report")?;
    serde_json::from_str(line).context("parsing the JSON report")
}

/// The table: median, p90 and max per job (nearest rank), and the warm set-up.
fn markdown(r: &StartupResult) -> String {
    let row = |name: &str, v: &[f64]| {
        let s = Summary::of(v);
        format!("| {name} | {:.1} | {:.1} | {:.1} |\n", s.median, s.p90, s.max)
    };
    let n = r.answers;
    format!(
        "E7 start-up check: {n} answers per job, {} jobs each way, unshaped veth, host load \
         (1-min) {:.2} -> {:.2}, CPU steal {}.\n\n| per job | median ms | p90 ms | max ms |\n|---|---|---|---|\n{}{}{}\n\
         Warm set-up (all {n} handshakes, concurrent, once): {:.1} ms.\n",
        r.jobs,
        r.load_1min[0],
        r.load_1min[1],
        r.host_steal_pct.map_or("not read".to_string(), |s| format!("{s:.1}%")),
        row(&format!("cold: {n} `mpquic get` processes, start to last exit"), &r.cold_job_wall_ms),
        row(
            "cold: the slowest get's own FCT (stream open to last byte, after its handshake)",
            &r.cold_slowest_get_fct_ms
        ),
        row(&format!("warm: `mpquic aggregate`, {n} connections set up once"), &r.warm_jct_ms),
        r.warm_connect_ms,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_gives_nearest_rank_percentiles_per_job() {
        let r = StartupResult {
            answers: 10,
            jobs: 4,
            load_1min: [1.0, 2.5],
            host_steal_pct: Some(0.42),
            cold_job_wall_ms: vec![240.0, 260.0, 250.0, 400.0],
            cold_slowest_get_fct_ms: vec![30.0, 31.0, 32.0, 33.0],
            warm_connect_ms: 16.04,
            warm_jct_ms: vec![11.0, 12.0, 10.0, 15.0],
        };
        let t = markdown(&r);
        assert!(
            t.contains(
                "| cold: 10 `mpquic get` processes, start to last exit | 250.0 | 400.0 | 400.0 |"
            ),
            "{t}"
        );
        assert!(
            t.contains(
                "| warm: `mpquic aggregate`, 10 connections set up once | 11.0 | 15.0 | 15.0 |"
            ),
            "{t}"
        );
        assert!(
            t.contains("host load (1-min) 1.00 -> 2.50, CPU steal 0.4%.")
                && t.ends_with("concurrent, once): 16.0 ms.\n"),
            "{t}"
        );
    }
}
