//! `mpquic send` and `mpquic get`.

use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::task::{Context as TaskContext, Poll};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use futures_util::FutureExt;
use indicatif::ProgressBar;
use mpquic::noq::{RecvStream, SendStream};
use mpquic::{Client, MultipathConnection, PathOpenError, PathSpec};
use rand::{rngs::SmallRng, RngCore, SeedableRng};
use tokio::io::{AsyncRead, AsyncReadExt, ReadBuf};

use crate::args::{ConnectArgs, GetArgs, SendArgs};
use crate::errors::one_line;
use crate::exit::{IntegrityFailed, Refused};
use crate::files::{Dir, PartialFile};
use crate::output::{progress_bar, say, stream_bar, TransferResult};
use crate::progress::{self, Sink};
use crate::ratelimit::ByteRate;
use crate::resume::{self, Offer};
use crate::transfer::{
    check_name, check_path, read_reply, receive_into, send_body, send_rest, send_until, Request,
};

/// Pseudo-random bytes, for measurements without a file (incompressible, so nothing is flattered).
pub struct GeneratedData(SmallRng);

impl GeneratedData {
    pub fn new(seed: u64) -> Self {
        GeneratedData(SmallRng::seed_from_u64(seed))
    }
}

impl AsyncRead for GeneratedData {
    fn poll_read(
        mut self: Pin<&mut Self>,
        _cx: &mut TaskContext<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let n = buf.remaining();
        self.0.fill_bytes(buf.initialize_unfilled_to(n));
        buf.advance(n);
        Poll::Ready(Ok(()))
    }
}

/// An open connection to the server, with the warnings of paths that failed to open.
pub struct Session {
    client: Client,
    /// The connection.
    pub conn: MultipathConnection,
    /// The paths `--path-delay` opens later, on `conn`.
    _later: LaterPaths,
}

/// Connect as `args` say.
pub async fn connect(args: &ConnectArgs) -> Result<Session> {
    let specs = args.path_specs()?;
    let client = args.client(specs[0].remote.ip())?;
    let (conn, later) = open_connection(&client, args).await?;
    Ok(Session { client, conn, _later: later })
}

/// A connection from `client`'s endpoint over the paths of `args` that open with it, and the
/// task that opens the others at their `--path-delay`.
async fn open_connection(
    client: &Client,
    args: &ConnectArgs,
) -> Result<(MultipathConnection, LaterPaths)> {
    let mut paths = args.timed_paths()?;
    // Delays do not decrease and path 0's is 0: the paths due now come first.
    let later = paths.split_off(paths.iter().take_while(|(_, delay)| delay.is_zero()).count());
    let now: Vec<PathSpec> = paths.into_iter().map(|(spec, _)| spec).collect();
    let (conn, failures) = client
        .connect(&args.server_name(), &now, &args.transport.options()?, args.timeout()?)
        .await?;
    for failure in failures {
        warn_path_failed(&failure);
    }
    let later = LaterPaths::start(&conn, later);
    // Say when a path fails or comes back while it happens, not only in the final table.
    let mut failovers = conn.failover_events();
    tokio::spawn(async move {
        while let Ok(event) = failovers.recv().await {
            eprintln!("mpquic: {event}");
        }
    });
    Ok((conn, later))
}

fn warn_path_failed(failure: &PathOpenError) {
    eprintln!("mpquic: warning: {failure}; continuing on the other paths");
}

/// Opens paths on a running connection at their delays after it was established
/// (`--path-delay`); stops, leaving the rest unopened, when dropped with its connection.
struct LaterPaths(tokio::task::JoinHandle<()>);

impl LaterPaths {
    fn start(conn: &MultipathConnection, paths: Vec<(PathSpec, Duration)>) -> LaterPaths {
        let established = tokio::time::Instant::now();
        let conn = conn.clone();
        LaterPaths(tokio::spawn(async move {
            for (spec, delay) in paths {
                tokio::time::sleep_until(established + delay).await;
                if conn.connection().close_reason().is_some() {
                    return; // closed before the path was due: nothing left to carry
                }
                if let Err(failure) = conn.open_path(spec).await {
                    warn_path_failed(&failure);
                }
            }
        }))
    }
}

impl Drop for LaterPaths {
    fn drop(&mut self) {
        self.0.abort();
    }
}

impl Drop for Session {
    /// A session dropped before `close` (a failure, Ctrl-C) still tells the server at once that
    /// it is gone, so the server lets go of what it was receiving (a partial file to resume
    /// from) now rather than at its idle timeout.
    fn drop(&mut self) {
        self.conn.connection().close(0u32.into(), b"gone");
    }
}

impl Session {
    /// Close cleanly, giving the peer a moment to acknowledge.
    pub async fn close(self) {
        self.conn.connection().close(0u32.into(), b"done");
        let _ = tokio::time::timeout(Duration::from_secs(1), self.client.wait_idle()).await;
    }
}

/// What `send` uploads: a file or generated data of a known size, or generated data for a time.
enum Body {
    Sized(Box<dyn AsyncRead + Unpin + Send>, u64),
    Timed(Duration),
}

/// What `send` uploads and its name on the server.
type Source = (Body, String);

/// Opens what `send` uploads and checks its name (before any connection: bad input fails first).
async fn open_source(args: &SendArgs) -> Result<Source> {
    let generated = || args.name.clone().unwrap_or_else(|| "generated.bin".into());
    let source: Source = match (args.files.first(), args.generate, args.time) {
        (Some(path), _, _) => {
            let file = tokio::fs::File::open(path)
                .await
                .with_context(|| format!("cannot open {}", path.display()))?;
            let meta =
                file.metadata().await.with_context(|| format!("cannot read {}", path.display()))?;
            if !meta.is_file() {
                return Err(anyhow!("{} is not a regular file", path.display()));
            }
            let default_name =
                path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            (Body::Sized(Box::new(file), meta.len()), args.name.clone().unwrap_or(default_name))
        }
        (None, Some(size), _) => {
            (Body::Sized(Box::new(GeneratedData::new(size)), size), generated())
        }
        (None, None, Some(time)) => (Body::Timed(time), generated()),
        (None, None, None) => unreachable!("clap requires FILE, --generate or --time"),
    };
    check_name(&source.1)?;
    Ok(source)
}

/// Upload a file or generated data `--repeat` times, each over a new connection (or, with
/// `--same-connection`, each on a new stream of the first); calls
/// `report` with each transfer's result as it completes. `stop` (Ctrl-C / SIGTERM for a
/// `--time` send) ends a timed transfer early and cleanly, and with it the repeats; before a
/// transfer runs, it interrupts.
pub async fn send(
    args: SendArgs,
    stop: impl Future<Output = &'static str>,
    mut report: impl FnMut(&TransferResult),
) -> Result<()> {
    let mut stop = std::pin::pin!(stop.fuse());
    if args.batch.bwlimit.is_some() && args.time.is_some() {
        bail!("--bwlimit caps files and --generate; a timed send (--time) measures uncapped");
    }
    let rate = args.batch.limiter();
    let mut first = Some(open_source(&args).await?);
    let mut session = crate::unless_stopped(connect(&args.connect), &mut stop).await?;
    for i in 0..args.repeat {
        if i > 0 && !args.same_connection {
            // A new connection from the same endpoint; the previous one drains in the background.
            session.conn.connection().close(0u32.into(), b"done");
            let next = open_connection(&session.client, &args.connect);
            (session.conn, session._later) = crate::unless_stopped(next, &mut stop).await?;
        }
        let source = match first.take() {
            Some(source) => source,
            None => open_source(&args).await?,
        };
        let resume = !args.batch.no_resume;
        let result =
            upload(&session.conn, source, &args.connect, resume, rate.as_ref(), &mut stop).await?;
        report(&result);
        if result.ended_by.is_some_and(|why| why != "time") {
            break;
        }
    }
    session.close().await;
    Ok(())
}

/// One upload over an open connection; a timed one ends at its time or when `stop` resolves.
async fn upload(
    conn: &MultipathConnection,
    (body, name): Source,
    args: &ConnectArgs,
    resume: bool,
    rate: Option<&ByteRate>,
    stop: &mut (impl Future<Output = &'static str> + Unpin),
) -> Result<TransferResult> {
    let bar = match &body {
        Body::Sized(_, size) => progress_bar(*size, args.json),
        Body::Timed(_) => stream_bar(args.json),
    };
    let _live = progress::start(conn, args.interval, Sink::new(args.json, &bar));
    let (size, ended_by, fct, start) = match body {
        Body::Sized(mut source, size) => {
            let (fct, start) = put(conn, &name, &mut source, size, resume, rate, &bar).await?;
            (size, None, fct, start)
        }
        Body::Timed(time) => {
            let (size, ended_by, fct) = stream(conn, &name, time, stop, |n| bar.inc(n)).await?;
            (size, Some(ended_by), fct, 0)
        }
    };
    bar.finish_and_clear();
    let mut result = TransferResult::new("send", name, size, fct, conn.report());
    result.resumed(start);
    result.ended_by = ended_by;
    Ok(result)
}

/// Store `size` bytes of `source` as `name` on the server, on a stream of its own, showing
/// progress on `bar`; with `resume`, from where the server's partial copy of an interrupted
/// upload stops matching. Returns the time from the request to the server's verified reply and
/// where the data started.
pub async fn put(
    conn: &MultipathConnection,
    name: &str,
    source: &mut (impl AsyncRead + Unpin),
    size: u64,
    resume: bool,
    rate: Option<&ByteRate>,
    bar: &ProgressBar,
) -> Result<(Duration, u64)> {
    let started = Instant::now();
    let (mut send, mut recv) = conn.connection().open_bi().await.context("opening a stream")?;
    Request::Put { name: name.to_owned(), size, resume }.write(&mut send).await?;
    let sent = if resume {
        put_rest(&mut send, &mut recv, name, source, size, rate, bar).await
    } else {
        send_body(source, size, &mut send, rate, |n| bar.inc(n)).await.map(|()| 0)
    };
    match sent {
        Ok(start) => Ok((finish(send, recv, started).await?, start)),
        Err(e) => Err(why_stopped(&mut recv, e).await),
    }
}

/// A resumable upload after its request: take the server's offer, send from where its partial
/// copy stops matching `source` (read from its start); returns where.
async fn put_rest(
    send: &mut SendStream,
    recv: &mut RecvStream,
    name: &str,
    source: &mut (impl AsyncRead + Unpin),
    size: u64,
    rate: Option<&ByteRate>,
    bar: &ProgressBar,
) -> Result<u64> {
    read_reply(recv).await?;
    let offer = Offer::read(recv, size).await?;
    let resume = offer.answer(source).await?;
    resume.write_start(send).await?;
    announce(bar, name, resume.start, resume.offered, size);
    let mut rest = (&resume.unsent[..]).chain(source);
    send_rest(&mut rest, size - resume.start, resume.seen, send, rate, |n| bar.inc(n)).await?;
    Ok(resume.start)
}

/// Say where a resumed file's data starts (and why, when the partial copy differed), and count
/// what was kept on the bar.
fn announce(bar: &ProgressBar, name: &str, start: u64, offered: u64, size: u64) {
    if let Some(line) = resume::note(name, start, offered, size) {
        say(bar, &line);
    }
    bar.inc(start);
}

/// Send generated data as a timed stream named `name` until `time` passes or `stop` resolves;
/// returns the bytes sent, what ended them, and the time to the receiver's verified reply.
async fn stream(
    conn: &MultipathConnection,
    name: &str,
    time: Duration,
    stop: &mut (impl Future<Output = &'static str> + Unpin),
    progress: impl FnMut(u64),
) -> Result<(u64, &'static str, Duration)> {
    let started = Instant::now();
    let (mut send, mut recv) = conn.connection().open_bi().await.context("opening a stream")?;
    Request::Stream { name: name.to_owned() }.write(&mut send).await?;
    let until = async {
        tokio::select! {
            _ = tokio::time::sleep(time) => "time",
            signal = stop => signal,
        }
    };
    let mut data = GeneratedData::new(time.as_nanos() as u64);
    let (bytes, ended_by) = match send_until(&mut data, &mut send, until, progress).await {
        Ok(sent) => sent,
        Err(e) => return Err(why_stopped(&mut recv, e).await),
    };
    Ok((bytes, ended_by, finish(send, recv, started).await?))
}

/// Why sending failed: a receiver that gives up (disk full, bad name) says why before it stops
/// the stream; without its word, the sending error.
async fn why_stopped(recv: &mut RecvStream, e: anyhow::Error) -> anyhow::Error {
    if e.chain().any(|c| c.is::<Refused>() || c.is::<IntegrityFailed>()) {
        return e; // the receiver's word already
    }
    match tokio::time::timeout(Duration::from_secs(2), read_reply(recv)).await {
        Ok(Err(reason)) => reason,
        _ => e,
    }
}

/// End an upload's stream and wait for the receiver's verdict; returns the time since
/// `started`.
async fn finish(mut send: SendStream, mut recv: RecvStream, started: Instant) -> Result<Duration> {
    send.finish().context("finishing the stream")?;
    read_reply(&mut recv).await?;
    let fct = started.elapsed();
    // The report holds what the ACK frames said (the CE counts among it): wait until the peer
    // has acknowledged the stream's end, which follows its reply by at most its ACK delay.
    let _ = tokio::time::timeout(Duration::from_secs(1), send.stopped()).await;
    Ok(fct)
}

/// A download under way: its stream at the data, the file's size, where the data starts, and
/// what the receiver kept before it.
pub struct Download {
    recv: RecvStream,
    /// The file's size.
    pub size: u64,
    start: u64,
    offered: u64,
    seen: blake3::Hasher,
}

/// Ask for `name` on a stream of its own; with `resume`, offer the server what `partial` holds,
/// for the data to start where it stops matching the server's file.
pub async fn start_download(
    conn: &MultipathConnection,
    name: &str,
    partial: &mut PartialFile,
    resume: bool,
) -> Result<Download> {
    let (mut send, mut recv) = conn.connection().open_bi().await.context("opening a stream")?;
    Request::Get { name: name.to_owned(), resume }.write(&mut send).await?;
    if !resume {
        send.finish().context("finishing the request")?;
    }
    read_reply(&mut recv).await?;
    let mut size = [0u8; 8];
    recv.read_exact(&mut size).await.context("reading the file size")?;
    let size = u64::from_be_bytes(size);
    if !resume {
        return Ok(Download { recv, size, start: 0, offered: 0, seen: blake3::Hasher::new() });
    }
    let offer = partial.offer(size).await?;
    offer.write(&mut send).await?;
    send.finish().context("finishing the request")?;
    let start = offer.read_start(&mut recv).await?;
    let seen = partial.resume_at(start, size).await?;
    Ok(Download { recv, size, start, offered: offer.bytes(), seen })
}

impl Download {
    /// Receive the rest into `partial` and check the whole file, showing progress on `bar`;
    /// returns where the data started.
    pub async fn receive(
        mut self,
        name: &str,
        partial: &mut PartialFile,
        rate: Option<&ByteRate>,
        bar: &ProgressBar,
    ) -> Result<u64> {
        announce(bar, name, self.start, self.offered, self.size);
        let left = self.size - self.start;
        receive_into(&mut self.recv, partial, left, self.seen, rate, |n| bar.inc(n)).await?;
        Ok(self.start)
    }
}

/// Ask for `name` the first protocol's way ('G', as `aggregate` does); returns the stream,
/// positioned at the data, and the data's size.
pub async fn open_download(conn: &MultipathConnection, name: &str) -> Result<(RecvStream, u64)> {
    let (mut send, mut recv) = conn.connection().open_bi().await.context("opening a stream")?;
    Request::Get { name: name.to_owned(), resume: false }.write(&mut send).await?;
    send.finish().context("finishing the request")?;
    read_reply(&mut recv).await?;
    let mut size = [0u8; 8];
    recv.read_exact(&mut size).await.context("reading the file size")?;
    Ok((recv, u64::from_be_bytes(size)))
}

/// Where `get` writes one file: the directory and the file name in it. An existing file is
/// refused unless `--force`.
fn local_target(args: &GetArgs, name: &str) -> Result<(std::sync::Arc<Dir>, String)> {
    let default = || PathBuf::from(name.rsplit('/').next().unwrap_or(name));
    let target = args.output.clone().unwrap_or_else(default);
    if target.exists() && !args.force {
        return Err(anyhow!("{} exists (--force replaces it)", target.display()));
    }
    let parent = target.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(".".as_ref());
    let name = target
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or_else(|| anyhow!("{} is not a file path usable here", target.display()))?;
    Ok((Dir::open(parent)?, name.to_owned()))
}

/// Download a file; it appears under its name only once complete and verified. Cut off, it
/// leaves its partial copy for the next `get` of it to resume (unless `--no-resume`).
pub async fn get(args: GetArgs) -> Result<TransferResult> {
    let name = args.names[0].clone();
    check_path(&name)?;
    let (dir, local_name) = local_target(&args, &name)?;
    let resume = !args.batch.no_resume;
    let mut partial = PartialFile::for_name(dir, &local_name, resume)?;
    let session = connect(&args.connect).await?;
    let started = Instant::now();
    let download = start_download(&session.conn, &name, &mut partial, resume).await?;
    let bar = progress_bar(download.size, args.connect.json);
    let live =
        progress::start(&session.conn, args.connect.interval, Sink::new(args.connect.json, &bar));
    let rate = args.batch.limiter();
    let size = download.size;
    let start = download.receive(&name, &mut partial, rate.as_ref(), &bar).await?;
    partial
        .commit(&local_name, args.force)
        .await
        .map_err(|e| anyhow!("{} (--force replaces it)", one_line(&e)))?;
    let fct = started.elapsed();
    drop(live);
    bar.finish_and_clear();
    let mut result = TransferResult::new("get", name, size, fct, session.conn.report());
    result.resumed(start);
    session.close().await;
    Ok(result)
}
