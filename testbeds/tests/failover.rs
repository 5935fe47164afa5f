//! Path failover in the netns testbed (issue #12): two 100 Mbit/s shaped, marked paths, one
//! `mpquic send` with failure detection and a 3 s idle timeout against the server's default;
//! path 0 (the connection's first path) and, separately, path 1 black-holed on both ends 1.5 s
//! in and restored 1.5 s later. The transfer completes intact, the receiver never waits 1 s or
//! more for data, the sender reports the dead path (and no other) while it is dead, and the
//! restored path is re-opened and carries data.
//!
//! The Done-when measurement (150 MB, 3 runs per path, and one run per path without failover
//! for contrast) is the ignored test at the end:
//! `cargo test --release -p mpquic-testbed --test failover -- --ignored --nocapture`
//! (`MPQUIC_FAILOVER_BYTES`, `MPQUIC_FAILOVER_RUNS` change its size and runs).

mod common;
use common::*;
use serde_json::Value;
use std::process::Command;

/// One `mpquic-testbed failover` run; returns its result.
fn failover(name: &str, path: u8, bytes: u64, extra: &[&str]) -> Value {
    let out = tmpdir(name);
    let o = Command::new(bin())
        .args(["failover", "--path", &path.to_string(), "--bytes", &bytes.to_string()])
        .args(extra)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{name}: the failover run failed: {stderr}");
    let r: Value =
        serde_json::from_slice(&std::fs::read(out.join("result.json")).unwrap()).unwrap();
    println!("{name}: {}", row(&r));
    r
}

/// A time of the result, or "never" when the event did not happen (no failure line without
/// failover).
fn seconds(v: &Value, digits: usize) -> String {
    v.as_f64().map_or_else(|| "never".into(), |s| format!("{s:.digits$}"))
}

/// The numbers of one run, for the log.
fn row(r: &Value) -> String {
    format!(
        "path {} failover {} completed {} identical {} duration {:.2} s, longest stall {:.3} s \
         (from {:.2} s; poll gap {:.3} s), black-holed at {:.2} s, failure reported {} s later, \
         restored at {:.2} s, recovery reported at {} s; load {}",
        r["path"],
        r["failover"],
        r["completed"],
        r["identical"],
        f(r, &["duration_s"]),
        r["longest_stall"]["length_s"].as_f64().unwrap_or(f64::NAN),
        r["longest_stall"]["from_s"].as_f64().unwrap_or(f64::NAN),
        f(r, &["longest_poll_gap_s"]),
        r["blackhole_at_s"].as_f64().unwrap_or(f64::NAN),
        seconds(&r["detection_s"], 3),
        r["restored_at_s"].as_f64().unwrap_or(f64::NAN),
        seconds(&r["recovered_at_s"], 2),
        r["host_loadavg_1min"],
    )
}

/// What issue #12 asks of a run with failover.
fn assert_fails_over(r: &Value, restore_after: f64) {
    assert_eq!(r["completed"], true, "the transfer did not complete: {}", r["sender_error"]);
    assert_eq!(r["verified"], true, "the receiver did not verify the data: {r}");
    assert_eq!(r["identical"], true, "the stored file differs from the one sent: {r}");
    assert_eq!(r["bytes_received"], r["bytes"]);
    let stall = f(r, &["longest_stall", "length_s"]);
    assert!(stall < 1.0, "the receiver waited {stall:.3} s for data: {}", row(r));
    let failed = r["failure_line"].as_str().unwrap_or_else(|| panic!("no failure reported: {r}"));
    let detection = f(r, &["detection_s"]);
    assert!(
        detection > 0.0 && detection < restore_after,
        "failure reported {detection} s after the black hole: {failed}"
    );
    assert_eq!(r["live_path_failures"], Value::Array(vec![]), "the live path was declared failed");
    let dead = r["dead_server"].as_str().unwrap();
    let report = &r["sender_report"];
    let events = report["failovers"].as_array().unwrap();
    assert!(
        events.iter().any(|e| e["event"] == "path_failed" && e["remote"].as_str().unwrap().starts_with(dead)),
        "the sender's report has no failure of {dead}: {events:?}"
    );
    // The paths the sender reported failed, and only they, are closed as failed in its report.
    let ids = |list: &[Value], key: &str| {
        let mut ids: Vec<u64> = list.iter().filter_map(|v| v[key].as_u64()).collect();
        ids.sort_unstable();
        ids
    };
    let failures: Vec<Value> =
        events.iter().filter(|e| e["event"] == "path_failed").cloned().collect();
    let paths = report["paths"].as_array().unwrap();
    let closed_failed: Vec<Value> =
        paths.iter().filter(|p| p["close_reason"] == "failed").cloned().collect();
    assert_eq!(ids(&closed_failed, "id"), ids(&failures, "path"), "{report}");
    // Restoring gives the link back exactly what it had (rate, queue, marker), and the black hole
    // replaced its queue.
    let qdiscs = |i: usize| r["qdiscs"][i].as_str().unwrap_or_else(|| panic!("no qdiscs {i}: {r}"));
    let marked = |q: &str| q.contains("ecn_marker") && q.contains("direct-action");
    assert!(qdiscs(0).contains("bfifo 10:") && marked(qdiscs(0)), "{}", qdiscs(0));
    let holed = qdiscs(1);
    assert!(
        holed.contains("blackhole 10:") && !holed.contains("bfifo") && marked(holed),
        "{holed}"
    );
    assert_eq!(qdiscs(2), qdiscs(0), "the restored link's qdiscs differ");
    // Once restored, the path answers and is re-opened within a few retries (0.5 s each).
    let restored = f(r, &["restored_at_s"]);
    if f(r, &["duration_s"]) > restored + 1.5 {
        assert!(r["recovered_line"].is_string(), "the restored path never came back: {}", row(r));
        let reopened: u64 = report["paths"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|p| {
                p["id"] != 0 && p["id"] != 1 && p["remote"].as_str().unwrap().starts_with(dead)
            })
            .map(|p| p["bytes_sent"].as_u64().unwrap())
            .sum();
        assert!(reopened > 0, "the re-opened path carried nothing: {report}");
    }
}

const CI_BYTES: u64 = 100_000_000;
const CI_RESTORE_AFTER: f64 = 1.5;

fn ci_case(test: &str, path: u8) {
    let Some(_serial) = netns_test(test) else { return };
    require_mpquic(test);
    let restore = CI_RESTORE_AFTER.to_string();
    let r = failover(test, path, CI_BYTES, &["--restore-after", &restore]);
    assert_fails_over(&r, CI_RESTORE_AFTER);
}

#[test]
fn path_0_black_holed_mid_transfer_fails_over_without_a_long_stall() {
    ci_case("path_0_black_holed_mid_transfer_fails_over_without_a_long_stall", 0);
}

#[test]
fn path_1_black_holed_mid_transfer_fails_over_without_a_long_stall() {
    ci_case("path_1_black_holed_mid_transfer_fails_over_without_a_long_stall", 1);
}

fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// Issue #12's Done-when: 150 MB, path 0 and path 1 black-holed 1.5 s in (restored 3 s later),
/// 3 runs each with failover; then one run each without, for contrast (not asserted: without
/// failover a dead path is expected to stall the transfer or lose the connection).
#[test]
#[ignore = "the Done-when measurement: minutes of 150 MB transfers"]
fn done_when_150_mb_three_runs_per_path() {
    let test = "done_when_150_mb_three_runs_per_path";
    let Some(_serial) = netns_test(test) else { return };
    require_mpquic(test);
    let bytes = env_or("MPQUIC_FAILOVER_BYTES", 150_000_000);
    let runs = env_or("MPQUIC_FAILOVER_RUNS", 3);
    let mut with = Vec::new();
    for path in [0, 1] {
        for run in 0..runs {
            with.push(failover(&format!("done-when-p{path}-r{run}"), path, bytes, &[]));
        }
    }
    for path in [0, 1] {
        failover(&format!("done-when-p{path}-no-failover"), path, bytes, &["--no-failover"]);
    }
    for r in &with {
        assert_fails_over(r, 3.0);
    }
}
