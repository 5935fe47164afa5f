//! What a transfer prints: a progress bar while it runs, then a per-path table or one JSON object.

use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use mpquic::noq::PathStatus;
use mpquic::{ConnectionReport, PathClose};
use serde::Serialize;

/// The outcome of one transfer.
#[derive(Debug, Serialize)]
pub struct TransferResult {
    /// "send", "get" or "receive".
    pub direction: &'static str,
    /// File name.
    pub name: String,
    /// Payload bytes: the file's size.
    pub bytes: u64,
    /// Where this transfer's data started: the bytes of a resumed file that the receiver
    /// already held (checked against the sender's), 0 for a fresh start. `bytes -
    /// resumed_from` were sent this time.
    pub resumed_from: u64,
    /// Flow completion time: from the request to the verified end, seconds.
    pub fct_s: f64,
    /// Payload bits per second over the FCT, in Mbit/s (the bytes sent this time).
    pub goodput_mbps: f64,
    /// Whether the receiver verified the hash.
    pub verified: bool,
    /// Timed (unsized) transfers only: what ended the data. The sender says "time" (`--time`
    /// ran out) or the signal that stopped it early ("Ctrl-C", "SIGTERM"); the receiver says
    /// "sender" (the stream ended with its hash).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ended_by: Option<&'static str>,
    /// A receiving server's `--received-series`: (CLOCK_MONOTONIC ns, payload bytes received
    /// so far), one sample per interval and one at the end.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub received_series: Vec<(u64, u64)>,
    /// CPU seconds (user + system) this process spent during the transfer, both endpoints
    /// included when they share the process (`mpquic demo`); `None` where not measured.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu_s: Option<f64>,
    /// The connection's per-path statistics and controller state.
    #[serde(flatten)]
    pub connection: ConnectionReport,
}

impl TransferResult {
    pub fn new(
        direction: &'static str,
        name: String,
        bytes: u64,
        fct: Duration,
        connection: ConnectionReport,
    ) -> Self {
        let fct_s = fct.as_secs_f64();
        TransferResult {
            direction,
            name,
            bytes,
            resumed_from: 0,
            fct_s,
            goodput_mbps: goodput_mbps(bytes, fct_s),
            verified: true,
            ended_by: None,
            received_series: Vec::new(),
            cpu_s: None,
            connection,
        }
    }

    /// The transfer resumed at byte `from`: its goodput counts only the bytes sent after it.
    pub fn resumed(&mut self, from: u64) {
        self.resumed_from = from;
        self.goodput_mbps = goodput_mbps(self.bytes - from, self.fct_s);
    }

    /// The human-readable summary: totals, then one row per path.
    pub fn table(&self) -> String {
        use std::fmt::Write;
        let c = &self.connection;
        let mut out = String::new();
        let ended = match self.ended_by {
            Some("sender") => " (a timed stream)".to_string(),
            Some(why) => format!(" (timed, ended by {why})"),
            None => String::new(),
        };
        let _ = writeln!(
            out,
            "{} {} ({}){}{ended} in {:.3} s: {:.1} Mbit/s goodput, BLAKE3 verified; controller {}, CE counting: {}",
            self.direction,
            self.name,
            human_bytes(self.bytes),
            resumed_text(self.resumed_from),
            self.fct_s,
            self.goodput_mbps,
            c.controller,
            if c.exact_ecn {
                "exact (the ACK frames' CE counts)"
            } else {
                "none (the stack's own controller hears only that a frame raised CE)"
            },
        );
        controller_line(c, &mut out);
        if let Some(cpu) = self.cpu_s {
            let per_gb = cpu / (self.bytes as f64 / 1e9);
            let _ = writeln!(
                out,
                "CPU: {cpu:.2} s ({per_gb:.2} s per GB, sender and receiver together)"
            );
        }
        paths_table(c, receives(self.direction), &mut out);
        out
    }
}

/// Whether a transfer of this direction received the data: its table then shows, as iperf3
/// `-R` does, the bytes each path received (a receiver's sent bytes are mostly ACKs).
fn receives(direction: &str) -> bool {
    matches!(direction, "get" | "receive")
}

/// Print a line above the progress bar (or on stderr when there is none on show).
pub fn say(bar: &ProgressBar, line: &str) {
    if bar.is_hidden() {
        eprintln!("{line}");
    } else {
        bar.println(line);
    }
}

/// ", resumed at N" for a resumed transfer, nothing for a fresh one.
fn resumed_text(from: u64) -> String {
    match from {
        0 => String::new(),
        from => format!(", resumed at {}", human_bytes(from)),
    }
}

/// The controller's state, on one line, when it has something to say.
fn controller_line(c: &ConnectionReport, out: &mut String) {
    use std::fmt::Write;
    if let Some(state) = &c.controller_state {
        let mut extras = Vec::new();
        if let Some(mode) = state.mode {
            extras.push(format!("mode {mode}"));
        }
        if state.suppressions > 0 || state.releases > 0 {
            extras
                .push(format!("{} suppressions, {} releases", state.suppressions, state.releases));
        }
        if state.eliminations > 0 {
            extras.push(format!("{} paths eliminated", state.eliminations));
        }
        if !extras.is_empty() {
            let _ = writeln!(out, "controller: {}", extras.join(", "));
        }
    }
}

/// One row per path: route, bytes, share, RTTs, CE marks, losses, window, state. The bytes
/// and share are those received when `received` (the data's direction for a receiver), else
/// those sent.
fn paths_table(c: &ConnectionReport, received: bool, out: &mut String) {
    use std::fmt::Write;
    let _ = writeln!(
        out,
        "{:>4}  {:<32} {:>8} {:>10} {:>6} {:>22} {:>18} {:>6} {:>9} {:>9}",
        "path",
        "local -> remote",
        "opened",
        if received { "received" } else { "sent" },
        "share",
        "rtt min/p50/p99 ms",
        "CE ev/marked",
        "lost",
        "cwnd",
        "inactive"
    );
    for p in &c.paths {
        let route = format!(
            "{} -> {}",
            p.local.map_or("*".to_string(), |l| l.to_string()),
            p.remote.map_or("?".to_string(), |r| r.to_string())
        );
        let rtt = match (p.rtt_min_ms, p.rtt_p50_ms, p.rtt_p99_ms) {
            (Some(a), Some(b), Some(c)) => format!("{a:.2}/{b:.2}/{c:.2}"),
            _ => format!("~{:.2}", p.rtt_smoothed_ms),
        };
        let _ = writeln!(
            out,
            "{:>4}  {:<32} {:>8} {:>10} {:>5.1}% {:>22} {:>18} {:>6} {:>9} {:>8.0}ms{}",
            p.id,
            route,
            // When the path opened, after the connection (--path-delay, or a re-opened
            // path).
            p.opened_ms.map_or("-".into(), |ms| format!("{:.2}s", ms / 1000.0)),
            human_bytes(if received { p.bytes_received } else { p.bytes_sent }),
            if received { p.share_received } else { p.share } * 100.0,
            rtt,
            match (p.ce_events, p.ce_marked) {
                (Some(events), Some(marked)) => format!("{events}/{marked}"),
                _ => "-".into(),
            },
            p.lost_packets,
            human_bytes(p.cwnd),
            p.inactive_ms,
            match p.close_reason {
                Some(PathClose::Eliminated) => "  (eliminated)".to_string(),
                Some(reason) => format!("  (closed: {reason})"),
                None if p.status == PathStatus::Backup => "  (backup)".to_string(),
                None if !p.active => "  (inactive)".to_string(),
                None => String::new(),
            },
        );
    }
}

/// One file of a command that moves several.
#[derive(Debug, Serialize)]
pub struct FileResult {
    /// Its path on the server.
    pub name: String,
    /// Payload bytes moved (its size, once verified).
    pub bytes: u64,
    /// Where its data started: the bytes of it the receiver already held (0: from the start).
    pub resumed_from: u64,
    /// From its request to its verified end, seconds.
    pub fct_s: f64,
    /// Whether it arrived whole and its BLAKE3 hash matched.
    pub verified: bool,
    /// Why it failed, when it did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl FileResult {
    /// The line printed when the file is done.
    pub fn line(&self, direction: &str) -> String {
        match &self.error {
            None => format!(
                "{direction} {} ({}){} in {:.3} s, BLAKE3 verified",
                self.name,
                human_bytes(self.bytes),
                resumed_text(self.resumed_from),
                self.fct_s
            ),
            Some(error) => format!("{direction} {} failed: {error}", self.name),
        }
    }
}

/// The outcome of a command that moved several files over one connection.
#[derive(Debug, Serialize)]
pub struct BatchResult {
    /// "send" or "get".
    pub direction: &'static str,
    /// Every file, in the order they finished.
    pub files: Vec<FileResult>,
    /// How many failed.
    pub failed: usize,
    /// Verified payload bytes, over all files.
    pub bytes: u64,
    /// From the first request to the last file's end, seconds.
    pub fct_s: f64,
    /// Verified payload bits per second over that time, in Mbit/s.
    pub goodput_mbps: f64,
    /// The connection's per-path statistics and controller state.
    #[serde(flatten)]
    pub connection: ConnectionReport,
}

impl BatchResult {
    pub fn new(
        direction: &'static str,
        files: Vec<FileResult>,
        elapsed: Duration,
        connection: ConnectionReport,
    ) -> Self {
        let bytes = files.iter().filter(|f| f.verified).map(|f| f.bytes).sum();
        let fct_s = elapsed.as_secs_f64();
        BatchResult {
            direction,
            failed: files.iter().filter(|f| !f.verified).count(),
            files,
            bytes,
            fct_s,
            goodput_mbps: goodput_mbps(bytes, fct_s),
            connection,
        }
    }

    /// The human-readable summary: totals, then one row per path.
    pub fn table(&self) -> String {
        use std::fmt::Write;
        let mut out = String::new();
        let failed = match self.failed {
            0 => String::new(),
            n => format!(", {n} failed"),
        };
        let _ = writeln!(
            out,
            "{} {} files ({}){failed} in {:.3} s over one connection: {:.1} Mbit/s goodput, \
             each BLAKE3 verified; controller {}",
            self.direction,
            self.files.len() - self.failed,
            human_bytes(self.bytes),
            self.fct_s,
            self.goodput_mbps,
            self.connection.controller,
        );
        controller_line(&self.connection, &mut out);
        paths_table(&self.connection, receives(self.direction), &mut out);
        out
    }
}

/// Payload bits per second over `fct_s`, in Mbit/s (0 for no time).
fn goodput_mbps(bytes: u64, fct_s: f64) -> f64 {
    if fct_s > 0.0 {
        bytes as f64 * 8.0 / fct_s / 1e6
    } else {
        0.0
    }
}

/// Bytes in binary units, e.g. `1.5 MiB`.
pub fn human_bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut value = n as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{n} B")
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

/// A byte-progress bar on stderr, hidden when `quiet` or when stderr is not a terminal.
pub fn progress_bar(total: u64, quiet: bool) -> ProgressBar {
    bar_on_stderr(
        Some(total),
        quiet,
        "{bar:40} {bytes:>10}/{total_bytes:<10} {binary_bytes_per_sec:>12} eta {eta}",
    )
}

/// A timed send's progress line (no total): bytes sent, rate, time so far.
pub fn stream_bar(quiet: bool) -> ProgressBar {
    bar_on_stderr(None, quiet, "{spinner} {bytes:>10} sent {binary_bytes_per_sec:>12} in {elapsed}")
}

fn bar_on_stderr(total: Option<u64>, quiet: bool, template: &str) -> ProgressBar {
    let target = if quiet { ProgressDrawTarget::hidden() } else { ProgressDrawTarget::stderr() };
    let bar = ProgressBar::with_draw_target(total, target);
    bar.set_style(ProgressStyle::with_template(template).expect("valid template"));
    bar
}

/// CPU seconds (user + system) this process has used so far.
pub fn process_cpu_seconds() -> Option<f64> {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: getrusage fills the struct it is given; RUSAGE_SELF is always valid.
    let ok = unsafe { libc::getrusage(libc::RUSAGE_SELF, usage.as_mut_ptr()) } == 0;
    ok.then(|| {
        // SAFETY: getrusage succeeded, so the struct is initialized.
        let usage = unsafe { usage.assume_init() };
        let seconds = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
        seconds(usage.ru_utime) + seconds(usage.ru_stime)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_read_as_people_write_them() {
        assert_eq!(human_bytes(512), "512 B");
        assert_eq!(human_bytes(1536), "1.5 KiB");
        assert_eq!(human_bytes(300 << 20), "300.0 MiB");
    }
}
