//! `mpquic`: move files over coupled, ECN-driven multipath QUIC.

mod args;
mod client;
mod demo;
mod output;
mod report;
mod serve;
mod transfer;

use std::process::ExitCode;

use clap::Parser;
use tracing_subscriber::EnvFilter;

use crate::args::{Cli, Command};
use crate::output::TransferResult;

fn main() -> ExitCode {
    let cli = Cli::parse();
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
            Command::Send(args) => {
                let json = args.connect.json;
                interruptible(client::send(args)).await.map(|r| print_result(&r, json))
            }
            Command::Get(args) => {
                let json = args.connect.json;
                interruptible(client::get(args)).await.map(|r| print_result(&r, json))
            }
            Command::Demo(args) => {
                let json = args.json;
                demo::demo(args).await.map(|r| print_result(&r, json))
            }
            Command::Cert(args) => write_cert(&args),
            Command::Report(args) => report::report(args),
        }
    });
    // Pending tasks (and their half-written temporary files) are dropped with the runtime.
    runtime.shutdown_timeout(std::time::Duration::from_secs(1));
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => fail(e),
    }
}

/// Run until done or Ctrl-C; an interrupted transfer is an error (and leaves no partial file).
async fn interruptible<T>(
    work: impl std::future::Future<Output = anyhow::Result<T>>,
) -> anyhow::Result<T> {
    tokio::select! {
        result = work => result,
        _ = tokio::signal::ctrl_c() => Err(anyhow::anyhow!("interrupted")),
    }
}

fn print_result(result: &TransferResult, json: bool) {
    if json {
        println!("{}", serde_json::to_string(result).unwrap_or_default());
    } else {
        print!("{}", result.table());
    }
}

fn write_cert(args: &args::CertArgs) -> anyhow::Result<()> {
    use anyhow::Context;
    let (cert, key) = mpquic::Identity::self_signed_pem(&args.names)?;
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("cannot create {}", args.out.display()))?;
    for (name, text) in [("cert.pem", cert), ("key.pem", key)] {
        let path = args.out.join(name);
        std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))?;
    }
    eprintln!("mpquic: wrote {0}/cert.pem and {0}/key.pem", args.out.display());
    Ok(())
}

/// One clear line, no backtrace.
fn fail(error: anyhow::Error) -> ExitCode {
    eprintln!("mpquic: error: {error:#}");
    ExitCode::FAILURE
}
