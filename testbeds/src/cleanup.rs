//! Teardown: of this run (on exit, error, Ctrl-C) and of crashed runs' leftovers.
//!
//! A run claims its id (its pid, which names its namespaces and scratch dir) by holding an
//! exclusive lock on `<RUN_ROOT>/<pid>.lock` for as long as its process lives; the kernel lets
//! go of the lock however the process ends. A later run removes another run's leftovers only
//! when that lock is free. The pid alone cannot say: runs on a shared machine may live in other
//! PID namespaces (the network namespaces and /run are the machine's), where the owner's pid is
//! not visible, or is another process's. Leftovers without a lock file (namespaces that tests
//! make by hand, named alike) fall back to whether their pid is alive.

use crate::netns::{run, PREFIX};
use anyhow::{Context, Result};
use nix::fcntl::{Flock, FlockArg};
use std::collections::BTreeMap;
use std::fs::File;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

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

fn lock_path(root: &Path, run_id: u32) -> PathBuf {
    root.join(format!("{run_id}.lock"))
}

/// Claim run id `run_id` for this process, once (later calls return at once): see the module
/// documentation. Fails when another live process holds the id.
pub fn claim_run(run_id: u32) -> Result<()> {
    static CLAIM: OnceLock<Flock<File>> = OnceLock::new();
    if CLAIM.get().is_none() {
        let _ = CLAIM.set(take_lock(Path::new(RUN_ROOT), run_id)?);
    }
    Ok(())
}

/// The exclusive lock on `root/<run_id>.lock`.
fn take_lock(root: &Path, run_id: u32) -> Result<Flock<File>> {
    std::fs::create_dir_all(root).with_context(|| format!("creating {}", root.display()))?;
    let path = lock_path(root, run_id);
    loop {
        let file = File::options().create(true).truncate(false).write(true).open(&path)?;
        let lock = Flock::lock(file, FlockArg::LockExclusiveNonblock).map_err(|(_, e)| {
            anyhow::anyhow!("run id {run_id} is in use by a live run ({}: {e})", path.display())
        })?;
        // A cleanup removes a free lock file; if it did so between the open and the lock, the
        // lock is on a file nobody else can find: take the one at the path.
        let same = |held: &File| {
            let meta = std::fs::metadata(&path).ok()?;
            let ours = held.metadata().ok()?;
            Some((meta.dev(), meta.ino()) == (ours.dev(), ours.ino()))
        };
        if same(&lock) == Some(true) {
            return Ok(lock);
        }
    }
}

/// What a later run can tell of a run's claim on its id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Claim {
    /// Its lock file is locked: its process is alive.
    Held,
    /// Its lock file is there but free: its process has ended.
    Free,
    /// No lock file.
    Missing,
}

fn claim_of(root: &Path, run_id: u32) -> Claim {
    let Ok(file) = File::open(lock_path(root, run_id)) else { return Claim::Missing };
    match Flock::lock(file, FlockArg::LockSharedNonblock) {
        Ok(_) => Claim::Free,
        Err(_) => Claim::Held,
    }
}

/// Whether a run's leftovers may be removed: its lock is free, or, without a lock file, its
/// pid is gone.
fn is_stale(claim: Claim, pid_alive: impl FnOnce() -> bool) -> bool {
    match claim {
        Claim::Held => false,
        Claim::Free => true,
        Claim::Missing => !pid_alive(),
    }
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

/// Leftovers of runs whose process is gone (or of every run if `all`), and the lock files of
/// ended runs. Returns what it removed.
pub fn cleanup_stale(all: bool) -> Vec<String> {
    let me = std::process::id();
    let root = Path::new(RUN_ROOT);
    let mut stale = BTreeMap::new();
    let mut gone = |pid: u32| {
        *stale.entry(pid).or_insert_with(|| {
            pid != me && (all || is_stale(claim_of(root, pid), || pid_alive(pid)))
        })
    };
    let mut removed = Vec::new();
    for (ns, pid) in our_namespaces() {
        if gone(pid) {
            remove_namespace(&ns);
            removed.push(ns);
        }
    }
    if let Ok(rd) = std::fs::read_dir(root) {
        for e in rd.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if let Some(pid) = name.parse::<u32>().ok().filter(|&pid| gone(pid)) {
                remove_run_dir(pid);
                removed.push(e.path().display().to_string());
            }
        }
    }
    // Lock files last: each run's leftovers above were judged by its lock.
    if let Ok(rd) = std::fs::read_dir(root) {
        for e in rd.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let pid = name.strip_suffix(".lock").and_then(|p| p.parse::<u32>().ok());
            if let Some(pid) = pid.filter(|&pid| pid != me && claim_of(root, pid) == Claim::Free) {
                let _ = std::fs::remove_file(lock_path(root, pid));
            }
        }
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_is_stale_when_its_lock_is_free_or_without_one_its_pid_is_gone() {
        let never = || panic!("a run with a lock file is judged by the lock alone");
        assert!(!is_stale(Claim::Held, never), "a held lock: alive, whatever its pid says");
        assert!(is_stale(Claim::Free, never), "a free lock: its process ended");
        assert!(!is_stale(Claim::Missing, || true));
        assert!(is_stale(Claim::Missing, || false));
    }

    #[test]
    fn a_claim_is_held_while_its_lock_lives_and_free_after() {
        let root = tempfile::tempdir().unwrap();
        assert_eq!(claim_of(root.path(), 7), Claim::Missing);
        let lock = take_lock(root.path(), 7).unwrap();
        assert_eq!(claim_of(root.path(), 7), Claim::Held);
        let taken = take_lock(root.path(), 7).map(|_| ()).unwrap_err().to_string();
        assert!(taken.contains("run id 7 is in use by a live run"), "{taken}");
        drop(lock);
        assert_eq!(claim_of(root.path(), 7), Claim::Free);
        assert!(take_lock(root.path(), 7).is_ok(), "a free id can be claimed again");
    }
}
