//! Multipath QUIC for data-center transport, with coupled, ECN-driven congestion control.
//!
//! A [`Client`] connects to a [`Server`] over one path per (local, remote) address pair
//! ([`PathSpec`]). Every path runs a congestion controller from [`mpquic_cc`], coupled across the
//! connection and fed by the ECN counts of QUIC ACK frames; a [`Scheduler`]
//! decides which path takes the next packet. Each connection can write a qlog trace with the
//! controller's own events ([`qlog`]) and reports per-path statistics ([`ConnectionReport`]).
//!
//! TLS is 1.3 with certificates verified ([`Trust`]); a server may require client certificates
//! from a CA of its choosing (mutual TLS: [`Server::bind_for`] with [`ClientAuth`], and
//! [`Client::with_identity`]); [`PemPair`] makes a lab CA and issues certificates from it.
//!
//! The QUIC stack is `noq` (quinn with the IETF multipath extension); this crate is the only
//! one that knows its connection API.
//!
//! Where to start:
//!
//! - [`Client`] connects over several paths, [`Server`] accepts; both take [`Options`] (the
//!   controller as a [`Congestion`] spec such as `"amp:beta=4"`, the [`Scheduler`], the ACK
//!   profile) and TLS settings ([`Identity`], [`Trust`]). Each has an example.
//! - A connection is a [`MultipathConnection`]: streams and datagrams through its
//!   [`noq::Connection`], paths through [`MultipathConnection::open_path`] and
//!   [`MultipathConnection::close_path`], per-path statistics through
//!   [`MultipathConnection::report`].
//! - A whole service to start from, runnable as it stands: `examples/object_fetch.rs` in this
//!   crate (one server, clients over two paths each, objects checked against a manifest, the
//!   paths' statistics printed), `cargo run --release -p mpquic --example object_fetch`.
//! - Your own coupled controller: implement [`mpquic_cc::coupled::Algorithm`] (only the hooks
//!   that differ), [`mpquic_cc::register`] it by name, and choose it as a [`Congestion`] like a
//!   built-in; `examples/custom_controller.rs` runs a verified two-path transfer with one,
//!   `cargo run --release -p mpquic --example custom_controller`.

#![deny(missing_docs, rustdoc::broken_intra_doc_links, rustdoc::private_intra_doc_links)]
// Without the `qlog` feature, the link to its module above has nothing to point at.
#![cfg_attr(not(feature = "qlog"), allow(rustdoc::broken_intra_doc_links))]

mod congestion;
mod connection;
mod endpoint;
mod failover;
#[cfg(feature = "internals")]
pub mod internals;
pub mod metrics;
mod options;
mod path_close;
#[cfg(feature = "qlog")]
pub mod qlog;
mod supervisor;
pub mod tls;

pub use connection::{
    ConnectionReport, FailoverEvent, MultipathConnection, PathEnds, PathOpenError, PathReport,
    PathSpec,
};
pub use endpoint::{Accepting, Client, Error, Server};
pub use failover::PathFailure;
pub use mpquic_cc;
pub use mpquic_cc::EcnCodepoint;
pub use mpquic_choice;
/// The choices a connection is made of, with their parsers: `mpquic_choice`'s, shared with the
/// command line and the experiment language.
pub use mpquic_choice::{
    register_scheduler, registered_schedulers, Congestion, ConnectionLoad, CustomScheduler, Ecf,
    EcnPrecision, PathClose, PathLoad, PathScheduler, RegisterSchedulerError, Scheduler,
    UnknownScheduler,
};
pub use noq;
pub use options::{InvalidOptions, Options};
pub use path_close::path_close_of_peer_abandon;
pub use tls::{CertRole, ClientAuth, Identity, PemPair, TlsError, Trust};

/// The crate README's example (the README of the repository repeats it) compiles.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeExample;
