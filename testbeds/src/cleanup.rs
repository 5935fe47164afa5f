//! Teardown: of this run (on exit, error, Ctrl-C) and of crashed runs' leftovers.

use crate::netns::{run, PREFIX};
use std::path::{Path, PathBuf};

/// Root of every run's scratch files and bpffs mount: `<RUN_ROOT>/<pid>/`.
pub const RUN_ROOT: &str = "/run/mqtb";

pub fn run_dir(run_id: u32) -> PathBuf {
    Path::new(RUN_ROOT).join(run_id.to_string())
}

/// Removes a namespace after ending the processes inside it (they are ours: we made it).
pub fn remove_namespace(ns: &str) {
    for _ in 0..3 {
        let pids = run("ip", &["netns", "pids", ns]).unwrap_or_default();
        let pids: Vec<i32> = pids.split_whitespace().filter_map(|p| p.parse().ok()).collect();
        if pids.is_empty() {
            break;
        }
        for p in &pids {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(*p),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let _ = run("ip", &["netns", "del", ns]);
}

/// Deletes a namespace on drop.
pub struct NsGuard(pub String);

impl Drop for NsGuard {
    fn drop(&mut self) {
        remove_namespace(&self.0);
    }
}

fn pid_alive(pid: u32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
}

/// Namespaces named with our prefix, with their owner's pid.
pub fn our_namespaces() -> Vec<(String, u32)> {
    let out = run("ip", &["netns", "list"]).unwrap_or_default();
    out.lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|n| n.starts_with(PREFIX))
        .filter_map(|n| {
            let pid = n[PREFIX.len()..].split('-').next()?.parse().ok()?;
            Some((n.to_string(), pid))
        })
        .collect()
}

/// Removes the scratch dir of a run, unmounting its bpffs first.
pub fn remove_run_dir(run_id: u32) {
    let dir = run_dir(run_id);
    if let Ok(rd) = std::fs::read_dir(&dir) {
        for e in rd.flatten() {
            if e.file_name().to_string_lossy().starts_with("bpffs") {
                let _ = nix::mount::umount2(&e.path(), nix::mount::MntFlags::MNT_DETACH);
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Everything of run `run_id`.
pub fn cleanup_run(run_id: u32) {
    for (ns, pid) in our_namespaces() {
        if pid == run_id {
            remove_namespace(&ns);
        }
    }
    remove_run_dir(run_id);
}

/// Leftovers of runs whose process is gone (or of every run if `all`). Returns what it removed.
pub fn cleanup_stale(all: bool) -> Vec<String> {
    let me = std::process::id();
    let mut removed = Vec::new();
    for (ns, pid) in our_namespaces() {
        if pid != me && (all || !pid_alive(pid)) {
            remove_namespace(&ns);
            removed.push(ns);
        }
    }
    if let Ok(rd) = std::fs::read_dir(RUN_ROOT) {
        for e in rd.flatten() {
            if let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) {
                if pid != me && (all || !pid_alive(pid)) {
                    remove_run_dir(pid);
                    removed.push(e.path().display().to_string());
                }
            }
        }
    }
    removed
}
