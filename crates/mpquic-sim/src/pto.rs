//! Counting probe timeouts (PTO expiries).
//!
//! noq-proto keeps a per-path `pto_count` but exposes it neither in `PathStats` nor in
//! `ConnectionStats`; with the `qlog` feature it would appear in qlog's recovery metrics, which
//! the simulator leaves out for speed. What noq-proto always has is a `trace!` event, "PTO
//! fired", in `Connection::on_loss_detection_timeout` (noq-proto 1.4 `src/connection/mod.rs`),
//! emitted exactly when a PTO expires (not for time-threshold loss detection, which returns
//! before it). [`PtoCounter`] is a `tracing` subscriber interested in that one callsite only
//! (every other callsite gets `Interest::never`, so the rest of the stack's tracing costs
//! nothing); the simulator installs it for the duration of [`crate::Sim::run`] on its own
//! thread and says which endpoint is handling a timeout, so each expiry is charged to its
//! endpoint.

use std::sync::{Arc, Mutex};

use tracing::span::{Attributes, Id, Record};
use tracing::subscriber::Interest;
use tracing::{Event, Level, Metadata, Subscriber};

use crate::net::Ps;

/// PTO expiries per endpoint, with the current endpoint and virtual time set by the simulator.
#[derive(Debug, Default)]
pub struct PtoTally {
    /// The endpoint handling a timeout right now, and the virtual time.
    pub current: Option<(usize, Ps)>,
    /// Expiries per endpoint index.
    pub per_endpoint: Vec<u64>,
    /// (endpoint, virtual time) of every expiry, in order.
    pub events: Vec<(usize, Ps)>,
    /// Expiries seen with no current endpoint (should stay 0).
    pub unattributed: u64,
}

/// The subscriber.
pub struct PtoCounter(pub Arc<Mutex<PtoTally>>);

fn is_pto_fired(m: &Metadata<'_>) -> bool {
    m.is_event()
        && *m.level() == Level::TRACE
        && m.target().starts_with("noq_proto::connection")
        && m.fields().field("in_flight").is_some()
        && m.fields().field("count").is_some()
        && m.fields().field("space").is_some()
        && m.fields().field("path_id").is_some()
}

impl Subscriber for PtoCounter {
    fn register_callsite(&self, m: &'static Metadata<'static>) -> Interest {
        if is_pto_fired(m) {
            Interest::always()
        } else {
            Interest::never()
        }
    }
    fn enabled(&self, m: &Metadata<'_>) -> bool {
        is_pto_fired(m)
    }
    fn max_level_hint(&self) -> Option<tracing::level_filters::LevelFilter> {
        Some(tracing::level_filters::LevelFilter::TRACE)
    }
    fn new_span(&self, _: &Attributes<'_>) -> Id {
        Id::from_u64(1)
    }
    fn record(&self, _: &Id, _: &Record<'_>) {}
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, e: &Event<'_>) {
        if !is_pto_fired(e.metadata()) {
            return;
        }
        let mut t = self.0.lock().unwrap_or_else(|p| p.into_inner());
        match t.current {
            Some((ep, at)) => {
                if t.per_endpoint.len() <= ep {
                    t.per_endpoint.resize(ep + 1, 0);
                }
                t.per_endpoint[ep] += 1;
                t.events.push((ep, at));
            }
            None => t.unattributed += 1,
        }
    }
    fn enter(&self, _: &Id) {}
    fn exit(&self, _: &Id) {}
}
