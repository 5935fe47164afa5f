//! Property tests over random event sequences, for every controller: whatever the transport
//! reports, in whatever order, with whatever numbers, no active path's window drops below
//! `cwnd_min`, nothing is NaN, nothing overflows or panics, paths can be removed at any time,
//! and events for unknown paths change nothing.

use std::time::Duration;

use proptest::prelude::*;

use crate::testkit::Driver;
use crate::{
    AmpConfig, Controller, ControllerConfig, ControllerKind, Event, InitialWindow, MmptcpConfig,
    MptcpDConfig, PathId, RttSample,
};

/// One step of a script. Structured steps go through the driver (realistic packet numbers);
/// raw steps hand the controller arbitrary values.
#[derive(Debug, Clone)]
pub(crate) enum Op {
    Add { path: u32, mss: u64 },
    Remove { path: u32 },
    Send { path: u32, n: u64 },
    Ack { path: u32, n: usize, ce: u64 },
    Lose { path: u32, n: usize },
    Rtt { path: u32, micros: u64 },
    Mss { path: u32, mss: u64 },
    Raw { path: u32, event: Event },
}

fn duration() -> impl Strategy<Value = Duration> {
    prop_oneof![
        Just(Duration::ZERO),
        (0u64..100_000).prop_map(Duration::from_micros),
        (0u64..u64::MAX).prop_map(Duration::from_nanos),
        Just(Duration::MAX),
    ]
}

fn raw_event() -> impl Strategy<Value = Event> {
    let big = prop_oneof![0u64..3000, any::<u64>()];
    prop_oneof![
        (big.clone(), any::<u64>()).prop_map(|(bytes, pn)| Event::PacketSent { bytes, pn }),
        (big.clone(), any::<u64>(), duration(), duration(), duration(), any::<bool>()).prop_map(
            |(bytes, pn, latest, smoothed, min, app_limited)| Event::PacketAcked {
                bytes,
                pn,
                rtt: RttSample { latest, smoothed, min },
                app_limited,
            }
        ),
        (big.clone(), any::<bool>())
            .prop_map(|(count, exact)| Event::CongestionExperienced { count, exact }),
        (big, any::<u64>(), any::<bool>()).prop_map(|(bytes, largest_pn, persistent)| {
            Event::PacketsLost { bytes, largest_pn, persistent }
        }),
        Just(Event::AckBatchEnded),
    ]
}

pub(crate) fn op(paths: u32) -> impl Strategy<Value = Op> {
    let path = 0..paths;
    prop_oneof![
        1 => (path.clone(), 1u64..9000).prop_map(|(path, mss)| Op::Add { path, mss }),
        1 => path.clone().prop_map(|path| Op::Remove { path }),
        8 => (path.clone(), 1u64..40).prop_map(|(path, n)| Op::Send { path, n }),
        8 => (path.clone(), 0usize..40, prop_oneof![3 => Just(0u64), 1 => 1u64..10])
            .prop_map(|(path, n, ce)| Op::Ack { path, n, ce }),
        2 => (path.clone(), 1usize..5).prop_map(|(path, n)| Op::Lose { path, n }),
        2 => (path.clone(), 1u64..5000).prop_map(|(path, micros)| Op::Rtt { path, micros }),
        1 => (path.clone(), 1u64..9000).prop_map(|(path, mss)| Op::Mss { path, mss }),
        2 => (path, raw_event()).prop_map(|(path, event)| Op::Raw { path, event }),
    ]
}

/// Configurations that reach every mode quickly: SSR after one round, ESE with a short window,
/// MMPTCP's switch after a few packets or at the first congestion; the shared initial window.
fn configs() -> Vec<ControllerConfig> {
    let mut all: Vec<ControllerConfig> =
        ControllerKind::ALL.into_iter().map(ControllerConfig::with_defaults).collect();
    // SSR after one round, with the shared initial window: paths added mid-run take their share.
    all.push(ControllerConfig::Amp(AmpConfig {
        beta: 2.0,
        gamma: 1,
        tau: 1,
        initial_window: InitialWindow::Shared,
        ..Default::default()
    }));
    for name in ["xmp", "dcm"] {
        all.push(ControllerConfig::parse(name, ["initial_window=shared"]).expect("a valid value"));
    }
    all.push(ControllerConfig::MptcpD(MptcpDConfig {
        alpha: 1.01,
        beta: 10.0,
        candidates: 3,
        ..Default::default()
    }));
    all.push(ControllerConfig::Mmptcp(MmptcpConfig { switch_bytes: 20_000, ..Default::default() }));
    all.push(ControllerConfig::Mmptcp(MmptcpConfig {
        switch_on_congestion: true,
        ..Default::default()
    }));
    all.push(ControllerConfig::Mmptcp(MmptcpConfig {
        deal: crate::Dealing::Single,
        ..Default::default()
    }));
    all
}

/// Apply `op` to a driver, keeping `mss` (the effective MSS of each live path) up to date.
pub(crate) fn apply<C: Controller>(d: &mut Driver<C>, live: &mut [Option<u64>], op: &Op) {
    let clamp = |mss: u64| mss.clamp(1, 1 << 16);
    match *op {
        Op::Add { path, mss } => {
            if live[path as usize].is_none() {
                d.add_path_mss(path, mss);
                live[path as usize] = Some(clamp(mss));
            }
        }
        Op::Remove { path } => {
            if live[path as usize].take().is_some() {
                d.remove_path(path);
            }
        }
        Op::Mss { path, mss } => {
            if live[path as usize].is_some() {
                d.change_mss(path, mss);
                live[path as usize] = Some(clamp(mss));
            }
        }
        Op::Raw { path, event } => d.raw(path, event),
        _ if live[op_path(op) as usize].is_none() => {}
        Op::Send { path, n } => d.send(path, n),
        Op::Ack { path, n, ce } => d.ack(path, n, ce),
        Op::Lose { path, n } => d.lose(path, n),
        Op::Rtt { path, micros } => d.set_rtt(path, Duration::from_micros(micros)),
    }
}

fn op_path(op: &Op) -> u32 {
    match *op {
        Op::Add { path, .. }
        | Op::Remove { path }
        | Op::Send { path, .. }
        | Op::Ack { path, .. }
        | Op::Lose { path, .. }
        | Op::Rtt { path, .. }
        | Op::Mss { path, .. }
        | Op::Raw { path, .. } => path,
    }
}

fn check(d: &Driver, live: &[Option<u64>]) -> Result<(), TestCaseError> {
    let name = d.cc.name();
    let snap = d.snapshot();
    let live_ids: Vec<PathId> =
        (0..live.len()).filter(|&k| live[k].is_some()).map(|k| PathId(k as u32)).collect();
    prop_assert_eq!(snap.paths.iter().map(|p| p.path).collect::<Vec<_>>(), live_ids, "{}", name);
    for p in &snap.paths {
        let mss = live[p.path.0 as usize].unwrap();
        prop_assert_eq!(d.cc.window(p.path), p.window);
        prop_assert_eq!(d.cc.may_send(p.path), p.active);
        // MMPTCP's scatter phase floors its one window, not each path's share of it.
        if p.active && snap.mode != Some("scatter") {
            prop_assert!(
                p.window >= 2 * mss,
                "{}: path {} window {} < 2 * {}",
                name,
                p.path,
                p.window,
                mss
            );
        }
        prop_assert!(p.window <= 1 << 48, "{}: window {}", name, p.window);
        if let Some(alpha) = p.alpha {
            prop_assert!((0.0..=1.0).contains(&alpha), "{}: alpha {}", name, alpha);
        }
    }
    if !snap.paths.is_empty() {
        prop_assert!(snap.paths.iter().any(|p| p.active), "{}: no path may send", name);
    }
    if snap.mode == Some("scatter") {
        let packet = live.iter().flatten().max().copied().unwrap_or(0);
        let total: u64 = snap.paths.iter().map(|p| p.window).sum();
        prop_assert!(total >= 2 * packet, "{}: scatter total {} < 2 * {}", name, total, packet);
    }
    for (k, mss) in live.iter().enumerate() {
        if mss.is_none() {
            prop_assert_eq!(d.cc.window(PathId(k as u32)), 0);
            prop_assert!(!d.cc.may_send(PathId(k as u32)));
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn invariants_hold_under_any_event_sequence(
        ops in prop::collection::vec(op(6), 1..300),
    ) {
        for config in configs() {
            let mut d = Driver::new(config);
            let mut live = vec![None; 6];
            // Path 0 first, as a connection does, so most scripts exercise real traffic.
            apply(&mut d, &mut live, &Op::Add { path: 0, mss: 1200 });
            for op in &ops {
                apply(&mut d, &mut live, op);
                check(&d, &live)?;
            }
            let mut notices = Vec::new();
            d.cc.drain_notices(&mut notices);
            for notice in notices {
                // Notices feed qlog and JSON results: no NaN or infinity in them.
                prop_assert!(finite_notice(&notice));
            }
        }
    }

    #[test]
    fn events_for_unknown_paths_change_nothing(
        ops in prop::collection::vec(op(4), 1..200),
        noise in prop::collection::vec((100u32..110, raw_event()), 1..200),
    ) {
        for config in configs() {
            let mut quiet = Driver::new(config);
            let mut noisy = Driver::new(config);
            let (mut live_q, mut live_n) = (vec![None; 4], vec![None; 4]);
            apply(&mut quiet, &mut live_q, &Op::Add { path: 0, mss: 1200 });
            apply(&mut noisy, &mut live_n, &Op::Add { path: 0, mss: 1200 });
            for (k, op) in ops.iter().enumerate() {
                apply(&mut quiet, &mut live_q, op);
                apply(&mut noisy, &mut live_n, op);
                let (path, event) = noise[k % noise.len()];
                noisy.raw(path, event);
                noisy.raw(path, Event::PathRemoved);
            }
            prop_assert_eq!(quiet.snapshot(), noisy.snapshot());
            prop_assert_eq!(quiet.drain(), noisy.drain());
        }
    }
}

/// Notices are plain data for logs: check that their `Debug` form is complete and finite
/// numbers only (a NaN alpha would show up here).
fn finite_notice(notice: &crate::Notice) -> bool {
    let text = format!("{notice:?}");
    !text.contains("NaN") && !text.contains("inf")
}
