//! Multipath QUIC for data-center transport, with coupled, ECN-driven congestion control.
//!
//! A [`Client`] connects to a [`Server`] over one path per (local, remote) address pair
//! ([`PathSpec`]). Every path runs a congestion controller from [`mpquic_cc`], coupled across the
//! connection and fed by the ECN counts of QUIC ACK frames ([`congestion`]); a [`Scheduler`]
//! decides which path takes the next packet. Each connection can write a qlog trace with the
//! controller's own events ([`qlog`]) and reports per-path statistics ([`ConnectionReport`]).
//!
//! The QUIC stack is `noq` (quinn with the IETF multipath extension); this crate is the only
//! one that knows its connection API.
//!
//! ```no_run
//! # async fn run() -> Result<(), mpquic::Error> {
//! use mpquic::{Client, Options, PathSpec, Trust};
//! use std::time::Duration;
//!
//! let server: std::net::SocketAddr = "10.0.1.2:4433".parse().unwrap();
//! let paths = PathSpec::all_pairs(&["10.0.1.1".parse().unwrap(), "10.0.2.1".parse().unwrap()], &[server]);
//! let client = Client::new(&Trust::from_ca_file("ca.pem".as_ref())?, server.ip())?;
//! let options = Options { congestion: "amp".parse().unwrap(), ..Options::default() };
//! let (conn, failed) = client.connect("server.example", &paths, &options, Duration::from_secs(5)).await?;
//! let (mut send, _recv) = conn.connection().open_bi().await.unwrap();
//! send.write_all(b"hello").await.unwrap();
//! println!("{}", serde_json::to_string(&conn.report()).unwrap());
//! # Ok(()) }
//! ```

#![warn(missing_docs)]

pub mod congestion;
mod connection;
mod endpoint;
mod failover;
mod options;
#[cfg(feature = "qlog")]
pub mod qlog;
mod scheduler;
pub mod tls;

pub use connection::{
    ConnectionReport, FailoverEvent, MultipathConnection, PathOpenError, PathReport, PathSpec,
};
pub use endpoint::{Accepting, Client, Error, Server};
pub use failover::PathFailure;
pub use mpquic_cc;
pub use noq;
pub use options::{Congestion, EcnPrecision, Options, Transport};
pub use scheduler::{PathLoad, Scheduler, UnknownScheduler};
pub use tls::{Identity, TlsError, Trust};
