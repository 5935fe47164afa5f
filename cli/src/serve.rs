//! `mpquic serve`: receive files into a directory (or a sink) and serve them for download.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use anyhow::{anyhow, bail, Context, Result};
use mpquic::noq::{RecvStream, SendStream};
use mpquic::{MultipathConnection, Server};
use tokio::sync::Notify;

use crate::args::ServeArgs;
use crate::output::TransferResult;
use crate::transfer::{receive_body, send_body, write_reply, PartialFile, Request};

/// How the server reports each finished transfer.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Reporting {
    /// One JSON object per line on stdout.
    Json,
    /// The human-readable table on stderr.
    Table,
    /// Nothing (the demo's in-process server).
    Silent,
}

/// Where received files go.
#[derive(Clone)]
pub enum Store {
    /// Into this directory, under the names clients give.
    Dir(PathBuf),
    /// Verified, then discarded.
    Sink,
}

/// Serve until Ctrl-C / SIGTERM, or until `--max-transfers` transfers are done.
pub async fn serve(args: ServeArgs) -> Result<()> {
    let store = match &args.dir {
        Some(dir) => {
            let meta = std::fs::metadata(dir)
                .with_context(|| format!("cannot use directory {}", dir.display()))?;
            if !meta.is_dir() {
                bail!("{} is not a directory", dir.display());
            }
            Store::Dir(dir.clone())
        }
        None => Store::Sink,
    };
    let options = args.transport.options()?;
    let server = Server::bind(&args.listen, &args.identity()?, options)?;
    // With port 0 the OS chose one: say which.
    let port = server.local_addr()?.port();
    eprintln!(
        "mpquic: serving on {} (controller {}){}",
        args.listen
            .iter()
            .map(|a| std::net::SocketAddr::new(a.ip(), port).to_string())
            .collect::<Vec<_>>()
            .join(", "),
        args.transport.cc,
        match &store {
            Store::Dir(dir) => format!(", files in {}", dir.display()),
            Store::Sink => ", verifying and discarding uploads".into(),
        }
    );
    let done = Arc::new(Notify::new());
    let transfers = Arc::new(AtomicU64::new(0));
    let limit = args.max_transfers;
    let reporting = if args.json { Reporting::Json } else { Reporting::Table };
    let accept_loop = async {
        while let Some(accepting) = server.accept().await {
            let (store, done, transfers) = (store.clone(), done.clone(), transfers.clone());
            tokio::spawn(async move {
                let conn = match accepting.established().await {
                    Ok(conn) => conn,
                    Err(e) => return tracing::warn!("handshake failed: {e}"),
                };
                serve_connection(conn, store, reporting, move |_| {
                    let n = transfers.fetch_add(1, Ordering::SeqCst) + 1;
                    if limit.is_some_and(|limit| n >= limit) {
                        done.notify_one();
                    }
                })
                .await;
            });
        }
    };
    tokio::select! {
        _ = accept_loop => {}
        _ = done.notified() => {}
        _ = shutdown_signal() => eprintln!("mpquic: shutting down"),
    }
    server.close();
    let _ = tokio::time::timeout(std::time::Duration::from_secs(1), server.wait_idle()).await;
    Ok(())
}

/// Resolves on Ctrl-C or SIGTERM.
async fn shutdown_signal() {
    #[cfg(unix)]
    {
        let mut term =
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(term) => term,
                Err(_) => return std::future::pending().await,
            };
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    let _ = tokio::signal::ctrl_c().await;
}

/// Handle every stream of one connection; `on_done` is called after each successful transfer.
pub async fn serve_connection(
    conn: MultipathConnection,
    store: Store,
    reporting: Reporting,
    on_done: impl Fn(&TransferResult) + Send + Sync + 'static,
) {
    let on_done = Arc::new(on_done);
    loop {
        let (send, recv) = match conn.connection().accept_bi().await {
            Ok(streams) => streams,
            Err(e) => {
                tracing::debug!("connection ended: {e}");
                return;
            }
        };
        let (conn, store, on_done) = (conn.clone(), store.clone(), on_done.clone());
        tokio::spawn(async move {
            match serve_stream(&conn, send, recv, &store).await {
                Ok(result) => {
                    match reporting {
                        Reporting::Json => {
                            println!("{}", serde_json::to_string(&result).unwrap_or_default())
                        }
                        Reporting::Table => eprint!("{}", result.table()),
                        Reporting::Silent => {}
                    }
                    on_done(&result);
                }
                Err(e) => match conn.remote() {
                    Some(peer) => eprintln!("mpquic: transfer from {peer} failed: {e:#}"),
                    None => eprintln!("mpquic: transfer failed: {e:#}"),
                },
            }
        });
    }
}

async fn serve_stream(
    conn: &MultipathConnection,
    mut send: SendStream,
    mut recv: RecvStream,
    store: &Store,
) -> Result<TransferResult> {
    let started = Instant::now();
    let request = match Request::read(&mut recv).await {
        Ok(request) => request,
        Err(e) => {
            let _ = write_reply(&mut send, &Err(anyhow!("bad request: {e:#}"))).await;
            return Err(e);
        }
    };
    let (direction, name, size, outcome) = match request {
        Request::Put { name, size } => {
            let outcome = receive(&mut recv, &name, size, store).await;
            write_reply(&mut send, &outcome).await?;
            let _ = send.finish();
            if outcome.is_err() {
                // Nothing more will be read: tell the sender to stop.
                let _ = recv.stop(1u32.into());
            }
            ("receive", name, size, outcome)
        }
        Request::Get { name } => {
            let outcome = upload(&mut send, &name, store).await;
            let size = outcome.as_ref().map_or(0, |&size| size);
            ("upload", name, size, outcome.map(drop))
        }
    };
    outcome.with_context(|| format!("{direction} {name}"))?;
    // The peer acknowledging the stream's end is the end of the transfer.
    let _ = send.stopped().await;
    Ok(TransferResult::new(direction, name, size, started.elapsed(), conn.report()))
}

async fn receive(recv: &mut RecvStream, name: &str, size: u64, store: &Store) -> Result<()> {
    match store {
        Store::Sink => receive_body(recv, size, &mut tokio::io::sink(), |_| {}).await,
        Store::Dir(dir) => {
            let mut partial = PartialFile::create(&dir.join(name)).await?;
            receive_body(recv, size, partial.file(), |_| {}).await?;
            partial.commit().await
        }
    }
}

/// Reply, then send the file; returns its size.
async fn upload(send: &mut SendStream, name: &str, store: &Store) -> Result<u64> {
    let opened = match store {
        Store::Sink => Err(anyhow!("this server keeps no files (--sink)")),
        Store::Dir(dir) => match tokio::fs::File::open(dir.join(name)).await {
            Ok(file) => Ok(file),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                Err(anyhow!("no file named {name:?}"))
            }
            Err(e) => Err(anyhow!("cannot open {name:?}: {e}")),
        },
    };
    let mut file = match opened {
        Ok(file) => file,
        Err(e) => {
            let reply = Err(anyhow!("{e:#}"));
            write_reply(send, &reply).await?;
            send.finish()?;
            return Err(e);
        }
    };
    let size = file.metadata().await?.len();
    write_reply(send, &Ok(())).await?;
    send.write_all(&size.to_be_bytes()).await?;
    send_body(&mut file, size, send, |_| {}).await?;
    send.finish()?;
    Ok(size)
}
