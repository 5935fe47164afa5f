//! The scenario and experiment language of the simulator (`mpquic-sim`) and the netns testbed
//! (`mpquic-testbed`): one TOML file per experiment, read, checked and expanded here, so that
//! the same file validates and runs in either. The language is specified in this crate's
//! `README.md`.
//!
//! - [`units`]: durations, rates, sizes and queue amounts as strings with units.
//! - [`model`]: the scenario (topology, links, flows, workloads, transport, recording, the
//!   testbed's scaling).
//! - [`expand`]: topology shapes into hosts, switches and links; host ranges, counts and
//!   workloads into flows.
//! - [`experiment`]: sweep axes and seeds into runs; [`Experiment::load`] checks a file and
//!   reports `file:line:column: reason`.
//! - [`validate`]: the checks of one scenario.
//! - [`metrics`]: the per-run outcome both backends fill, the metrics computed from it, the
//!   summary over seeds.
//! - [`analyses`]: the named analyses a report may ask for (their metrics, which backend
//!   computes which).
//! - [`shift`]: the windows of the `shift` analysis, which both backends compute.
//! - [`phases`]: the phases of the `phases` analysis and its metrics over a phase's flows,
//!   which both backends compute.
//! - [`tables`]: the markdown tables of a report (medians, sums, ratios between points).
//! - [`record`]: what one run yields, whatever the backend ([`record::RunRecord`]).
//! - [`results`]: `experiment.json`, one schema for both backends, and `tables.md` from it.

pub mod analyses;
pub mod error;
pub mod expand;
pub mod experiment;
pub mod metrics;
pub mod model;
pub mod phases;
pub mod record;
pub mod results;
pub mod rng;
pub mod shift;
pub mod tables;
pub mod units;
pub mod validate;

pub use error::ScenarioError;
pub use experiment::{Experiment, Point};
pub use model::*;
pub use units::{Amount, Bytes, Dur, Rate};
pub use validate::validate;

/// Parse one scenario from TOML text (no sweep applied, the first seed) and check it.
pub fn parse_scenario(text: &str) -> Result<Scenario, ScenarioError> {
    let e = Experiment::parse(text, "<scenario>")?;
    let mut s = e.base;
    s.seed = s.seeds[0];
    Ok(s)
}
