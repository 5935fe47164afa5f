//! Issue 41's soak, short: `mpquic-testbed soak` for 2 minutes with 4 clients over 2-4 netns
//! paths, one server restart, clients SIGKILLed and resumed, paths black-holed and gray. The
//! command fails unless every check of its table held; the test also checks from soak.json
//! that the faults it is about did happen (a run without a kill or a restart proves little).
//!
//! Memory is checked as what the server holds at the end once glibc returned its free pages
//! (`--trim-at-end`, through gdb): the plain RSS of a two-minute run is mostly the allocator's
//! growth after warm-up (+26% on 2026-11-28 at load 4; +107%, 21.7 -> 44.8 MiB, on 2026-11-29
//! at load 9-15), which a leak check should not read. The tolerance stays 100% (the warm-up
//! sample of a one-minute instance is early): only a gross leak fails here; the bound that says
//! "flat" is the long run's, `scripts/soak` (README: "Soak").

mod common;
use common::*;
use serde_json::Value;
use std::process::Command;
use std::time::Instant;

#[test]
fn a_short_soak_holds_under_kills_path_faults_and_a_restart() {
    let Some(_serial) = netns_test("soak") else { return };
    let out = tmpdir("soak");
    let started = Instant::now();
    let o = Command::new(bin())
        .args(["soak", "--duration-s", "120", "--clients", "4", "--restarts", "1"])
        .args(["--seed", "7", "--grace-s", "60", "--rss-tolerance-pct", "100", "--trim-at-end"])
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    let table = String::from_utf8_lossy(&o.stdout);
    println!("{table}\n(took {:.0} s)", started.elapsed().as_secs_f64());
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "the soak failed a check or did not run: {stderr}\n{table}");
    let r: Value = serde_json::from_slice(&std::fs::read(out.join("soak.json")).unwrap()).unwrap();
    assert_eq!(r["ok"], true);
    let attempts = r["attempts"].as_array().unwrap();
    let ended = |class: &str| attempts.iter().filter(|a| a[2] == class).count();
    assert!(ended("SIGKILLed") > 0, "no client was killed");
    assert!(ended("ok") > 50, "{} commands succeeded", ended("ok"));
    let ops = r["ops"].as_array().unwrap();
    let resumed = ops.iter().filter(|o| o["resumed_from"].as_u64() > Some(0)).count();
    assert!(resumed > 0, "no transfer resumed from a partial copy");
    assert_eq!(r["instances"].as_array().unwrap().len(), 2, "one restart: two server instances");
    let events = r["events"].as_array().unwrap();
    let applied = |what: &str| events.iter().any(|e| e[1].as_str().unwrap().contains(what));
    assert!(applied("black-holed") && applied("gray"), "path faults: {events:?}");
    let _ = std::fs::remove_dir_all(&out);
}
