//! An experiment file, as `mpquic-sim run` and `mpquic-testbed run` read one: TOML text through
//! `Experiment::parse`, which checks the keys, expands the sweep and validates every point.
//! Whatever the text, the answer is an experiment or an error placed at `file:line:column`.

#![no_main]

use libfuzzer_sys::fuzz_target;
use mpquic_scenario::sweep::{self, Order};
use mpquic_scenario::Experiment;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    match Experiment::parse(text, "fuzz.toml") {
        // The message places the error in the text (line and column from a span).
        Err(e) => drop(e.to_string()),
        Ok(experiment) => {
            let netns = experiment.for_netns();
            assert_eq!(netns.points.len(), experiment.points.len());
            assert!(sweep::runs(&experiment, Order::Sweep).len() >= experiment.points.len());
        }
    }
});
