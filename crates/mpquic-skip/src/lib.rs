//! Explicit test skips, after the Linux MPTCP selftests: a test that cannot run here says so and
//! is counted as skipped, never as passed, and a switch turns every skip into a failure.
//!
//! Cargo's test harness has no "skipped" outcome: a test that returns early passes, and the
//! harness captures (and then discards) what a passing test prints. So a skip is recorded
//! outside the harness: [`skip`] appends one line, `SKIPPED <test>: <reason>`, to the file
//! named by [`LOG_VAR`] (`scripts/test` sets it, lists the lines, and subtracts their number
//! from the passed count), and prints the same line to stderr for `--nocapture` runs.
//! With [`FAIL_VAR`] set to `1` (`.ci/run` sets it), a skip panics instead: the test fails
//! with its reason.
//!
//! ```no_run
//! # fn tool_is_installed() -> bool { false }
//! #[test]
//! fn needs_a_tool() {
//!     if !tool_is_installed() {
//!         return mpquic_skip::skip("needs_a_tool", "`tool` missing (apt-get install tool)");
//!     }
//!     // ...the assertions...
//! }
//! ```

use std::fs::OpenOptions;
use std::io::Write;

/// The file that collects skip lines, one per skipped test (appended to; set by `scripts/test`).
pub const LOG_VAR: &str = "MPQUIC_SKIP_LOG";

/// `1` turns every skip into a failure (set by `.ci/run`).
pub const FAIL_VAR: &str = "MPQUIC_FAIL_ON_SKIP";

/// Records that `test` did not run because of `reason`; the caller returns right after.
///
/// # Panics
///
/// When [`FAIL_VAR`] is `1` (a skip is then a failure), or when the skip log cannot be written
/// (a skip that goes uncounted would pass silently).
pub fn skip(test: &str, reason: &str) {
    let line = format!("SKIPPED {test}: {reason}");
    if std::env::var(FAIL_VAR).is_ok_and(|v| v == "1") {
        panic!("{line} ({FAIL_VAR}=1 makes a skip a failure)");
    }
    eprintln!("{line}");
    if let Some(log) = std::env::var_os(LOG_VAR) {
        // One write of one short line to an O_APPEND file: lines from tests running on
        // parallel threads do not interleave.
        OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log)
            .and_then(|mut f| f.write_all(format!("{line}\n").as_bytes()))
            .unwrap_or_else(|e| panic!("{line}; writing it to {}: {e}", log.to_string_lossy()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One test for both outcomes: the variables are process-wide, so two tests setting them
    /// on parallel threads would race.
    #[test]
    fn a_skip_is_logged_or_under_the_switch_fails_with_its_reason() {
        let dir = std::env::temp_dir().join(format!("mpquic-skip-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let log = dir.join("skips");
        std::env::set_var(LOG_VAR, &log);
        std::env::remove_var(FAIL_VAR);
        skip("first", "no tool");
        skip("second", "not root");
        let text = std::fs::read_to_string(&log).unwrap();
        assert_eq!(text, "SKIPPED first: no tool\nSKIPPED second: not root\n");

        std::env::set_var(FAIL_VAR, "1");
        let failed = std::panic::catch_unwind(|| skip("third", "no tool")).unwrap_err();
        let message = failed.downcast_ref::<String>().unwrap();
        assert_eq!(
            message,
            "SKIPPED third: no tool (MPQUIC_FAIL_ON_SKIP=1 makes a skip a failure)"
        );
        assert_eq!(
            std::fs::read_to_string(&log).unwrap(),
            text,
            "a failure is not logged as a skip"
        );
        std::env::remove_var(FAIL_VAR);
        std::env::remove_var(LOG_VAR);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
