use mpquic_sim::scenario::{Dur, FlowSpec, Scenario, Topology};
use mpquic_sim::Sim;

#[test]
fn smoke() {
    let mut s = Scenario::new(
        "smoke",
        Dur::ms(20),
        Topology::ManyToOne {
            senders: 1,
            sender_addrs: 1,
            receiver_addrs: 1,
            bottleneck: Default::default(),
        },
    );
    s.flows.push(FlowSpec::bulk("s0", "r"));
    let mut sim = Sim::new(s).unwrap();
    let t = std::time::Instant::now();
    sim.run();
    eprintln!("wall {:?} counters {:?}", t.elapsed(), sim.counters);
    let f = &sim.flows[0];
    eprintln!(
        "{:?} err={:?} delivered={:?}",
        f.progress.connected_at, f.progress.error, f.progress.delivered
    );
    for l in &sim.links {
        eprintln!(
            "{} sent {} marked {} drop {} q50 {}",
            l.params.name,
            l.stats.sent_packets,
            l.stats.marked,
            l.stats.dropped_overflow,
            l.stats.queue_hist.value_at_quantile(0.5)
        );
    }
    eprintln!("{:?}", f.progress.traces.get(&0).map(|t| &t[..t.len().min(20)]));
}
