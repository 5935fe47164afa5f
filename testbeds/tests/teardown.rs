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

/// One `mpquic-testbed run` of the scenario. Only its own namespaces, processes and mounts
/// count: other tests may run testbeds beside this one.
struct Run {
    child: std::process::Child,
    mark: String,
}

impl Run {
    /// Starts the run number `n` of this test.
    fn start(dir: &std::path::Path, n: u32) -> Run {
        let sc = dir.join("s.toml");
        std::fs::write(&sc, SCENARIO).unwrap();
        let mark = format!("teardown-{}-{n}", std::process::id());
        let child = Command::new(bin())
            .arg("run")
            .arg(&sc)
            .arg("--out")
            .arg(dir.join("out"))
            .env(RUN_MARK, &mark)
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(dir.join("stderr")).unwrap())
            .spawn()
            .unwrap();
        Run { child, mark }
    }

    fn namespaces(&self) -> Vec<String> {
        run_namespaces(self.child.id())
    }

    fn processes(&self) -> Vec<String> {
        run_processes(&self.mark)
    }

    /// Waits until the run has its namespaces and its flows are running.
    fn wait_running(&self) {
        let t = Instant::now();
        while t.elapsed() < Duration::from_secs(20) {
            if self.namespaces().len() >= 5 && self.processes().len() >= 3 {
                std::thread::sleep(Duration::from_millis(500));
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("the run never got its flows going");
    }

    fn assert_clean(&self, when: &str) {
        assert!(self.namespaces().is_empty(), "{when}: namespaces left: {:?}", self.namespaces());
        assert!(self.processes().is_empty(), "{when}: processes left: {:?}", self.processes());
        let mounts = run_mounts(self.child.id());
        assert!(mounts.is_empty(), "{when}: mounts left: {mounts:?}");
    }
}

#[test]
fn teardown_leaves_nothing_behind() {
    let Some(_serial) = netns_test("teardown_leaves_nothing_behind") else { return };
    let dir = tmpdir("teardown");

    // A complete run.
    let mut run = Run::start(&dir, 0);
    run.wait_running();
    assert!(run.child.wait().unwrap().success());
    run.assert_clean("after a normal run");

    // Ctrl-C in the middle.
    let mut run = Run::start(&dir, 1);
    run.wait_running();
    nix_kill(run.child.id(), "-INT");
    let st = run.child.wait().unwrap();
    assert!(!st.success(), "an interrupted run should not report success");
    let said = std::fs::read_to_string(dir.join("stderr")).unwrap();
    assert!(said.contains("interrupted"), "the run does not say it was interrupted: {said}");
    run.assert_clean("after SIGINT");

    // A crash leaves things behind; `cleanup` removes them, and so would the next run.
    let mut run = Run::start(&dir, 2);
    run.wait_running();
    nix_kill(run.child.id(), "-KILL");
    run.child.wait().unwrap();
    assert!(!run.namespaces().is_empty(), "SIGKILL should have left namespaces (test premise)");
    assert!(!run.processes().is_empty(), "SIGKILL should have left flows (test premise)");
    let o = Command::new(bin()).arg("cleanup").output().unwrap();
    assert!(o.status.success());
    run.assert_clean("after a crash and `cleanup`");
}

fn nix_kill(pid: u32, sig: &str) {
    assert!(Command::new("kill").arg(sig).arg(pid.to_string()).status().unwrap().success());
}
