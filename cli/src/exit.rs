//! Exit codes scripts can rely on: what kind of failure ended the command.
//!
//! Errors carry their kind as a marker type in their chain (`Refused`, `IntegrityFailed`,
//! `Interrupted`) or are recognised by the library's connection errors; everything else is an
//! "other" error.

use std::fmt;
use std::process::ExitCode;

use mpquic::noq;

/// What ended the command, and the exit code that says so.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// Everything asked for was done (and verified).
    Success,
    /// Any other error: a local file that cannot be read or written, a bad argument value.
    Other,
    /// The command line does not parse (clap's own code).
    Usage,
    /// No connection, or it was lost: unreachable, handshake or certificate failure, timeout.
    Connection,
    /// The server refused the request (no such file, exists, read-only, busy, full).
    Refused,
    /// Data arrived but its BLAKE3 hash did not match the sender's (either side found it).
    Verification,
    /// A server's `--drain` deadline passed with transfers running: they were cut off.
    CutOff,
    /// Stopped by Ctrl-C (SIGINT): 128 + 2, as shells report it.
    Interrupted,
    /// Stopped by SIGTERM: 128 + 15.
    Terminated,
}

impl Exit {
    /// Every kind, in the order `--help` lists them.
    pub const ALL: [Exit; 9] = [
        Exit::Success,
        Exit::Other,
        Exit::Usage,
        Exit::Connection,
        Exit::Refused,
        Exit::Verification,
        Exit::CutOff,
        Exit::Interrupted,
        Exit::Terminated,
    ];

    /// The process exit code.
    pub fn code(self) -> u8 {
        match self {
            Exit::Success => 0,
            Exit::Other => 1,
            Exit::Usage => 2,
            Exit::Connection => 3,
            Exit::Refused => 4,
            Exit::Verification => 5,
            Exit::CutOff => 6,
            Exit::Interrupted => 130,
            Exit::Terminated => 143,
        }
    }

    /// What the code means, as `--help` and the README say it.
    pub fn meaning(self) -> &'static str {
        match self {
            Exit::Success => "success: every file transferred and verified",
            Exit::Other => "other error (a local file, an argument's value)",
            Exit::Usage => "usage error: the command line does not parse",
            Exit::Connection => {
                "connection failure: unreachable, handshake or certificate refused, timeout, \
                 connection lost"
            }
            Exit::Refused => "refused by the server (no such file, exists, read-only, busy, full)",
            Exit::Verification => "verification failure: a BLAKE3 hash did not match",
            Exit::CutOff => {
                "serve only: the --drain deadline after SIGTERM or Ctrl-C cut transfers off \
                 (uploads kept resumable)"
            }
            Exit::Interrupted => "interrupted by Ctrl-C (SIGINT)",
            Exit::Terminated => "interrupted by SIGTERM",
        }
    }

    /// The kind of failure `error` is.
    pub fn of(error: &anyhow::Error) -> Exit {
        error.chain().find_map(kind_of).unwrap_or(Exit::Other)
    }
}

impl From<Exit> for ExitCode {
    fn from(exit: Exit) -> ExitCode {
        ExitCode::from(exit.code())
    }
}

/// The table of exit codes, for `--help`.
pub fn help() -> String {
    let mut text = String::from("Exit codes:");
    for exit in Exit::ALL {
        text.push_str(&format!("\n  {:<4} {}", exit.code(), exit.meaning()));
    }
    text
}

/// The kind one error of a chain names, if it names one.
fn kind_of(cause: &(dyn std::error::Error + 'static)) -> Option<Exit> {
    if let Some(Interrupted(signal)) = cause.downcast_ref::<Interrupted>() {
        return Some(if *signal == "SIGTERM" { Exit::Terminated } else { Exit::Interrupted });
    }
    if cause.is::<CutOff>() {
        return Some(Exit::CutOff);
    }
    if cause.is::<IntegrityFailed>() {
        return Some(Exit::Verification);
    }
    if cause.is::<Refused>() {
        return Some(Exit::Refused);
    }
    connection_lost(cause).then_some(Exit::Connection)
}

/// Whether `cause` says the connection failed or was lost (as opposed to one stream's trouble).
fn connection_lost(cause: &(dyn std::error::Error + 'static)) -> bool {
    if let Some(e) = cause.downcast_ref::<mpquic::Error>() {
        return matches!(
            e,
            mpquic::Error::Connect { .. }
                | mpquic::Error::Connection { .. }
                | mpquic::Error::Timeout { .. }
        );
    }
    cause.is::<noq::ConnectionError>()
        || matches!(
            cause.downcast_ref::<noq::WriteError>(),
            Some(noq::WriteError::ConnectionLost(_))
        )
        || matches!(cause.downcast_ref::<noq::ReadError>(), Some(noq::ReadError::ConnectionLost(_)))
        || matches!(
            cause.downcast_ref::<noq::ReadExactError>(),
            Some(noq::ReadExactError::ReadError(noq::ReadError::ConnectionLost(_)))
        )
}

/// The command was stopped by a signal (its name).
#[derive(Debug)]
pub struct Interrupted(pub &'static str);

impl fmt::Display for Interrupted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "interrupted by {}", self.0)
    }
}

impl std::error::Error for Interrupted {}

/// A draining server's deadline passed with this many transfers still running.
#[derive(Debug)]
pub struct CutOff(pub usize);

impl fmt::Display for CutOff {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the --drain deadline passed with {} transfer(s) running: cut off (uploads keep \
             their partial copy, to resume)",
            self.0
        )
    }
}

impl std::error::Error for CutOff {}

/// The server (or client) refused a request; the text is the peer's reason.
#[derive(Debug)]
pub struct Refused(pub String);

impl fmt::Display for Refused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "peer: {}", self.0)
    }
}

impl std::error::Error for Refused {}

/// Received data did not hash to what the sender sent; the text says where.
#[derive(Debug)]
pub struct IntegrityFailed(pub String);

impl fmt::Display for IntegrityFailed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for IntegrityFailed {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_help_table_lists_every_code_once() {
        let text = help();
        assert_eq!(text.lines().count(), 1 + Exit::ALL.len());
        assert!(text.contains("\n  143  interrupted by SIGTERM"), "{text}");
    }

    #[test]
    fn kinds_are_found_under_context() {
        let refused = anyhow::Error::new(Refused("no file named \"x\"".into())).context("get x");
        assert_eq!(Exit::of(&refused), Exit::Refused);
        assert_eq!(errors_line(&refused), "get x: peer: no file named \"x\"");
        let corrupt = anyhow::Error::new(IntegrityFailed("hash mismatch".into()));
        assert_eq!(Exit::of(&corrupt.context("receiving")), Exit::Verification);
        assert_eq!(Exit::of(&anyhow::Error::new(Interrupted("SIGTERM"))), Exit::Terminated);
        assert_eq!(Exit::of(&anyhow::Error::new(CutOff(3))), Exit::CutOff);
        assert_eq!(Exit::of(&anyhow::Error::new(Interrupted("Ctrl-C"))), Exit::Interrupted);
        let lost =
            anyhow::Error::new(noq::WriteError::ConnectionLost(noq::ConnectionError::TimedOut))
                .context("sending data");
        assert_eq!(Exit::of(&lost), Exit::Connection);
        assert_eq!(Exit::of(&anyhow::anyhow!("cannot open a.bin")), Exit::Other);
    }

    fn errors_line(e: &anyhow::Error) -> String {
        crate::errors::one_line(e)
    }
}
