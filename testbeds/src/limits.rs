//! What the netns testbed can build and run, checked on a compiled plan before any namespace
//! exists: the limits of this host and of the runner, which the shared language does not know
//! (it checks what is written: names, controllers, ranges).

use crate::plan::{Flow, FlowKind, Jobs, LinkParams, Plan, Topology, MAX_DELAY_MS};

/// The most namespaces a run builds (the k = 4 fat-tree's 36, with room).
const MAX_NODES: usize = 64;

/// The first limit `plan` exceeds, but its topology's: [`topology`] checks that before the
/// plan is built (building the network of an oversized topology takes minutes).
pub fn check(plan: &Plan) -> Result<(), String> {
    for (from, to, link) in plan.links() {
        direction(&link).map_err(|e| format!("link {from} -> {to}: {e}"))?;
    }
    for d in &plan.delay_only {
        delay(d.delay_ms, d.jitter_ms).map_err(|e| format!("link {} -> {}: {e}", d.from, d.to))?;
    }
    if plan.sample_interval_ms <= 0.0 || plan.duration_s <= 0.0 {
        return Err("the sample interval and the duration must be > 0".into());
    }
    if plan.flows.is_empty() && plan.jobs.is_empty() {
        return Err("no flows and no jobs".into());
    }
    for j in &plan.jobs {
        jobs(j).map_err(|e| format!("jobs from {}: {e}", j.aggregator))?;
    }
    let net = crate::topology::build(&plan.topology);
    for f in &plan.flows {
        flow(f, &net).map_err(|e| format!("flow {} -> {}: {e}", f.from, f.to))?;
    }
    Ok(())
}

/// Whether the testbed can build `t`: at most [`MAX_NODES`] namespaces, 1-8 addresses per
/// link end.
pub fn topology(t: &Topology) -> Result<(), String> {
    let Topology::Custom { hosts, switches, links } = t else { return Ok(()) };
    let nodes = hosts.len() + switches.len();
    if nodes > MAX_NODES {
        return Err(format!("{nodes} nodes: the testbed builds at most {MAX_NODES} namespaces"));
    }
    for l in links {
        if !(1..=8).contains(&l.a_addrs) || !(1..=8).contains(&l.b_addrs) {
            return Err(format!("link {} -- {}: 1..=8 addresses per end", l.a, l.b));
        }
    }
    Ok(())
}

/// One shaped direction at the testbed's scale.
fn direction(l: &LinkParams) -> Result<(), String> {
    if l.rate_mbit.is_nan() || l.rate_mbit <= 0.0 || l.buffer_bytes < 3000 {
        return Err("the rate must be > 0 and the buffer >= 3000 bytes".into());
    }
    delay(l.delay_ms, l.jitter_ms)
}

/// One direction's delay and jitter, ms, at the testbed's scale.
fn delay(delay_ms: f64, jitter_ms: f64) -> Result<(), String> {
    if !(0.0..=MAX_DELAY_MS).contains(&delay_ms) {
        return Err(format!("a delay of {delay_ms} ms (at most {MAX_DELAY_MS})"));
    }
    if !(0.0..=delay_ms).contains(&jitter_ms) {
        return Err(format!("a jitter of {jitter_ms} ms on a {delay_ms} ms delay"));
    }
    Ok(())
}

fn jobs(j: &Jobs) -> Result<(), String> {
    if j.jobs == 0 || !(1..=64).contains(&j.parallel) {
        return Err("needs jobs >= 1 and parallel in 1..=64".into());
    }
    if j.response_bytes == 0 || j.gap_ms < 0.0 {
        return Err("response_bytes must be > 0 and the gap >= 0".into());
    }
    Ok(())
}

fn flow(f: &Flow, net: &crate::topology::Net) -> Result<(), String> {
    if f.bytes == 0 && f.for_s <= 0.0 {
        return Err("neither bytes nor a sending time".into());
    }
    let (Some(a), Some(b)) = (net.node(&f.from), net.node(&f.to)) else {
        return Err("a host not in the topology".into());
    };
    if net.path_pairs(a, b).is_empty() {
        return Err("no path between these hosts".into());
    }
    if f.kind != FlowKind::Mpquic {
        return Ok(());
    }
    if f.bytes == 0 && f.repeat > 1 {
        return Err("repeat needs bytes (a timed flow sends once)".into());
    }
    if f.repeat == 0 || !(1..=16).contains(&f.paths_per_pair) {
        return Err("repeat must be >= 1 and paths_per_pair in 1..=16".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    /// The plan of `text`'s first point, or the error.
    fn plan(text: &str) -> Result<crate::plan::Plan, String> {
        let e = mpquic_scenario::Experiment::parse(text, "t.toml").map_err(|e| e.to_string())?;
        crate::compile::compile(&e.points[0].scenario, "t").map_err(|e| e.to_string())
    }

    const ONE_LINK: &str = r#"
name = "t"
duration = "1s"
[link]
rate = "10Gbps"
delay = "20ms"
buffer = 100
k = 10
[netns]
rate_scale = 0.01
[topology]
kind = "many-to-one"
senders = 1
[[flows]]
from = "s0"
to = "r"
bytes = "1MB"
"#;

    #[test]
    fn what_this_host_cannot_build_is_refused_after_scaling() {
        assert!(plan(ONE_LINK).is_ok());
        let slow = ONE_LINK.replace("rate_scale = 0.01", "rate_scale = 0.01\ntime_scale = 100");
        let e = plan(&slow).unwrap_err();
        assert!(e.contains("link sw -> r: a delay of 2000 ms (at most 1000)"), "{e}");
        let tiny = ONE_LINK.replace("buffer = 100", "buffer = \"2KB\"");
        let e = plan(&tiny).unwrap_err();
        assert!(e.contains("the buffer >= 3000 bytes"), "{e}");
        let big = ONE_LINK.replace("senders = 1", "senders = 70");
        let e = plan(&big).unwrap_err();
        assert!(e.contains("72 nodes: the testbed builds at most 64 namespaces"), "{e}");
    }

    #[test]
    fn a_timed_flow_cannot_repeat() {
        let timed = ONE_LINK.replace("bytes = \"1MB\"", "repeat = 2");
        let e = plan(&timed).unwrap_err();
        assert!(e.contains("flow s0 -> r: repeat needs bytes"), "{e}");
    }
}
