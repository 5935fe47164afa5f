//! `mpquic serve --metrics` scraped by a real Prometheus server during a two-path upload: the
//! per-path series are read back through Prometheus's HTTP API.

mod common;

use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::*;
use serde_json::Value;

/// A free TCP port on loopback (the OS picks it; it is released for the caller to bind).
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// A Prometheus server of its own (own config, storage and port), killed on drop.
struct Prometheus {
    child: Child,
    url: String,
}

impl Prometheus {
    /// Start Prometheus scraping `target` every second.
    fn start(dir: &Path, target: &str) -> Prometheus {
        let config = dir.join("prometheus.yml");
        let yaml = format!(
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n  - job_name: mpquic\n    static_configs:\n      - targets: ['{target}']\n"
        );
        std::fs::write(&config, yaml).unwrap();
        let listen = format!("127.0.0.1:{}", free_port());
        let child = Command::new("prometheus")
            .arg(format!("--config.file={}", config.display()))
            .arg(format!("--storage.tsdb.path={}", dir.join("data").display()))
            .arg(format!("--web.listen-address={listen}"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start prometheus");
        Prometheus { child, url: format!("http://{listen}") }
    }

    /// The result vector of an instant query, or `None` while Prometheus does not answer.
    fn query(&self, expr: &str) -> Option<Vec<Value>> {
        let mut reply =
            ureq::get(format!("{}/api/v1/query", self.url)).query("query", expr).call().ok()?;
        let body: Value = serde_json::from_str(&reply.body_mut().read_to_string().ok()?).ok()?;
        assert_eq!(body["status"], "success", "query {expr}: {body}");
        body["data"]["result"].as_array().cloned()
    }

    /// The query's values by the value of `label`, e.g. `{"0": 1.2e6, "1": 1.1e6}` by path.
    fn by_label(&self, expr: &str, label: &str) -> Vec<(String, f64)> {
        let mut values: Vec<(String, f64)> = self
            .query(expr)
            .unwrap_or_default()
            .iter()
            .map(|series| {
                let key = series["metric"][label].as_str().unwrap_or("").to_owned();
                (key, series["value"][1].as_str().unwrap().parse().unwrap())
            })
            .collect();
        values.sort_by(|a, b| a.0.cmp(&b.0));
        values
    }

    /// Wait up to `limit` for `check` to hold; whether it did.
    fn wait_for(&self, limit: Duration, mut check: impl FnMut(&Prometheus) -> bool) -> bool {
        let deadline = Instant::now() + limit;
        while Instant::now() < deadline {
            if check(self) {
                return true;
            }
            std::thread::sleep(Duration::from_millis(250));
        }
        false
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn prometheus_installed() -> bool {
    Command::new("prometheus").arg("--version").output().is_ok_and(|o| o.status.success())
}

#[test]
fn prometheus_reads_per_path_series_from_serve_during_a_transfer() {
    const TEST: &str = "prometheus_reads_per_path_series_from_serve_during_a_transfer";
    if !prometheus_installed() {
        return mpquic_skip::skip(
            TEST,
            "`prometheus` is not installed (apt-get install prometheus)",
        );
    }
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    std::fs::create_dir(&store).unwrap();
    let metrics = format!("127.0.0.1:{}", free_port());
    let server = ServerProcess::start(
        &["127.0.0.1", "127.0.0.2"],
        &["--insecure", "--dir", store.to_str().unwrap(), "--metrics", &metrics],
    );
    let prometheus = Prometheus::start(tmp.path(), &metrics);
    let scraping = |p: &Prometheus| p.by_label("up", "job") == [("mpquic".to_owned(), 1.0)];
    assert!(
        prometheus.wait_for(Duration::from_secs(60), scraping),
        "Prometheus never scraped the server: {:?}",
        prometheus.query("up")
    );

    // 24 MiB at 2 MiB/s: a transfer of about 12 s, against Prometheus's 1 s scrapes.
    let source = random_file(tmp.path(), "payload.bin", 24 << 20);
    let mut send = Command::new(BIN)
        .args(["send", source.to_str().unwrap(), "--insecure", "--bwlimit", "2M"])
        .args(["--path", &format!("127.0.0.1={}", server.addr("127.0.0.1"))])
        .args(["--path", &format!("127.0.0.2={}", server.addr("127.0.0.2"))])
        .args(["--server", &server.addr("127.0.0.1"), "--scheduler", "round-robin"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();

    let paths = ["0".to_owned(), "1".to_owned()];
    let both_paths = |series: &[(String, f64)]| {
        series.len() == 2
            && series.iter().zip(&paths).all(|((path, value), want)| path == want && *value > 0.0)
    };
    let mut seen = (Vec::new(), Vec::new(), Vec::new());
    let live = prometheus.wait_for(Duration::from_secs(60), |p| {
        seen = (
            p.by_label("mpquic_path_received_bytes_total", "path"),
            p.by_label("mpquic_path_cwnd_bytes", "path"),
            p.by_label(r#"mpquic_path_rtt_seconds{quantile="0.5"}"#, "path"),
        );
        both_paths(&seen.0) && both_paths(&seen.1) && both_paths(&seen.2)
    });
    let running = send.try_wait().unwrap().is_none();
    assert!(live, "per-path series (received bytes, window, RTT) never read back: {seen:?}");
    assert!(running, "the series were read only after the transfer ended");
    let connections = prometheus.by_label("mpquic_connections", "job");
    assert_eq!(connections, [("mpquic".to_owned(), 1.0)], "one connection open during it");
    let active = prometheus.by_label("mpquic_paths", "state");
    assert!(active.contains(&("active".to_owned(), 2.0)), "two active paths: {active:?}");

    let out = send.wait_with_output().unwrap();
    assert!(out.status.success(), "send failed: {}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(std::fs::read(store.join("payload.bin")).unwrap(), std::fs::read(&source).unwrap());
    // The connection's gauges leave with it (the server closes an idle connection after 30 s).
    let closed = |p: &Prometheus| {
        p.by_label("mpquic_connections", "job") == [("mpquic".to_owned(), 0.0)]
            && p.by_label("sum(mpquic_path_cwnd_bytes)", "") == [(String::new(), 0.0)]
    };
    assert!(
        prometheus.wait_for(Duration::from_secs(90), closed),
        "gauges left after the connection closed: {:?}",
        prometheus.query("mpquic_connections")
    );
}
