//! The programs a run starts in its namespaces, pinned to the files the run began with: this
//! binary (the kernel flows' sinks and senders, the delay line) and the mpquic CLI.
//!
//! A run starts them again and again, for minutes. Started by path, they would be whatever file
//! is there at the time: cargo replaces `target/release/mpquic-testbed` or `mpquic` when it
//! rebuilds them, so a rebuild during a run would break its later points (this binary's path
//! then names a deleted file) or mix two versions. Through /proc the run keeps its own files:
//! this process's executable is `/proc/<pid>/exe`, and the CLI a descriptor this process holds
//! open, `/proc/<pid>/fd/<n>`; both stay the files they were however the paths change.

use anyhow::{Context, Result};
use std::collections::BTreeMap;
use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// This binary, as this process started it.
pub fn testbed() -> String {
    format!("/proc/{}/exe", std::process::id())
}

/// The program at `path` as it is now, and as it stays for this process: the first call per
/// path opens it (and keeps it open); every call returns the open file's /proc path.
pub fn pinned(path: &Path) -> Result<String> {
    static OPEN: Mutex<BTreeMap<PathBuf, File>> = Mutex::new(BTreeMap::new());
    let mut open = OPEN.lock().unwrap_or_else(|p| p.into_inner());
    let file = match open.entry(path.to_path_buf()) {
        std::collections::btree_map::Entry::Occupied(e) => e.into_mut(),
        std::collections::btree_map::Entry::Vacant(e) => {
            e.insert(File::open(path).with_context(|| format!("opening {}", path.display()))?)
        }
    };
    Ok(format!("/proc/{}/fd/{}", std::process::id(), file.as_raw_fd()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::os::unix::fs::PermissionsExt;

    /// A pinned program runs as it was when pinned, after its file was replaced the way cargo
    /// replaces a rebuilt binary (a new file under the old name).
    #[test]
    fn a_pinned_program_survives_its_file_being_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("program");
        let write = |text: &str| {
            let staged = dir.path().join("staged");
            let mut f = File::create(&staged).unwrap();
            writeln!(f, "#!/bin/sh\necho {text}").unwrap();
            f.set_permissions(std::fs::Permissions::from_mode(0o755)).unwrap();
            drop(f);
            std::fs::rename(&staged, &path).unwrap();
        };
        write("first");
        let pinned_path = pinned(&path).unwrap();
        assert_eq!(pinned(&path).unwrap(), pinned_path, "one descriptor per program");
        write("second");
        let out = std::process::Command::new(&pinned_path).output().unwrap();
        assert_eq!(String::from_utf8_lossy(&out.stdout), "first\n");
        let inode = |p: &Path| std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(p).unwrap());
        assert_eq!(inode(testbed().as_ref()), inode(&std::env::current_exe().unwrap()));
    }
}
