//! Link-shaping backends, detected at run time.
//!
//! - `red`: on kernels with `red` (and `netem` for loss): htb rate R -> red with
//!   min = max = K, probability 1, `ecn` (the DCTCP switch), netem in front for loss.
//! - `ebpf`: htb rate R -> bfifo, with the eBPF marker (`bpf/ecn_marker.c`) on clsact egress
//!   modelling the FIFO and marking above K (closed-loop, see `sampler`), and dropping for loss.
//!
//! - `dualpi2`: a dual queue (`aqm = "dualq"`) on kernels with the `dualpi2` qdisc: htb rate R
//!   -> dualpi2 with the scenario's step and target.
//! - `ebpf` with a dual queue, where the kernel has no `dualpi2` (this one): htb rate R split
//!   into an L class (priority, 90% guaranteed) and a classic class (10% guaranteed, so never
//!   starved), each ceil R over a bfifo; the eBPF marker classifies by the ECN field (it sets
//!   `skb->priority` to the class id), models both backlogs and marks as RFC 9332 couples them.
//!
//! Delay, with either backend: netem in front of the rate where the kernel has it, else the
//! NFQUEUE delay line (`delay`) in front of the qdisc.
//!
//! Which one ran is recorded in every result. Nothing degrades silently.

use crate::netns::run;
use crate::plan::LinkParams;
use anyhow::{bail, Result};
use serde::Serialize;

#[derive(Debug, Clone, Serialize)]
pub struct Capabilities {
    pub red: bool,
    pub netem: bool,
    pub fq: bool,
    pub htb: bool,
    pub bfifo: bool,
    pub clsact_bpf: bool,
    /// RFC 9332's DualQ Coupled AQM as a qdisc (Linux 6.x with `sch_dualpi2`).
    #[serde(default)]
    pub dualpi2: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Backend {
    /// htb + red(ecn) [+ netem]
    Red,
    /// htb + bfifo + eBPF marker (with a dual queue: two htb classes, the marker classifying)
    Ebpf,
    /// htb + dualpi2 (only for `aqm = "dualq"`)
    Dualpi2,
}

/// Probes the kernel's qdiscs in a scratch namespace.
pub fn detect(run_id: u32) -> Result<Capabilities> {
    let ns = crate::netns::ns_name(run_id, "probe");
    run("ip", &["netns", "add", &ns])?;
    let guard = crate::cleanup::NsGuard(ns.clone());
    run("ip", &["-n", &ns, "link", "add", "p0", "type", "veth", "peer", "name", "p1"])?;
    let try_q = |args: &str| -> bool {
        let mut a: Vec<&str> = vec!["-n", &ns, "qdisc", "add", "dev", "p0"];
        a.extend(args.split_whitespace());
        let ok = run("tc", &a).is_ok();
        let _ = run("tc", &["-n", &ns, "qdisc", "del", "dev", "p0", "root"]);
        ok
    };
    let caps = Capabilities {
        red: try_q("root red limit 300000 min 30000 max 30001 avpkt 1500 burst 21 probability 1.0 ecn bandwidth 100mbit"),
        netem: try_q("root netem delay 1ms"),
        fq: try_q("root fq"),
        htb: try_q("root handle 1: htb default 1"),
        bfifo: try_q("root bfifo limit 100000"),
        clsact_bpf: {
            let ok = run("tc", &["-n", &ns, "qdisc", "add", "dev", "p0", "clsact"]).is_ok();
            let _ = run("tc", &["-n", &ns, "qdisc", "del", "dev", "p0", "clsact"]);
            ok
        },
        dualpi2: try_q("root dualpi2"),
    };
    drop(guard);
    Ok(caps)
}

/// How link delay is made.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum DelayMethod {
    /// `netem delay` in front of the rate (the standard, where the kernel has it).
    Netem,
    /// The NFQUEUE delay line (`delay`).
    Nfqueue,
}

impl Capabilities {
    /// netem where present, else the delay line.
    pub fn delay_method(&self) -> DelayMethod {
        if self.netem {
            DelayMethod::Netem
        } else {
            DelayMethod::Nfqueue
        }
    }
}

/// Chooses the backend for a link spec, or says why none can run it.
pub fn choose(caps: &Capabilities, link: &LinkParams) -> Result<Backend> {
    if !caps.htb {
        bail!("the kernel has no htb qdisc: no rate limiting available");
    }
    if link.dualq.is_some() {
        if caps.dualpi2 && link.loss == 0.0 {
            return Ok(Backend::Dualpi2);
        }
        if !caps.bfifo || !caps.clsact_bpf {
            bail!("aqm = \"dualq\": the kernel has neither dualpi2 nor (bfifo + clsact)");
        }
        return Ok(Backend::Ebpf);
    }
    if caps.red && (link.loss == 0.0 || caps.netem) {
        return Ok(Backend::Red);
    }
    if !caps.bfifo || !caps.clsact_bpf {
        bail!("the kernel has neither red nor (bfifo + clsact) for ECN marking");
    }
    Ok(Backend::Ebpf)
}

fn tc(ns: &str, args: &str) -> Result<()> {
    let mut a: Vec<&str> = vec!["-n", ns];
    a.extend(args.split_whitespace());
    run("tc", &a).map(|_| ())
}

pub const FRAME: u64 = 1514;

/// Whether netem sits in front of the rate (it delays, or drops for the red backend).
fn has_netem(link: &LinkParams, backend: Backend, delay: DelayMethod) -> bool {
    (delay == DelayMethod::Netem && link.delay_ms > 0.0)
        || (backend == Backend::Red && link.loss > 0.0)
}

/// The htb's handle: 2: at the root, 3: under netem.
fn htb_handle(link: &LinkParams, backend: Backend, delay: DelayMethod) -> u32 {
    if has_netem(link, backend, delay) {
        3
    } else {
        2
    }
}

/// Where the bottleneck queue of `dev` sits: `dev D parent H:1 handle 10:`, under the htb class.
/// A fault swaps the qdisc there (see `fault`).
pub fn leaf_position(dev: &str, link: &LinkParams, backend: Backend, delay: DelayMethod) -> String {
    format!("dev {dev} parent {}:1 handle 10:", htb_handle(link, backend, delay))
}

/// The bottleneck queue itself: a byte FIFO, or red marking at K on the red backend with ECN.
pub fn leaf_qdisc(link: &LinkParams, backend: Backend) -> String {
    match backend {
        Backend::Red if link.ecn => {
            let rate = format!("{}kbit", (link.rate_mbit * 1000.0).round() as u64);
            let k = link.k_packets as u64 * FRAME;
            let burst = link.k_packets + 1;
            format!(
                "red limit {} min {k} max {} avpkt {FRAME} burst {burst} probability 1.0 ecn \
                 bandwidth {rate}",
                link.buffer_bytes,
                k + 1
            )
        }
        Backend::Dualpi2 => dualpi2_qdisc(link),
        Backend::Ebpf | Backend::Red => format!("bfifo limit {}", link.buffer_bytes),
    }
}

/// The dualpi2 qdisc of a dual-queue link: the scenario's step and target, its buffer in
/// frames; the rest (PI2 gains, coupling 2, classic protection) is dualpi2's RFC 9332 default.
fn dualpi2_qdisc(link: &LinkParams) -> String {
    let d = link.dualq.expect("the dualpi2 backend runs dual-queue links");
    format!(
        "dualpi2 limit {} step_thresh {}us target {}us",
        (link.buffer_bytes / FRAME).max(2),
        d.l_step_us.round() as u64,
        d.classic_target_us.round() as u64
    )
}

/// A dual queue's htb classes under the rate class `H:1`: `H:2` for L, `H:3` for classic.
pub const L_CLASS: u32 = 2;
pub const C_CLASS: u32 = 3;
/// The guaranteed share of the classic class (dualpi2's default classic protection is 10%).
const C_SHARE: f64 = 0.1;

/// The class ids the marker writes into `skb->priority` (htb classifies by them): (L, classic).
pub fn dualq_priorities(link: &LinkParams, backend: Backend, delay: DelayMethod) -> (u32, u32) {
    let h = htb_handle(link, backend, delay) << 16;
    (h | L_CLASS, h | C_CLASS)
}

/// The leaf bfifos of a dual queue, handles `20:` (L) and `30:` (classic), as the sampler finds
/// them.
pub const DUALQ_LEAVES: (u32, u32) = (0x0020_0000, 0x0030_0000);

/// The two htb classes of a dual queue under the rate class `H:1` (a parent, rate R): L with
/// priority 0 and 90% guaranteed, classic with priority 1 and 10%, each ceil R (so either takes
/// the whole link alone) over its own bfifo of the link's buffer. Returns the htb's handle, whose
/// backlog is both queues'.
fn dual_classes(ns: &str, dev: &str, link: &LinkParams, h: u32) -> Result<u32> {
    let kbit = |f: f64| format!("{}kbit", (link.rate_mbit * 1000.0 * f).round() as u64);
    let ceil = kbit(1.0);
    for (class, share, prio, leaf) in [(L_CLASS, 1.0 - C_SHARE, 0, 20), (C_CLASS, C_SHARE, 1, 30)] {
        tc(ns, &format!("class add dev {dev} parent {h}:1 classid {h}:{class} htb rate {} ceil {ceil} prio {prio} quantum {FRAME}", kbit(share)))?;
        tc(
            ns,
            &format!(
                "qdisc add dev {dev} parent {h}:{class} handle {leaf}: bfifo limit {}",
                link.buffer_bytes
            ),
        )?;
    }
    Ok(h << 16)
}

/// Installs rate + FIFO (+ red marking / netem) on the egress of `dev` in `ns`. Returns the
/// handle ("10:") of the qdisc that holds the bottleneck queue. The eBPF marker, if any, is
/// attached separately (`marker`), and so is the NFQUEUE delay line (`delay`).
pub fn shape(
    ns: &str,
    dev: &str,
    link: &LinkParams,
    backend: Backend,
    delay: DelayMethod,
) -> Result<u32> {
    let rate = format!("{}kbit", (link.rate_mbit * 1000.0).round() as u64);
    let netem_delay = delay == DelayMethod::Netem && link.delay_ms > 0.0;
    let netem_loss = backend == Backend::Red && link.loss > 0.0;
    if has_netem(link, backend, delay) {
        let mut netem = format!("dev {dev} root handle 1: netem limit 100000");
        if netem_delay {
            let us = |ms: f64| (ms * 1000.0).round() as u64;
            netem += &format!(" delay {}us", us(link.delay_ms));
            if link.jitter_ms > 0.0 {
                // netem's jitter reorders packets (its queue is sorted by send time).
                netem += &format!(" {}us", us(link.jitter_ms));
            }
        }
        if netem_loss {
            netem += &format!(" loss {}%", link.loss * 100.0);
        }
        tc(ns, &format!("qdisc add {netem}"))?;
    }
    let htb_handle = htb_handle(link, backend, delay);
    let parent = if htb_handle == 3 { "parent 1:1" } else { "root" };
    // A dual queue's unclassified packets (those the marker passes over: not IP) are classic.
    let dual = link.dualq.is_some() && backend == Backend::Ebpf;
    let default = if dual { C_CLASS } else { 1 };
    tc(ns, &format!("qdisc add dev {dev} {parent} handle {htb_handle}: htb default {default}"))?;
    tc(ns, &format!("class add dev {dev} parent {htb_handle}: classid {htb_handle}:1 htb rate {rate} ceil {rate} quantum {FRAME}"))?;
    if dual {
        return dual_classes(ns, dev, link, htb_handle);
    }
    let leaf = leaf_position(dev, link, backend, delay);
    tc(ns, &format!("qdisc add {leaf} {}", leaf_qdisc(link, backend)))?;
    Ok(0x0010_0000) // "10:" (tc handles are hex)
}
