//! The library's path supervisor in the simulator: live paths through a shared, queued
//! bottleneck are not declared failed; a black-holed path is, within the rule's deadline; a
//! closed connection is not supervised any more. A link written to go down (`down_at`) goes
//! silent then, and its path is declared failed.

use mpquic::internals::FAILURE_POLL;
use mpquic::{FailoverEvent, PathFailure};
use mpquic_sim::scenario::{
    Amount, Dur, FlowSpec, LinkConfig, LinkOverride, Rate, Scenario, Topology,
};
use mpquic_sim::sim::Side;
use mpquic_sim::Sim;

/// The netns many-to-one AMP test's shape: 4 senders with 4 addresses each, one multipath AMP
/// flow of 4 paths per sender, all into one 100 Mbit/s bottleneck (~150 KB buffer, K = 20),
/// sending for 8 s: past the second round of the path keep-alive (every 10 s / 3), whose PINGs
/// reach the paths AMP keeps from data.
fn many_to_one_amp() -> Scenario {
    let mut s = Scenario::new(
        "many-to-one-amp-failover",
        Dur::ms(8000),
        Topology::ManyToOne {
            senders: 4,
            sender_addrs: 4,
            receiver_addrs: 4,
            access: LinkConfig { rate: Some(Rate(10_000_000_000)), ..Default::default() },
            bottleneck: LinkConfig {
                rate: Some(Rate(100_000_000)),
                buffer: Some(Amount::Packets(108)),
                k: Some(Amount::Packets(20)),
                delay: Some(Dur::us(20)),
                ..Default::default()
            },
        },
    );
    s.host_jitter = Dur::us(5);
    s.transport.ecn = mpquic::EcnPrecision::PerPacket;
    for i in 0..4 {
        let mut f = FlowSpec::bulk(&format!("s{i}"), "r");
        f.controller = Some("amp".into());
        f.paths = 4;
        s.flows.push(f);
    }
    s
}

fn failures(sim: &Sim, flow: usize) -> Vec<(Side, u32, f64)> {
    sim.flows[flow]
        .progress
        .failovers
        .iter()
        .filter_map(|(side, event)| match event {
            FailoverEvent::PathFailed { path, at_s, .. } => Some((*side, *path, *at_s)),
            FailoverEvent::PathRecovered { .. } => None,
        })
        .collect()
}

/// AMP keeps the paths it suppresses from data, but the peer's packets on them (keep-alive
/// PINGs) must still be acknowledged on them: before noq-proto patch D4, they were not, and the
/// server declared every suppressed path failed at the second keep-alive round (6.9 s).
#[test]
fn live_queued_and_suppressed_paths_are_not_declared_failed() {
    let mut sim = Sim::new(many_to_one_amp()).expect("valid scenario");
    sim.run();
    let suppressions: u64 = sim
        .flows
        .iter()
        .map(|f| {
            f.notices
                .lock()
                .unwrap()
                .counts
                .get(mpquic_cc::Notice::SUPPRESSED)
                .copied()
                .unwrap_or(0)
        })
        .sum();
    assert!(suppressions > 0, "AMP never suppressed a path: the scenario tests nothing");
    for (i, flow) in sim.flows.iter().enumerate() {
        assert_eq!(flow.progress.error, None, "flow {i}");
        assert_eq!(failures(&sim, i), [], "flow {i}: live paths declared failed");
        assert!(flow.progress.request_read > 10_000_000, "flow {i} stalled");
    }
}

/// 600 ms of one bulk AMP flow over the two-path topology's two paths (`backup_paths` as
/// given), round-robin: both paths carry data (the stack order would leave path 1 idle beside a
/// fast path 0), unless one is a backup.
fn two_path_amp(name: &str, backup_paths: Vec<usize>) -> Scenario {
    let mut s = Scenario::new(
        name,
        Dur::ms(600),
        Topology::TwoPath {
            cross_hosts: 1,
            access: LinkConfig { rate: Some(Rate(40_000_000_000)), ..Default::default() },
        },
    );
    s.host_jitter = Dur::us(1);
    s.transport.scheduler = mpquic::Scheduler::RoundRobin;
    let mut flow = FlowSpec::bulk("src", "dst");
    flow.paths = 2;
    flow.backup_paths = backup_paths;
    flow.controller = Some("amp".into());
    s.flows.push(flow);
    s
}

/// A link the scenario writes down from 50 ms on (`down_at` on the `src -> b` direction) sends
/// nothing once the packets it holds are out (its host queue drains in under 3 ms at 40 Gbit/s:
/// 5 ms is allowed), and the client declares the path over it failed; before, it carried data.
#[test]
fn a_link_written_down_at_a_time_carries_nothing_after_it() {
    let mut s = two_path_amp("down-at", vec![]);
    let down_at = Dur::ms(50);
    s.link_overrides.push(LinkOverride {
        from: "src".into(),
        to: Some("b".into()),
        config: LinkConfig { down_at: Some(down_at), ..Default::default() },
    });
    let mut sim = Sim::new(s).expect("valid scenario");
    sim.run();
    let link = sim.links.iter().find(|l| l.params.name == "src->b").expect("link src->b");
    let bucket = |t: f64| (t / sim.scenario.output.goodput_interval.secs()) as usize;
    let sent = &link.stats.bytes_series;
    // The series ends with the link's last bucket with bytes in it.
    let before: u64 = sent.iter().take(bucket(down_at.secs())).sum();
    let after: u64 = sent.iter().skip(bucket(down_at.secs() + 0.005)).sum();
    assert!(before > 0, "the link carried nothing before going down");
    assert_eq!(after, 0, "the link sent after going down");
    let failed = failures(&sim, 0);
    assert!(
        failed.iter().any(|&(side, path, at)| side == Side::Client && path == 1 && at > 0.05),
        "path 1 not declared failed: {failed:?}"
    );
}

/// A path whose link drops everything from 50 ms on is declared failed by the sender within
/// the rule's deadline (here its 200 ms floor: the PTO estimate is 3 x 3 x ~20 us + 3 x 25 ms),
/// counted from the last answer, plus two polls (the poll that sees the silence start and the
/// one that sees it last the deadline); the last answer, to packets sent just before the black
/// hole, comes up to one RTT and the peer's ACK delay (25 ms) after it. The other path is not
/// declared failed, and carries the flow on.
#[test]
fn a_black_holed_path_is_declared_failed_within_the_deadline() {
    let mut sim = Sim::new(two_path_amp("black-hole", vec![])).expect("valid scenario");
    let dead = sim.links.iter().position(|l| l.params.name == "src->b").expect("link src->b");
    let black_hole_at = Dur::ms(50);
    sim.black_hole(dead, black_hole_at.0);
    sim.run();

    let rtt = std::time::Duration::from_micros(20);
    let deadline = PathFailure::default().deadline(rtt);
    let last_answer = rtt + std::time::Duration::from_millis(25);
    let latest = black_hole_at.secs() + (last_answer + deadline + 2 * FAILURE_POLL).as_secs_f64();
    let failed = failures(&sim, 0);
    let client: Vec<_> = failed.iter().filter(|(side, ..)| *side == Side::Client).collect();
    assert!(
        matches!(client.first(), Some((_, 1, at)) if *at >= black_hole_at.secs() && *at <= latest),
        "path 1 (via switch b) not declared failed by {latest} s: {failed:?}"
    );
    assert!(
        failed.iter().all(|(_, path, _)| *path == 1),
        "a live path declared failed: {failed:?}"
    );
    let failed_at = client[0].2;
    eprintln!("black hole at {} s, path 1 declared failed at {failed_at} s", black_hole_at.secs());
    // Path 0 carries the flow after the failure.
    let bucket = |t: f64| (t / sim.scenario.output.goodput_interval.secs()) as usize;
    let delivered = &sim.flows[0].progress.delivered;
    let after: u64 = delivered.iter().skip(bucket(failed_at) + 1).sum();
    assert!(after > 0, "nothing delivered after the failure");
}

/// A connection that is closed (here: every path black-holed until the idle timeout, on both
/// ends) is no longer supervised: its supervisor, never polled again, used to ask for a wake-up
/// at the same instant over and over, and the run never got past it (hence the thread: a spin
/// fails the test instead of hanging it).
#[test]
fn a_closed_connection_is_not_supervised_any_more() {
    let (done, result) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut s = Scenario::new(
            "all-paths-dead",
            Dur::ms(12_000),
            Topology::TwoPath { cross_hosts: 1, access: Default::default() },
        );
        let mut flow = FlowSpec::bulk("src", "dst");
        flow.paths = 2;
        s.flows.push(flow);
        let mut sim = Sim::new(s).expect("valid scenario");
        for name in ["src->a", "src->b", "a->src", "b->src"] {
            let link = sim.links.iter().position(|l| l.params.name == name).expect(name);
            sim.black_hole(link, Dur::ms(5).0);
        }
        sim.run();
        let _ = done.send((sim.now(), sim.flows[0].progress.error.clone()));
    });
    let (now, error) = result
        .recv_timeout(std::time::Duration::from_secs(120))
        .expect("the run ends within 2 minutes (12 s of virtual time, nearly all idle)");
    assert_eq!(now, Dur::ms(12_000).0, "the run stopped short");
    assert!(error.as_deref().is_some_and(|e| e.contains("timed out")), "{error:?}");
}

/// [`two_path_amp`] with path 1 a backup (`backup_paths = [1]`), path 0's link black-holed at `black_hole_at` if given; the client's bytes sent per path and
/// the bytes delivered after 300 ms.
fn backup_run(black_hole_at: Option<Dur>) -> (Vec<u64>, u64) {
    let mut sim = Sim::new(two_path_amp("backup", vec![1])).expect("valid scenario");
    if let Some(at) = black_hole_at {
        let dead = sim.links.iter().position(|l| l.params.name == "src->a").expect("link src->a");
        sim.black_hole(dead, at.0);
    }
    sim.run();
    let mut sent = vec![0; 2];
    for path in sim.client_path_stats(0) {
        sent[path.id as usize % 2] += path.bytes_sent;
    }
    let bucket = (0.3 / sim.scenario.output.goodput_interval.secs()) as usize;
    let late: u64 = sim.flows[0].progress.delivered.iter().skip(bucket).sum();
    (sent, late)
}

/// A backup path carries next to nothing while the available path lives (its keep-alives), and
/// carries the flow once the available path is black-holed and declared failed.
#[test]
fn a_backup_path_carries_data_only_once_the_available_path_failed() {
    let (sent, _) = backup_run(None);
    let total: u64 = sent.iter().sum();
    assert!(sent[1] * 100 < total, "the backup carried {} of {total} bytes", sent[1]);

    let (sent, late) = backup_run(Some(Dur::ms(50)));
    assert!(late > 0, "nothing delivered after path 0 was black-holed");
    assert!(sent[1] > sent[0], "the backup did not take over: bytes sent per path {sent:?}");
}
