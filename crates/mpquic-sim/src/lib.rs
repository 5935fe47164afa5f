//! Real `noq-proto` multipath QUIC connections over simulated data-center links, in virtual time.
//!
//! A [`Scenario`](scenario::Scenario) (topology, link parameters, flows, workloads; TOML) is built
//! into a [`Sim`](sim::Sim): links with a rate, a propagation delay, a FIFO buffer counted in
//! packets and an ECN marker (CE on ECT packets when more than K packets are queued); switches with
//! static or ECMP routing; hosts with several addresses; and, per flow, a pair of sans-IO
//! `noq_proto::Endpoint`s exchanging datagrams through the network. The run is deterministic: the
//! stack sees only virtual time and seeded randomness, and its crypto is a null suite
//! ([`crypto`]) with the real wire sizes. Burst sources ([`bursts`]) add open-loop datagrams
//! beside the flows. [`report`] turns a run into JSON and plots.

pub mod bursts;
pub mod crypto;
pub mod dualq;
pub mod exp;
pub mod net;
pub mod panels;
pub mod plot;
pub mod pto;
pub mod record;
pub mod report;
pub mod scenario;
pub mod shard;
/// The seeded generator of every random choice (shared with the workload generators).
pub use mpquic_scenario::rng;
pub mod sim;
mod supervise;

pub use scenario::Scenario;
pub use sim::Sim;
