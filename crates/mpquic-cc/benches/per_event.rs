//! Per-event cost of every controller at 1, 4 and 8 paths.
//!
//! - `ack`: one `PacketAcked` (congestion avoidance, paths taken in turn), timed in chunks of
//!   pre-sent packets so that only the ACK events are inside the timer.
//! - `ack_frame`: `PacketAcked` + `AckBatchEnded` for a frame that ends no round.
//! - `round_frame`: `PacketSent` + `PacketAcked` + `AckBatchEnded` where every frame ends a round
//!   (alpha updates, XMP's increase, AMP's SSR check run each time); minus `ack_frame` this is
//!   the round-end cost plus a `PacketSent`.
//! - `ce_frame`: as `round_frame` with a CE report that passes the once-per-round gate, so every
//!   frame also reacts; minus `round_frame` this is the cost of an ECN reaction (less whatever
//!   round-end work a reacting round skips, e.g. XMP's increase).
//!
//! In the frame benches notices are drained every 1024 frames inside the timer, as a transport
//! draining them regularly would pay for them.

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use mpquic_cc::{Controller, ControllerConfig, ControllerKind, Event, PathId, RttSample};

const MSS: u64 = 1200;
const CHUNK: u64 = 1024;

struct Bed {
    cc: Box<dyn Controller>,
    next_pn: Vec<u64>,
    rtts: Vec<RttSample>,
    turn: usize,
}

impl Bed {
    /// `n` paths with slightly different RTTs, each out of slow start after a CE round.
    fn new(kind: ControllerKind, n: usize) -> Self {
        let mut cc = ControllerConfig::with_defaults(kind).build();
        let rtts = (0..n)
            .map(|k| {
                let rtt = Duration::from_micros(100 + 10 * k as u64);
                RttSample { latest: rtt, smoothed: rtt, min: rtt }
            })
            .collect();
        for k in 0..n {
            cc.on_event(PathId(k as u32), Event::PathAdded { mss: MSS });
        }
        let mut bed = Bed { cc, next_pn: vec![0; n], rtts, turn: 0 };
        for k in 0..n {
            for ce in [1, 0, 0] {
                let first = bed.next_pn[k];
                for _ in 0..20 {
                    bed.send(k);
                }
                for pn in first..bed.next_pn[k] {
                    bed.ack(k, pn);
                }
                if ce > 0 {
                    bed.event(k, Event::CongestionExperienced { count: ce, exact: true });
                }
                bed.event(k, Event::AckBatchEnded);
            }
        }
        bed
    }

    fn event(&mut self, k: usize, event: Event) {
        self.cc.on_event(PathId(k as u32), event);
    }

    fn send(&mut self, k: usize) -> u64 {
        let pn = self.next_pn[k];
        self.next_pn[k] += 1;
        self.event(k, Event::PacketSent { bytes: MSS, pn });
        pn
    }

    fn ack(&mut self, k: usize, pn: u64) {
        let rtt = self.rtts[k];
        self.event(k, Event::PacketAcked { bytes: MSS, pn, rtt, app_limited: false });
    }

    fn next_path(&mut self) -> usize {
        let k = self.turn;
        self.turn = (self.turn + 1) % self.next_pn.len();
        k
    }

    /// Time `per_packet` over `iters` pre-sent packets, taken round-robin over the paths.
    fn time_present(
        &mut self,
        iters: u64,
        mut per_packet: impl FnMut(&mut Bed, usize, u64),
    ) -> Duration {
        let mut total = Duration::ZERO;
        let mut left = iters;
        let mut batch = Vec::with_capacity(CHUNK as usize);
        let mut sink = Vec::new();
        while left > 0 {
            let chunk = left.min(CHUNK);
            batch.clear();
            for _ in 0..chunk {
                let k = self.next_path();
                let pn = self.send(k);
                batch.push((k, pn));
            }
            let start = Instant::now();
            for &(k, pn) in &batch {
                per_packet(self, k, pn);
            }
            total += start.elapsed();
            for k in 0..self.next_pn.len() {
                self.event(k, Event::AckBatchEnded);
            }
            self.cc.drain_notices(&mut sink);
            sink.clear();
            left -= chunk;
        }
        total
    }
}

fn per_event(c: &mut Criterion) {
    for (name, ce) in
        [("ack", None), ("ack_frame", None), ("round_frame", Some(0)), ("ce_frame", Some(1))]
    {
        let mut group = c.benchmark_group(name);
        for kind in ControllerKind::ALL {
            for n in [1usize, 4, 8] {
                group.bench_function(BenchmarkId::new(kind.name(), n), |b| {
                    let mut bed = Bed::new(kind, n);
                    b.iter_custom(|iters| match (name, ce) {
                        ("ack", _) => bed.time_present(iters, |bed, k, pn| {
                            bed.ack(k, black_box(pn));
                        }),
                        ("ack_frame", _) => bed.time_present(iters, |bed, k, pn| {
                            bed.ack(k, black_box(pn));
                            bed.event(k, Event::AckBatchEnded);
                        }),
                        (_, Some(ce)) => {
                            // Notices are drained every CHUNK frames, inside the timer, as a
                            // transport would: their cost belongs to the events that push them.
                            let mut sink = Vec::new();
                            let start = Instant::now();
                            for i in 0..iters {
                                let k = bed.next_path();
                                let pn = bed.send(k);
                                bed.ack(k, black_box(pn));
                                if ce > 0 {
                                    bed.event(
                                        k,
                                        Event::CongestionExperienced { count: ce, exact: true },
                                    );
                                }
                                bed.event(k, Event::AckBatchEnded);
                                if i % CHUNK == CHUNK - 1 {
                                    bed.cc.drain_notices(&mut sink);
                                    sink.clear();
                                }
                            }
                            start.elapsed()
                        }
                        _ => unreachable!(),
                    });
                    black_box(bed.cc.window(PathId(0)));
                });
            }
        }
        group.finish();
    }
}

criterion_group!(benches, per_event);
criterion_main!(benches);
