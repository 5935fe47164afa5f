//! A server's graceful shutdown (`serve --drain`).
//!
//! The first SIGTERM or Ctrl-C stops the server taking new connections and requests (they are
//! refused with a reason, not left to time out) and lets the transfers running finish, up to
//! a deadline; a connection with nothing running is closed at once. At the deadline the rest
//! are cut off: an upload's resumable partial copy stays for the client's next `send` to
//! continue from, and nothing half-received ever takes its final name (a receiver renames
//! only a verified file). A second signal ends the drain at once, with the same guarantees.

use std::time::Duration;

use anyhow::Result;
use tokio::sync::watch;

use crate::exit::{CutOff, Interrupted};

/// How often the drain looks whether the last transfer has ended.
const POLL: Duration = Duration::from_millis(50);

/// Whether the server is draining, for every connection and stream to see.
pub struct Shutdown(watch::Sender<bool>);

impl Default for Shutdown {
    fn default() -> Self {
        Shutdown(watch::Sender::new(false))
    }
}

impl Shutdown {
    /// Start draining.
    pub fn begin(&self) {
        self.0.send_replace(true);
    }

    /// Whether the server is draining.
    pub fn draining(&self) -> bool {
        *self.0.borrow()
    }

    /// Resolves once the server drains.
    pub async fn begun(&self) {
        let mut seen = self.0.subscribe();
        let _ = seen.wait_for(|draining| *draining).await;
    }
}

/// Drain after `signal`: wait until `running()` (the transfers in flight) is 0, up to
/// `deadline`. `Ok` when every transfer finished; a `CutOff` error when the deadline cut some
/// off, an `Interrupted` one when a second signal came first.
pub async fn drain(signal: &str, running: impl Fn() -> usize, deadline: Duration) -> Result<()> {
    // Listening before saying so: a second signal sent on seeing the line is never missed.
    let second = crate::termination();
    let n = running();
    tracing::info!(transfers = n, ?deadline, "draining after {signal}");
    eprintln!(
        "mpquic: {signal}: draining {n} transfer(s), deadline {deadline:?} (new connections and \
         requests refused; a second signal ends at once)"
    );
    let finished = async {
        while running() > 0 {
            tokio::time::sleep(POLL).await;
        }
    };
    tokio::select! {
        _ = finished => {
            tracing::info!("drained: every transfer finished");
            eprintln!("mpquic: drained: every transfer finished");
            Ok(())
        }
        _ = tokio::time::sleep(deadline) => Err(CutOff(running()).into()),
        second = second => Err(Interrupted(second).into()),
    }
}
