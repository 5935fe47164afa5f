//! The library end to end over loopback: real sockets, several paths, coupled controllers.

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use mpquic::{
    Client, Congestion, EcnCodepoint, Identity, MultipathConnection, Options, PathClose,
    PathFailure, PathSpec, Scheduler, Server, Trust,
};

const PAYLOAD: usize = 24 << 20;

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

/// Failover that a host starved of CPU does not trip, for the tests that are not about failover:
/// on such a host (the suite runs many tests at once) loopback can stay silent past the
/// default rule's 200 ms, which then abandons a path that never failed (a fresh path was seen
/// abandoned after its first few kB 1-4 times in 8 parallel copies). No path in these tests
/// fails, so a failure declared within 5 s is the host's.
fn patient() -> PathFailure {
    PathFailure { min: Duration::from_secs(5), ..PathFailure::default() }
}

fn payload() -> Vec<u8> {
    (0..PAYLOAD).map(|i| (i * 7 + i / 4099) as u8).collect()
}

/// A server on 127.0.0.1 and 127.0.0.2 that answers each stream with the number of bytes it
/// read and their sum, and a client connected to it over two paths; failover is `patient`, as
/// no test using this is about it.
async fn pair(
    congestion: Congestion,
    scheduler: Scheduler,
) -> (MultipathConnection, Client, tokio::task::JoinHandle<()>) {
    let path_failure = Some(patient());
    pair_with(Options { congestion, scheduler, path_failure, ..Options::default() }).await
}

async fn pair_with(options: Options) -> (MultipathConnection, Client, tokio::task::JoinHandle<()>) {
    pair_over(options, 2).await
}

/// The second path of [`pair_over`], to open later when it starts with one.
fn second_path(port: u16) -> PathSpec {
    PathSpec::new(Some(ip("127.0.0.2")), SocketAddr::new(ip("127.0.0.2"), port))
}

/// As [`pair_with`], connected over the first `paths` of its two paths.
async fn pair_over(
    options: Options,
    paths: usize,
) -> (MultipathConnection, Client, tokio::task::JoinHandle<()>) {
    let listen = [SocketAddr::new(ip("127.0.0.1"), 0), SocketAddr::new(ip("127.0.0.2"), 0)];
    let server = Server::bind(
        &listen,
        &Identity::self_signed(&["localhost".into()]).unwrap(),
        options.clone(),
    )
    .unwrap();
    let port = server.local_addr().unwrap().port();
    let serving = tokio::spawn(async move {
        let conn = server.accept().await.unwrap().established().await.unwrap();
        let (mut send, mut recv) = conn.connection().accept_bi().await.unwrap();
        let data = recv.read_to_end(usize::MAX).await.unwrap();
        let sum: u64 = data.iter().map(|&b| u64::from(b)).sum();
        send.write_all(&(data.len() as u64).to_be_bytes()).await.unwrap();
        send.write_all(&sum.to_be_bytes()).await.unwrap();
        send.finish().unwrap();
        let _ = send.stopped().await;
        // Keep the endpoint alive until the client has read the answer.
        conn.connection().closed().await;
    });
    let client = Client::new(&Trust::InsecureAnyCertificate, ip("127.0.0.1")).unwrap();
    let all = [PathSpec::new(None, SocketAddr::new(ip("127.0.0.1"), port)), second_path(port)];
    let (conn, failures) =
        client.connect("localhost", &all[..paths], &options, Duration::from_secs(5)).await.unwrap();
    assert!(failures.is_empty(), "{failures:?}");
    (conn, client, serving)
}

async fn read_answer(recv: &mut mpquic::noq::RecvStream) -> (u64, u64) {
    let answer = recv.read_to_end(16).await.unwrap();
    (
        u64::from_be_bytes(answer[..8].try_into().unwrap()),
        u64::from_be_bytes(answer[8..].try_into().unwrap()),
    )
}

#[tokio::test]
async fn a_path_closed_mid_transfer_leaves_the_transfer_to_the_others() {
    let (conn, _client, serving) = pair("lia".parse().unwrap(), Scheduler::RoundRobin).await;
    assert_eq!(conn.open_paths_now().len(), 2);
    let data = payload();
    let expected_sum: u64 = data.iter().map(|&b| u64::from(b)).sum();
    let (mut send, mut recv) = conn.connection().open_bi().await.unwrap();
    let (first, rest) = data.split_at(PAYLOAD / 4);
    send.write_all(first).await.unwrap();
    let second =
        *conn.open_paths_now().iter().find(|&&id| id != mpquic::noq::PathId::ZERO).unwrap();
    let before = conn.report();
    assert!(
        before.paths.iter().all(|p| p.bytes_sent > 0),
        "both paths carried data before the close: {before:?}"
    );
    conn.close_path(second).unwrap();
    send.write_all(rest).await.unwrap();
    send.finish().unwrap();
    assert_eq!(read_answer(&mut recv).await, (PAYLOAD as u64, expected_sum));
    let after = conn.report();
    let closed = after.paths.iter().find(|p| p.id == 1).unwrap();
    assert!(!closed.open, "{after:?}");
    assert_eq!(closed.close_reason, Some(PathClose::Closed), "{after:?}");
    assert_eq!(after.paths[0].close_reason, None, "path 0 is open: {after:?}");
    conn.connection().close(0u32.into(), b"");
    // Once the connection is closed, the path open until then ended with it.
    let ended = conn.report();
    assert_eq!(ended.paths[0].close_reason, Some(PathClose::ConnectionEnd), "{ended:?}");
    assert_eq!(ended.paths[1].close_reason, Some(PathClose::Closed), "{ended:?}");
    serving.await.unwrap();
}

/// A path opened mid-transfer carries data from its validation on, under the schedulers that
/// rank by what they see of the paths: before its first RTT sample it ranks first (ECF and
/// lowest-RTT) or has sent least (round-robin). Under `stack` it carries data only while path
/// 0's window is full, which loopback never makes it (with `stack` in this list the test fails:
/// the joined path sent 0.03% of the bytes).
#[tokio::test]
async fn a_path_opened_mid_transfer_carries_data() {
    for scheduler in [Scheduler::Ecf, Scheduler::LowestRtt, Scheduler::RoundRobin] {
        let name = scheduler.name();
        // The join is under test, not failover.
        let options = Options {
            congestion: "lia".parse().unwrap(),
            scheduler,
            path_failure: Some(patient()),
            ..Options::default()
        };
        let (conn, _client, serving) = pair_over(options, 1).await;
        let data = payload();
        let expected_sum: u64 = data.iter().map(|&b| u64::from(b)).sum();
        let (mut send, mut recv) = conn.connection().open_bi().await.unwrap();
        let (first, rest) = data.split_at(PAYLOAD / 4);
        send.write_all(first).await.unwrap();
        let port = conn.report().paths[0].remote.unwrap().port();
        conn.open_path(second_path(port)).await.unwrap();
        send.write_all(rest).await.unwrap();
        send.finish().unwrap();
        assert_eq!(read_answer(&mut recv).await, (PAYLOAD as u64, expected_sum));
        let report = conn.report();
        let joined = report.paths.iter().find(|p| p.id == 1).unwrap();
        // More than probes and PINGs: at least the first window's worth of stream data.
        assert!(joined.bytes_sent > 8_000, "{name}: {report:?}");
        conn.connection().close(0u32.into(), b"");
        serving.await.unwrap();
    }
}

/// The receiver acknowledges every path's packets on whichever path it sends on (here path 0),
/// so a sender's extra paths receive nothing; they must still outlive the per-path idle
/// timeout while they carry data, and so must a path the controller keeps from new data.
#[tokio::test]
async fn paths_outlive_the_idle_timeout_while_the_connection_is_in_use() {
    for (controller, scheduler) in [("lia", Scheduler::RoundRobin), ("amp", Scheduler::Stack)] {
        let options = Options {
            congestion: controller.parse().unwrap(),
            scheduler,
            idle_timeout: Duration::from_millis(600),
            // The idle timeout is under test, not failover.
            path_failure: Some(patient()),
            ..Options::default()
        };
        let (conn, _client, serving) = pair_with(options).await;
        let (mut send, mut recv) = conn.connection().open_bi().await.unwrap();
        // A trickle for 4 idle timeouts.
        let chunk = vec![7u8; 16 << 10];
        for _ in 0..48 {
            send.write_all(&chunk).await.unwrap();
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        send.finish().unwrap();
        assert_eq!(read_answer(&mut recv).await.0, 48 * (16 << 10));
        assert_eq!(conn.open_paths_now().len(), 2, "{controller}: {:?}", conn.report());
        conn.connection().close(0u32.into(), b"");
        serving.await.unwrap();
    }
}

#[tokio::test]
async fn coupled_controllers_carry_data_on_both_paths_and_report_state() {
    for name in ["amp", "xmp", "dcm"] {
        // Loopback does not congest: under noq's own order (lowest path id with room) the
        // initial path would carry everything, so spread packets to exercise both paths. The
        // controllers are under test, not failover (`pair`'s is patient): a path failed for the
        // host's stall would leave the other to carry the rest.
        let (conn, _client, serving) = pair(name.parse().unwrap(), Scheduler::RoundRobin).await;
        let data = payload();
        let (mut send, mut recv) = conn.connection().open_bi().await.unwrap();
        send.write_all(&data).await.unwrap();
        send.finish().unwrap();
        assert_eq!(read_answer(&mut recv).await.0, PAYLOAD as u64);
        let report = conn.report();
        assert_eq!(report.controller, name);
        let state = report.controller_state.as_ref().expect("our controller reports its state");
        assert_eq!(state.algorithm, name);
        assert_eq!(state.paths.len(), 2, "{report:?}");
        for path in &report.paths {
            // Only AMP's suppression may keep a path from data, and never the initial one; a
            // path left (nearly) idle otherwise is a scheduling bug.
            let suppressed = path.id != 0 && state.suppressions > 0;
            assert!(
                path.bytes_sent > 100_000 || suppressed,
                "{name}: path {} carried {} bytes without being suppressed: {report:?}",
                path.id,
                path.bytes_sent
            );
        }
        assert!(
            report.paths.iter().all(|p| p.rtt_p50_ms.is_some()),
            "RTT samples recorded: {report:?}"
        );
        conn.connection().close(0u32.into(), b"");
        serving.await.unwrap();
    }
}

/// The ECN-capable codepoint reaches the wire as chosen: the controller's own (ECT(0) for
/// AMP) unless the options override it (ECT(1) for DCTCP here), every path's packets arrive
/// with it (the peer's ECN counts, read back from its ACK frames) and never with the other,
/// and ECN stays validated (a path whose validation failed would stop counting).
#[tokio::test]
async fn every_path_sends_the_chosen_ecn_codepoint() {
    for (controller, codepoint, sent) in
        [("amp", None, EcnCodepoint::Ect0), ("dctcp", Some(EcnCodepoint::Ect1), EcnCodepoint::Ect1)]
    {
        let options = Options {
            congestion: controller.parse().unwrap(),
            scheduler: Scheduler::RoundRobin,
            ecn_codepoint: codepoint,
            ..Options::default()
        };
        let (conn, _client, serving) = pair_with(options).await;
        let (mut send, mut recv) = conn.connection().open_bi().await.unwrap();
        send.write_all(&payload()).await.unwrap();
        send.finish().unwrap();
        assert_eq!(read_answer(&mut recv).await.0, PAYLOAD as u64);
        let report = conn.report();
        for path in &report.paths {
            let [ect0, ect1] = path.ect_packets.expect("our controller counts codepoints");
            let (ours, other) = match sent {
                EcnCodepoint::Ect0 => (ect0, ect1),
                EcnCodepoint::Ect1 => (ect1, ect0),
            };
            // Every data packet of the path, less the few sent before ECN was validated.
            let floor = path.packets_sent * 9 / 10;
            assert!(
                ours >= floor,
                "{controller}: path {} {sent:?} {ours} of {}",
                path.id,
                path.packets_sent
            );
            assert_eq!(
                other, 0,
                "{controller}: path {} got the other codepoint: {report:?}",
                path.id
            );
        }
        conn.connection().close(0u32.into(), b"");
        serving.await.unwrap();
    }
}
