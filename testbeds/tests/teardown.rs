//! Teardown leaves no namespace, mount or process behind: after a normal run, after Ctrl-C
//! (SIGINT) in the middle of a run, and after a crash (SIGKILL) followed by `cleanup`.

mod common;
use common::*;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const SCENARIO: &str = r#"
name = "teardown"
duration = "8s"
[link]
rate = "50Mbps"
buffer = "100000B"
k = 20
[topology]
kind = "two-path"
cross_hosts = 1
[[flows]]
kind = "kernel-tcp"
from = "xa0"
to = "dst"
stop = "6s"
[[flows]]
kind = "kernel-mptcp"
from = "src"
to = "dst"
stop = "6s"
"#;

fn assert_clean(when: &str) {
    assert!(our_namespaces().is_empty(), "{when}: namespaces left: {:?}", our_namespaces());
    assert!(our_processes().is_empty(), "{when}: processes left: {:?}", our_processes());
    assert!(our_mounts().is_empty(), "{when}: mounts left: {:?}", our_mounts());
}

fn start(dir: &std::path::Path) -> std::process::Child {
    let sc = dir.join("s.toml");
    std::fs::write(&sc, SCENARIO).unwrap();
    Command::new(bin())
        .arg("run")
        .arg(&sc)
        .arg("--out")
        .arg(dir.join("out"))
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(dir.join("stderr")).unwrap())
        .spawn()
        .unwrap()
}

/// Waits until the run has its namespaces and its flows are running.
fn wait_running() {
    let t = Instant::now();
    while t.elapsed() < Duration::from_secs(20) {
        if our_namespaces().len() >= 5 && our_processes().len() >= 3 {
            std::thread::sleep(Duration::from_millis(500));
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("the run never got its flows going");
}

#[test]
fn teardown_leaves_nothing_behind() {
    let Some(_serial) = netns_test("teardown_leaves_nothing_behind") else { return };
    let dir = tmpdir("teardown");

    // A complete run.
    let mut c = start(&dir);
    wait_running();
    assert!(c.wait().unwrap().success());
    assert_clean("after a normal run");

    // Ctrl-C in the middle.
    let mut c = start(&dir);
    wait_running();
    nix_kill(c.id(), "-INT");
    let st = c.wait().unwrap();
    assert!(!st.success(), "an interrupted run should not report success");
    let said = std::fs::read_to_string(dir.join("stderr")).unwrap();
    assert!(said.contains("interrupted"), "the run does not say it was interrupted: {said}");
    assert_clean("after SIGINT");

    // A crash leaves things behind; `cleanup` removes them, and so would the next run.
    let mut c = start(&dir);
    wait_running();
    nix_kill(c.id(), "-KILL");
    c.wait().unwrap();
    assert!(!our_namespaces().is_empty(), "SIGKILL should have left namespaces (test premise)");
    let o = Command::new(bin()).arg("cleanup").output().unwrap();
    assert!(o.status.success());
    assert_clean("after a crash and `cleanup`");
}

fn nix_kill(pid: u32, sig: &str) {
    assert!(Command::new("kill").arg(sig).arg(pid.to_string()).status().unwrap().success());
}
