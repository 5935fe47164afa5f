//! Logic for controlling the rate at which data is sent

use crate::connection::RttEstimator;
use crate::{Duration, EcnCodepoint, Instant};
use alloc::{boxed::Box, sync::Arc};
use core::any::Any;

mod bbr3;
mod cubic;
mod new_reno;

pub use bbr3::{Bbr3, Bbr3Config};
pub use cubic::{Cubic, CubicConfig};
pub use new_reno::{NewReno, NewRenoConfig};

/// What the connection tells a path's controller when it asks for the path's send rank
/// ([`Controller::send_rank`], mpquic patch): what a multipath scheduler reads beyond the
/// controller's own state.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SendContext {
    /// Stream bytes the application wrote that are neither acknowledged nor in flight on any
    /// path: what waits to be sent (data declared lost and not yet re-sent included).
    pub backlog: u64,
    /// Bytes in flight on this path.
    pub in_flight: u64,
    /// Whether this end set the path's status to backup (RFC 10069).
    pub backup: bool,
}

/// Common interface for different congestion controllers
pub trait Controller: Send + Sync + core::fmt::Debug {
    /// One or more packets were just sent
    #[allow(unused_variables)]
    fn on_sent(&mut self, now: Instant, bytes: u64, largest_pn: u64) {}

    /// One packet was just sent
    #[allow(unused_variables)]
    fn on_packet_sent(&mut self, now: Instant, bytes: u16, pn: u64) {}

    /// The connection had data to send but was blocked by the congestion window
    ///
    /// Reports the spec's `C.is_cwnd_limited` signal to the controller: the sender fully utilized
    /// the congestion window at this point in the current round trip.
    fn on_cwnd_limited(&mut self) {}

    /// Packet deliveries were confirmed
    ///
    /// `app_limited` indicates whether the connection was blocked on outgoing
    /// application data prior to receiving these acknowledgements.
    #[allow(unused_variables)]
    fn on_ack(
        &mut self,
        now: Instant,
        sent: Instant,
        bytes: u64,
        pn: u64,
        app_limited: bool,
        rtt: &RttEstimator,
    ) {
    }

    /// Packets are acked in batches, all with the same `now` argument. This indicates one of those
    /// batches has completed.
    #[allow(unused_variables)]
    fn on_end_acks(
        &mut self,
        now: Instant,
        in_flight: u64,
        app_limited: bool,
        largest_packet_num_acked: Option<u64>,
    ) {
    }

    /// Packets were deemed lost or marked congested
    ///
    /// `in_persistent_congestion` indicates whether all packets sent within the persistent
    /// congestion threshold period ending when the most recent packet in this batch was sent were
    /// lost.
    /// `lost_bytes` indicates how many bytes were lost. This value will be 0 for ECN triggers.
    /// `largest_lost_pn` indicates the packet number of the packet with the highest packet number
    /// in the congestion event.
    fn on_congestion_event(
        &mut self,
        now: Instant,
        sent: Instant,
        is_persistent_congestion: bool,
        is_ecn: bool,
        lost_bytes: u64,
        largest_lost_pn: u64,
    );

    /// An ACK frame raised the peer's ECN counts for this path: `ect0` more of our packets
    /// arrived ECT(0)-marked, `ect1` more ECT(1)-marked and `ce` more CE-marked since the last
    /// ACK frame processed in order (mpquic patch: the counts, not only the "raised CE" of
    /// `on_congestion_event`, which follows for the same frame when `ce > 0`)
    ///
    /// Controllers that react to the fraction of marked packets (DCTCP, RFC 8257; Prague,
    /// RFC 9331) need the counts; a GSO batch or a delayed ACK covers several packets per frame.
    #[allow(unused_variables)]
    fn on_ecn_counts(&mut self, now: Instant, ect0: u64, ect1: u64, ce: u64) {}

    /// The ECN-capable codepoint this path's packets carry while ECN is in use (mpquic patch):
    /// ECT(0), the classic one (RFC 3168, the default), or ECT(1), the L4S identifier
    /// (RFC 9331), which asks an L4S bottleneck for its shallow, immediate marking and tells it
    /// the sender responds to each mark in proportion. ECN validation (RFC 9000 section
    /// 13.4.2) then expects the peer's counts of this codepoint and CE to grow. `Ce` is not a
    /// codepoint to send and is taken as ECT(0). Asked per datagram: it must not change over a
    /// path's life, or validation would see the other codepoint's count grow and stop ECN.
    fn ecn_codepoint(&self) -> EcnCodepoint {
        EcnCodepoint::Ect0
    }

    /// One packet was just lost
    #[allow(unused_variables)]
    fn on_packet_lost(&mut self, lost_bytes: u16, pn: u64, now: Instant) {}

    /// Packets were incorrectly deemed lost
    ///
    /// This function is called when all packets that were deemed lost (for instance because
    /// of packet reordering) are acknowledged after the congestion event was raised.
    fn on_spurious_congestion_event(&mut self) {}

    /// The known MTU for the current network path has been updated
    fn on_mtu_update(&mut self, new_mtu: u16);

    /// The peer's ACK-frequency parameters have changed
    ///
    /// `ack_eliciting_threshold` is the number of ack-eliciting packets the peer may receive
    /// before being required to send an immediate ACK (per the QUIC ACK frequency extension).
    /// `requested_max_ack_delay` is the maximum delay we asked the peer to wait before sending
    /// an ACK when the threshold hasn't been reached.
    ///
    /// Controllers can use this to refine estimates that depend on peer ACK behavior (e.g.
    /// BBR's offload budget).
    #[allow(unused_variables)]
    fn on_ack_frequency_update(
        &mut self,
        ack_eliciting_threshold: u64,
        requested_max_ack_delay: Duration,
    ) {
    }

    /// Number of ack-eliciting bytes that may be in flight
    fn window(&self) -> u64;

    /// This path's place in the connection's packet scheduling (mpquic patch): `poll_transmit`
    /// offers the next packet to paths in ascending rank (ties by path id), so a multipath
    /// scheduler can pick the path that fills the next GSO batch. `None` keeps the path from
    /// new data while it still sends loss probes, PINGs and path frames (a standby path).
    /// `context` is what the connection knows that the controller does not (the backlog, the
    /// path's bytes in flight and status), asked once per path per packet batch.
    #[allow(unused_variables)]
    fn send_rank(&self, context: &SendContext) -> Option<u64> {
        Some(0)
    }

    /// Retrieve implementation-specific metrics used to populate connection statistics and `qlog`
    /// traces when they are enabled. This is also used to alter the pacing of the connection with
    /// `pacing_rate` and `send_quantum`.
    fn metrics(&self) -> ControllerMetrics {
        ControllerMetrics {
            congestion_window: self.window(),
            ssthresh: None,
            pacing_rate: None,
            send_quantum: None,
            bandwidth_estimate: None,
        }
    }

    /// Duplicate the controller's state
    fn clone_box(&self) -> Box<dyn Controller>;

    /// Initial congestion window
    fn initial_window(&self) -> u64;

    /// Returns Self for use in down-casting to extract implementation details
    fn into_any(self: Box<Self>) -> Box<dyn Any>;
}

/// Common congestion controller metrics used both for logging purposes
/// but also to alter the pacing of the connection with
/// `pacing_rate` and `send_quantum`
#[derive(Default)]
#[non_exhaustive]
pub struct ControllerMetrics {
    /// Congestion window (bytes)
    pub congestion_window: u64,
    /// Slow start threshold (bytes)
    pub ssthresh: Option<u64>,
    /// Pacing rate (bytes/s)
    pub pacing_rate: Option<u64>,
    /// Send Quantum (bytes) used to control the size of packet bursts
    pub send_quantum: Option<u64>,
    /// Estimated sustainable path bandwidth (bits/s).
    pub bandwidth_estimate: Option<u64>,
}

/// Constructs controllers on demand
pub trait ControllerFactory {
    /// Construct a fresh `Controller`
    fn build(self: Arc<Self>, now: Instant, current_mtu: u16) -> Box<dyn Controller>;
}

const BASE_DATAGRAM_SIZE: u64 = 1200;
