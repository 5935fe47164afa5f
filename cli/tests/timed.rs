//! End-to-end tests of timed sends (`mpquic send --time`) over loopback: a sink verifies and
//! reports the stream, a server storing files refuses it, a signal ends it early and cleanly.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::*;
use serde_json::Value;

fn lines(stdout: &str) -> Vec<Value> {
    stdout.lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

fn sent_bytes(result: &Value) -> u64 {
    result["bytes"].as_u64().unwrap()
}

/// The server's record of one stream matches what the sender says it sent, verified; its
/// received series climbs to that total.
fn assert_received(server: &Value, sender: &Value) {
    assert_eq!(server["direction"], "receive");
    assert_eq!((&server["ended_by"], &server["verified"]), (&"sender".into(), &true.into()));
    assert_eq!(server["bytes"], sender["bytes"], "the sink counts what the sender sent");
    let series: Vec<(u64, u64)> =
        serde_json::from_value(server["received_series"].clone()).unwrap();
    assert!(series.len() >= 3, "{series:?}");
    assert!(series.windows(2).all(|w| w[0].0 <= w[1].0 && w[0].1 <= w[1].1), "{series:?}");
    assert_eq!((series[0].1, series.last().unwrap().1), (0, sent_bytes(sender)));
}

#[test]
fn a_timed_send_to_a_sink_ends_at_its_time_with_a_verified_report() {
    let server = ServerProcess::start(
        &["127.0.0.1", "127.0.0.2"],
        &["--insecure", "--sink", "--json", "--max-transfers", "1", "--received-series", "50"],
    );
    let started = Instant::now();
    let out = mpquic(&[
        "send",
        "--time",
        "1",
        "--server",
        &server.addr("127.0.0.1"),
        "--server",
        &server.addr("127.0.0.2"),
        "--insecure",
        "--json",
    ]);
    let wall = started.elapsed();
    let sent = json(&out);
    assert_eq!(sent["ended_by"], "time");
    assert!(sent_bytes(&sent) > 0, "{sent}");
    let fct = sent["fct_s"].as_f64().unwrap();
    // It stops at its time (the end adds the hash and one reply), not at some size.
    assert!((1.0..5.0).contains(&fct), "a 1 s send took {fct} s");
    assert!(wall < Duration::from_secs(10), "the process ran {wall:?}");
    assert_eq!(sent["paths"].as_array().unwrap().len(), 2, "per-path statistics: {sent}");
    let received = lines(&server.wait());
    assert_eq!(received.len(), 1);
    assert_received(&received[0], &sent);
}

#[test]
fn a_timed_send_to_a_file_server_is_refused_and_leaves_no_file() {
    let dir = tempfile::tempdir().unwrap();
    let server = ServerProcess::start(
        &["127.0.0.1"],
        &["--insecure", "--dir", dir.path().to_str().unwrap()],
    );
    let out = mpquic(&[
        "send",
        "--time",
        "0.5",
        "--name",
        "timed.bin",
        "--server",
        &server.addr("127.0.0.1"),
        "--insecure",
    ]);
    assert!(!out.status.success(), "a file server took a timed send");
    let err = stderr(&out);
    assert!(err.contains("peer: this server stores files") && err.contains("--sink"), "{err}");
    assert!(files_in(dir.path()).is_empty(), "left behind: {:?}", files_in(dir.path()));
}

#[test]
fn sigterm_ends_a_timed_send_early_and_cleanly_with_its_report() {
    let server = ServerProcess::start(
        &["127.0.0.1"],
        &["--insecure", "--sink", "--json", "--max-transfers", "1", "--received-series", "50"],
    );
    let mut sender = Command::new(BIN)
        .args(["send", "--time", "60", "--server", &server.addr("127.0.0.1")])
        .args(["--insecure", "--json", "--interval", "0.1"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Its stdout, line by line as it comes: interval lines, then the result.
    let (tx, lines_rx) = std::sync::mpsc::channel();
    let stdout = BufReader::new(sender.stdout.take().unwrap());
    std::thread::spawn(move || stdout.lines().map_while(Result::ok).try_for_each(|l| tx.send(l)));
    // Stop it as a testbed or a user would, once it has sent for a while: not after a fixed
    // time, which a loaded host can spend connecting, but once an interval line shows data
    // flowing (more than keep-alives: 1 Mbit/s), and 0.5 s later, so that the sink's series
    // (every 50 ms) has samples between its start and its end on any host.
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut seen = Vec::new();
    let flowing = |line: &Value| line["kind"] == "path" && line["mbit_s"].as_f64() > Some(1.0);
    while !seen.iter().any(flowing) {
        let left = deadline.saturating_duration_since(Instant::now());
        match lines_rx.recv_timeout(left) {
            Ok(line) => seen.push(serde_json::from_str::<Value>(&line).expect(&line)),
            Err(e) => panic!("no interval line with data flowing within 20 s ({e}): {seen:?}"),
        }
    }
    std::thread::sleep(Duration::from_millis(500));
    let status = Command::new("kill").args(["-TERM", &sender.id().to_string()]).status().unwrap();
    assert!(status.success());
    let stopped = Instant::now();
    let out = sender.wait_with_output().unwrap();
    assert!(stopped.elapsed() < Duration::from_secs(10), "it ended {:?} after SIGTERM", stopped);
    assert!(out.status.success(), "{}", stderr(&out));
    let rest: Vec<String> = lines_rx.iter().collect();
    let sent: Value = serde_json::from_str(rest.last().expect("a result line")).unwrap();
    assert_eq!(sent["ended_by"], "SIGTERM");
    assert!(sent_bytes(&sent) > 0, "{sent}");
    assert!(sent["fct_s"].as_f64().unwrap() < 30.0, "{sent}");
    let received = lines(&server.wait());
    assert_eq!(received.len(), 1);
    assert_received(&received[0], &sent);
}

#[test]
fn time_excludes_a_file_and_a_size() {
    for (what, args) in [("FILE", vec!["some.bin"]), ("--generate", vec!["--generate", "1M"])] {
        let mut all = vec!["send", "--time", "1", "--server", "127.0.0.1:1", "--insecure"];
        all.extend(args);
        let out = mpquic(&all);
        assert!(!out.status.success(), "--time with {what} was accepted");
        assert!(stderr(&out).contains("cannot be used with"), "{what}: {}", stderr(&out));
    }
    let out = mpquic(&["send", "--time", "0", "--server", "127.0.0.1:1", "--insecure"]);
    assert!(stderr(&out).contains("a positive number of seconds"), "{}", stderr(&out));
}
