//! Path failover over loopback: each path crosses a UDP relay that the test can black-hole.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use mpquic::{
    Client, ConnectionReport, FailoverEvent, Identity, Options, PathClose, PathFailure, PathSpec,
    Server, Trust,
};

use tokio::sync::broadcast::error::TryRecvError;

mod common;
use common::{ip, relay};

/// The writer's piece, and its pause after each: about 20 MB/s, so that data is always in
/// flight on both paths, and the server's longest wait between reads measures the failover.
const PIECE: usize = 1 << 20;
const PAUSE: Duration = Duration::from_millis(50);

/// How long the writer waits for the dead path to come back before the test fails: noq's
/// re-probe timers (0.5 s, doubling while unanswered) bring it back within a few seconds of the
/// black hole's end, even on a loaded host.
const RECOVERY_DEADLINE: Duration = Duration::from_secs(20);

/// Pieces written after the recovery, so that the new path carries data before the end.
const PIECES_AFTER_RECOVERY: usize = 10;

/// Byte `i` of the upload: every position distinct from its neighbours.
fn byte(i: usize) -> u8 {
    (i * 7 + i / 4099) as u8
}

/// What the receiving server saw: bytes, their sum, and the longest wait between two reads.
struct Received {
    len: u64,
    sum: u64,
    longest_stall: Duration,
}

/// Upload over two relayed paths and black-hole path `dead` for 1.5 s, 300 ms into the
/// transfer, writing until the connection reports the dead path recovered and a little more;
/// the sender's idle timeout (3 s) is shorter than the server's (10 s). Returns the client's
/// report at the end of the transfer.
async fn transfer_with_black_hole(dead: usize) -> (Received, ConnectionReport) {
    let listen = [SocketAddr::new(ip("127.0.0.1"), 0), SocketAddr::new(ip("127.0.0.2"), 0)];
    let server = Server::bind(
        &listen,
        &Identity::self_signed(&["localhost".into()]).unwrap(),
        Options { path_failure: Some(PathFailure::default()), ..Options::default() },
    )
    .unwrap();
    let port = server.local_addr().unwrap().port();
    let serving = tokio::spawn(async move {
        let conn = server.accept().await.unwrap().established().await.unwrap();
        let (mut send, mut recv) = conn.connection().accept_bi().await.unwrap();
        let (mut len, mut sum, mut longest_stall) = (0u64, 0u64, Duration::ZERO);
        let mut last = Instant::now();
        while let Some(chunk) = recv.read_chunk(usize::MAX).await.unwrap() {
            longest_stall = longest_stall.max(last.elapsed());
            last = Instant::now();
            len += chunk.len() as u64;
            sum += chunk.iter().map(|&b| u64::from(b)).sum::<u64>();
        }
        send.write_all(b"ok").await.unwrap();
        send.finish().unwrap();
        let _ = send.stopped().await;
        conn.connection().closed().await;
        Received { len, sum, longest_stall }
    });

    let forwarding = [Arc::new(AtomicBool::new(true)), Arc::new(AtomicBool::new(true))];
    let relay0 =
        relay(ip("127.0.0.3"), SocketAddr::new(ip("127.0.0.1"), port), forwarding[0].clone()).await;
    let relay1 =
        relay(ip("127.0.0.4"), SocketAddr::new(ip("127.0.0.2"), port), forwarding[1].clone()).await;
    let client = Client::new(&Trust::InsecureAnyCertificate, ip("127.0.0.1")).unwrap();
    let paths = [
        PathSpec::new(Some(ip("127.0.0.1")), relay0),
        PathSpec::new(Some(ip("127.0.0.2")), relay1),
    ];
    let qlog_dir =
        std::env::temp_dir().join(format!("mpquic-failover-{}-{dead}", std::process::id()));
    let _ = std::fs::remove_dir_all(&qlog_dir);
    let options = Options {
        idle_timeout: Duration::from_secs(3),
        qlog_dir: Some(qlog_dir.clone()),
        path_failure: Some(PathFailure::default()),
        ..Options::default()
    };
    let (conn, failures) =
        client.connect("localhost", &paths, &options, Duration::from_secs(5)).await.unwrap();
    assert!(failures.is_empty(), "{failures:?}");
    let mut failovers = conn.failover_events();

    let switch = forwarding[dead].clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        switch.store(false, Ordering::Relaxed);
        tokio::time::sleep(Duration::from_millis(1500)).await;
        switch.store(true, Ordering::Relaxed);
    });
    let (mut send, mut recv) = conn.connection().open_bi().await.unwrap();
    // The transfer lasts until the event it is about: the writer keeps writing (paced, so that
    // data flows throughout) until the connection reports the dead path recovered, however
    // long noq's re-probe timers take on this host, then a little more. Sized by bytes (48
    // pieces, 2.4 s at best), it could end before the re-probe that brings the path back.
    let (mut sent, mut expected) = (0usize, 0u64);
    let started = Instant::now();
    let mut after_recovery = None;
    while after_recovery != Some(0) {
        let piece: Vec<u8> = (sent..sent + PIECE).map(byte).collect();
        send.write_all(&piece).await.unwrap();
        sent += PIECE;
        expected += piece.iter().map(|&b| u64::from(b)).sum::<u64>();
        tokio::time::sleep(PAUSE).await;
        let mut recovered = false;
        loop {
            match failovers.try_recv() {
                Ok(event) => recovered |= recovers(&event, dead),
                // Events missed: the report has them all.
                Err(TryRecvError::Lagged(_)) => {
                    recovered |= conn.report().failovers.iter().any(|e| recovers(e, dead))
                }
                Err(_) => break,
            }
        }
        if recovered && after_recovery.is_none() {
            after_recovery = Some(PIECES_AFTER_RECOVERY);
        }
        match &mut after_recovery {
            Some(left) => *left -= 1,
            None => assert!(
                started.elapsed() < RECOVERY_DEADLINE,
                "path {dead} not recovered within {RECOVERY_DEADLINE:?}: {:?}",
                conn.report().failovers
            ),
        }
    }
    send.finish().unwrap();
    assert_eq!(recv.read_to_end(16).await.unwrap(), b"ok");
    let report = conn.report();
    conn.connection().close(0u32.into(), b"done");
    let received = serving.await.unwrap();
    drop(conn);
    let _ = tokio::time::timeout(Duration::from_secs(3), client.wait_idle()).await;
    drop(client);
    let trace = qlog_text(&qlog_dir);
    let _ = std::fs::remove_dir_all(&qlog_dir);
    for name in ["mpquic:path_failed", "mpquic:path_recovered", "mpquic:path_closed"] {
        assert!(
            trace.contains(&format!("\"name\":\"{name}\"")),
            "no {name} event in the client's qlog"
        );
    }
    assert!(trace.contains("\"reason\":\"failed\""), "no path closed as failed in the qlog");
    assert_eq!((received.len, received.sum), (sent as u64, expected), "data corrupted");
    (received, report)
}

/// Whether `event` is a path over the addresses of path `dead` coming back.
fn recovers(event: &FailoverEvent, dead: usize) -> bool {
    matches!(event, FailoverEvent::PathRecovered { failed_path, .. } if *failed_path as usize == dead)
}

/// Every trace file in `dir`, concatenated.
fn qlog_text(dir: &std::path::Path) -> String {
    let files = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    files.map(|f| std::fs::read_to_string(f.unwrap().path()).unwrap()).collect()
}

async fn black_hole_is_survived(dead: u32) {
    let (received, report) = transfer_with_black_hole(dead as usize).await;
    let events = &report.failovers;
    println!(
        "path {dead} black-holed: longest stall {:?}; events {events:?}",
        received.longest_stall
    );
    assert!(
        matches!(events.first(), Some(FailoverEvent::PathFailed { path, .. }) if *path == dead),
        "path {dead} was not declared failed: {events:?}"
    );
    assert!(
        events.iter().any(|e| matches!(e, FailoverEvent::PathRecovered { failed_path, .. } if *failed_path == dead)),
        "path {dead} did not come back once restored: {events:?}"
    );
    assert!(received.longest_stall < Duration::from_secs(1), "stall {:?}", received.longest_stall);
    // The failed path reads so in the report; the one that replaced it, and the other, are open.
    let reason = |id| report.paths.iter().find(|p| p.id == id).map(|p| p.close_reason);
    assert_eq!(reason(dead), Some(Some(PathClose::Failed)), "{:?}", report.paths);
    let recovered = events.iter().find_map(|e| match e {
        FailoverEvent::PathRecovered { path, .. } => Some(*path),
        _ => None,
    });
    assert_eq!(recovered.map(reason), Some(Some(None)), "{:?}", report.paths);
    assert_eq!(reason(1 - dead), Some(None), "{:?}", report.paths);
}

/// One test for both paths, run one after the other: two transfers at once on a 2-core machine
/// would measure each other rather than the failover.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_black_holed_path_fails_over_and_comes_back() {
    black_hole_is_survived(0).await;
    black_hole_is_survived(1).await;
}
