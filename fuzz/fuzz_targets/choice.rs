//! The choice specs of command lines and scenario files: a controller (`amp:beta=4,tau=8`), a
//! scheduler name, an ECN precision and an ECN codepoint, each parsed from the same text. A
//! spec that parses must also work: a controller builds (as `ControllerConfig::build` promises)
//! and takes a short run of events without panicking; a name reads back as itself.

#![no_main]

use std::time::Duration;

use libfuzzer_sys::fuzz_target;
use mpquic::{Congestion, EcnCodepoint, EcnPrecision, Scheduler};
use mpquic_cc::{ControllerConfig, Event, PathId, RttSample};

fuzz_target!(|data: &[u8]| {
    let Ok(spec) = std::str::from_utf8(data) else { return };
    controller(spec);
    scheduler(spec);
    ecn_precision(spec);
    ecn_codepoint(spec);
});

fn controller(spec: &str) {
    match spec.parse::<Congestion>() {
        Ok(Congestion::Coupled(config)) => drive(&config),
        Ok(_) => {}
        Err(e) => drop(e.to_string()),
    }
    // mpquic-cc's own entry point, split as `Congestion`'s `FromStr` splits but with the empty
    // parameters kept (`amp:,beta=4`), which it must refuse or read, never panic on.
    let (name, params) = spec.split_once(':').unwrap_or((spec, ""));
    match ControllerConfig::parse(name.trim(), params.split(',').map(str::trim)) {
        Ok(config) => drive(&config),
        Err(e) => drop(e.to_string()),
    }
}

/// Build the controller and run two paths through a few rounds: growth, CE, loss.
fn drive(config: &ControllerConfig) {
    let mut cc = config.try_build().expect("a parsed configuration builds");
    let ms = Duration::from_millis(1);
    let rtt = RttSample { latest: ms, smoothed: ms, min: ms };
    for path in [PathId(0), PathId(1)] {
        cc.on_event(path, Event::PathAdded { mss: 1200 });
    }
    for pn in 0..40u64 {
        let path = PathId((pn % 2) as u32);
        cc.on_event(path, Event::PacketSent { bytes: 1200, pn });
        cc.on_event(path, Event::PacketAcked { bytes: 1200, pn, rtt, app_limited: false });
        if pn % 7 == 3 {
            cc.on_event(path, Event::CongestionExperienced { count: 1, exact: true });
        }
        if pn % 13 == 5 {
            let lost = Event::PacketsLost { bytes: 1200, largest_pn: pn, persistent: pn > 30 };
            cc.on_event(path, lost);
        }
        cc.on_event(path, Event::AckBatchEnded);
        let _ = (cc.window(path), cc.may_send(path));
    }
}

fn scheduler(spec: &str) {
    match spec.parse::<Scheduler>() {
        Ok(scheduler) => {
            let again = scheduler.name().parse::<Scheduler>().expect("a scheduler's own name");
            assert_eq!(again.name(), scheduler.name());
        }
        Err(e) => drop(e.to_string()),
    }
}

fn ecn_precision(spec: &str) {
    if let Ok(precision) = spec.parse::<EcnPrecision>() {
        assert_eq!(precision.name().parse::<EcnPrecision>(), Ok(precision));
    }
}

fn ecn_codepoint(spec: &str) {
    if let Ok(codepoint) = spec.parse::<EcnCodepoint>() {
        assert_eq!(codepoint.name().parse::<EcnCodepoint>(), Ok(codepoint));
    }
}
