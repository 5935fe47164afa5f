//! Scenarios as data: the shared language of `mpquic-scenario` (topology, links, flows,
//! workloads, sweeps), which the simulator builds into a [`crate::Sim`].

pub use mpquic_scenario::expand::{expand_workloads, Expanded};
pub use mpquic_scenario::model::*;
pub use mpquic_scenario::units::{Amount, Bytes, Dur, Rate};
pub use mpquic_scenario::{parse_scenario, Experiment, ScenarioError};
