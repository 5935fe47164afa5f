//! Issue 41, part 4: a server stopped by SIGTERM drains. It refuses new connections, lets the
//! uploads running finish up to `--drain`'s deadline, cuts the rest off as resumable partial
//! copies and says so in its exit code; a second SIGTERM ends it at once. Whatever the ending,
//! every file under its final name is whole, and every other upload resumes to identical
//! against the restarted server.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::*;

/// Clients, each sending a directory of `FILES` files all at once (`--parallel`): 20 uploads.
const CLIENTS: usize = 4;
const FILES: usize = 5;
/// Each file's size: three whole resume chunks (1 MiB each).
const SIZE: usize = 3 << 20;
/// Each client's cap: its 5 files share 3 MiB/s, so each takes 5 s at least on any host.
const CAP: &str = "3M";

/// The clients' directories of files to send, `set0` ... `set3`.
fn sources(root: &Path) -> Vec<PathBuf> {
    (0..CLIENTS)
        .map(|c| {
            let dir = root.join(format!("set{c}"));
            std::fs::create_dir(&dir).unwrap();
            for f in 0..FILES {
                // Sizes differ by a byte so no two files are alike.
                random_file(&dir, &format!("f{f}.bin"), SIZE + c * FILES + f);
            }
            dir
        })
        .collect()
}

fn store_server(store: &Path, drain: &str) -> ServerProcess {
    let dir = store.to_str().unwrap();
    ServerProcess::start(&["127.0.0.1"], &["--insecure", "--dir", dir, "--drain", drain])
}

/// `send DIR` to `server`, capped to `cap` if given, its 5 files at once.
fn send(server: &ServerProcess, dirs: &[&Path], cap: Option<&str>) -> Command {
    let mut command = Command::new(BIN);
    command.arg("send").args(dirs).args(["--insecure", "--parallel", "5", "--json"]);
    command.args(["--server", &server.addr("127.0.0.1")]);
    if let Some(cap) = cap {
        command.args(["--bwlimit", cap]);
    }
    command.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::piped());
    command
}

/// The resumable partial copies beneath `dir`, and their sizes.
fn partials(dir: &Path) -> Vec<u64> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().map(Result::unwrap) {
        let name = entry.file_name().to_string_lossy().into_owned();
        if entry.file_type().unwrap().is_dir() {
            found.extend(partials(&entry.path()));
        } else if name.starts_with(".mpquic-part-resume-") {
            found.push(entry.metadata().map_or(0, |m| m.len()));
        }
    }
    found
}

/// The 20 uploads running, capped, into a server drained with `--drain` `drain`.
struct Running {
    _local: tempfile::TempDir,
    store: tempfile::TempDir,
    dirs: Vec<PathBuf>,
    server: ServerProcess,
    clients: Vec<Child>,
}

/// Start the 20 uploads and return once every one has data on the server.
fn start_uploads(drain: &str) -> Running {
    let (local, store) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let dirs = sources(local.path());
    let server = store_server(store.path(), drain);
    let clients: Vec<Child> =
        dirs.iter().map(|dir| send(&server, &[dir], Some(CAP)).spawn().unwrap()).collect();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let held = partials(store.path());
        if held.len() == CLIENTS * FILES && held.iter().all(|&n| n > 0) {
            return Running { _local: local, store, dirs, server, clients };
        }
        assert!(Instant::now() < deadline, "uploads did not all start: {held:?}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn sigterm(child: &Child) {
    let status = Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap();
    assert!(status.success());
}

/// Wait for `server` to exit within `within`; its exit code.
fn exit_code(server: &mut ServerProcess, within: Duration) -> i32 {
    let deadline = Instant::now() + within;
    loop {
        if let Some(status) = server.child.try_wait().unwrap() {
            return status.code().expect("exited, not killed by a signal");
        }
        assert!(Instant::now() < deadline, "no exit: {}", server.stderr.lock().unwrap());
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn wait_for_line(server: &ServerProcess, text: &str) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !server.stderr.lock().unwrap().contains(text) {
        assert!(Instant::now() < deadline, "no {text:?}: {}", server.stderr.lock().unwrap());
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn same(a: &Path, b: &Path) -> bool {
    std::fs::read(a).ok().map(|d| blake3::hash(&d))
        == Some(blake3::hash(&std::fs::read(b).unwrap()))
}

/// Every file under its final name in `store` is identical to its source; the files missing
/// are sent again (a directory of the same name holding only them, as a user would) to a
/// server restarted on the store, which resumes them; then all 20 are identical. Returns how
/// many were missing.
fn complete_after_restart(store: &Path, dirs: &[PathBuf]) -> usize {
    let retry = tempfile::tempdir().unwrap();
    let mut missing = 0;
    for dir in dirs {
        let set = dir.file_name().unwrap();
        std::fs::create_dir(retry.path().join(set)).unwrap();
        for f in 0..FILES {
            let name = format!("f{f}.bin");
            let stored = store.join(set).join(&name);
            if stored.exists() {
                assert!(same(&stored, &dir.join(&name)), "{} is not whole", stored.display());
            } else {
                std::fs::hard_link(dir.join(&name), retry.path().join(set).join(&name)).unwrap();
                missing += 1;
            }
        }
    }
    let server = store_server(store, "30");
    for dir in dirs {
        let again = retry.path().join(dir.file_name().unwrap());
        if std::fs::read_dir(&again).unwrap().next().is_some() {
            let out = send(&server, &[&again], None).output().unwrap();
            assert!(out.status.success(), "{}: {}", again.display(), stderr(&out));
        }
    }
    for dir in dirs {
        for f in 0..FILES {
            let stored = store.join(dir.file_name().unwrap()).join(format!("f{f}.bin"));
            assert!(same(&stored, &dir.join(format!("f{f}.bin"))), "{}", stored.display());
        }
    }
    assert!(partials(store).is_empty(), "{:?}", partials(store));
    missing
}

/// With time enough (a 60 s deadline, uploads of 5 s), every upload running at the SIGTERM
/// finishes whole and the server exits 0; meanwhile a new connection is refused.
#[test]
fn a_drain_lets_the_uploads_running_finish() {
    let Running { _local, store, dirs, mut server, clients } = start_uploads("60");
    sigterm(&server.child);
    wait_for_line(&server, "draining");
    let late = mpquic(&["ls", "--insecure", "--server", &server.addr("127.0.0.1")]);
    assert_eq!(late.status.code(), Some(3), "a new connection is refused: {}", stderr(&late));
    for client in clients {
        let out = client.wait_with_output().unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
    }
    assert_eq!(exit_code(&mut server, Duration::from_secs(30)), 0);
    let log = server.stderr.lock().unwrap().clone();
    assert!(log.contains("drained: every transfer finished"), "{log}");
    assert_eq!(complete_after_restart(store.path(), &dirs), 0);
}

/// With a 1 s deadline, uploads of 5 s are cut off: the server exits 6, nothing
/// half-received has its final name, and every upload cut off resumes to identical.
#[test]
fn a_drain_deadline_cuts_uploads_off_as_resumable_partial_copies() {
    let Running { _local, store, dirs, mut server, clients } = start_uploads("1");
    sigterm(&server.child);
    assert_eq!(exit_code(&mut server, Duration::from_secs(30)), 6);
    let log = server.stderr.lock().unwrap().clone();
    assert!(log.contains("cut off"), "{log}");
    let outs: Vec<_> = clients.into_iter().map(|c| c.wait_with_output().unwrap()).collect();
    assert!(outs.iter().any(|out| !out.status.success()), "a client was cut off");
    assert!(!partials(store.path()).is_empty(), "partial copies kept");
    assert!(complete_after_restart(store.path(), &dirs) > 0);
}

/// A second SIGTERM ends a drain at once (143), however long its deadline; the uploads cut
/// off resume to identical.
#[test]
fn a_second_sigterm_ends_the_drain_at_once() {
    let Running { _local, store, dirs, mut server, clients } = start_uploads("600");
    sigterm(&server.child);
    wait_for_line(&server, "draining");
    sigterm(&server.child);
    assert_eq!(exit_code(&mut server, Duration::from_secs(10)), 143);
    for client in clients {
        let _ = client.wait_with_output().unwrap();
    }
    assert!(complete_after_restart(store.path(), &dirs) > 0);
}
