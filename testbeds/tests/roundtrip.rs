//! Issue 25's round trip in the netns testbed: a nested directory of 1,000 files (997
//! log-uniform in 1 KB..1 MB and one each of 10, 30 and 100 MB: 1 KB to 100 MB, about 290 MB
//! in all, CI-sized) goes up with one `mpquic send DIR` over two shaped, marked 100 Mbit/s
//! paths and comes back with one `mpquic get -r`: every file's bytes and the tree's shape are
//! the same, and each command's per-path byte counts (`--json`) show both paths carried data.

mod common;
use common::*;
use serde_json::Value;
use std::process::Command;

/// A path carries at least this share of a command's bytes.
const MIN_SHARE: f64 = 0.10;

#[test]
fn a_directory_of_1000_files_goes_up_and_comes_back_byte_identical_over_two_paths() {
    const TEST: &str =
        "a_directory_of_1000_files_goes_up_and_comes_back_byte_identical_over_two_paths";
    let Some(_serial) = netns_test(TEST) else { return };
    require_mpquic(TEST);
    let out = tmpdir("roundtrip");
    let o = Command::new(bin()).args(["roundtrip", "--out"]).arg(&out).output().unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "the round trip failed: {stderr}");
    let r: Value =
        serde_json::from_slice(&std::fs::read(out.join("result.json")).unwrap()).unwrap();
    println!("round trip: {r}");
    assert_eq!(r["files"], 1000);
    assert_eq!((r["smallest"].as_u64() < Some(2000), &r["largest"]), (true, &100_000_000.into()));
    assert!(r["total_bytes"].as_u64().unwrap() <= 300_000_000, "{r}");
    assert_eq!(r["identical"], true, "{}", r["differences"]);
    for leg in ["send", "get"] {
        let l = &r[leg];
        assert_eq!((&l["ok"], &l["failed_files"]), (&true.into(), &0.into()), "{leg}: {l}");
        assert_eq!(l["bytes"], r["total_bytes"], "{leg}: every byte verified");
        let paths: Vec<f64> =
            l["path_bytes"].as_array().unwrap().iter().map(|b| b.as_f64().unwrap()).collect();
        assert_eq!(paths.len(), 2, "{leg}: two paths: {l}");
        let total: f64 = paths.iter().sum();
        for (i, bytes) in paths.iter().enumerate() {
            assert!(bytes / total >= MIN_SHARE, "{leg}: path {i} carried {bytes} of {total}");
        }
    }
}
