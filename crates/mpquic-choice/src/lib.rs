//! The choices an mpquic connection is made of, as types with one parser and one formatter each.
//!
//! - [`Congestion`]: the controller spec, `name` or `name:key=value,...` (`"amp:beta=8,tau=4"`),
//!   over [`mpquic_cc`]'s controllers, the ones a program registered and the transport's own
//!   (`cubic`, `newreno`); [`Congestion::spec`] writes it back as one string.
//! - [`Scheduler`]: the packet scheduler by name, the [`PathScheduler`] trait a program
//!   implements for its own and [`register_scheduler`] to choose it by name.
//! - [`EcnPrecision`]: how the ACK feedback is shaped for ECN.
//! - [`PathClose`]: why a path stopped carrying data, as reports and experiments name it.
//!
//! Strings exist only at the edges (a file, a command line) and are read here once: the `mpquic`
//! library, its command line and the experiment language (`mpquic-scenario`) all take these
//! types, and this crate needs neither the QUIC stack nor an async runtime to read them.

#![deny(missing_docs, rustdoc::broken_intra_doc_links)]

mod congestion;
mod ecn;
mod path_close;
mod scheduler;

pub use congestion::Congestion;
pub use ecn::EcnPrecision;
pub use path_close::PathClose;
pub use scheduler::{
    register_scheduler, registered_schedulers, ConnectionLoad, CustomScheduler, Ecf, PathLoad,
    PathScheduler, RegisterSchedulerError, Scheduler, UnknownScheduler,
};

/// The crate README's example compiles and holds.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeExample;
