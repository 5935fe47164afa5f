//! The CLI's protocol, public for the fuzz targets and tests; not a stable API.
//!
//! The `mpquic` binary reads what peers send it with these modules: the file protocol's requests,
//! replies and listings ([`transfer`]), the resume handshake ([`resume`]), and the qlog traces
//! `mpquic report` reads ([`qlog_reader`]), with what they need (the error kinds in [`exit`],
//! [`files`], [`ratelimit`]). They are a library so that `fuzz/` can drive the same parsers the
//! binary runs; the rest of the CLI stays in the binary. Nothing here is promised to other
//! crates: names and signatures change with the CLI.

pub mod errors;
pub mod exit;
pub mod files;
pub mod ratelimit;
pub mod resume;
pub mod transfer;

#[path = "report/qlog_reader.rs"]
pub mod qlog_reader;
