//! The scenario and experiment language of the simulator (`mpquic-sim`) and the netns testbed
//! (`mpquic-testbed`): one TOML file per experiment, read, checked and expanded here, so that
//! the same file validates and runs in either. The language is specified in this crate's
//! `README.md`.
//!
//! - [`units`]: durations, rates, sizes and queue amounts as strings with units.
//! - [`model`]: the scenario (topology, links, flows, workloads, transport, recording, the
//!   testbed's scaling).
//! - [`flow_size`]: a workload's flow size, fixed or drawn from a distribution.
//! - [`bursts`]: the burst sources' on periods, drawn per run.
//! - [`expand`]: topology shapes into hosts, switches and links; host ranges, counts and
//!   workloads into flows.
//! - [`sections`]: the file's sweep axes, report and plot sections.
//! - [`experiment`]: sweep axes into points; [`Experiment::load`] checks a file and
//!   reports `file:line:column: reason`.
//! - [`validate`]: the checks of one scenario.
//! - [`metrics`]: the per-run outcome both backends fill, the metrics computed from it, the
//!   summary over seeds.
//! - [`analyses`]: the named analyses a report may ask for (their metrics, which backend
//!   computes which).
//! - [`shift`], [`shift_time`], [`phases`], [`paths_end`], [`job_phase`], [`pathkeep`]: the
//!   analyses, each computed from a run's [`record::RunRecord`].
//! - [`tables`]: the markdown tables of a report (medians, sums, ratios between points).
//! - [`record`]: what one run yields, whatever the backend ([`record::RunRecord`]).
//! - [`results`]: `experiment.json`, one schema for both backends, and `tables.md` from it.
//! - [`sweep`]: the one sweep loop over a [`sweep::Backend`] (the simulator or the testbed):
//!   runs, their metrics and analyses, and the writer of the output.

pub mod analyses;
pub mod bursts;
pub mod error;
pub mod expand;
pub mod experiment;
pub mod flow_size;
pub mod job_phase;
pub mod metrics;
pub mod model;
pub mod pathkeep;
pub mod paths_end;
pub mod phases;
pub mod record;
pub mod results;
pub mod rng;
pub mod sections;
pub mod shift;
pub mod shift_time;
pub mod sweep;
pub mod sweep_plot;
pub mod tables;
pub mod units;
pub mod validate;

pub use error::ScenarioError;
pub use experiment::{Experiment, Point};
pub use flow_size::FlowSize;
pub use model::*;
pub use units::{Amount, Bytes, Dur, Rate};
pub use validate::validate;

use std::path::{Path, PathBuf};

/// Where a run of the experiment file `file` on `backend` (`"sim"`, `"netns"`) writes when no
/// output directory is given: `results/<file name without .toml>/<backend>`, relative to the
/// current directory. From the repository's root that is the folder the run's committed
/// outputs live in (results/README.md), so a re-run lands beside what it may replace.
pub fn default_out(file: &Path, backend: &str) -> PathBuf {
    let stem = file.file_stem().unwrap_or(file.as_os_str());
    Path::new("results").join(stem).join(backend)
}

/// Parse one scenario from TOML text (no sweep applied, the first seed) and check it.
pub fn parse_scenario(text: &str) -> Result<Scenario, ScenarioError> {
    let e = Experiment::parse(text, "<scenario>")?;
    let mut s = e.base;
    s.seed = s.seeds[0];
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_out_is_the_files_folder_under_results() {
        let out = default_out(Path::new("experiments/E1-incast.toml"), "sim");
        assert_eq!(out, Path::new("results/E1-incast/sim"));
        let out = default_out(Path::new("../x/scenarios/two-path.toml"), "netns");
        assert_eq!(out, Path::new("results/two-path/netns"));
    }
}
