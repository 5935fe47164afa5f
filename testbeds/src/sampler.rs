//! Queue sampling over rtnetlink (RTM_GETQDISC dumps, TCA_STATS_QUEUE), no fork per sample,
//! and the marker's closed loop: each tick writes the qdisc's real backlog into the marker.

use crate::marker::{self, Marker};
use anyhow::{anyhow, bail, Context, Result};
use netlink_packet_core::{
    NetlinkHeader, NetlinkMessage, NetlinkPayload, NLM_F_DUMP, NLM_F_REQUEST,
};
use netlink_packet_route::tc::{TcAttribute, TcMessage, TcStats2};
use netlink_packet_route::RouteNetlinkMessage;
use netlink_sys::{protocols::NETLINK_ROUTE, Socket, SocketAddr};
use serde::{Deserialize, Serialize};
use std::fs::File;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A qdisc's counters at one instant.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct QdiscStats {
    pub qlen: u32,
    pub backlog: u32,
    pub drops: u32,
    pub bytes: u64,
    pub packets: u64,
}

/// An rtnetlink socket opened inside a namespace (it stays bound to it).
pub struct QdiscReader {
    sock: Socket,
    seq: u32,
    buf: Vec<u8>,
}

impl QdiscReader {
    pub fn open(ns: &str) -> Result<QdiscReader> {
        let path = format!("/run/netns/{ns}");
        let f = File::open(&path).with_context(|| format!("opening {path}"))?;
        // setns affects only the calling thread: open the socket from a short-lived thread.
        let sock = std::thread::spawn(move || -> Result<Socket> {
            nix::sched::setns(&f, nix::sched::CloneFlags::CLONE_NEWNET).context("setns")?;
            let mut s = Socket::new(NETLINK_ROUTE)?;
            s.bind_auto()?;
            s.connect(&SocketAddr::new(0, 0))?;
            Ok(s)
        })
        .join()
        .map_err(|_| anyhow!("netlink thread panicked"))??;
        Ok(QdiscReader { sock, seq: 0, buf: vec![0; 1 << 16] })
    }

    /// Dumps every qdisc of the namespace: (ifindex, handle, stats).
    pub fn dump(&mut self) -> Result<Vec<(i32, u32, QdiscStats)>> {
        self.seq = self.seq.wrapping_add(1);
        let mut hdr = NetlinkHeader::default();
        hdr.flags = NLM_F_REQUEST | NLM_F_DUMP;
        hdr.sequence_number = self.seq;
        let mut req = NetlinkMessage::new(
            hdr,
            NetlinkPayload::from(RouteNetlinkMessage::GetQueueDiscipline(TcMessage::default())),
        );
        req.finalize();
        let mut out = vec![0u8; req.buffer_len()];
        req.serialize(&mut out);
        self.sock.send(&out, 0)?;
        let mut res = Vec::new();
        loop {
            self.buf.clear();
            self.buf.reserve(1 << 16);
            let n = self.sock.recv(&mut self.buf, 0)?;
            let mut off = 0;
            while off < n {
                let msg = NetlinkMessage::<RouteNetlinkMessage>::deserialize(&self.buf[off..n])
                    .map_err(|e| anyhow!("netlink decode: {e}"))?;
                let len = msg.header.length as usize;
                if msg.header.sequence_number != self.seq {
                    off += len.max(1);
                    continue;
                }
                match msg.payload {
                    NetlinkPayload::Done(_) => return Ok(res),
                    NetlinkPayload::Error(e) => bail!("RTM_GETQDISC: {e:?}"),
                    NetlinkPayload::InnerMessage(RouteNetlinkMessage::NewQueueDiscipline(m)) => {
                        let mut st = QdiscStats::default();
                        for a in &m.attributes {
                            if let TcAttribute::Stats2(v) = a {
                                for s in v {
                                    match s {
                                        TcStats2::Queue(q) => {
                                            st.qlen = q.qlen;
                                            st.backlog = q.backlog;
                                            st.drops = q.drops;
                                        }
                                        TcStats2::Basic(b) => {
                                            st.bytes = b.bytes;
                                            st.packets = b.packets as u64;
                                        }
                                        _ => {}
                                    }
                                }
                            }
                        }
                        let h = &m.header.handle;
                        res.push((m.header.index, (h.major as u32) << 16 | h.minor as u32, st));
                    }
                    _ => {}
                }
                if len == 0 {
                    break;
                }
                off += len;
            }
        }
    }
}

/// One bottleneck to sample.
pub struct Probe {
    pub link_id: usize,
    pub ns: String,
    pub ifindex: i32,
    pub handle: u32,
    pub marker: Option<Marker>,
    /// A dual queue's leaf qdiscs (L, classic), whose backlogs resynchronize the marker; the
    /// probe's `handle` is then the htb's, holding both.
    pub dual_leaves: Option<(u32, u32)>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Series {
    pub link_id: usize,
    /// seconds since the sampler started
    pub t: Vec<f64>,
    pub qlen: Vec<u32>,
    pub backlog: Vec<u32>,
    pub drops: Vec<u32>,
    pub bytes: Vec<u64>,
    pub marks: Vec<u64>,
    /// marker model minus the qdisc's real backlog just before each resync (bytes)
    pub model_minus_real: Vec<i64>,
    /// A dual queue's real L and classic backlogs (bytes) at each sample, and `p'` after it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub l_backlog: Vec<u32>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub c_backlog: Vec<u32>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub base_probability: Vec<f64>,
    /// A dual queue's L and classic head sojourns at each sample (us, 0 when empty), and the
    /// packets each queue dequeued since the previous sample (`marker::HeadSojourn`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub l_sojourn_us: Vec<u32>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub l_left: Vec<u32>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub c_sojourn_us: Vec<u32>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub c_left: Vec<u32>,
    pub final_marker: Option<MarkerCounts>,
}

impl Series {
    /// The queue at each sample in 1514-byte frames (the byte backlog): the length comparable
    /// with and without sender offload. `qlen` counts skbs, and with offload a GSO batch of
    /// several packets is one skb (the qdisc holds ~13 frames in ~2 skbs at K = 20).
    pub fn frames(&self) -> Vec<f64> {
        self.backlog.iter().map(|b| *b as f64 / crate::backend::FRAME as f64).collect()
    }

    /// The samples where the link was busy: it sent bytes since the previous sample.
    pub fn busy(&self) -> impl Iterator<Item = usize> + '_ {
        (1..self.t.len()).filter(|&i| self.bytes[i] > self.bytes[i - 1])
    }
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct MarkerCounts {
    pub marks: u64,
    pub packets: u64,
    pub ect: u64,
    pub already_ce: u64,
    pub loss_drops: u64,
    pub over_k: u64,
    /// Packets the marks cover (a marked GSO skb counts as its segments).
    pub marked_segs: u64,
    /// Packets seen, a GSO skb counting as its segments (equals `packets` without offload).
    pub segs: u64,
    /// A dual queue's counts: packets classified L, CE marks on them (and of those, by the
    /// step), CE marks on classic ECT(0) packets, classic not-ECT packets dropped at p_C.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dualq: Option<DualCounts>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct DualCounts {
    pub l_packets: u64,
    pub l_marks: u64,
    pub l_step_marks: u64,
    pub c_marks: u64,
    pub c_drops: u64,
}

/// Samples every `interval` until `stop`, with times since `start`; resynchronizes each marker
/// with its qdisc.
pub fn run(
    mut probes: Vec<Probe>,
    interval: Duration,
    stop: Arc<AtomicBool>,
    start: Instant,
) -> Result<(Vec<Series>, f64)> {
    let mut readers: Vec<(String, QdiscReader)> = Vec::new();
    for p in &probes {
        if !readers.iter().any(|(n, _)| *n == p.ns) {
            readers.push((p.ns.clone(), QdiscReader::open(&p.ns)?));
        }
    }
    let mut series: Vec<Series> =
        probes.iter().map(|p| Series { link_id: p.link_id, ..Default::default() }).collect();
    let mut next = Instant::now();
    let mut late = 0u64;
    let mut ticks = 0u64;
    while !stop.load(Ordering::Relaxed) {
        for (ns, r) in readers.iter_mut() {
            let dump = r.dump()?;
            let now_ns = marker::mono_ns();
            let t = start.elapsed().as_secs_f64();
            for (p, s) in probes.iter_mut().zip(series.iter_mut()) {
                if p.ns != *ns {
                    continue;
                }
                let Some((_, _, st)) =
                    dump.iter().find(|(i, h, _)| *i == p.ifindex && *h == p.handle)
                else {
                    bail!(
                        "qdisc {:x} on ifindex {} in {} not found in {:?}",
                        p.handle,
                        p.ifindex,
                        p.ns,
                        dump
                    );
                };
                s.t.push(t);
                s.qlen.push(st.qlen);
                s.backlog.push(st.backlog);
                s.drops.push(st.drops);
                s.bytes.push(st.bytes);
                match (p.marker.as_mut(), p.dual_leaves) {
                    (Some(m), Some(leaves)) => resync_dual(m, leaves, p.ifindex, &dump, now_ns, s)?,
                    (Some(m), None) => {
                        let model = m.resync(st.backlog as u64, now_ns)?;
                        s.model_minus_real.push(model - st.backlog as i64);
                        s.marks.push(m.get(marker::ST_MARKS));
                    }
                    _ => {}
                }
            }
        }
        ticks += 1;
        next += interval;
        let now = Instant::now();
        if next > now {
            std::thread::sleep(next - now);
        } else {
            late += 1;
            next = now;
        }
    }
    for (p, s) in probes.iter().zip(series.iter_mut()) {
        if let Some(m) = &p.marker {
            s.final_marker = Some(MarkerCounts {
                marks: m.get(marker::ST_MARKS),
                packets: m.get(marker::ST_PACKETS),
                ect: m.get(marker::ST_ECT),
                already_ce: m.get(marker::ST_ALREADY_CE),
                loss_drops: m.get(marker::ST_LOSS_DROPS),
                over_k: m.get(marker::ST_OVER_K),
                marked_segs: m.get(marker::ST_MARKED_SEGS),
                segs: m.get(marker::ST_SKB_SEGS),
                dualq: p.dual_leaves.map(|_| DualCounts {
                    l_packets: m.get(marker::ST_L_PACKETS),
                    l_marks: m.get(marker::ST_L_MARKS),
                    l_step_marks: m.get(marker::ST_L_STEP_MARKS),
                    c_marks: m.get(marker::ST_C_MARKS),
                    c_drops: m.get(marker::ST_C_DROPS),
                }),
            });
        }
    }
    let late_frac = if ticks > 0 { late as f64 / ticks as f64 } else { 0.0 };
    Ok((series, late_frac))
}

/// A dual queue's sample: both leaves' real backlogs into the series and the marker (whose model
/// minus real is recorded over both queues), and `p'` after the PI2 step.
fn resync_dual(
    m: &mut Marker,
    (l_handle, c_handle): (u32, u32),
    ifindex: i32,
    dump: &[(i32, u32, QdiscStats)],
    now_ns: u64,
    s: &mut Series,
) -> Result<()> {
    let leaf = |h: u32| {
        dump.iter()
            .find(|(i, x, _)| *i == ifindex && *x == h)
            .map(|(_, _, st)| marker::Leaf {
                backlog: st.backlog as u64,
                bytes: st.bytes,
                packets: st.packets,
            })
            .ok_or_else(|| anyhow!("dual-queue leaf {h:x} on ifindex {ifindex} not found"))
    };
    let (l_leaf, c_leaf) = (leaf(l_handle)?, leaf(c_handle)?);
    let (l, c) = (l_leaf.backlog as u32, c_leaf.backlog as u32);
    let sync = m.resync_dual(l_leaf, c_leaf, now_ns)?;
    let us = |ns: u64| (ns / 1000).min(u32::MAX as u64) as u32;
    s.l_sojourn_us.push(us(sync.l_sojourn_ns));
    s.l_left.push(sync.l_left.min(u32::MAX as u64) as u32);
    s.c_sojourn_us.push(us(sync.c_sojourn_ns));
    s.c_left.push(sync.c_left.min(u32::MAX as u64) as u32);
    s.model_minus_real.push(sync.model_l + sync.model_c - (l as i64 + c as i64));
    s.marks.push(m.get(marker::ST_MARKS));
    s.l_backlog.push(l);
    s.c_backlog.push(c);
    s.base_probability.push(sync.base);
    Ok(())
}
