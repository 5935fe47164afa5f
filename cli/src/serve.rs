//! `mpquic serve`: receive files into a directory (or a sink) and serve them for download.
//!
//! A server faces strangers: every request header has a deadline, a connection without a
//! running transfer is closed after `--idle-close`, connections and concurrent transfers are
//! capped (beyond the caps new ones are refused, not queued), uploads are checked against the
//! free space before any byte is written, and the log lines a peer can cause are rate-limited.
//! On SIGTERM or Ctrl-C it drains (`drain`): no new connections or requests, the running
//! transfers finish up to `--drain`'s deadline. It never accepts 0-RTT early data (the
//! library's server TLS allows none), so no request is ever replayable.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use mpquic::noq::{RecvStream, SendStream};
use mpquic::{Accepting, MultipathConnection, Server};
use tokio::io::AsyncReadExt;
use tokio::sync::{Notify, Semaphore};

use crate::args::ServeArgs;
use crate::drain::{self, Shutdown};
use crate::errors::one_line;
use crate::files::{Dir, PartialFile};
use crate::output::TransferResult;
use crate::progress::{self, Sink};
use crate::ratelimit::{ByteRate, LogLimiter};
use crate::received::ReceivedSeries;
use crate::resume::Offer;
use crate::takeover::Receivers;
use crate::transfer::{
    check_path, receive_body, receive_into, receive_stream, send_body, send_rest, write_listing,
    write_reply, Request, MAX_LISTING,
};

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
    Dir(Arc<Dir>),
    /// Verified, then discarded.
    Sink,
}

/// What a server allows, and how much of it.
pub struct Policy {
    pub store: Store,
    /// Refuse uploads.
    pub read_only: bool,
    /// Let an upload replace an existing file.
    pub overwrite: bool,
    /// Deadline for a stream's request header.
    pub header_timeout: Duration,
    /// Close a connection that has had no transfer running for this long.
    pub idle_close: Duration,
    /// One permit per running transfer, over all connections.
    pub transfers: Semaphore,
    /// The permits `transfers` started with.
    pub max_active: usize,
    /// Whether the server drains (stopping).
    pub shutdown: Shutdown,
    /// The resumable uploads being received, for a new request of one to take it over.
    pub receivers: Receivers,
    /// The budget of log lines about failures.
    pub failures: LogLimiter,
    /// Record each upload's bytes over time at this interval (`--received-series`).
    pub received_series: Option<Duration>,
    /// The cap on file data sent and received, shared by every transfer (`--bwlimit`).
    pub rate: Option<ByteRate>,
}

impl Policy {
    /// The defaults of `mpquic serve`, storing into `store`.
    pub fn new(store: Store) -> Self {
        let max_active = 64;
        Policy {
            store,
            read_only: false,
            overwrite: false,
            header_timeout: Duration::from_secs(10),
            idle_close: Duration::from_secs(30),
            transfers: Semaphore::new(max_active),
            max_active,
            shutdown: Shutdown::default(),
            receivers: Receivers::default(),
            // A burst of 20 failure lines, then one a second.
            failures: LogLimiter::new(20, 1.0),
            received_series: None,
            rate: None,
        }
    }

    fn from_args(args: &ServeArgs, store: Store) -> Result<Self> {
        Ok(Policy {
            read_only: args.read_only,
            overwrite: args.overwrite,
            header_timeout: ServeArgs::seconds(args.header_timeout, "--header-timeout")?,
            idle_close: ServeArgs::seconds(args.idle_close, "--idle-close")?,
            transfers: Semaphore::new(args.max_active_transfers as usize),
            max_active: args.max_active_transfers as usize,
            received_series: args.received_series.map(Duration::from_millis),
            rate: ByteRate::bwlimit(args.bwlimit),
            ..Policy::new(store)
        })
    }

    /// The transfers (and listings) running, over all connections.
    fn running(&self) -> usize {
        self.max_active - self.transfers.available_permits()
    }
}

fn open_store(args: &ServeArgs) -> Result<Store> {
    let Some(path) = &args.dir else { return Ok(Store::Sink) };
    let dir = Dir::open(path)?;
    let removed = dir.remove_stale_temporaries();
    if removed > 0 {
        eprintln!("mpquic: removed {removed} partial file(s) left by an earlier, killed server");
    }
    Ok(Store::Dir(dir))
}

/// Serve until `--max-transfers` transfers are done, or until Ctrl-C / SIGTERM and the drain
/// after it (`drain::drain`: its error says when transfers were cut off).
pub async fn serve(args: ServeArgs) -> Result<()> {
    let deadline = ServeArgs::seconds(args.drain, "--drain")?;
    let store = open_store(&args)?;
    let mut options = args.transport.options()?;
    if let Some(addr) = args.metrics {
        crate::metrics::serve(addr)?;
        options.metrics = Some(crate::metrics::INTERVAL);
    }
    let policy = Arc::new(Policy::from_args(&args, store)?);
    let clients = args.client_auth()?;
    let server = Server::bind_for(&args.listen_addrs(), &args.identity()?, &clients, options)?;
    announce(&args, server.local_addr()?.port());
    let done = Arc::new(Notify::new());
    let transfers = Arc::new(AtomicU64::new(0));
    let limit = args.max_transfers;
    let reporting = if args.json { Reporting::Json } else { Reporting::Table };
    let max_connections = args.max_connections;
    let connections = Arc::new(Semaphore::new(max_connections as usize));
    let accept_loop = async {
        while let Some(accepting) = server.accept().await {
            if policy.shutdown.draining() {
                let peer = accepting.remote();
                policy.failures.eprint(|| {
                    format!("mpquic: refused a connection from {peer}: the server is shutting down")
                });
                accepting.refuse();
                continue;
            }
            let Ok(permit) = connections.clone().try_acquire_owned() else {
                let peer = accepting.remote();
                policy.failures.eprint(|| {
                    format!("mpquic: refused a connection from {peer}: {max_connections} open (--max-connections)")
                });
                accepting.refuse();
                continue;
            };
            let (policy, done, transfers) = (policy.clone(), done.clone(), transfers.clone());
            let on_done = move |_: &TransferResult| {
                let n = transfers.fetch_add(1, Ordering::SeqCst) + 1;
                if limit.is_some_and(|limit| n >= limit) {
                    done.notify_one();
                }
            };
            let (interval, json) = (args.interval, args.json);
            tokio::spawn(async move {
                if let Some(conn) = handshake(accepting, &policy).await {
                    let _live = progress::start(&conn, interval, Sink::server(json, &conn));
                    serve_connection(conn, policy, reporting, on_done).await;
                }
                drop(permit);
            });
        }
    };
    let mut accept_loop = std::pin::pin!(accept_loop);
    let signal = tokio::select! {
        _ = &mut accept_loop => None,
        _ = done.notified() => None,
        signal = crate::termination() => Some(signal),
    };
    let outcome = match signal {
        None => Ok(()),
        Some(signal) => {
            policy.shutdown.begin();
            tokio::select! {
                // The loop goes on meanwhile, refusing the connections that come.
                _ = &mut accept_loop => Ok(()),
                drained = drain::drain(signal, || policy.running(), deadline) => drained,
            }
        }
    };
    // Closing cuts off what still runs: its receivers keep their resumable partial copies.
    server.close();
    let _ = tokio::time::timeout(Duration::from_secs(1), server.wait_idle()).await;
    outcome
}

/// Say where the server listens (with port 0, the OS chose one) and what it does with files.
fn announce(args: &ServeArgs, port: u16) {
    let addrs: Vec<String> = args
        .listen_addrs()
        .iter()
        .map(|a| std::net::SocketAddr::new(a.ip(), port).to_string())
        .collect();
    let files = match (&args.dir, args.read_only) {
        (Some(dir), false) => format!(", files in {}", dir.display()),
        (Some(dir), true) => format!(", files in {} (read-only)", dir.display()),
        (None, _) => ", verifying and discarding uploads".into(),
    };
    eprintln!("mpquic: serving on {} (controller {}){files}", addrs.join(", "), args.transport.cc);
}

/// Run the handshake; a failure (e.g. a client without a valid certificate) is logged.
async fn handshake(accepting: Accepting, policy: &Policy) -> Option<MultipathConnection> {
    let peer = accepting.remote();
    match accepting.established().await {
        Ok(conn) => Some(conn),
        Err(mpquic::Error::Connection { source, .. }) => {
            policy.failures.eprint(|| format!("mpquic: handshake with {peer} failed: {source}"));
            None
        }
        Err(e) => {
            policy.failures.eprint(|| format!("mpquic: {e}"));
            None
        }
    }
}

/// The transfers running on one connection, and since when it has had none.
struct Activity(Mutex<(usize, Instant)>);

impl Activity {
    fn begin(self: &Arc<Self>) -> ActiveTransfer {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).0 += 1;
        ActiveTransfer(self.clone())
    }

    /// How long the connection has had no transfer running; `None` while one runs.
    fn idle_for(&self) -> Option<Duration> {
        let (running, since) = *self.0.lock().unwrap_or_else(|e| e.into_inner());
        (running == 0).then(|| since.elapsed())
    }
}

/// A running transfer; its end restarts the connection's idle clock.
struct ActiveTransfer(Arc<Activity>);

impl Drop for ActiveTransfer {
    fn drop(&mut self) {
        let mut state = self.0 .0.lock().unwrap_or_else(|e| e.into_inner());
        *state = (state.0 - 1, Instant::now());
    }
}

/// Handle every stream of one connection; `on_done` is called after each successful transfer.
/// The connection is closed once it has had no transfer running for `policy.idle_close`:
/// keep-alives keep a QUIC connection open, but they are not a reason to hold its memory.
pub async fn serve_connection(
    conn: MultipathConnection,
    policy: Arc<Policy>,
    reporting: Reporting,
    on_done: impl Fn(&TransferResult) + Send + Sync + 'static,
) {
    let on_done = Arc::new(on_done);
    let activity = Arc::new(Activity(Mutex::new((0, Instant::now()))));
    loop {
        let draining = policy.shutdown.draining();
        let wait = match activity.idle_for() {
            Some(_) if draining => {
                conn.connection().close(0u32.into(), b"the server is shutting down");
                return;
            }
            Some(idle) if idle >= policy.idle_close => {
                let reason = format!("no transfer for {:?}", policy.idle_close);
                conn.connection().close(0u32.into(), reason.as_bytes());
                return;
            }
            Some(idle) => policy.idle_close - idle,
            // Draining, look again soon: the connection closes once its transfers end.
            None if draining => DRAINING_LOOK,
            None => policy.idle_close,
        };
        let accepted = tokio::select! {
            accepted = tokio::time::timeout(wait, conn.connection().accept_bi()) => accepted,
            _ = policy.shutdown.begun(), if !draining => continue,
        };
        let (send, recv) = match accepted {
            Err(_) => continue,
            Ok(Ok(streams)) => streams,
            Ok(Err(e)) => return tracing::debug!("connection ended: {e}"),
        };
        let active = activity.begin();
        let (conn, policy, on_done) = (conn.clone(), policy.clone(), on_done.clone());
        tokio::spawn(async move {
            match serve_stream(&conn, send, recv, &policy).await {
                Ok(None) => {} // a listing: not a transfer
                Ok(Some(result)) => {
                    match reporting {
                        Reporting::Json => {
                            println!("{}", serde_json::to_string(&result).unwrap_or_default())
                        }
                        Reporting::Table => eprint!("{}", result.table()),
                        Reporting::Silent => {}
                    }
                    on_done(&result);
                }
                Err(e) => policy.failures.eprint(|| match conn.remote() {
                    Some(peer) => format!("mpquic: transfer from {peer} failed: {}", one_line(&e)),
                    None => format!("mpquic: transfer failed: {}", one_line(&e)),
                }),
            }
            drop(active);
        });
    }
}

/// How often a draining connection with transfers running looks whether they have ended.
const DRAINING_LOOK: Duration = Duration::from_millis(100);

/// Tell the peer why its request is refused and stop both directions; returns the reason.
async fn refuse(
    send: &mut SendStream,
    recv: &mut RecvStream,
    reason: anyhow::Error,
) -> anyhow::Error {
    let _ = write_reply(send, &Err::<(), _>(anyhow!("{reason:#}"))).await;
    let _ = send.finish();
    let _ = recv.stop(1u32.into());
    reason
}

async fn read_request(recv: &mut RecvStream, policy: &Policy) -> Result<Request> {
    match tokio::time::timeout(policy.header_timeout, Request::read(recv)).await {
        Ok(request) => request.context("bad request"),
        Err(_) => bail!("no request header within {:?}", policy.header_timeout),
    }
}

/// Serve one stream: a transfer (its result) or a listing (`None`).
async fn serve_stream(
    conn: &MultipathConnection,
    mut send: SendStream,
    mut recv: RecvStream,
    policy: &Policy,
) -> Result<Option<TransferResult>> {
    let started = Instant::now();
    let request = match read_request(&mut recv, policy).await {
        Ok(request) => request,
        Err(e) => return Err(refuse(&mut send, &mut recv, e).await),
    };
    if policy.shutdown.draining() {
        let stopping = anyhow!("the server is shutting down: try again once it is back");
        return Err(refuse(&mut send, &mut recv, stopping).await);
    }
    let Ok(_slot) = policy.transfers.try_acquire() else {
        let busy = anyhow!("server busy: too many transfers running; try again later");
        return Err(refuse(&mut send, &mut recv, busy).await);
    };
    let mut series = policy.received_series.map(ReceivedSeries::new);
    let mut count = |n| {
        if let Some(series) = &mut series {
            series.add(n)
        }
    };
    let (direction, name, size, outcome, ended_by) = match request {
        Request::List { dir } => {
            list(&mut send, &dir, &policy.store).await.with_context(|| format!("list {dir:?}"))?;
            return Ok(None);
        }
        Request::Put { name, size, resume: false } => {
            let outcome = receive(&mut recv, &name, size, policy, &mut count).await;
            answer(&mut send, &mut recv, &outcome).await?;
            ("receive", name, size, outcome.map(|()| 0), None)
        }
        Request::Put { name, size, resume: true } => {
            let upload = Upload { name: &name, size, identity: conn.peer_certificate_name() };
            let outcome = receive_resumable(&mut send, &mut recv, upload, policy, &mut count).await;
            answer(&mut send, &mut recv, &outcome).await?;
            ("receive", name, size, outcome, None)
        }
        Request::Stream { name } => {
            let received = receive_stream_into_sink(&mut recv, &policy.store, &mut count).await;
            let size = received.as_ref().map_or(0, |&size| size);
            let outcome = received.map(drop);
            answer(&mut send, &mut recv, &outcome).await?;
            ("receive", name, size, outcome.map(|()| 0), Some("sender"))
        }
        Request::Get { name, resume } => {
            let offer_from = resume.then_some((&mut recv, policy.header_timeout));
            let outcome = upload(&mut send, offer_from, &name, policy).await;
            let size = outcome.as_ref().map_or(0, |&(size, _)| size);
            ("upload", name, size, outcome.map(|(_, start)| start), None)
        }
    };
    let resumed_from = outcome.with_context(|| format!("{direction} {name:?}"))?;
    // The peer acknowledging the stream's end is the end of the transfer.
    let _ = send.stopped().await;
    let mut result = TransferResult::new(direction, name, size, started.elapsed(), conn.report());
    result.resumed(resumed_from);
    result.ended_by = ended_by;
    result.received_series = series.map_or_else(Vec::new, ReceivedSeries::finish);
    Ok(Some(result))
}

/// Reply to an upload; a failed one is also told to stop sending (nothing more will be read).
async fn answer<T>(
    send: &mut SendStream,
    recv: &mut RecvStream,
    outcome: &Result<T>,
) -> Result<()> {
    write_reply(send, outcome).await?;
    let _ = send.finish();
    if outcome.is_err() {
        let _ = recv.stop(1u32.into());
    }
    Ok(())
}

/// Receive an upload; refused before any byte is written when the policy or the free space
/// does not allow it.
async fn receive(
    recv: &mut RecvStream,
    name: &str,
    size: u64,
    policy: &Policy,
    progress: impl FnMut(u64),
) -> Result<()> {
    let rate = policy.rate.as_ref();
    let Some((dir, name)) = upload_target(&policy.store, name, policy)? else {
        return receive_body(recv, size, &mut tokio::io::sink(), rate, progress).await;
    };
    check_room(&dir, size)?;
    let mut partial = PartialFile::create(dir)?;
    partial.reserve(size)?;
    receive_body(recv, size, partial.file(), rate, progress).await?;
    partial.commit(name, policy.overwrite).await
}

/// Where an upload of `path` goes: its directory (made) and name, or `None` for a sink; an
/// upload the policy does not allow is refused.
fn upload_target<'a>(
    store: &Store,
    path: &'a str,
    policy: &Policy,
) -> Result<Option<(Arc<Dir>, &'a str)>> {
    let Store::Dir(top) = store else { return Ok(None) };
    if policy.read_only {
        bail!("this server is read-only: uploads are refused");
    }
    let (dir, name) = beneath(top, path, true)?;
    if !policy.overwrite && dir.contains(name) {
        bail!("a file named {name:?} already exists (the server does not replace files)");
    }
    Ok(Some((dir, name)))
}

/// Refuse `size` more bytes when the disk does not have them free.
fn check_room(dir: &Dir, size: u64) -> Result<()> {
    let free = dir.free_space().context("cannot check the free space")?;
    if size > free {
        bail!("not enough space on the server: {size} bytes offered, {free} free");
    }
    Ok(())
}

/// A resumable upload: its name, its size, and the client's identity (its certificate's name).
struct Upload<'a> {
    name: &'a str,
    size: u64,
    identity: Option<String>,
}

/// Receive a resumable upload: offer what an interrupted upload of the name left, then take
/// the rest; returns where the sender resumed. An upload cut off keeps its partial file for
/// the next one. A partial file another transfer holds is taken over when this one shows it
/// continues the same upload (`takeover`).
async fn receive_resumable(
    send: &mut SendStream,
    recv: &mut RecvStream,
    upload: Upload<'_>,
    policy: &Policy,
    mut progress: impl FnMut(u64),
) -> Result<u64> {
    let (rate, size) = (policy.rate.as_ref(), upload.size);
    let Some((dir, file_name)) = upload_target(&policy.store, upload.name, policy)? else {
        write_reply(send, &Ok(())).await?;
        Offer::empty(size).write(send).await?;
        let start = timeout(policy, Offer::empty(size).read_start(recv)).await?;
        return receive_body(recv, size - start, &mut tokio::io::sink(), rate, progress)
            .await
            .map(|()| 0);
    };
    let mut partial = PartialFile::open_resumable(dir.clone(), file_name)?;
    let key = partial.key()?;
    if !partial.locked() {
        let busy = || anyhow!("{:?} is being received by another transfer", upload.name);
        policy.receivers.may_take_over(key, &upload.identity, busy).await?;
    }
    let offer = partial.offer(size).await?;
    check_room(&dir, size - offer.bytes())?;
    partial.reserve(size)?;
    write_reply(send, &Ok(())).await?;
    offer.write(send).await?;
    let start = timeout(policy, offer.read_start(recv)).await?;
    if !partial.locked() {
        if start < offer.bytes() {
            bail!("the partial copy another transfer holds differs from this upload's data");
        }
        policy.receivers.stop(key);
        partial.lock_within(policy.header_timeout, upload.name).await?;
        tracing::info!(name = upload.name, start, "took a resumable upload over from a silent one");
    }
    let claim = policy.receivers.claim(key, upload.identity);
    let seen = partial.resume_at(start, size).await?;
    let count = |n| {
        claim.received();
        progress(n)
    };
    tokio::select! {
        received = receive_into(recv, &mut partial, size - start, seen, rate, count) => received?,
        _ = claim.stopped() => bail!("a newer transfer of the same upload took it over"),
    }
    partial.commit(file_name, policy.overwrite).await?;
    Ok(start)
}

/// `work`, unless the peer keeps it waiting longer than a request header may.
async fn timeout<T>(
    policy: &Policy,
    work: impl std::future::Future<Output = Result<T>>,
) -> Result<T> {
    match tokio::time::timeout(policy.header_timeout, work).await {
        Ok(result) => result,
        Err(_) => bail!("the peer did not answer within {:?}", policy.header_timeout),
    }
}

/// Receive a stream (a timed send): a sink verifies and discards it and returns its length; a
/// server storing files refuses it before reading any of it.
async fn receive_stream_into_sink(
    recv: &mut RecvStream,
    store: &Store,
    progress: impl FnMut(u64),
) -> Result<u64> {
    match store {
        Store::Sink => receive_stream(recv, &mut tokio::io::sink(), progress).await,
        Store::Dir(_) => bail!(
            "this server stores files: a timed send (an unsized measurement stream) goes to a \
             `serve --sink` server; send a file or --generate SIZE here"
        ),
    }
}

/// The directory a path's file is in (made, with `create`) and the file's name in it.
fn beneath<'a>(top: &Arc<Dir>, path: &'a str, create: bool) -> Result<(Arc<Dir>, &'a str)> {
    let components = check_path(path)?;
    let (name, parents) = components.split_last().expect("split gives one component at least");
    Ok((top.beneath(parents, create)?, name))
}

/// The server's directory, where it keeps files to serve.
fn served(store: &Store) -> Result<&Arc<Dir>> {
    match store {
        Store::Sink => Err(anyhow!("this server keeps no files (--sink)")),
        Store::Dir(dir) => Ok(dir),
    }
}

/// Tell the peer why nothing follows, end the stream, and return the reason.
async fn decline(send: &mut SendStream, e: anyhow::Error) -> Result<anyhow::Error> {
    write_reply(send, &Err::<(), _>(anyhow!(one_line(&e)))).await?;
    send.finish()?;
    Ok(e)
}

/// The regular files at or beneath `path` (everything served when empty), as paths from the
/// served directory.
fn listing(top: &Arc<Dir>, path: &str) -> Result<Vec<(String, u64)>> {
    if path.is_empty() {
        return top.walk("", MAX_LISTING);
    }
    let (parent, name) = beneath(top, path, false)?;
    match parent.beneath(&[name], false) {
        Ok(dir) => dir.walk(&format!("{path}/"), MAX_LISTING),
        Err(_) => Ok(vec![(path.to_owned(), parent.open_regular(name)?.metadata()?.len())]),
    }
}

/// Reply, then list the regular files at or beneath `path`.
async fn list(send: &mut SendStream, path: &str, store: &Store) -> Result<()> {
    let listed = served(store).and_then(|top| listing(top, path));
    let files = match listed {
        Ok(files) => files,
        Err(e) => return Err(decline(send, e).await?),
    };
    write_reply(send, &Ok(())).await?;
    write_listing(send, &files).await?;
    send.finish()?;
    Ok(())
}

/// Reply, then send the file; returns its size and where its data started. With `offer_from`
/// (a resumable download: the stream to read the receiver's offer from, and how long to wait
/// for it), the data starts where the receiver's partial copy stops matching the file. The
/// file's data waits for its share of the policy's cap, if any.
async fn upload(
    send: &mut SendStream,
    offer_from: Option<(&mut RecvStream, Duration)>,
    name: &str,
    policy: &Policy,
) -> Result<(u64, u64)> {
    let rate = policy.rate.as_ref();
    let opened = served(&policy.store)
        .and_then(|top| beneath(top, name, false))
        .and_then(|(dir, name)| dir.open_regular(name));
    let file = match opened {
        Ok(file) => file,
        Err(e) => return Err(decline(send, e).await?),
    };
    let size = file.metadata()?.len();
    let mut file = tokio::fs::File::from_std(file);
    write_reply(send, &Ok(())).await?;
    send.write_all(&size.to_be_bytes()).await?;
    let start = match offer_from {
        None => {
            send_body(&mut file, size, send, rate, |_| {}).await?;
            0
        }
        Some((recv, wait)) => {
            let offer = tokio::time::timeout(wait, Offer::read(recv, size))
                .await
                .map_err(|_| anyhow!("no resume offer within {wait:?}"))??;
            let resume = offer.answer(&mut file).await?;
            resume.write_start(send).await?;
            let mut rest = (&resume.unsent[..]).chain(&mut file);
            send_rest(&mut rest, size - resume.start, resume.seen, send, rate, |_| {}).await?;
            resume.start
        }
    };
    send.finish()?;
    Ok((size, start))
}
