//! `mpquic serve`: receive files into a directory (or a sink) and serve them for download.
//!
//! A server faces strangers: every request header has a deadline, a connection without a
//! running transfer is closed after `--idle-close`, connections (in all and per address) and
//! concurrent transfers are capped (beyond the caps new ones are refused, not queued), one
//! connection's streams are served a few at a time, a transfer whose data stops moving is ended
//! after `--stall-timeout`, streams and datagrams the protocol does not use are refused or
//! dropped, uploads are checked against the free space before any byte is written, and the log
//! lines a peer can cause are rate-limited. On SIGTERM or Ctrl-C it drains (`drain`): no new
//! connections or requests, the running transfers finish up to `--drain`'s deadline. It never
//! accepts 0-RTT early data (the library's server TLS allows none), so no request is ever
//! replayable.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use futures_util::StreamExt;
use mpquic::noq::{PathEvent, PathId, RecvStream, SendStream};
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
    write_reply, Listing, Request, MAX_LISTING,
};

/// The bidirectional streams a peer may have open at once on a connection: noq's
/// `TransportConfig` default (unidirectional ones are refused, see `watch_peer`).
const QUIC_MAX_STREAMS: u32 = 100;

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
    /// Streams of one connection served at once (`--max-streams-per-connection`).
    pub streams_per_connection: usize,
    /// End a transfer whose data has not moved for this long (`--stall-timeout`).
    pub stall_timeout: Duration,
    /// Close a connection whose peer opened this many paths (`--max-paths-opened`).
    pub max_paths_opened: u32,
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
            streams_per_connection: 16,
            stall_timeout: Duration::from_secs(30),
            max_paths_opened: 256,
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
            streams_per_connection: args.max_streams_per_connection as usize,
            stall_timeout: ServeArgs::seconds(args.stall_timeout, "--stall-timeout")?,
            max_paths_opened: args.max_paths_opened,
            max_active: args.max_active_transfers as usize,
            received_series: args.received_series.map(Duration::from_millis),
            rate: ByteRate::bwlimit(args.bwlimit),
            ..Policy::new(store)
        })
    }
}

impl Policy {
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
    let max_paths = options.max_paths;
    let server = Server::bind_for(&args.listen_addrs(), &args.identity()?, &clients, options)?;
    announce(&args, server.local_addr()?.port(), max_paths);
    let done = Arc::new(Notify::new());
    let transfers = Arc::new(AtomicU64::new(0));
    let limit = args.max_transfers;
    let reporting = if args.json { Reporting::Json } else { Reporting::Table };
    let max_connections = args.max_connections;
    let connections = Arc::new(Semaphore::new(max_connections as usize));
    let per_address = Arc::new(PerAddress::new(args.max_connections_per_ip));
    let accept_loop = async {
        while let Some(accepting) = server.accept().await {
            let peer = accepting.remote();
            if policy.shutdown.draining() {
                policy.failures.eprint(|| {
                    format!("mpquic: refused a connection from {peer}: the server is shutting down")
                });
                accepting.refuse();
                continue;
            }
            let Ok(permit) = connections.clone().try_acquire_owned() else {
                policy.failures.eprint(|| {
                    format!("mpquic: refused a connection from {peer}: {max_connections} open (--max-connections)")
                });
                accepting.refuse();
                continue;
            };
            let Some(address_permit) = per_address.take(peer.ip()) else {
                let cap = per_address.cap;
                policy.failures.eprint(|| {
                    format!(
                        "mpquic: refused a connection from {peer}: {cap} open from {} (--max-connections-per-ip)",
                        peer.ip()
                    )
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
                drop((permit, address_permit));
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
fn announce(args: &ServeArgs, port: u16, max_paths: u32) {
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
    eprintln!("mpquic: {}", limits(args, max_paths));
}

/// The limits a peer meets, for the log: the server's own caps, and what the QUIC stack
/// advertises (paths as initial_max_path_id, one more per path abandoned; streams as MAX_STREAMS,
/// one more per stream ended).
fn limits(args: &ServeArgs, max_paths: u32) -> String {
    format!(
        "limits: {} connections, {} per IP address (--max-connections, --max-connections-per-ip); \
         per connection {max_paths} paths at once (initial_max_path_id {}), {} in all \
         (--max-paths-opened) and {QUIC_MAX_STREAMS} streams \
         (MAX_STREAMS), {} served at once (--max-streams-per-connection); {} transfers in all \
         (--max-active-transfers); a request header within {}s (--header-timeout), data moving \
         within {}s (--stall-timeout), a transfer within {}s of the last (--idle-close)",
        args.max_connections,
        args.max_connections_per_ip,
        max_paths.saturating_sub(1),
        args.max_paths_opened,
        args.max_streams_per_connection,
        args.max_active_transfers,
        args.header_timeout,
        args.stall_timeout,
        args.idle_close,
    )
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

/// The connections open from each IP address, capped (`--max-connections-per-ip`).
struct PerAddress {
    open: Mutex<HashMap<IpAddr, u32>>,
    cap: u32,
}

impl PerAddress {
    fn new(cap: u32) -> Self {
        PerAddress { open: Mutex::new(HashMap::new()), cap }
    }

    /// A place for one more connection from `ip`, or `None` when it has `cap` open.
    fn take(self: &Arc<Self>, ip: IpAddr) -> Option<AddressPermit> {
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        let count = open.entry(ip).or_insert(0);
        if *count >= self.cap {
            return None;
        }
        *count += 1;
        Some(AddressPermit(self.clone(), ip))
    }
}

/// One open connection from an address; its end frees the place (and the map's entry with it).
struct AddressPermit(Arc<PerAddress>, IpAddr);

impl Drop for AddressPermit {
    fn drop(&mut self) {
        let mut open = self.0.open.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(count) = open.get_mut(&self.1) {
            *count -= 1;
            if *count == 0 {
                open.remove(&self.1);
            }
        }
    }
}

/// The streams being served on one connection, since when it has had none, and a signal
/// when one ends.
struct Activity {
    state: Mutex<(usize, Instant)>,
    ended: Notify,
}

impl Activity {
    fn new() -> Arc<Self> {
        Arc::new(Activity { state: Mutex::new((0, Instant::now())), ended: Notify::new() })
    }

    fn begin(self: &Arc<Self>) -> ActiveTransfer {
        self.state.lock().unwrap_or_else(|e| e.into_inner()).0 += 1;
        ActiveTransfer(self.clone())
    }

    fn running(&self) -> usize {
        self.state.lock().unwrap_or_else(|e| e.into_inner()).0
    }

    /// How long the connection has had no transfer running; `None` while one runs.
    fn idle_for(&self) -> Option<Duration> {
        let (running, since) = *self.state.lock().unwrap_or_else(|e| e.into_inner());
        (running == 0).then(|| since.elapsed())
    }
}

/// A stream being served; its end restarts the connection's idle clock.
struct ActiveTransfer(Arc<Activity>);

impl Drop for ActiveTransfer {
    fn drop(&mut self) {
        let mut state = self.0.state.lock().unwrap_or_else(|e| e.into_inner());
        *state = (state.0 - 1, Instant::now());
        self.0.ended.notify_one();
    }
}

/// Wait while the connection has its share of streams served; says so in the log (once per
/// connection), since a peer that never ends them holds its further streams back.
async fn wait_for_a_stream_place(
    conn: &MultipathConnection,
    activity: &Activity,
    policy: &Policy,
    said: &mut bool,
) {
    let cap = policy.streams_per_connection;
    while activity.running() >= cap {
        if !std::mem::replace(said, true) {
            let peer = conn.remote().map_or_else(|| "a peer".into(), |p| p.to_string());
            policy.failures.eprint(|| {
                format!("mpquic: {peer} has {cap} streams served at once (--max-streams-per-connection): its next ones wait")
            });
        }
        activity.ended.notified().await;
    }
}

/// Watch what a peer does beside its streams: refuse the unidirectional streams and drop the
/// datagrams it sends (the file protocol uses neither, and unread they would each hold a
/// receive window of the server's memory), and close the connection once it has opened
/// `policy.max_paths_opened` paths (path ids count up from 0, one per path opened).
async fn watch_peer(conn: MultipathConnection, policy: Arc<Policy>) {
    let quic = conn.connection();
    let mut said = false;
    let mut paths = quic.path_events();
    let cap = policy.max_paths_opened;
    loop {
        tokio::select! {
            event = paths.next() => match event {
                Some(Ok(PathEvent::Established { id, .. })) if id >= PathId::from(cap - 1) => {
                    let peer = conn.remote().map_or_else(|| "a peer".into(), |p| p.to_string());
                    policy.failures.eprint(|| {
                        format!("mpquic: closed the connection from {peer}: {cap} paths opened (--max-paths-opened)")
                    });
                    quic.close(0u32.into(), b"too many paths opened");
                    return;
                }
                Some(_) => {}
                None => return,
            },
            uni = quic.accept_uni() => {
                let Ok(mut recv) = uni else { return };
                let _ = recv.stop(1u32.into());
                if !std::mem::replace(&mut said, true) {
                    let peer = conn.remote().map_or_else(|| "a peer".into(), |p| p.to_string());
                    policy.failures.eprint(|| {
                        format!("mpquic: refused a unidirectional stream from {peer}: the file protocol uses none")
                    });
                }
            }
            datagram = quic.read_datagram() => if datagram.is_err() { return },
        }
    }
}

/// Tracks when a transfer's data last moved, to end one that stalls (`--stall-timeout`).
struct Watchdog {
    started: Instant,
    /// Milliseconds from `started` to the last move.
    moved: AtomicU64,
}

impl Watchdog {
    fn new() -> Self {
        Watchdog { started: Instant::now(), moved: AtomicU64::new(0) }
    }

    fn moved(&self) {
        self.moved.store(self.started.elapsed().as_millis() as u64, Ordering::Relaxed);
    }

    fn last_move(&self) -> Instant {
        self.started + Duration::from_millis(self.moved.load(Ordering::Relaxed))
    }

    /// `work`'s output, or an error once nothing has moved for `stall`.
    async fn guard<T>(
        &self,
        stall: Duration,
        work: impl std::future::Future<Output = T>,
    ) -> Result<T> {
        let mut work = std::pin::pin!(work);
        loop {
            let deadline = self.last_move() + stall;
            tokio::select! {
                out = &mut work => return Ok(out),
                _ = tokio::time::sleep_until(deadline.into()) => {
                    if self.last_move() + stall <= Instant::now() {
                        bail!("no data moved for {stall:?} (--stall-timeout)");
                    }
                }
            }
        }
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
    let activity = Activity::new();
    tokio::spawn(watch_peer(conn.clone(), policy.clone()));
    let mut said = false;
    loop {
        wait_for_a_stream_place(&conn, &activity, &policy, &mut said).await;
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

/// What a finished transfer was: direction, name, size, where it resumed, who ended it.
type Done = (&'static str, String, u64, u64, Option<&'static str>);

/// Serve one stream: a transfer (its result) or a listing (`None`). A transfer whose data
/// stops moving for `policy.stall_timeout` is ended (both directions reset).
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
    let watchdog = Watchdog::new();
    let mut series = policy.received_series.map(ReceivedSeries::new);
    let count = |n| {
        watchdog.moved();
        if let Some(series) = &mut series {
            series.add(n)
        }
    };
    let stall = policy.stall_timeout;
    let identity = conn.peer_certificate_name();
    let work = transfer(request, identity, &mut send, &mut recv, policy, count);
    let done = match watchdog.guard(stall, work).await {
        Ok(done) => done?,
        Err(stalled) => return Err(stalled_out(&mut send, &mut recv, stalled)),
    };
    let Some((direction, name, size, resumed_from, ended_by)) = done else { return Ok(None) };
    // The peer acknowledging the stream's end is the end of the transfer.
    if tokio::time::timeout(stall, send.stopped()).await.is_err() {
        let unacknowledged =
            anyhow!("the end of the stream unacknowledged for {stall:?} (--stall-timeout)");
        return Err(stalled_out(
            &mut send,
            &mut recv,
            unacknowledged.context(format!("{direction} {name:?}")),
        ));
    }
    let mut result = TransferResult::new(direction, name, size, started.elapsed(), conn.report());
    result.resumed(resumed_from);
    result.ended_by = ended_by;
    result.received_series = series.map_or_else(Vec::new, ReceivedSeries::finish);
    Ok(Some(result))
}

/// End both directions of a stalled stream, dropping what waits in its buffers.
fn stalled_out(send: &mut SendStream, recv: &mut RecvStream, e: anyhow::Error) -> anyhow::Error {
    let _ = send.reset(2u32.into());
    let _ = recv.stop(2u32.into());
    e
}

/// Carry out a request of the peer known as `identity` (its certificate's name, under mutual
/// TLS); `count` is told of every chunk of file data moved.
async fn transfer(
    request: Request,
    identity: Option<String>,
    send: &mut SendStream,
    recv: &mut RecvStream,
    policy: &Policy,
    mut count: impl FnMut(u64),
) -> Result<Option<Done>> {
    let (direction, name, size, outcome, ended_by) = match request {
        Request::List { dir, tree } => {
            let listed = list(send, &dir, tree, &policy.store).await;
            listed.with_context(|| format!("list {dir:?}"))?;
            return Ok(None);
        }
        Request::MakeDir { dir } => {
            let made = upload_dir(&dir, policy);
            answer(send, recv, &made).await?;
            made.with_context(|| format!("make directory {dir:?}"))?;
            return Ok(None);
        }
        Request::Put { name, size, resume: false } => {
            let outcome = receive(recv, &name, size, policy, &mut count).await;
            answer(send, recv, &outcome).await?;
            ("receive", name, size, outcome.map(|()| 0), None)
        }
        Request::Put { name, size, resume: true } => {
            let upload = Upload { name: &name, size, identity };
            let outcome = receive_resumable(send, recv, upload, policy, &mut count).await;
            answer(send, recv, &outcome).await?;
            ("receive", name, size, outcome, None)
        }
        Request::Stream { name } => {
            let received = receive_stream_into_sink(recv, &policy.store, &mut count).await;
            let size = received.as_ref().map_or(0, |&size| size);
            let outcome = received.map(drop);
            answer(send, recv, &outcome).await?;
            ("receive", name, size, outcome.map(|()| 0), Some("sender"))
        }
        Request::Get { name, resume } => {
            let offer_from = resume.then_some((&mut *recv, policy.header_timeout));
            let outcome = upload(send, offer_from, &name, policy, &mut count).await;
            let size = outcome.as_ref().map_or(0, |&(size, _)| size);
            ("upload", name, size, outcome.map(|(_, start)| start), None)
        }
    };
    let resumed_from = outcome.with_context(|| format!("{direction} {name:?}"))?;
    Ok(Some((direction, name, size, resumed_from, ended_by)))
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

/// Make the directory `path` of an uploaded tree (an empty one: the others come with their
/// files), its parents too; a sink has nothing to make.
fn upload_dir(path: &str, policy: &Policy) -> Result<()> {
    let Store::Dir(top) = &policy.store else { return Ok(()) };
    if policy.read_only {
        bail!("this server is read-only: uploads are refused");
    }
    top.beneath(&check_path(path)?, true).map(drop)
}

/// The regular files at or beneath `path` (everything served when empty), as paths from the
/// served directory, and the empty directories.
fn listing(top: &Arc<Dir>, path: &str) -> Result<Listing> {
    if path.is_empty() {
        return top.walk("", MAX_LISTING);
    }
    let (parent, name) = beneath(top, path, false)?;
    match parent.beneath(&[name], false) {
        Ok(dir) => dir.walk(&format!("{path}/"), MAX_LISTING),
        Err(_) => {
            let size = parent.open_regular(name)?.metadata()?.len();
            Ok(Listing { files: vec![(path.to_owned(), size)], empty_dirs: Vec::new() })
        }
    }
}

/// Reply, then list the regular files at or beneath `path` (and with `tree`, the empty
/// directories).
async fn list(send: &mut SendStream, path: &str, tree: bool, store: &Store) -> Result<()> {
    let listed = served(store).and_then(|top| listing(top, path));
    let files = match listed {
        Ok(files) => files,
        Err(e) => return Err(decline(send, e).await?),
    };
    write_reply(send, &Ok(())).await?;
    write_listing(send, &files, tree).await?;
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
    mut progress: impl FnMut(u64),
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
            send_body(&mut file, size, send, rate, progress).await?;
            0
        }
        Some((recv, wait)) => {
            let offer = tokio::time::timeout(wait, Offer::read(recv, size))
                .await
                .map_err(|_| anyhow!("no resume offer within {wait:?}"))??;
            let resume = offer.answer(&mut file).await?;
            resume.write_start(send).await?;
            let mut rest = (&resume.unsent[..]).chain(&mut file);
            send_rest(&mut rest, size - resume.start, resume.seen, send, rate, &mut progress)
                .await?;
            resume.start
        }
    };
    send.finish()?;
    Ok((size, start))
}
