//! The library's path supervisor in the simulator: live paths through a shared, queued
//! bottleneck are never declared failed; a black-holed path is, quickly.

use mpquic_sim::scenario::{Dur, FlowSpec, LinkConfig, Rate, Scenario, Topology};
use mpquic_sim::Sim;

/// The netns many-to-one AMP test's shape: 4 senders with 4 addresses each, one multipath AMP
/// flow of 4 paths per sender, all into one 100 Mbit/s bottleneck (~150 KB buffer, K = 20).
fn many_to_one_amp(seed: u64) -> Scenario {
    let mut s = Scenario::new(
        "many-to-one-amp-failover",
        Dur::ms(6000),
        Topology::ManyToOne {
            senders: 4,
            sender_addrs: 4,
            receiver_addrs: 4,
            access: LinkConfig { rate: Some(Rate(10_000_000_000)), ..Default::default() },
            bottleneck: LinkConfig {
                rate: Some(Rate(100_000_000)),
                buffer: Some(108),
                ecn_k: Some(std::env::var("K").map_or(20, |k| k.parse().unwrap())),
                delay: Some(Dur::us(20)),
                ..Default::default()
            },
        },
    );
    s.seed = seed;
    s.host_jitter = Dur::us(5);
    s.transport.ecn = "per-packet".into();
    for i in 0..4 {
        let mut f = FlowSpec::bulk(&format!("s{i}"), "r");
        f.controller = Some("amp".into());
        f.paths = 4;
        f.bytes = Some(10_000_000);
        s.flows.push(f);
    }
    s
}

#[test]
fn live_queued_paths_are_never_declared_failed() {
    for seed in 0..3 {
        let mut sim = Sim::new(many_to_one_amp(seed)).expect("valid scenario");
        sim.run();
        for flow in &sim.flows {
            eprintln!(
                "seed {seed} {}: done {:?} err {:?} failovers {:?} notices {:?}",
                flow.name,
                flow.fct(),
                flow.progress.error,
                flow.progress.failovers,
                flow.notices.lock().unwrap().counts
            );
        }
    }
}
