//! Hostile peers against a running `mpquic serve` (issue #41, part 3): each test runs a client
//! that misbehaves while a well-behaved `mpquic send` or `get` moves a file, and checks three
//! things: the good transfer arrives byte-identical within a slowdown bound of a baseline
//! measured in the same test, the server's peak memory stays under a bound, and the server's
//! log names the limit it enforced.
//!
//! The bounds hold on fast and slow hosts by construction:
//! - The good transfer is paced (`--bwlimit`): its baseline is about `GOOD_SIZE / GOOD_RATE`
//!   = 2 s on any host that keeps up with 2 MiB/s, so the bound is about the server's behaviour
//!   and not the host's speed. Under attack it may take `SLOWDOWN` x the baseline plus `SLACK`:
//!   the hostile client shares the host's CPU (two cores here, shared with builds), so a
//!   tighter factor would measure the host; an unprotected server fails it by far more (a
//!   stalled slot is held until the connection dies, a refused connection never completes).
//! - Memory is the server's peak RSS (VmHWM), which no sampling can miss. `RSS_BOUND` is about
//!   10 x what a server serving these tests peaks at here (13-23 MiB; values in the README), and
//!   a tenth of what the unbounded case it guards would reach (100 unread streams hold 1.25 MB
//!   each per connection; 32 connections of them, 4 GB).

mod common;

use std::net::SocketAddr;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::*;
use mpquic::noq::{self, PathStatus};
use mpquic::{Client, MultipathConnection, Options, PathSpec, Trust};

/// The good transfer's size and pace: 2 s on any host.
const GOOD_SIZE: usize = 4 << 20;
const GOOD_RATE: &str = "2M";
/// Under attack the good transfer may take this many times its baseline, plus `SLACK`.
const SLOWDOWN: u32 = 3;
const SLACK: Duration = Duration::from_secs(5);
/// The server's peak resident memory may not exceed this.
const RSS_BOUND_KIB: u64 = 256 << 10;

/// The server's peak resident set (VmHWM), KiB.
fn peak_rss_kib(server: &ServerProcess) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{}/status", server.child.id())).unwrap();
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

fn assert_rss_bounded(server: &ServerProcess, test: &str) {
    let peak = peak_rss_kib(server);
    eprintln!("{test}: server peak RSS {} MiB (bound {} MiB)", peak >> 10, RSS_BOUND_KIB >> 10);
    assert!(peak < RSS_BOUND_KIB, "{test}: server peak RSS {peak} KiB");
}

/// Wait up to 20 s for the server's log to contain `needle`; the log.
fn log_with(server: &ServerProcess, needle: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let log = server.stderr.lock().unwrap().clone();
        if log.contains(needle) || Instant::now() > deadline {
            assert!(log.contains(needle), "no {needle:?} in the server's log:\n{log}");
            return log;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A well-behaved client: send `source` as `name` (paced), then fetch it back with `get`; both
/// must succeed and the stored and fetched copies match the source. Returns the two times.
fn good_round_trip(server: &ServerProcess, store: &Path, source: &Path, name: &str) -> Duration {
    let addr = server.addr("127.0.0.1");
    let started = Instant::now();
    let sent = mpquic(&[
        "send",
        source.to_str().unwrap(),
        "--name",
        name,
        "--server",
        &addr,
        "--insecure",
        "--bwlimit",
        GOOD_RATE,
    ]);
    assert!(sent.status.success(), "good send: {}", stderr(&sent));
    let back = source.with_extension("back");
    let got = mpquic(&[
        "get",
        name,
        "-o",
        back.to_str().unwrap(),
        "--server",
        &addr,
        "--insecure",
        "--bwlimit",
        GOOD_RATE,
        "--force",
    ]);
    assert!(got.status.success(), "good get: {}", stderr(&got));
    let elapsed = started.elapsed();
    let hash = |p: &Path| blake3::hash(&std::fs::read(p).unwrap());
    assert_eq!(hash(&store.join(name)), hash(source), "stored copy differs");
    assert_eq!(hash(&back), hash(source), "fetched copy differs");
    elapsed
}

/// The baseline, then the good round trip again while `hostile` runs; asserts the slowdown
/// bound. `hostile` runs on `runtime` until the good transfer is over, then is stopped.
fn under_attack<F>(
    test: &str,
    server: &ServerProcess,
    store: &Path,
    runtime: &tokio::runtime::Runtime,
    hostile: F,
) where
    F: std::future::Future<Output = ()> + Send + 'static,
{
    let tmp = tempfile::tempdir().unwrap();
    let source = random_file(tmp.path(), "good.bin", GOOD_SIZE);
    let baseline = good_round_trip(server, store, &source, "baseline.bin");
    let attack = runtime.spawn(hostile);
    // Let the attack build up before the good client starts.
    std::thread::sleep(Duration::from_secs(1));
    let attacked = good_round_trip(server, store, &source, "attacked.bin");
    attack.abort();
    let bound = baseline * SLOWDOWN + SLACK;
    eprintln!("{test}: good round trip {baseline:.2?} alone, {attacked:.2?} under attack (bound {bound:.2?})");
    assert!(attacked <= bound, "{test}: {attacked:?} under attack, {baseline:?} alone");
}

fn start_server(store: &Path, extra: &[&str]) -> ServerProcess {
    let mut args = vec!["--insecure", "--dir", store.to_str().unwrap()];
    args.extend_from_slice(extra);
    ServerProcess::start(&["127.0.0.1"], &args)
}

/// A multipath client of the library (every path from 127.0.0.1), connected to the server.
fn multipath_client(
    runtime: &tokio::runtime::Runtime,
    server: &ServerProcess,
) -> (Client, MultipathConnection, SocketAddr) {
    let addr: SocketAddr = server.addr("127.0.0.1").parse().unwrap();
    let client = Client::new(&Trust::InsecureAnyCertificate, addr.ip()).unwrap();
    let options = Options::default();
    let first = [PathSpec::new(None, addr)];
    let connecting = client.connect("127.0.0.1", &first, &options, options.idle_timeout);
    let (conn, failures) = runtime.block_on(connecting).unwrap();
    assert!(failures.is_empty(), "{failures:?}");
    (client, conn, addr)
}

/// Item 1: paths up to and past the server's limit. The server allows 16 paths at once
/// (mpquic's `Options::max_paths`, sent as the transport parameter initial_max_path_id = 15,
/// raised by one MAX_PATH_ID per abandoned path): the 16 open, the 17th is refused by the
/// client's own stack (a frame beyond MAX_PATH_ID would be a protocol violation the server
/// closes the connection for), and the server announces the limit in its log.
#[test]
fn paths_past_the_limit_are_not_opened() {
    let store = tempfile::tempdir().unwrap();
    let server = start_server(store.path(), &[]);
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let _inside = runtime.enter();
    let (_client, conn, addr) = multipath_client(&runtime, &server);
    let results: Vec<_> =
        (0..20).map(|_| runtime.block_on(conn.open_path(PathSpec::new(None, addr)))).collect();
    let opened = results.iter().filter(|r| r.is_ok()).count();
    assert_eq!(opened, 15, "paths opened beside the first: {results:?}");
    let refused = results.iter().find_map(|r| r.as_ref().err()).unwrap();
    assert!(refused.to_string().contains("max"), "{refused}");
    assert_eq!(conn.open_paths_now().len(), 16);
    log_with(&server, "per connection 16 paths at once (initial_max_path_id 15)");
    // The connection holds its 16 paths while a good client comes and goes.
    under_attack("paths past the limit", &server, store.path(), &runtime, async move {
        std::future::pending::<()>().await;
        drop(conn);
    });
    assert_rss_bounded(&server, "paths past the limit");
}

/// Item 2: a client abandons and re-opens paths in a loop. Each abandon lets it open one more
/// (MAX_PATH_ID rises by one), so nothing in QUIC caps the loop but its pace, and each path
/// ever opened keeps a few KiB of the server's memory for the connection's life: the server
/// closes a connection at its 256th path (--max-paths-opened), and the client, reconnecting
/// to churn again, meets that cap on every connection.
#[test]
fn paths_abandoned_and_reopened_in_a_loop() {
    let store = tempfile::tempdir().unwrap();
    let server = start_server(store.path(), &[]);
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let _inside = runtime.enter();
    let (client, first, addr) = multipath_client(&runtime, &server);
    let (cycles, connections) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(1)));
    let (counted, reconnected) = (cycles.clone(), connections.clone());
    under_attack("path churn", &server, store.path(), &runtime, async move {
        let mut conn = first;
        let options = Options::default();
        loop {
            // noq's open_path pending when the connection closes, or asked for after, neither
            // fails nor resolves (mpquic's gives up after 5 s): look at the connection first,
            // and give an open 1 s.
            if conn.connection().close_reason().is_some() {
                let first = [PathSpec::new(None, addr)];
                if let Ok((next, _)) = client.connect("127.0.0.1", &first, &options, SLACK).await {
                    conn = next;
                    reconnected.fetch_add(1, Ordering::Relaxed);
                }
                continue;
            }
            let opening = conn.open_path(PathSpec::new(None, addr));
            match tokio::time::timeout(Duration::from_secs(1), opening).await {
                Ok(Ok(id)) => {
                    let _ = conn.close_path(id);
                    counted.fetch_add(1, Ordering::Relaxed);
                }
                // All ids in use until the server's MAX_PATH_ID catches up with the abandons.
                _ => tokio::time::sleep(Duration::from_millis(1)).await,
            }
        }
    });
    let (cycles, connections) =
        (cycles.load(Ordering::Relaxed), connections.load(Ordering::Relaxed));
    eprintln!("path churn: {cycles} paths opened and abandoned over {connections} connections");
    assert!(connections >= 2, "the churn did not reach the cap: {cycles} paths");
    log_with(&server, "256 paths opened (--max-paths-opened)");
    assert_rss_bounded(&server, "path churn");
}

/// Item 3: a client flips a path between backup and available as fast as noq lets it. noq's
/// API (`Path::set_status`) queues one PATH_STATUS frame with the latest status: calls between
/// two packets coalesce, so the flood is one frame per packet the client sends, not one per
/// call. The server follows each status the peer sets.
#[test]
fn a_path_status_flood_does_not_slow_the_others() {
    let store = tempfile::tempdir().unwrap();
    let server = start_server(store.path(), &[]);
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let _inside = runtime.enter();
    let (_client, conn, addr) = multipath_client(&runtime, &server);
    let path = runtime.block_on(conn.open_path(PathSpec::new(None, addr))).unwrap();
    let flips = Arc::new(AtomicU64::new(0));
    let counted = flips.clone();
    under_attack("path status flood", &server, store.path(), &runtime, async move {
        for n in 0u64.. {
            let status = if n % 2 == 0 { PathStatus::Backup } else { PathStatus::Available };
            if conn.set_path_status(path, status).is_ok() {
                counted.fetch_add(1, Ordering::Relaxed);
            }
            // Let the frame go out before the next flip.
            tokio::task::yield_now().await;
        }
    });
    let flips = flips.load(Ordering::Relaxed);
    eprintln!("path status flood: {flips} status changes");
    assert!(flips >= 1000, "the flood did not run: {flips} changes");
    assert_rss_bounded(&server, "path status flood");
}

/// Item 4: a client opens the most streams QUIC lets it (noq's MAX_STREAMS, 100 bidirectional;
/// the 101st would wait for credit)
/// and sends nothing after a request header: uploads that announce 1 MiB and never send it.
/// The server serves 16 of one connection at once (--max-streams-per-connection), ends each
/// after --stall-timeout without data, and refuses unidirectional streams outright.
#[test]
fn the_most_streams_sending_nothing_are_capped_and_ended() {
    let store = tempfile::tempdir().unwrap();
    let server = start_server(store.path(), &["--stall-timeout", "3"]);
    let stranger = Stranger::at("127.0.0.3");
    let _inside = stranger.runtime.enter();
    let conn = stranger.connect(&server.addr("127.0.0.1")).unwrap();
    let (held, uni) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let (counted, counted_uni) = (held.clone(), uni.clone());
    let streams = stranger.runtime.spawn(async move {
        let mut open = Vec::new();
        for n in 0..100 {
            let Ok((mut send, recv)) = conn.open_bi().await else { break };
            let name = format!("held-{n}");
            let _ = send.write_all(&header(b'P', name.as_bytes(), Some(1 << 20))).await;
            counted.fetch_add(1, Ordering::Relaxed);
            open.push((send, recv));
        }
        // And unidirectional streams the protocol has no use for, each given a window's data.
        let mut unused = Vec::new();
        for _ in 0..100 {
            let Ok(mut send) = conn.open_uni().await else { break };
            let _ =
                tokio::time::timeout(Duration::from_secs(1), send.write_all(&[0; 1 << 20])).await;
            counted_uni.fetch_add(1, Ordering::Relaxed);
            unused.push(send);
        }
        std::future::pending::<()>().await;
        drop((open, unused));
    });
    let deadline = Instant::now() + Duration::from_secs(30);
    while held.load(Ordering::Relaxed) < 100 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(held.load(Ordering::Relaxed), 100, "streams opened");
    log_with(&server, "16 streams served at once (--max-streams-per-connection)");
    under_attack("streams sending nothing", &server, store.path(), &stranger.runtime, async {
        std::future::pending::<()>().await;
    });
    let log = log_with(&server, "no data moved for 3s (--stall-timeout)");
    assert!(log.contains("refused a unidirectional stream"), "{log}");
    eprintln!("streams sending nothing: {} unidirectional streams", uni.load(Ordering::Relaxed));
    streams.abort();
    assert_rss_bounded(&server, "streams sending nothing");
}

/// Item 5: a thousand clients complete the handshake and go silent (their stacks still
/// acknowledge the server's keep-alives, the harder case: a stack gone dead is closed by the
/// QUIC idle timeout). One address gets 32 connections (--max-connections-per-ip), the others
/// are refused at once; the 32 are closed after --idle-close; the good client, from another
/// address, is served throughout.
#[test]
fn a_thousand_silent_connections_from_one_address() {
    let store = tempfile::tempdir().unwrap();
    let server = start_server(store.path(), &["--idle-close", "5"]);
    let stranger = Stranger::at("127.0.0.3");
    let _inside = stranger.runtime.enter();
    let addr = server.addr("127.0.0.1");
    let attempts: Vec<_> = (0..1000).map(|_| stranger.connect(&addr)).collect();
    let silent: Vec<&noq::Connection> = attempts.iter().filter_map(|c| c.as_ref().ok()).collect();
    assert_eq!(silent.len(), 32, "connections accepted from one address");
    let refused = attempts.iter().filter_map(|c| c.as_ref().err()).next().unwrap();
    assert!(refused.contains("refused"), "{refused}");
    log_with(&server, "32 open from 127.0.0.3 (--max-connections-per-ip)");
    under_attack("silent connections", &server, store.path(), &stranger.runtime, async {
        std::future::pending::<()>().await;
    });
    for conn in &silent {
        let reason = stranger.closed_within(conn, Duration::from_secs(10));
        let reason = reason.expect("a silent connection is closed after --idle-close");
        assert!(reason.contains("no transfer for 5s"), "{reason}");
    }
    assert_rss_bounded(&server, "silent connections");
}

/// Item 6: clients ask for a download and stop reading it: the server's sends block on flow
/// control. Each is ended after --stall-timeout (its slot freed, the stream reset), and the
/// good client is served meanwhile.
#[test]
fn a_download_nobody_reads_is_ended() {
    let store = tempfile::tempdir().unwrap();
    random_file(store.path(), "big.bin", 64 << 20);
    let server = start_server(store.path(), &["--stall-timeout", "3"]);
    let stranger = Stranger::at("127.0.0.3");
    let _inside = stranger.runtime.enter();
    let conn = stranger.connect(&server.addr("127.0.0.1")).unwrap();
    let ended = Arc::new(AtomicBool::new(false));
    let reset = ended.clone();
    let readers = stranger.runtime.spawn(async move {
        let mut streams = Vec::new();
        for _ in 0..8 {
            let (mut send, mut recv) = conn.open_bi().await.unwrap();
            send.write_all(&header(b'G', b"big.bin", None)).await.unwrap();
            send.finish().unwrap();
            // The reply and the first bytes, then nothing more is read.
            let mut first = [0u8; 64];
            recv.read_exact(&mut first).await.unwrap();
            streams.push((send, recv));
        }
        // After the stall timeout, the server resets the stream: reading again says so.
        let (_, recv) = &mut streams[0];
        tokio::time::sleep(Duration::from_secs(5)).await;
        let mut rest = vec![0u8; 64 << 20];
        if recv.read_exact(&mut rest).await.is_err() {
            reset.store(true, Ordering::Relaxed);
        }
        std::future::pending::<()>().await;
        drop(streams);
    });
    under_attack("unread downloads", &server, store.path(), &stranger.runtime, async {
        std::future::pending::<()>().await;
    });
    log_with(&server, "no data moved for 3s (--stall-timeout)");
    let deadline = Instant::now() + Duration::from_secs(20);
    while !ended.load(Ordering::Relaxed) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(ended.load(Ordering::Relaxed), "the stalled download was not reset");
    readers.abort();
    assert_rss_bounded(&server, "unread downloads");
}

/// The other side of --stall-timeout: a transfer waiting for its share of the server's own
/// --bwlimit is not stalled. At 128 KiB/s each 256 KiB chunk after the first waits 2 s, twice
/// the stall timeout; both directions complete.
#[test]
fn a_transfer_paced_by_the_server_is_not_stalled() {
    let store = tempfile::tempdir().unwrap();
    let server = start_server(store.path(), &["--bwlimit", "128K", "--stall-timeout", "1"]);
    let tmp = tempfile::tempdir().unwrap();
    let source = random_file(tmp.path(), "paced.bin", 1 << 20);
    let took = good_round_trip(&server, store.path(), &source, "paced.bin");
    // 2 x (1 MiB - the 256 KiB burst) at 128 KiB/s: 12 s at least.
    assert!(took >= Duration::from_secs(10), "the server's cap was not applied: {took:?}");
    let log = server.stderr.lock().unwrap().clone();
    assert!(!log.contains("no data moved"), "{log}");
}
