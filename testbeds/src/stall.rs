//! Receiver stalls: how long the bytes a receiver has taken in stopped growing.
//!
//! `mpquic serve --dir` writes what the application reads from the stream straight into a
//! temporary file (unbuffered, in reads of at most 256 KiB, renamed once verified), so the
//! file's size is the application's received byte count. A thread polls it with `fstat` every
//! millisecond through a descriptor opened once (it survives the rename) and keeps the instants
//! at which it grew. A stall is then measured to within one poll, and the thread's longest gap
//! between two polls (the machine may be loaded) says how far to trust that: finer than the
//! CLI's `--interval` lines (10 ms at best, and UDP bytes, which keep growing on a live path
//! while the stream waits for data lost on a dead one).

use anyhow::{Context, Result};
use serde::Serialize;
use std::fs::File;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

const POLL: Duration = Duration::from_millis(1);

/// The received byte count over time.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Progress {
    /// (seconds since the watch's origin, bytes) whenever the count changed.
    pub growth: Vec<(f64, u64)>,
    /// The longest time between two polls, seconds.
    pub longest_poll_gap_s: f64,
}

/// The longest stretch without growth between the first and the last byte.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Stall {
    /// When it began (the last growth before it), seconds since the watch's origin.
    pub from_s: f64,
    pub length_s: f64,
}

impl Progress {
    /// The longest stall between the first received byte and the last (`None` before two
    /// growths).
    pub fn longest_stall(&self) -> Option<Stall> {
        let received = self.growth.iter().skip_while(|(_, bytes)| *bytes == 0);
        received
            .clone()
            .zip(received.skip(1))
            .map(|(a, b)| Stall { from_s: a.0, length_s: b.0 - a.0 })
            .max_by(|a, b| a.length_s.total_cmp(&b.length_s))
    }

    /// Seconds from the first received byte to the last.
    pub fn span_s(&self) -> Option<f64> {
        let first = self.growth.iter().find(|(_, bytes)| *bytes > 0)?;
        Some(self.growth.last()?.0 - first.0)
    }

    pub fn bytes(&self) -> u64 {
        self.growth.last().map_or(0, |g| g.1)
    }
}

/// Polls the size of the one file that appears in a directory until stopped.
pub struct ReceiveWatch {
    stop: Arc<AtomicBool>,
    thread: JoinHandle<Result<Progress>>,
}

impl ReceiveWatch {
    /// Watches the first file to appear in `dir`; times count from `origin`.
    pub fn start(dir: PathBuf, origin: Instant) -> ReceiveWatch {
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = stop.clone();
        let thread = std::thread::spawn(move || {
            let mut progress = Progress::default();
            let mut file: Option<File> = None;
            let mut last_poll = Instant::now();
            while !stopped.load(Ordering::Relaxed) {
                let now = Instant::now();
                progress.longest_poll_gap_s =
                    progress.longest_poll_gap_s.max((now - last_poll).as_secs_f64());
                last_poll = now;
                if file.is_none() {
                    file = first_file(&dir)?;
                }
                if let Some(f) = &file {
                    let bytes = f.metadata().context("fstat of the received file")?.len();
                    if progress.growth.last().is_none_or(|g| g.1 != bytes) {
                        progress.growth.push(((now - origin).as_secs_f64(), bytes));
                    }
                }
                std::thread::sleep(POLL);
            }
            Ok(progress)
        });
        ReceiveWatch { stop, thread }
    }

    pub fn finish(self) -> Result<Progress> {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.join().map_err(|_| anyhow::anyhow!("the receive watch panicked"))?
    }
}

fn first_file(dir: &std::path::Path) -> Result<Option<File>> {
    let entries = std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))?;
    for e in entries.flatten() {
        // It may be renamed between the listing and the open: look again next poll.
        if let Ok(f) = File::open(e.path()) {
            return Ok(Some(f));
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn progress(growth: &[(f64, u64)]) -> Progress {
        Progress { growth: growth.to_vec(), longest_poll_gap_s: 0.001 }
    }

    #[test]
    fn the_longest_stall_lies_between_the_first_and_last_byte() {
        // Waiting 2 s for the first byte is no stall; the 0.7 s gap is.
        let p = progress(&[(0.0, 0), (2.0, 10), (2.1, 20), (2.8, 30), (2.9, 40)]);
        let s = p.longest_stall().unwrap();
        assert_eq!(s.from_s, 2.1);
        assert!((s.length_s - 0.7).abs() < 1e-9);
        assert!((p.span_s().unwrap() - 0.9).abs() < 1e-9);
        assert_eq!(p.bytes(), 40);
    }

    #[test]
    fn one_growth_has_no_stall() {
        assert_eq!(progress(&[(0.0, 0), (1.0, 10)]).longest_stall(), None);
        assert_eq!(progress(&[]).longest_stall(), None);
    }
}
