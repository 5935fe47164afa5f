//! Taking a resumable upload over from a transfer that went silent.
//!
//! A client SIGKILLed mid-upload leaves its connection open on the server until the idle
//! timeout, and that connection's transfer holds the upload's partial copy (its lock) all the
//! while. A new request that shows it continues the same upload takes the copy over at once,
//! as rsync or scp carry on: the same client identity (its certificate's name under mutual
//! TLS; none otherwise), the same name (the copy is the name's), a holder silent for `QUIET`,
//! and, checked before the holder is stopped, a resume offer the new sender matched in full
//! (its data has the copy's prefix). The holder is then told to stop; the new transfer takes
//! the copy's lock only once the holder closed it, after its last write.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Result;
use tokio::sync::Notify;
use tokio::time::Instant;

/// A holder that has received nothing for this long may be taken over.
pub const QUIET: Duration = Duration::from_secs(1);
/// How long a new request waits for a holder to go quiet before it is refused.
const PATIENCE: Duration = Duration::from_secs(3);

/// A partial copy's identity on the host (device, inode).
pub type Key = (u64, u64);

/// The transfer holding one partial copy.
struct Holder {
    /// Tells one claim from the next of the same copy.
    serial: u64,
    identity: Option<String>,
    last_received: Instant,
    stop: Arc<Notify>,
}

/// The resumable uploads this server is receiving, by partial copy.
#[derive(Default, Clone)]
pub struct Receivers(Arc<Mutex<(u64, HashMap<Key, Holder>)>>);

impl Receivers {
    /// Record that a transfer of `identity` holds the copy `key`, until the claim is dropped.
    pub fn claim(&self, key: Key, identity: Option<String>) -> Claim {
        let stop = Arc::new(Notify::new());
        let mut state = self.0.lock().unwrap_or_else(|e| e.into_inner());
        state.0 += 1;
        let serial = state.0;
        let holder = Holder { serial, identity, last_received: Instant::now(), stop: stop.clone() };
        state.1.insert(key, holder);
        Claim { receivers: self.clone(), key, serial, stop }
    }

    /// Whether a request of `identity` may take the copy `key` over: its holder is a transfer
    /// of this server, of the same identity, and quiet for `QUIET` (waited for up to
    /// `PATIENCE`). `busy` is the refusal otherwise.
    pub async fn may_take_over(
        &self,
        key: Key,
        identity: &Option<String>,
        busy: impl Fn() -> anyhow::Error,
    ) -> Result<()> {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let quiet_for = {
                let state = self.0.lock().unwrap_or_else(|e| e.into_inner());
                match state.1.get(&key) {
                    Some(holder) if &holder.identity == identity => holder.last_received.elapsed(),
                    _ => return Err(busy()),
                }
            };
            if quiet_for >= QUIET {
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(busy().context("its transfer is still receiving"));
            }
            tokio::time::sleep(QUIET - quiet_for).await;
        }
    }

    /// Tell the holder of `key` to stop.
    pub fn stop(&self, key: Key) {
        let state = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(holder) = state.1.get(&key) {
            holder.stop.notify_one();
        }
    }
}

/// A transfer's hold on a partial copy, released when dropped.
pub struct Claim {
    receivers: Receivers,
    key: Key,
    serial: u64,
    stop: Arc<Notify>,
}

impl Claim {
    /// Data arrived: the holder is not silent.
    pub fn received(&self) {
        let mut state = self.receivers.0.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(holder) = state.1.get_mut(&self.key).filter(|h| h.serial == self.serial) {
            holder.last_received = Instant::now();
        }
    }

    /// Resolves when a newer transfer of the same upload takes the copy over.
    pub async fn stopped(&self) {
        self.stop.notified().await
    }
}

impl Drop for Claim {
    fn drop(&mut self) {
        let mut state = self.receivers.0.lock().unwrap_or_else(|e| e.into_inner());
        if state.1.get(&self.key).is_some_and(|h| h.serial == self.serial) {
            state.1.remove(&self.key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn only_the_same_identity_takes_a_quiet_holder_over() {
        let receivers = Receivers::default();
        let claim = receivers.claim((1, 2), Some("alice".into()));
        let busy = || anyhow::anyhow!("busy");
        let bob = receivers.may_take_over((1, 2), &Some("bob".into()), busy).await;
        assert_eq!(bob.unwrap_err().to_string(), "busy");
        let unknown = receivers.may_take_over((9, 9), &Some("alice".into()), busy).await;
        assert!(unknown.is_err(), "a copy no transfer here holds (another process's)");
        receivers.may_take_over((1, 2), &Some("alice".into()), busy).await.unwrap();
        receivers.stop((1, 2));
        tokio::time::timeout(Duration::from_secs(1), claim.stopped()).await.unwrap();
        drop(claim);
        assert!(receivers.may_take_over((1, 2), &Some("alice".into()), busy).await.is_err());
    }
}
