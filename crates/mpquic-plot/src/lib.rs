//! The one palette and the common chart setups of mpquic's plots.
//!
//! Every SVG the project writes (the simulator's runs and sweeps, the testbed runner's
//! repetitions, `mpquic report`) takes its colours from [`palette`], so one controller or one
//! path has one colour everywhere, and its charts from [`chart`]: a captioned panel with a mesh
//! ([`chart::panel`]), line plots for time series and CDFs ([`chart::write_line_plot`]), sweep
//! lines with min-max error bars ([`chart::draw_sweep_lines`]), and the legend. An experiment
//! file's `[plot]` is drawn from these by `mpquic_scenario::sweep_plot`, for the simulator and
//! the testbed: this crate knows nothing of experiments, so the CLI's report builds without them.

pub mod chart;
pub mod palette;

pub use chart::PlotError;
