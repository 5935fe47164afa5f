//! `mpquic`: move files over coupled, ECN-driven multipath QUIC.

mod aggregate;
mod args;
mod batch;
mod cert;
mod client;
mod demo;
mod drain;
mod metrics;
mod output;
mod progress;
mod received;
mod report;
mod serve;
mod takeover;

// The protocol modules live in the library (src/lib.rs), for the fuzz targets.
use mpquic_cli::{errors, exit, files, ratelimit, resume, transfer};

use std::process::ExitCode;

use clap::FromArgMatches;
use tracing_subscriber::EnvFilter;

use crate::args::{Cli, Command};
use crate::exit::{Exit, Interrupted};
use crate::output::TransferResult;

fn main() -> ExitCode {
    let cli = match Cli::from_arg_matches(&args::command().get_matches()) {
        Ok(cli) => cli,
        Err(e) => e.exit(),
    };
    let filter = EnvFilter::try_from_default_env().or_else(|_| EnvFilter::try_new(&cli.log));
    let filter = match filter {
        Ok(filter) => filter,
        Err(e) => return fail(anyhow::anyhow!("bad --log filter {:?}: {e}", cli.log)),
    };
    tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).init();

    let runtime = match tokio::runtime::Runtime::new() {
        Ok(runtime) => runtime,
        Err(e) => return fail(e.into()),
    };
    let outcome = runtime.block_on(async {
        match cli.command {
            Command::Serve(args) => serve::serve(args).await,
            Command::Send(args) if batch::is_batch_send(&args) => {
                interruptible(batch::send(args)).await
            }
            Command::Send(args) => {
                let json = args.connect.json;
                let report = move |r: &TransferResult| print_result(r, json);
                if args.time.is_some() {
                    // A timed send ends cleanly on Ctrl-C / SIGTERM and reports what it sent.
                    client::send(args, termination(), report).await
                } else {
                    interruptible(client::send(args, std::future::pending(), report)).await
                }
            }
            Command::Get(args) if batch::is_batch_get(&args) => {
                interruptible(batch::get(args)).await
            }
            Command::Ls(args) => interruptible(batch::ls(args)).await,
            Command::Get(args) => {
                let json = args.connect.json;
                interruptible(client::get(args)).await.map(|r| print_result(&r, json))
            }
            Command::Aggregate(args) => interruptible(run_aggregate(&args)).await,
            Command::Demo(args) => {
                let json = args.json;
                demo::demo(args).await.map(|r| print_result(&r, json))
            }
            Command::Cert(args) => cert::write_cert(&args),
            Command::Report(args) => report::report(args),
            Command::Completions(args) => {
                args::write_completions(args.shell, &mut std::io::stdout());
                Ok(())
            }
        }
    });
    // Pending tasks (and their half-written temporary files) are dropped with the runtime.
    runtime.shutdown_timeout(std::time::Duration::from_secs(1));
    match outcome {
        Ok(()) => Exit::Success.into(),
        Err(e) => fail(e),
    }
}

/// Run until done, Ctrl-C or SIGTERM; an interrupted transfer is an error (and leaves no
/// partial file).
async fn interruptible<T>(
    work: impl std::future::Future<Output = anyhow::Result<T>>,
) -> anyhow::Result<T> {
    unless_stopped(work, termination()).await
}

/// Run `work` unless `stop` resolves first: then an error naming what `stop` answered.
pub async fn unless_stopped<T>(
    work: impl std::future::Future<Output = anyhow::Result<T>>,
    stop: impl std::future::Future<Output = &'static str>,
) -> anyhow::Result<T> {
    let mut work = Box::pin(work);
    let signal = tokio::select! {
        result = &mut work => return result,
        signal = stop => signal,
    };
    // Dropping the work closes its connection (`client::Session`); the endpoint needs a moment
    // to send the close before the runtime stops.
    drop(work);
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    Err(Interrupted(signal).into())
}

/// Resolves on Ctrl-C or SIGTERM, naming which. It listens from the call on, not from its
/// first poll: a signal sent once the caller has said it listens is never missed.
pub fn termination() -> impl std::future::Future<Output = &'static str> {
    use tokio::signal::unix::{signal, SignalKind};
    let listening = (signal(SignalKind::interrupt()), signal(SignalKind::terminate()));
    async move {
        let (Ok(mut int), Ok(mut term)) = listening else {
            let _ = tokio::signal::ctrl_c().await;
            return "Ctrl-C";
        };
        tokio::select! {
            _ = int.recv() => "Ctrl-C",
            _ = term.recv() => "SIGTERM",
        }
    }
}

fn print_result(result: &TransferResult, json: bool) {
    if json {
        println!("{}", serde_json::to_string(result).unwrap_or_default());
    } else {
        print!("{}", result.table());
    }
}

/// Run the jobs and print them (JSON, or one summary line); failed jobs make it an error, after
/// the report is printed.
async fn run_aggregate(args: &args::AggregateArgs) -> anyhow::Result<()> {
    if !(args.gap_ms.is_finite() && args.gap_ms >= 0.0) {
        anyhow::bail!("--gap-ms must be a number >= 0");
    }
    let result = aggregate::aggregate(args).await?;
    if args.connect.json {
        println!("{}", serde_json::to_string(&result)?);
    } else if let Some(p) = result.jct_ms {
        println!(
            "{} jobs of {} answers: JCT p50 {:.2} ms, p90 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
            p.n,
            result.workers.len(),
            p.p50,
            p.p90,
            p.p99,
            p.max
        );
    }
    let failed = result.jobs.len() - result.completed;
    if failed > 0 {
        let first = result.jobs.iter().flat_map(|j| &j.errors).next().cloned().unwrap_or_default();
        anyhow::bail!("{failed} of {} jobs failed; first: {first}", result.jobs.len());
    }
    Ok(())
}

/// One clear line, no backtrace; the exit code says what kind of failure it was.
fn fail(error: anyhow::Error) -> ExitCode {
    let text = errors::one_line(&error);
    // TLS alert 116 (certificate_required): in TLS 1.3 a client learns it only after the
    // handshake, from the first stream, so the error alone does not say what to do.
    let hint = if text.contains("error 116") {
        " (this server requires a client certificate: --client-cert and --client-key)"
    } else if text.contains("unknown request type 0x4c") {
        // 'L', a listing, is newer than the server.
        " (this server predates listings: update it, or send and get one file at a time)"
    } else if text.contains("unknown request type 0x53") {
        // 'S', a timed send's stream, is newer than the server.
        " (this server predates timed sends: update it, or send --generate SIZE)"
    } else if text.contains("unknown request type 0x4d") {
        // 'M', an empty directory of a sent tree, is newer than the server.
        " (this server predates empty directories: the files went, the empty directory did not; \
         update the server)"
    } else if text.contains("unknown request type 0x55")
        || text.contains("unknown request type 0x44")
    {
        // 'U' and 'D', resumable transfers, are newer than the server.
        " (this server predates resuming: update it, or pass --no-resume)"
    } else {
        ""
    };
    eprintln!("mpquic: error: {text}{hint}");
    Exit::of(&error).into()
}
