//! `mpquic aggregate`: partition/aggregate jobs (AMP's Fig. 12 workload). One connection per
//! worker (`--server`), opened once and kept; a job sends a request to every worker at once, each
//! worker answers with the same file, and the job completes when the last answer has arrived.
//! Several job streams run in parallel, each starting its next job when the previous one ends.
//!
//! Connections are warm (set up before the first job) so that a job's time is the network's and
//! the stack's, not process start-up and TLS handshakes.

use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use futures_util::future::join_all;
use mpquic::{MultipathConnection, PathSpec};
use serde::Serialize;
use tokio::task::JoinSet;

use crate::args::AggregateArgs;
use crate::errors::one_line;
use crate::transfer::receive_body;

/// One job: its stream, when it started, and when each answer and the last one arrived.
#[derive(Debug, Clone, Serialize)]
pub struct Job {
    /// The job stream (0..parallel) that ran it.
    pub stream: u32,
    /// Its index within the stream.
    pub index: u32,
    /// Seconds from the first job's start (after the connections were set up) to this job's.
    pub start_s: f64,
    /// Job completion time: from the job's start until its last answer was received whole
    /// (`None` when an answer failed).
    pub jct_s: Option<f64>,
    /// Per worker (in `--server` order): from sending its request to receiving the whole answer.
    pub response_fct_s: Vec<Option<f64>>,
    /// Bytes of each answer (the file's size, as the worker announced it).
    pub response_bytes: Vec<u64>,
    /// Why answers failed, if any did.
    pub errors: Vec<String>,
}

/// Percentiles of the completed jobs' JCTs, in milliseconds (nearest rank over every job).
#[derive(Debug, Clone, Copy, Serialize)]
pub struct JctPercentiles {
    /// Completed jobs.
    pub n: usize,
    /// Median.
    pub p50: f64,
    /// 90th percentile.
    pub p90: f64,
    /// 99th percentile.
    pub p99: f64,
    /// Longest.
    pub max: f64,
}

impl JctPercentiles {
    /// Nearest-rank percentiles of `jcts_s` (seconds); `None` for no value.
    pub fn of(jcts_s: &[f64]) -> Option<Self> {
        if jcts_s.is_empty() {
            return None;
        }
        let v = mpquic_stats::Sorted::new(&jcts_s.iter().map(|s| s * 1e3).collect::<Vec<_>>());
        Some(JctPercentiles {
            n: v.len(),
            p50: v.quantile(0.50)?,
            p90: v.quantile(0.90)?,
            p99: v.quantile(0.99)?,
            max: v.max()?,
        })
    }
}

/// What `mpquic aggregate --json` prints: the set-up, every job, and the JCT percentiles.
#[derive(Debug, Clone, Serialize)]
pub struct AggregateResult {
    /// Always "aggregate" (tells this line from a transfer's).
    pub kind: &'static str,
    /// The workers' addresses, in order.
    pub workers: Vec<String>,
    /// Seconds to set up every connection (concurrent handshakes), before the first job.
    pub connect_s: f64,
    /// Job streams.
    pub parallel: u32,
    /// Every job, by start time.
    pub jobs: Vec<Job>,
    /// Jobs whose answers all arrived.
    pub completed: usize,
    /// JCT percentiles over the completed jobs.
    pub jct_ms: Option<JctPercentiles>,
}

/// Connect to every worker, run the job streams, and return the result (an error, after
/// printing nothing, only when set-up fails; failed jobs are in the result).
pub async fn aggregate(args: &AggregateArgs) -> Result<AggregateResult> {
    let c = &args.connect;
    if !c.locals.is_empty()
        || !c.paths.is_empty()
        || c.paths_per_pair != 1
        || !c.path_delays.is_empty()
    {
        bail!("aggregate opens one single-path connection per --server: --local, --path, --paths-per-pair and --path-delay do not apply");
    }
    let options = c.transport.options()?;
    let client = c.client(c.servers[0].addr.ip())?;
    let timeout = c.timeout()?;
    let t0 = Instant::now();
    // The handshakes run concurrently: they are independent.
    let handshakes = c.servers.iter().map(|server| {
        let name = c.name_for(server);
        let (client, options) = (&client, &options);
        async move {
            client
                .connect(&name, &[PathSpec::new(None, server.addr)], options, timeout)
                .await
                .map(|(conn, _)| conn)
                .with_context(|| format!("connecting to worker {server}"))
        }
    });
    let conns: Vec<MultipathConnection> =
        join_all(handshakes).await.into_iter().collect::<Result<_>>()?;
    let connect_s = t0.elapsed().as_secs_f64();

    let epoch = Instant::now();
    let mut set = JoinSet::new();
    for stream in 0..args.parallel {
        let (conns, name, jobs, gap) = (
            conns.clone(),
            args.name.clone(),
            args.jobs,
            Duration::from_secs_f64(args.gap_ms / 1e3),
        );
        set.spawn(async move {
            let mut done = Vec::new();
            for index in 0..jobs {
                done.push(run_job(&conns, &name, stream, index, epoch).await);
                tokio::time::sleep(gap).await;
            }
            done
        });
    }
    let mut jobs = Vec::new();
    while let Some(stream_jobs) = set.join_next().await {
        jobs.extend(stream_jobs.context("a job stream panicked")?);
    }
    jobs.sort_by(|a, b| a.start_s.total_cmp(&b.start_s));
    for conn in &conns {
        conn.connection().close(0u32.into(), b"done");
    }
    let _ = tokio::time::timeout(Duration::from_secs(1), client.wait_idle()).await;
    let jcts: Vec<f64> = jobs.iter().filter_map(|j| j.jct_s).collect();
    Ok(AggregateResult {
        kind: "aggregate",
        workers: c.servers.iter().map(ToString::to_string).collect(),
        connect_s,
        parallel: args.parallel,
        completed: jcts.len(),
        jct_ms: JctPercentiles::of(&jcts),
        jobs,
    })
}

/// One job: a request to every worker at once; completes with the last whole answer.
async fn run_job(
    conns: &[MultipathConnection],
    name: &str,
    stream: u32,
    index: u32,
    epoch: Instant,
) -> Job {
    let start = Instant::now();
    let answers = join_all(conns.iter().map(|conn| fetch(conn, name))).await;
    let jct = start.elapsed().as_secs_f64();
    let mut job = Job {
        stream,
        index,
        start_s: (start - epoch).as_secs_f64(),
        jct_s: None,
        response_fct_s: vec![None; conns.len()],
        response_bytes: vec![0; conns.len()],
        errors: Vec::new(),
    };
    for (worker, answer) in answers.into_iter().enumerate() {
        match answer {
            Ok((fct, bytes)) => {
                job.response_fct_s[worker] = Some(fct);
                job.response_bytes[worker] = bytes;
            }
            Err(e) => job.errors.push(format!("worker {worker}: {}", one_line(&e))),
        }
    }
    if job.errors.is_empty() {
        job.jct_s = Some(jct);
    }
    job
}

/// Ask one worker for `name`; (seconds from the request to the whole answer, its size).
async fn fetch(conn: &MultipathConnection, name: &str) -> Result<(f64, u64)> {
    let started = Instant::now();
    let (mut recv, size) = crate::client::open_download(conn, name).await?;
    receive_body(&mut recv, size, &mut tokio::io::sink(), None, |_| {}).await?;
    Ok((started.elapsed().as_secs_f64(), size))
}
