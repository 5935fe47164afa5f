//! Every experiment file in `experiments/` as the testbed reads it: it validates (nothing is
//! built), or it needs something the testbed cannot do yet, listed here with the reason the
//! testbed gives. A file that starts validating fails this test until it leaves the list.

mod common;

use std::path::Path;
use std::process::Command;

/// (file, the reason the testbed refuses it): what the netns testbed does not run yet.
const NOT_ON_THE_TESTBED: &[(&str, &str)] = &[];

#[test]
fn every_experiment_file_validates_or_is_listed_with_its_reason() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../experiments");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    files.sort();
    assert!(files.len() >= 10, "experiments/ holds the paper experiments: {files:?}");
    for file in files {
        let name = file.file_name().unwrap().to_str().unwrap();
        let out = Command::new(common::bin())
            .args(["validate", file.to_str().unwrap()])
            .env("RUST_BACKTRACE", "0")
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        match NOT_ON_THE_TESTBED.iter().find(|(f, _)| *f == name) {
            None => assert!(out.status.success(), "{name} does not validate: {stderr}"),
            Some((_, reason)) => {
                assert!(!out.status.success(), "{name} validates now: take it off the list");
                assert!(
                    stderr.contains(&format!("{name}:")) && stderr.contains(reason),
                    "{name}: expected a located error saying {reason:?}, got {stderr}"
                );
            }
        }
    }
}
