//! Shared helpers of the testbed integration tests: skip reasons, running the binary,
//! writing scenarios, reading results.

#![allow(dead_code)]

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, MutexGuard};

/// The tests share the machine's two cores: one testbed run at a time.
static SERIAL: Mutex<()> = Mutex::new(());

pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_mpquic-testbed")
}

fn on_path(tool: &str) -> bool {
    std::env::var("PATH").unwrap_or_default().split(':').any(|d| Path::new(d).join(tool).is_file())
}

/// Why the netns tests cannot run here, if they cannot.
pub fn skip_reason() -> Option<String> {
    if !nix_is_root() {
        return Some("not root: network namespaces and tc need root".into());
    }
    for (tool, pkg) in
        [("ip", "iproute2"), ("tc", "iproute2"), ("clang", "clang"), ("sysctl", "procps")]
    {
        if !on_path(tool) {
            return Some(format!(
                "`{tool}` missing (Debian package {pkg}; see testbeds/install-deps.sh)"
            ));
        }
    }
    if !Path::new("/usr/include/bpf/bpf_helpers.h").exists() {
        return Some("libbpf headers missing (Debian package libbpf-dev)".into());
    }
    None
}

fn nix_is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .map(|l| l.split_whitespace().nth(2) == Some("0"))
        })
        .unwrap_or(false)
}

/// Start a netns test: `None` when they cannot run here (the test is then reported as skipped,
/// with the reason, or fails under `MPQUIC_FAIL_ON_SKIP=1`: see `mpquic_skip`), otherwise the
/// lock that keeps this binary's testbed runs one at a time; hold it for the whole test.
pub fn netns_test(test: &str) -> Option<MutexGuard<'static, ()>> {
    if let Some(reason) = skip_reason() {
        mpquic_skip::skip(test, &reason);
        return None;
    }
    Some(SERIAL.lock().unwrap_or_else(|e| e.into_inner()))
}

pub fn tmpdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("mqtb-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Runs `mpquic-testbed run` on an experiment text without sweep axes (the shared language);
/// returns its first run's result.json.
pub fn run_scenario(name: &str, toml: &str) -> Value {
    let dir = tmpdir(name);
    let sc = dir.join("scenario.toml");
    std::fs::write(&sc, toml).unwrap();
    let o = Command::new(bin()).arg("run").arg(&sc).arg("--out").arg(dir.join("out")).output();
    let o = o.unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "run {name} failed: {stderr}");
    println!("{name}: {}", String::from_utf8_lossy(&o.stdout));
    let results = std::fs::read_to_string(dir.join("out/experiment.json")).unwrap();
    let results: Value = serde_json::from_str(&results).unwrap();
    let out = PathBuf::from(results["runs"][0]["dir"].as_str().unwrap());
    for p in ["result.json", "rep0-throughput.svg", "rep0-queue.svg", "rep0-fct-cdf.svg"] {
        assert!(out.join(p).is_file(), "{name}: {p} not written");
    }
    serde_json::from_str(&std::fs::read_to_string(out.join("result.json")).unwrap()).unwrap()
}

pub fn f(v: &Value, path: &[&str]) -> f64 {
    let mut x = v;
    for p in path {
        x = match p.parse::<usize>() {
            Ok(i) => &x[i],
            Err(_) => &x[*p],
        };
    }
    x.as_f64().unwrap_or_else(|| panic!("{path:?} not a number in {x}"))
}

/// The least share of the bottleneck (or of the link sum) a test's flows must reach: a floor
/// against flows starved by the testbed (a marker that marks everything, a path that carries
/// nothing), not a speed check. Goodput here depends on the host: a quiet one reads 0.94-0.96,
/// but this 2-core VM has read 0.72-0.75 in correct runs while a build ran beside the suite or
/// the hypervisor took CPU (steal), and a speed floor there fails CI for nothing.
pub const STARVATION_FLOOR: f64 = 0.5;

/// The environment variable that marks the processes of one testbed run a test started (its
/// flows inherit it), so a test sees its own run's processes, not those of tests running
/// beside it.
pub const RUN_MARK: &str = "MQTB_TEST_RUN";

/// The namespaces of the run with process id `run_id` (`mqtb-<pid>-<node>`), as `ip netns
/// list` shows them.
pub fn run_namespaces(run_id: u32) -> Vec<String> {
    let prefix = format!("mqtb-{run_id}-");
    let o = Command::new("ip").args(["netns", "list"]).output().unwrap();
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|n| n.starts_with(&prefix))
        .map(String::from)
        .collect()
}

/// Processes running our hidden sender/sink subcommands with `RUN_MARK=mark` in their
/// environment.
pub fn run_processes(mark: &str) -> Vec<String> {
    let wanted = format!("{RUN_MARK}={mark}");
    let mut v = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(c) = std::fs::read(e.path().join("cmdline")) else { continue };
        let c = String::from_utf8_lossy(&c).replace('\0', " ");
        // The run starts them as `/proc/<its pid>/exe` (see the runner's `programs`).
        if !(c.contains("__sink") || c.contains("__send")) {
            continue;
        }
        let environ = std::fs::read(e.path().join("environ")).unwrap_or_default();
        if environ.split(|&b| b == 0).any(|var| var == wanted.as_bytes()) {
            v.push(c);
        }
    }
    v
}

/// The mounts under the scratch dir of the run with process id `run_id`.
pub fn run_mounts(run_id: u32) -> Vec<String> {
    let dir = format!("/run/mqtb/{run_id}/");
    std::fs::read_to_string("/proc/mounts")
        .unwrap()
        .lines()
        .filter(|l| l.contains(&dir))
        .map(String::from)
        .collect()
}

/// The `mpquic` CLI binary the runner will use ($MPQUIC_BIN or target/{release,debug}/mpquic).
/// `cargo test --workspace` (scripts/test) builds it; as root, a missing binary fails the
/// mpquic tests instead of skipping them, since they are what checks the mpquic flow kind.
pub fn require_mpquic(test: &str) -> String {
    if let Ok(p) = std::env::var("MPQUIC_BIN") {
        return p;
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    ["release", "debug"]
        .iter()
        .map(|p| root.join("target").join(p).join("mpquic"))
        .find(|p| p.is_file())
        .map(|p| p.display().to_string())
        .unwrap_or_else(|| {
            panic!(
                "{test}: the mpquic CLI binary is not built: run `cargo build --release -p mpquic-cli` \
                 (scripts/test builds it with the workspace) or set MPQUIC_BIN"
            )
        })
}

/// The mpquic client's report of a flow, checked to be there.
pub fn mpquic_report(flow: &Value) -> &Value {
    assert_eq!(flow["completed"], true, "flow {} failed: {}", flow["id"], flow["error"]);
    let m = &flow["mpquic"];
    assert!(m.is_object(), "flow {} has no mpquic report: {flow}", flow["id"]);
    assert_eq!(m["verified"], true, "the receiver did not verify the data: {m}");
    m
}

/// The head of a many-to-one experiment through one RFC 9332 dual queue at sw -> r (`aqm =
/// "dualq"`: 5 ms links, a 400-packet buffer, per-packet ECN); its `[[flows]]` follow.
pub fn dualq_many_to_one(name: &str, duration: &str, rate: &str, senders: u32) -> String {
    format!(
        r#"
name = "{name}"
duration = "{duration}"
[link]
rate = "{rate}"
delay = "5ms"
buffer = 400
k = 0
aqm = "dualq"
[transport]
ecn = "per-packet"
[topology]
kind = "many-to-one"
senders = {senders}
access = {{ rate = "10Gbps", delay = "1us" }}
"#
    )
}
