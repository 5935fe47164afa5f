//! The never-a-partial-file check: a thread walks the server's directory (and the clients'
//! download directories) every 100 ms, and every file it sees under a name that is not hidden
//! must be one the soak expects there, at its full size. A transfer writes into a hidden
//! `.mpquic-part-...` file and renames it when verified, so a visible name is complete or
//! absent; a visible file of the wrong size is a violation.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

const POLL: Duration = Duration::from_millis(100);

/// The files expected at their final names: absolute path -> size.
#[derive(Clone, Default)]
pub struct Expected(Arc<Mutex<HashMap<PathBuf, u64>>>);

impl Expected {
    pub fn expect(&self, path: PathBuf, size: u64) {
        self.0.lock().unwrap().insert(path, size);
    }

    /// Forget `path` (its file is about to be removed).
    pub fn forget(&self, path: &Path) {
        self.0.lock().unwrap().remove(path);
    }

    fn size_of(&self, path: &Path) -> Option<u64> {
        self.0.lock().unwrap().get(path).copied()
    }
}

/// What the walks found.
#[derive(Debug, Default, Clone, serde::Serialize)]
pub struct Findings {
    pub walks: u64,
    /// The most visible files one walk saw.
    pub most_files: usize,
    /// "path: N bytes visible, M expected" (at most 50 kept).
    pub violations: Vec<String>,
    pub violation_count: u64,
}

pub struct Watch {
    stop: Arc<AtomicBool>,
    thread: JoinHandle<Findings>,
}

impl Watch {
    pub fn start(roots: Vec<PathBuf>, expected: Expected) -> Watch {
        let stop = Arc::new(AtomicBool::new(false));
        let stopping = stop.clone();
        let thread = std::thread::spawn(move || {
            let mut found = Findings::default();
            while !stopping.load(Ordering::Relaxed) {
                let mut seen = 0;
                for root in &roots {
                    seen += walk(root, &expected, &mut found);
                }
                found.walks += 1;
                found.most_files = found.most_files.max(seen);
                std::thread::sleep(POLL);
            }
            found
        });
        Watch { stop, thread }
    }

    pub fn finish(self) -> Findings {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.join().unwrap_or_default()
    }
}

/// One walk of `root`: checks each visible file; returns how many it saw.
fn walk(root: &Path, expected: &Expected, found: &mut Findings) -> usize {
    let mut seen = 0;
    let mut todo = vec![root.to_path_buf()];
    while let Some(dir) = todo.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        for entry in entries.flatten() {
            if entry.file_name().to_string_lossy().starts_with('.') {
                continue;
            }
            let Ok(kind) = entry.file_type() else { continue };
            if kind.is_dir() {
                todo.push(entry.path());
            } else {
                seen += 1;
                check(&entry.path(), expected, found);
            }
        }
    }
    seen
}

fn check(path: &Path, expected: &Expected, found: &mut Findings) {
    // The size is read before the expectation: a file removed (and forgotten) in between
    // reads as gone, not as unexpected.
    let Ok(size) = std::fs::metadata(path).map(|m| m.len()) else { return };
    let problem = match expected.size_of(path) {
        Some(want) if want == size => return,
        Some(want) => format!("{}: {size} bytes visible, {want} expected", path.display()),
        None if !path.exists() => return,
        None => format!("{}: {size} bytes visible, not expected there", path.display()),
    };
    found.violation_count += 1;
    if found.violations.len() < 50 {
        found.violations.push(problem);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_short_or_unknown_visible_file_is_a_violation_a_hidden_one_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let expected = Expected::default();
        let (whole, short) = (dir.path().join("a/whole"), dir.path().join("short"));
        std::fs::create_dir_all(dir.path().join("a")).unwrap();
        std::fs::write(&whole, b"12345").unwrap();
        std::fs::write(&short, b"12").unwrap();
        std::fs::write(dir.path().join("a/.mpquic-part-resume-x"), b"1").unwrap();
        std::fs::write(dir.path().join("stray"), b"1").unwrap();
        expected.expect(whole, 5);
        expected.expect(short, 5);
        let mut found = Findings::default();
        assert_eq!(walk(dir.path(), &expected, &mut found), 3);
        assert_eq!(found.violation_count, 2, "{:?}", found.violations);
        assert!(found.violations.iter().any(|v| v.contains("short: 2 bytes visible, 5")));
        assert!(found.violations.iter().any(|v| v.contains("stray: 1 bytes visible, not")));
    }
}
