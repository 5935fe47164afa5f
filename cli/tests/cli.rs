//! End-to-end tests of the `mpquic` binary over loopback: real processes, sockets and files.

mod common;

use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

use common::*;
use serde_json::Value;

#[test]
fn every_controller_moves_a_file_intact_over_two_paths() {
    let tmp = tempfile::tempdir().unwrap();
    let source = random_file(tmp.path(), "payload.bin", 6 << 20);
    for cc in ["amp", "xmp", "dcm", "mptcp-d", "mmptcp", "lia", "dctcp", "reno", "cubic"] {
        let store = tempfile::tempdir().unwrap();
        // --no-failover on both ends: this test is about the controllers, not failover, and a
        // CPU-starved host can leave a path unanswered for the 200 ms that failover's default
        // takes for a failure, which would close the path (and fail the checks below) for a
        // stall that is the host's. No path here ever really fails.
        let server = ServerProcess::start(
            &["127.0.0.1", "127.0.0.2"],
            &[
                "--insecure",
                "--dir",
                store.path().to_str().unwrap(),
                "--max-transfers",
                "1",
                "--cc",
                cc,
                "--no-failover",
            ],
        );
        let out = mpquic(&[
            "send",
            source.to_str().unwrap(),
            "--path",
            &format!("127.0.0.1={}", server.addr("127.0.0.1")),
            "--path",
            &format!("127.0.0.2={}", server.addr("127.0.0.2")),
            "--server",
            &server.addr("127.0.0.1"),
            "--insecure",
            "--json",
            "--cc",
            cc,
            "--no-failover",
            // Loopback does not congest: noq's own order would leave everything on path 0.
            "--scheduler",
            "round-robin",
        ]);
        let result = json(&out);
        server.wait();
        assert_eq!(
            std::fs::read(store.path().join("payload.bin")).unwrap(),
            std::fs::read(&source).unwrap(),
            "{cc}"
        );
        assert_eq!(files_in(store.path()), ["payload.bin"], "{cc}");
        let paths = result["paths"].as_array().unwrap();
        assert_eq!(paths.len(), 2, "{cc}: {result}");
        for path in paths {
            // Nothing closes a path before the transfer ends; only MPTCP-D takes one off for
            // good, and the report says so. (The server, done after one transfer, may close
            // the connection before the client takes its report: then every path ended with it.)
            let reason = &path["close_reason"];
            assert!(
                reason.is_null() || reason == "eliminated" || reason == "connection_end",
                "{cc}: {result}"
            );
            // A path that carried only its validation exchange has sent well under 10 KB.
            let sent = path["bytes_sent"].as_u64().unwrap();
            assert!(
                sent > 50_000 || taken_off_by_the_controller(&result, path),
                "{cc}: path {} carried {sent} bytes, and the controller did not take it off: \
                 {result}",
                path["id"]
            );
        }
        assert_eq!(result["controller"], cc);
    }
}

/// Whether the controller kept `path` from new data on purpose: AMP's suppression holds every
/// path but the initial one; MPTCP-D's elimination is permanent, and the path's report names it.
fn taken_off_by_the_controller(result: &Value, path: &Value) -> bool {
    let suppressions = result["controller_state"]["suppressions"].as_u64().unwrap_or(0);
    (suppressions > 0 && path["id"] != 0) || path["close_reason"] == "eliminated"
}

#[test]
fn a_certificate_from_another_ca_is_rejected_and_the_right_one_accepted() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
    for dir in [&a, &b] {
        let out = mpquic(&["cert", "--out", dir.to_str().unwrap(), "--name", "localhost"]);
        assert!(out.status.success(), "{}", stderr(&out));
    }
    let file = random_file(tmp.path(), "small.bin", 100_000);
    let server = ServerProcess::start(
        &["127.0.0.1"],
        &[
            "--sink",
            "--cert",
            a.join("cert.pem").to_str().unwrap(),
            "--key",
            a.join("key.pem").to_str().unwrap(),
        ],
    );
    let send_as = |server_name: &str, extra: &[&str]| {
        let addr = server.addr("127.0.0.1");
        let mut args = vec![
            "send",
            file.to_str().unwrap(),
            "--server",
            &addr,
            "--server-name",
            server_name,
            "--json",
        ];
        args.extend_from_slice(extra);
        mpquic(&args)
    };
    let send = |extra: &[&str]| send_as("localhost", extra);
    let wrong = send(&["--ca", b.join("cert.pem").to_str().unwrap()]);
    assert!(!wrong.status.success());
    // Both CAs are named "localhost": the issuer matches by name, its signature does not.
    assert!(
        stderr(&wrong).contains("invalid peer certificate: BadSignature"),
        "{}",
        stderr(&wrong)
    );
    assert_eq!(stderr(&wrong).lines().count(), 1, "one clear line: {}", stderr(&wrong));
    assert_cause_once(&stderr(&wrong), "invalid peer certificate");

    let misnamed = send_as("other", &["--ca", a.join("cert.pem").to_str().unwrap()]);
    assert!(!misnamed.status.success());
    let why = stderr(&misnamed);
    assert!(why.contains("certificate not valid for name \"other\""), "{why}");
    assert_cause_once(&why, "invalid peer certificate");

    let system_roots = send(&[]);
    assert!(
        !system_roots.status.success(),
        "a self-signed server must not pass the system's roots"
    );
    let why = stderr(&system_roots);
    assert!(why.contains("invalid peer certificate: UnknownIssuer"), "{why}");
    assert_cause_once(&why, "invalid peer certificate");

    let right = send(&["--ca", a.join("cert.pem").to_str().unwrap()]);
    assert_eq!(json(&right)["bytes"], 100_000);
}

/// The error line names its cause once (an error chain can repeat a cause its wrapper already
/// printed).
fn assert_cause_once(stderr: &str, cause: &str) {
    assert_eq!(stderr.matches(cause).count(), 1, "`{cause}` once: {stderr}");
}

#[test]
fn downloads_arrive_whole_and_missing_names_are_reported() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tempfile::tempdir().unwrap();
    let source = random_file(store.path(), "data.bin", 3 << 20);
    let server = ServerProcess::start(
        &["127.0.0.1"],
        &["--insecure", "--dir", store.path().to_str().unwrap()],
    );
    let target = tmp.path().join("copy.bin");
    let out = mpquic(&[
        "get",
        "data.bin",
        "-o",
        target.to_str().unwrap(),
        "--server",
        &server.addr("127.0.0.1"),
        "--insecure",
        "--json",
    ]);
    assert_eq!(json(&out)["bytes"], 3 << 20);
    assert_eq!(std::fs::read(&target).unwrap(), std::fs::read(&source).unwrap());

    let missing = tmp.path().join("nope.bin");
    let out = mpquic(&[
        "get",
        "nope.bin",
        "-o",
        missing.to_str().unwrap(),
        "--server",
        &server.addr("127.0.0.1"),
        "--insecure",
    ]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("no file named \"nope.bin\""), "{}", stderr(&out));
    assert_eq!(files_in(tmp.path()), ["copy.bin"], "a failed download leaves nothing behind");
}

/// Three sends of 100 KB with `--repeat 3` and `extra` flags into a sink: each result's bytes
/// sent over its connection's paths so far, once the server has received all three.
fn three_repeated_sends(extra: &[&str]) -> Vec<u64> {
    let server = ServerProcess::start(
        &["127.0.0.1"],
        &["--insecure", "--sink", "--json", "--max-transfers", "3"],
    );
    let addr = server.addr("127.0.0.1");
    let mut args = vec!["send", "--generate", "100K", "--repeat", "3", "--server", &addr];
    args.extend(extra);
    args.extend(["--insecure", "--json"]);
    let out = mpquic(&args);
    assert!(out.status.success(), "{}", stderr(&out));
    let lines: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 3, "one result per transfer");
    assert_eq!(server.wait().lines().count(), 3, "the server received three transfers");
    let sent = |r: &Value| -> u64 {
        assert_eq!(r["bytes"], 100 << 10);
        assert!(r["fct_s"].as_f64().unwrap() > 0.0, "{r}");
        r["paths"].as_array().unwrap().iter().map(|p| p["bytes_sent"].as_u64().unwrap()).sum()
    };
    lines.iter().map(sent).collect()
}

#[test]
fn repeated_sends_each_run_on_a_new_connection() {
    for sent in three_repeated_sends(&[]) {
        // A fresh connection's counters hold one transfer, not the sum of the ones before.
        assert!(sent < 2 * (100 << 10), "{sent} bytes sent on this connection");
    }
}

#[test]
fn repeated_sends_with_same_connection_share_one_connection() {
    for (i, sent) in three_repeated_sends(&["--same-connection"]).into_iter().enumerate() {
        // One connection: its counters hold every transfer so far.
        let transfers = i as u64 + 1;
        assert!(sent >= transfers * (100 << 10), "{sent} bytes sent after {transfers} transfers");
    }
    let alone =
        mpquic(&["send", "--generate", "1K", "--same-connection", "--server", "127.0.0.1:1"]);
    assert!(!alone.status.success() && stderr(&alone).contains("--repeat"), "{}", stderr(&alone));
}

#[test]
fn aggregate_jobs_complete_with_every_answer_and_fail_on_a_missing_file() {
    let store = tempfile::tempdir().unwrap();
    random_file(store.path(), "answer", 64 << 10);
    let dir = store.path().to_str().unwrap();
    // Three workers, each its own server process, as in a partition/aggregate tier.
    let workers: Vec<ServerProcess> = ["127.0.0.1", "127.0.0.2", "127.0.0.3"]
        .iter()
        .map(|ip| ServerProcess::start(&[ip], &["--insecure", "--dir", dir, "--cc", "dctcp"]))
        .collect();
    let addrs: Vec<String> = workers
        .iter()
        .zip(["127.0.0.1", "127.0.0.2", "127.0.0.3"])
        .map(|(w, ip)| w.addr(ip))
        .collect();
    let mut args = vec!["aggregate", "--name", "answer", "--jobs", "4", "--parallel", "3"];
    for a in &addrs {
        args.extend(["--server", a]);
    }
    args.extend(["--cc", "dctcp", "--insecure", "--json"]);
    let r = json(&mpquic(&args));
    let jobs = r["jobs"].as_array().unwrap();
    assert_eq!(jobs.len(), 12, "3 streams x 4 jobs");
    assert_eq!(r["completed"], 12);
    for job in jobs {
        let jct = job["jct_s"].as_f64().expect("every job completes");
        let fcts: Vec<f64> =
            job["response_fct_s"].as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).collect();
        assert_eq!(fcts.len(), 3, "one answer per worker: {job}");
        assert!(fcts.iter().all(|&f| f > 0.0 && f <= jct), "JCT >= every answer's FCT: {job}");
        assert!(job["response_bytes"].as_array().unwrap().iter().all(|b| b == 65536), "{job}");
    }
    // A stream starts its next job only when the previous one has completed.
    for stream in 0..3 {
        let mine: Vec<&Value> = jobs.iter().filter(|j| j["stream"] == stream).collect();
        for w in mine.windows(2) {
            let end = w[0]["start_s"].as_f64().unwrap() + w[0]["jct_s"].as_f64().unwrap();
            assert!(w[1]["start_s"].as_f64().unwrap() >= end, "{} then {}", w[0], w[1]);
        }
    }
    let p = &r["jct_ms"];
    assert_eq!(p["n"], 12);
    assert!(p["p50"].as_f64().unwrap() <= p["p90"].as_f64().unwrap());
    assert!(p["p99"].as_f64().unwrap() <= p["max"].as_f64().unwrap());

    let mut args = vec!["aggregate", "--name", "missing", "--jobs", "1"];
    for a in &addrs {
        args.extend(["--server", a]);
    }
    args.extend(["--insecure", "--json"]);
    let out = mpquic(&args);
    assert!(!out.status.success(), "a job whose answers fail is an error");
    assert!(stderr(&out).contains("no file named \"missing\""), "{}", stderr(&out));
    let r: Value = serde_json::from_slice(&out.stdout).expect("the report is printed anyway");
    assert_eq!(r["completed"], 0);
    assert_eq!(r["jobs"][0]["jct_s"], Value::Null);
}

#[test]
fn bad_input_gets_one_clear_line() {
    let tmp = tempfile::tempdir().unwrap();
    let file = random_file(tmp.path(), "f.bin", 1000);
    let f = file.to_str().unwrap();
    // An address with no server: the connection attempt times out.
    let silent = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let silent_addr = silent.local_addr().unwrap().to_string();
    let download = tmp.path().join("download.bin").to_str().unwrap().to_owned();
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec!["send", "/nonexistent/file", "--server", "127.0.0.1:9", "--insecure"],
            "cannot open /nonexistent/file",
        ),
        (
            vec!["send", f, "--server", "127.0.0.1:9", "--insecure", "--cc", "bbr9"],
            "unknown controller `bbr9`",
        ),
        (
            vec![
                "send",
                f,
                "--server",
                "127.0.0.1:9",
                "--insecure",
                "--cc",
                "amp",
                "--cc-param",
                "beta=1",
            ],
            "must be at least 2",
        ),
        (
            vec![
                "send",
                f,
                "--server",
                "127.0.0.1:9",
                "--insecure",
                "--cc",
                "dcm",
                "--cc-param",
                "g=0",
            ],
            "must be in (0, 1]",
        ),
        (
            vec![
                "send",
                f,
                "--server",
                "127.0.0.1:9",
                "--insecure",
                "--cc",
                "amp",
                "--cc-param",
                "gamma=0",
            ],
            "must be at least 1",
        ),
        (
            vec![
                "send",
                f,
                "--server",
                "127.0.0.1:9",
                "--insecure",
                "--cc",
                "xmp",
                "--cc-param",
                "tau=3",
            ],
            "has no parameter `tau`",
        ),
        (
            vec!["send", f, "--server", "127.0.0.1:9", "--insecure", "--local", "192.0.2.7"],
            "192.0.2.7 is not an address of this host",
        ),
        (
            vec!["send", f, "--server", &silent_addr, "--insecure", "--timeout", "1"],
            "no answer from",
        ),
        (
            vec!["send", f, "-s", "127.0.0.1:9", "--insecure", "--path-delay", "0,1"],
            "one delay per path, in the order the paths are listed: 2 given for 1 path",
        ),
        (
            vec![
                "send",
                f,
                "-s",
                "127.0.0.1:9",
                "-s",
                "127.0.0.2:9",
                "--insecure",
                "--path-delay",
                "0.5,1",
            ],
            "the first path's delay must be 0",
        ),
        (
            vec![
                "get",
                "f.bin",
                "-o",
                &download,
                "-s",
                "127.0.0.1:9",
                "-s",
                "127.0.0.2:9",
                "-s",
                "127.0.0.3:9",
                "--insecure",
                "--path-delay",
                "0",
                "--path-delay",
                "2",
                "--path-delay",
                "1",
            ],
            "delays must not decrease (path 2 at 1s after path 1 at 2s)",
        ),
        (
            vec![
                "aggregate",
                "--name",
                "a",
                "-s",
                "127.0.0.1:9",
                "--insecure",
                "--path-delay",
                "0",
            ],
            "--path-delay do not apply",
        ),
        (
            vec!["send", f, "--server", "127.0.0.1:9", "--insecure", "--name", "../escape"],
            "invalid file name",
        ),
        (
            vec![
                "serve",
                "--listen",
                "127.0.0.1:0",
                "--dir",
                "/nonexistent/dir",
                "--insecure",
                "--allow-anonymous",
            ],
            "cannot use directory /nonexistent/dir",
        ),
        (
            vec![
                "serve",
                "--listen",
                "127.0.0.1:1",
                "--listen",
                "127.0.0.2:2",
                "--sink",
                "--insecure",
                "--allow-anonymous",
            ],
            "must share one port",
        ),
    ];
    for (args, expected) in cases {
        let out = mpquic(&args);
        let err = stderr(&out);
        assert!(!out.status.success(), "{args:?} succeeded");
        assert!(err.contains(expected), "{args:?}: expected {expected:?} in {err:?}");
        assert!(!err.contains("panicked") && !err.contains("RUST_BACKTRACE"), "{args:?}: {err}");
        let lines: Vec<&str> = err.lines().filter(|l| !l.contains("WARNING: --")).collect();
        assert_eq!(lines.len(), 1, "{args:?}: one line expected: {err}");
    }
    drop(silent);
}

#[test]
fn a_full_disk_fails_the_upload_and_leaves_no_file() {
    const TEST: &str = "a_full_disk_fails_the_upload_and_leaves_no_file";
    if !nix_is_root() {
        return mpquic_skip::skip(TEST, "not root: mounting a small tmpfs needs root");
    }
    let mount = tempfile::tempdir().unwrap();
    let mounted = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=1m", "tmpfs", mount.path().to_str().unwrap()])
        .output();
    match mounted {
        Ok(out) if out.status.success() => {}
        Ok(out) => {
            return mpquic_skip::skip(TEST, &format!("cannot mount a tmpfs: {}", stderr(&out)))
        }
        Err(e) => return mpquic_skip::skip(TEST, &format!("cannot run mount: {e}")),
    }
    struct Unmount<'a>(&'a Path);
    impl Drop for Unmount<'_> {
        fn drop(&mut self) {
            let _ = Command::new("umount").arg(self.0).status();
        }
    }
    let _unmount = Unmount(mount.path());
    let tmp = tempfile::tempdir().unwrap();
    let file = random_file(tmp.path(), "big.bin", 3 << 20);
    let server = ServerProcess::start(
        &["127.0.0.1"],
        &["--insecure", "--dir", mount.path().to_str().unwrap()],
    );
    let send = |file: &Path, name: &str| {
        mpquic(&[
            "send",
            file.to_str().unwrap(),
            "--name",
            name,
            "--server",
            &server.addr("127.0.0.1"),
            "--insecure",
        ])
    };
    // Too big for the free space: refused before a byte is written.
    let out = send(&file, "big.bin");
    assert!(!out.status.success());
    assert!(stderr(&out).contains("not enough space on the server"), "{}", stderr(&out));
    // Two that each fit but not together: each reserves its size before writing, so the one
    // that reserves second is refused up front (before reservations, both could fail midway
    // when the disk filled under their interleaved writes).
    let part = random_file(tmp.path(), "part.bin", 700 << 10);
    let outs: Vec<Output> = std::thread::scope(|s| {
        let handles: Vec<_> = ["a.bin", "b.bin"].map(|name| s.spawn(|| send(&part, name))).into();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let failed: Vec<String> = outs.iter().filter(|o| !o.status.success()).map(stderr).collect();
    assert_eq!(failed.len(), 1, "one of the two cannot fit: {failed:?}");
    assert!(failed[0].contains("not enough space on the server"), "{failed:?}");
    std::thread::sleep(Duration::from_millis(200));
    let left = files_in(mount.path());
    assert_eq!(left.len(), 1, "only the whole file is left: {left:?}");
    assert_eq!(std::fs::read(mount.path().join(&left[0])).unwrap(), std::fs::read(&part).unwrap());
}

#[test]
fn qlog_is_json_seq_with_controller_events() {
    let tmp = tempfile::tempdir().unwrap();
    let qlog = tmp.path().join("qlog");
    let server = ServerProcess::start(&["127.0.0.1", "127.0.0.2"], &["--insecure", "--sink"]);
    let out = mpquic(&[
        "send",
        "--generate",
        "20M",
        "--server",
        &server.addr("127.0.0.1"),
        "--server",
        &server.addr("127.0.0.2"),
        "--insecure",
        "--json",
        "--cc",
        "amp",
        "--qlog",
        qlog.to_str().unwrap(),
    ]);
    let result = json(&out);
    let files = files_in(&qlog);
    assert_eq!(files.len(), 1, "{files:?}");
    let text = std::fs::read(qlog.join(&files[0])).unwrap();
    let records: Vec<Value> = text
        .split(|&b| b == 0x1e)
        .filter(|r| !r.is_empty())
        .map(|r| {
            serde_json::from_slice(r)
                .unwrap_or_else(|e| panic!("bad record ({e}): {}", String::from_utf8_lossy(r)))
        })
        .collect();
    assert_eq!(records[0]["serialization_format"], "JSON-SEQ", "header: {}", records[0]);
    assert!(records[0]["trace"].is_object(), "header: {}", records[0]);
    let names: Vec<&str> = records.iter().filter_map(|r| r["name"].as_str()).collect();
    assert!(names.iter().any(|n| n.starts_with("quic:")
        || n.starts_with("transport:")
        || n.starts_with("recovery:")));
    let configured =
        records.iter().find(|r| r["name"] == "mpquic:configured").expect("configured event");
    assert_eq!(configured["data"]["controller"], "amp");
    let lost: u64 = result["paths"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["lost_packets"].as_u64().unwrap())
        .sum();
    let ce: u64 =
        result["paths"].as_array().unwrap().iter().map(|p| p["ce_events"].as_u64().unwrap()).sum();
    let reductions = names.iter().filter(|&&n| n == "mpquic:window_reduced").count();
    if lost + ce > 0 {
        assert!(reductions > 0, "{lost} losses and {ce} CE events but no window_reduced event");
    }
    let mut last = f64::MIN;
    for r in records.iter().skip(1) {
        let t = r["time"].as_f64().unwrap_or_else(|| panic!("event without time: {r}"));
        assert!(
            t >= last - 1e-6 || !r["name"].as_str().unwrap().starts_with("mpquic:"),
            "time goes back at {r}"
        );
        last = last.max(t);
    }
}

#[test]
fn a_plain_noq_client_downloads_from_mpquic_serve() {
    use mpquic::noq;
    let tmp = tempfile::tempdir().unwrap();
    let store = tempfile::tempdir().unwrap();
    let source = random_file(store.path(), "plain.bin", 2 << 20);
    let certs = tmp.path().join("certs");
    assert!(mpquic(&["cert", "--out", certs.to_str().unwrap(), "--name", "localhost"])
        .status
        .success());
    let server = ServerProcess::start(
        &["127.0.0.1"],
        &[
            "--dir",
            store.path().to_str().unwrap(),
            "--cert",
            certs.join("cert.pem").to_str().unwrap(),
            "--key",
            certs.join("key.pem").to_str().unwrap(),
        ],
    );
    let addr: std::net::SocketAddr = server.addr("127.0.0.1").parse().unwrap();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let received = runtime.block_on(async {
        let crypto =
            mpquic::Trust::from_ca_file(&certs.join("cert.pem")).unwrap().client_crypto().unwrap();
        // Default transport: no multipath, noq's own congestion control.
        let config = noq::ClientConfig::new(crypto);
        let endpoint = noq::Endpoint::client("127.0.0.1:0".parse().unwrap()).unwrap();
        let conn = endpoint.connect_with(config, addr, "localhost").unwrap().await.unwrap();
        let (mut send, mut recv) = conn.open_bi().await.unwrap();
        // The transfer protocol by hand: "MPQ1", 'G', name length, name.
        let mut request = b"MPQ1G".to_vec();
        request.extend_from_slice(&(9u16).to_be_bytes());
        request.extend_from_slice(b"plain.bin");
        send.write_all(&request).await.unwrap();
        send.finish().unwrap();
        let reply = recv.read_to_end(16 << 20).await.unwrap();
        conn.close(0u32.into(), b"");
        reply
    });
    assert_eq!(&received[..3], &[0, 0, 0], "OK reply");
    let size = u64::from_be_bytes(received[3..11].try_into().unwrap()) as usize;
    let data = &received[11..11 + size];
    assert_eq!(data, std::fs::read(&source).unwrap());
    assert_eq!(received.len(), 11 + size + 32, "BLAKE3 trailer");
    assert_eq!(&received[11 + size..], blake3::hash(data).as_bytes());
}

#[test]
fn interval_lines_show_every_path_while_the_transfer_runs() {
    let server = ServerProcess::start(
        &["127.0.0.1", "127.0.0.2"],
        &["--insecure", "--sink", "--max-transfers", "2"],
    );
    let send = |extra: &[&str]| {
        let (a, b) = (server.addr("127.0.0.1"), server.addr("127.0.0.2"));
        // Sized by time, not bytes: 20 MiB at 10 MiB/s last 2 s (about 40 intervals) on any
        // host, where 300 MB unpaced passed in a few intervals on a fast one.
        let mut args = vec!["send", "--generate", "20M", "--bwlimit", "10M"];
        args.extend_from_slice(&["-s", &a, "-s", &b, "--insecure"]);
        args.extend_from_slice(&["--scheduler", "round-robin", "--interval", "0.05"]);
        args.extend_from_slice(extra);
        let out = mpquic(&args);
        assert!(out.status.success(), "{}", stderr(&out));
        out
    };
    // Plain lines on stderr (not a terminal): one per path per interval.
    let out = send(&[]);
    let lines: Vec<String> =
        stderr(&out).lines().filter(|l| l.contains(" Mbit/s ")).map(String::from).collect();
    for path in [" path  0 ", " path  1 "] {
        assert!(lines.iter().any(|l| l.contains(path)), "no interval line for{path}: {lines:?}");
    }
    // JSON lines on stdout: the intervals, then the result.
    let out = send(&["--json"]);
    let objects: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    let (result, intervals) = objects.split_last().expect("output");
    assert_eq!(result["verified"], true);
    let carried: Vec<u64> = (0..2)
        .map(|id| {
            intervals.iter().filter(|o| o["kind"] == "path" && o["path"] == id).count() as u64
        })
        .collect();
    assert!(carried.iter().all(|&n| n > 0), "interval objects per path: {carried:?}");
    assert!(intervals.iter().all(|o| o["mbit_s"].as_f64().is_some() || o["kind"] == "event"));
}

#[test]
fn a_path_opened_mid_transfer_carries_data_on_every_repeated_connection() {
    let tmp = tempfile::tempdir().unwrap();
    // Long enough by time, not by bytes, that path 1, opened 0.1 s in, finds the transfer
    // running on any host: 24 MiB capped at 16 MiB/s take 1.5 s (uncapped, a fast host's
    // loopback moves 100 MB in under 0.2 s).
    let source = random_file(tmp.path(), "payload.bin", 24 << 20);
    let store = tempfile::tempdir().unwrap();
    let server = ServerProcess::start(
        &["127.0.0.1", "127.0.0.2"],
        &[
            "--insecure",
            "--dir",
            store.path().to_str().unwrap(),
            "--overwrite",
            "--max-transfers",
            "2",
        ],
    );
    let (a, b) = (server.addr("127.0.0.1"), server.addr("127.0.0.2"));
    let out = mpquic(&[
        "send",
        source.to_str().unwrap(),
        "--path",
        &format!("127.0.0.1={a}"),
        "--path",
        &format!("127.0.0.2={b}"),
        "-s",
        &a,
        "--path-delay",
        "0,0.1",
        "--repeat",
        "2",
        "--scheduler",
        "round-robin",
        "--bwlimit",
        "16M",
        "--insecure",
        "--json",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    server.wait();
    assert_eq!(
        std::fs::read(store.path().join("payload.bin")).unwrap(),
        std::fs::read(&source).unwrap()
    );
    let results: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    assert_eq!(results.len(), 2, "one result per transfer");
    // Each connection opens its second path anew, 0.1 s after it is established.
    for result in &results {
        assert_eq!(result["verified"], true);
        let paths = result["paths"].as_array().unwrap();
        assert_eq!(paths.len(), 2, "{result}");
        let opened: Vec<f64> = paths.iter().map(|p| p["opened_ms"].as_f64().unwrap()).collect();
        assert_eq!(opened[0], 0.0, "path 0 opens with the connection: {result}");
        assert!(opened[1] >= 100.0, "path 1 opened {} ms in: {result}", opened[1]);
        let sent = paths[1]["bytes_sent"].as_u64().unwrap();
        assert!(
            sent > 1 << 20,
            "path 1 carried {sent} bytes (did the transfer end, fct {} s, before it opened?)",
            result["fct_s"]
        );
    }
}

/// Issue 41, part 5: a `get` reports how the data arrived on each path (as iperf3 `-R` does),
/// not the ACKs it sent: the bytes received over both paths add up to about the file's size,
/// and the table's column says "received".
#[test]
fn a_get_reports_the_bytes_each_path_received() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tempfile::tempdir().unwrap();
    let size = 8u64 << 20;
    let source = random_file(store.path(), "big.bin", size as usize);
    let server = ServerProcess::start(
        &["127.0.0.1", "127.0.0.2"],
        &["--insecure", "--dir", store.path().to_str().unwrap(), "--scheduler", "round-robin"],
    );
    let get = |output: &str, json: bool| {
        let target = tmp.path().join(output);
        let (one, two) = (server.addr("127.0.0.1"), server.addr("127.0.0.2"));
        let (one, two) = (format!("127.0.0.1={one}"), format!("127.0.0.2={two}"));
        let first = server.addr("127.0.0.1");
        let mut args = vec!["get", "big.bin", "-o", target.to_str().unwrap()];
        args.extend(["--path", &one, "--path", &two, "--server", &first]);
        args.push("--insecure");
        if json {
            args.push("--json");
        }
        let out = mpquic(&args);
        assert!(out.status.success(), "{}", stderr(&out));
        assert_eq!(std::fs::read(&target).unwrap(), std::fs::read(&source).unwrap());
        out
    };
    let result = json(&get("copy.bin", true));
    let paths = result["paths"].as_array().unwrap();
    assert_eq!(paths.len(), 2, "{result}");
    let received: u64 = paths.iter().map(|p| p["bytes_received"].as_u64().unwrap()).sum();
    assert!(
        received >= size && received < size + size / 10,
        "{received} bytes received for a {size}-byte file: {result}"
    );
    let shares: f64 = paths.iter().map(|p| p["share_received"].as_f64().unwrap()).sum();
    assert!((shares - 1.0).abs() < 1e-6, "{result}");
    for path in paths {
        assert!(
            path["share_received"].as_f64().unwrap() > 0.2,
            "both paths carried data: {result}"
        );
    }
    let table = String::from_utf8_lossy(&get("again.bin", false).stdout).into_owned();
    let header = table.lines().find(|l| l.trim_start().starts_with("path")).unwrap();
    assert!(header.contains("received") && !header.contains("sent"), "{table}");
}
