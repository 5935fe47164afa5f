//! Metrics through the `metrics` facade: nothing without `Options::metrics`, per-path series
//! with it, a closed connection's gauges taken back out and its counters brought to its final
//! totals. One test: the recorder is global.

use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, Instant};

use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};
use mpquic::{Client, Identity, MultipathConnection, Options, PathSpec, Scheduler, Server, Trust};

const PAYLOAD: usize = 8 << 20;

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

/// Upload `PAYLOAD` bytes over two loopback paths with `options` on both ends; returns the
/// client's connection (closed) once the server has read everything and closed its own. With
/// metrics on, `handle` renders them: the upload ends only once they show both paths, and the
/// server holds its endpoint until they show no connection open.
async fn upload(options: &Options, handle: Option<&PrometheusHandle>) -> MultipathConnection {
    let listen = [SocketAddr::new(ip("127.0.0.1"), 0), SocketAddr::new(ip("127.0.0.2"), 0)];
    let identity = Identity::self_signed(&["localhost".into()]).unwrap();
    let server = Server::bind(&listen, &identity, options.clone()).unwrap();
    let port = server.local_addr().unwrap().port();
    let server_handle = handle.cloned();
    let serving = tokio::spawn(async move {
        let conn = server.accept().await.unwrap().established().await.unwrap();
        let mut recv = conn.connection().accept_uni().await.unwrap();
        let data = recv.read_to_end(usize::MAX).await.unwrap();
        assert_eq!(data.len(), PAYLOAD);
        conn.connection().close(0u32.into(), b"");
        // Held (and with it the connection, which its reporter follows) until the reporters of
        // both ends have started and seen their ends closed, with a last sample, however long
        // the host takes to run them: a fixed hold could end first on a loaded host.
        if let Some(handle) = server_handle {
            let (text, closed) = eventually(&handle, |text| {
                value(text, "mpquic_connections_opened_total") == Some(2.0)
                    && value(text, "mpquic_connections") == Some(0.0)
            })
            .await;
            assert!(closed, "the reporters never saw the connection closed:\n{text}");
        }
    });
    let client = Client::new(&Trust::InsecureAnyCertificate, ip("127.0.0.1")).unwrap();
    let paths = [
        PathSpec::new(None, SocketAddr::new(ip("127.0.0.1"), port)),
        PathSpec::new(Some(ip("127.0.0.2")), SocketAddr::new(ip("127.0.0.2"), port)),
    ];
    let (conn, failures) =
        client.connect("localhost", &paths, options, Duration::from_secs(5)).await.unwrap();
    assert!(failures.is_empty(), "{failures:?}");
    let mut send = conn.connection().open_uni().await.unwrap();
    send.write_all(&vec![7u8; PAYLOAD]).await.unwrap();
    // Both paths stay open until the samples have seen them, whatever the host's speed: on a
    // fast host the upload ended before the first sample saw path 1, which then had no
    // gauges; on a loaded one a fixed hold can pass before the reporter runs.
    if let Some(handle) = handle {
        let (text, seen) = eventually(handle, |text| {
            ["0", "1"].iter().all(|path| {
                let series = |name: &str| value(text, &format!("{name}{{path=\"{path}\"}}"));
                series("mpquic_path_sent_bytes_total") > Some(0.0)
                    && series("mpquic_path_received_bytes_total") > Some(0.0)
                    && series("mpquic_path_cwnd_bytes") > Some(0.0)
                    && series("mpquic_path_rtt_seconds_count") > Some(0.0)
            })
        })
        .await;
        assert!(seen, "the samples never saw both paths carry data:\n{text}");
    }
    send.finish().unwrap();
    conn.connection().closed().await;
    serving.await.unwrap();
    conn
}

/// The value of one series (`name{labels}` exactly as rendered) in Prometheus text.
fn value(text: &str, series: &str) -> Option<f64> {
    text.lines().find_map(|line| line.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
}

/// Render until `check` holds on the text, for up to 10 s; the last text and whether it held.
async fn eventually(handle: &PrometheusHandle, check: impl Fn(&str) -> bool) -> (String, bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let text = handle.render();
        if check(&text) || Instant::now() > deadline {
            let held = check(&text);
            return (text, held);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_are_reported_only_when_asked_for_and_leave_with_the_connection() {
    let recorder = PrometheusBuilder::new().build_recorder();
    let handle = recorder.handle();
    metrics::set_global_recorder(recorder).unwrap();
    let base = Options { scheduler: Scheduler::RoundRobin, ..Options::default() };

    let _quiet = upload(&base, None).await;
    assert!(!handle.render().contains("mpquic_"), "metrics off: {}", handle.render());

    let on = Options { metrics: Some(Duration::from_millis(50)), ..base.clone() };
    let conn = upload(&on, Some(&handle)).await;
    // Both ends of the connection report into this process's recorder.
    let sent = conn.report().paths.iter().map(|p| p.bytes_sent).sum::<u64>();
    assert!(sent >= PAYLOAD as u64);
    let (text, done) = eventually(&handle, |text| {
        let total = |path| value(text, &format!("mpquic_path_sent_bytes_total{{path=\"{path}\"}}"));
        total(0).unwrap_or(0.0) + total(1).unwrap_or(0.0) >= sent as f64
            && value(text, "mpquic_connections") == Some(0.0)
    })
    .await;
    assert!(done, "the upload's bytes on both paths, and no connection left open:\n{text}");
    for path in ["0", "1"] {
        let series = |name: &str| value(&text, &format!("{name}{{path=\"{path}\"}}"));
        assert!(series("mpquic_path_sent_bytes_total") > Some(0.0), "path {path}:\n{text}");
        assert!(series("mpquic_path_received_bytes_total") > Some(0.0), "path {path}:\n{text}");
        // Gauges are each open connection's share: none is left.
        assert_eq!(series("mpquic_path_cwnd_bytes"), Some(0.0), "path {path}:\n{text}");
        let rtt = format!("mpquic_path_rtt_seconds_count{{path=\"{path}\"}}");
        assert!(value(&text, &rtt) > Some(0.0), "RTT samples on path {path}:\n{text}");
    }
    assert_eq!(value(&text, "mpquic_connections_opened_total"), Some(2.0), "{text}");
    assert_eq!(value(&text, "mpquic_paths{state=\"active\"}"), Some(0.0), "{text}");

    // Sampled once at the start and never again before the close: the counters must still end
    // where the connections did, from their final statistics.
    let total = |text: &str, name: &str| {
        (0..2).filter_map(|p| value(text, &format!("{name}{{path=\"{p}\"}}"))).sum::<f64>()
    };
    let before = handle.render();
    let rare = Options { metrics: Some(Duration::from_secs(3600)), ..base };
    let conn = upload(&rare, None).await;
    let sent = conn.report().paths.iter().map(|p| p.bytes_sent).sum::<u64>() as f64;
    drop(conn);
    let grown = |text: &str, name| total(text, name) - total(&before, name);
    let (text, counted) = eventually(&handle, |text| {
        value(text, "mpquic_connections") == Some(0.0)
            && grown(text, "mpquic_path_sent_bytes_total") >= sent
            && grown(text, "mpquic_path_received_bytes_total") >= PAYLOAD as f64
    })
    .await;
    assert!(
        counted,
        "an upload of {PAYLOAD} bytes ({sent} sent by the client) between two samples counted \
         {} sent and {} received:\n{text}",
        grown(&text, "mpquic_path_sent_bytes_total"),
        grown(&text, "mpquic_path_received_bytes_total"),
    );
}
