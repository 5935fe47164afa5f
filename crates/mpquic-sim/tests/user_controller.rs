//! A controller defined outside the library, with the public `mpquic_cc::coupled` API only and
//! registered by name, runs in the simulator from a scenario's controller string as a built-in
//! does: the scenario validator accepts it with its parameters, the connection runs it, and
//! its snapshot says so.

use mpquic_cc::coupled::{Algorithm, Core, Coupled, Slot};
use mpquic_cc::{register, Registration};
use mpquic_sim::report::Report;
use mpquic_sim::scenario::{Dur, FlowSpec, LinkConfig, Rate, Scenario, Topology};
use mpquic_sim::Sim;

/// Uncoupled Reno whose ECN cut is `1 / beta` of the window: small enough to show a parameter
/// reaching the controller (the snapshot's ECN reductions leave windows above Reno's halving).
#[derive(Debug, Clone)]
struct GentleEcn {
    beta: f64,
}

impl Algorithm for GentleEcn {
    type Path = ();

    fn name(&self) -> &'static str {
        "sim-gentle-ecn"
    }

    fn ca_increase(&self, core: &Core<()>, path: Slot, bytes: u64) -> f64 {
        let p = core.path(path);
        p.mss_f() * bytes as f64 / p.cwnd()
    }

    fn ecn_target(&self, core: &Core<()>, path: Slot) -> f64 {
        core.path(path).cwnd() * (1.0 - 1.0 / self.beta)
    }
}

fn register_once() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        register(Registration::new("sim-gentle-ecn", &["beta"], |params| {
            let beta = params.get_or("beta", 2.0, |&b: &f64| b >= 2.0, "must be at least 2")?;
            Ok(Box::new(Coupled::new(GentleEcn { beta })))
        }))
        .expect("registers");
    });
}

fn two_path_flow(controller: &str) -> Scenario {
    let mut s = Scenario::new(
        "user-controller",
        Dur::ms(10),
        Topology::ManyToOne {
            senders: 1,
            sender_addrs: 2,
            receiver_addrs: 2,
            access: LinkConfig { rate: Some(Rate(40_000_000_000)), ..Default::default() },
            bottleneck: Default::default(),
        },
    );
    let mut flow = FlowSpec::bulk("s0", "r");
    flow.paths = 2;
    flow.controller = Some(controller.into());
    s.flows.push(flow);
    s
}

#[test]
fn a_registered_controller_runs_in_the_simulator() {
    register_once();
    let mut sim = Sim::new(two_path_flow("sim-gentle-ecn:beta=8")).expect("valid scenario");
    sim.run();
    let report = Report::new(&mut sim);
    let flow = &report.flows[0];
    assert_eq!(flow.error, None);
    assert!(flow.delivered_bytes > 0);
    let snapshot = &flow.controllers.first().expect("the client's controller").snapshot;
    assert_eq!(snapshot.algorithm, "sim-gentle-ecn");
    assert!(snapshot.paths.iter().any(|p| p.ecn_reductions > 0), "the marker cut it: {snapshot:?}");
}

#[test]
fn its_parameters_are_checked_where_a_builtins_are() {
    register_once();
    let err = Sim::new(two_path_flow("sim-gentle-ecn:beta=1")).err().expect("refused").to_string();
    assert!(err.contains("must be at least 2"), "{err}");
    let err = Sim::new(two_path_flow("sim-gentle-ecn:gamma=1")).err().expect("refused").to_string();
    assert!(err.contains("no parameter `gamma`"), "{err}");
}
