//! The eBPF ECN marker: compiled with clang at setup, attached with `tc ... bpf da`, its
//! maps pinned in a bpffs of the run's own and opened here for the resync loop.

use crate::netns::run;
use anyhow::{anyhow, bail, Context, Result};
use aya::maps::{Array, Map, MapData};
use std::path::{Path, PathBuf};

const SOURCE: &str = include_str!("../bpf/ecn_marker.c");

// Indices, as in bpf/ecn_marker.c.
pub const CFG_RATE_BPS: u32 = 0;
pub const CFG_K_BYTES: u32 = 1;
pub const CFG_LOSS_U32: u32 = 2;
pub const CFG_DUALQ: u32 = 3;
pub const CFG_L_STEP_BYTES: u32 = 4;
pub const CFG_PL_U32: u32 = 5;
pub const CFG_PC_U32: u32 = 6;
pub const CFG_PRIO_L: u32 = 7;
pub const CFG_PRIO_C: u32 = 8;
pub const ST_BACKLOG: u32 = 0;
pub const ST_LAST_NS: u32 = 1;
pub const ST_MARKS: u32 = 2;
pub const ST_PACKETS: u32 = 3;
pub const ST_ECT: u32 = 4;
pub const ST_ALREADY_CE: u32 = 5;
pub const ST_LOSS_DROPS: u32 = 6;
pub const ST_OVER_K: u32 = 7;
pub const ST_MARKED_SEGS: u32 = 8;
pub const ST_SKB_SEGS: u32 = 9;
pub const ST_L_BACKLOG: u32 = 10;
pub const ST_L_PACKETS: u32 = 11;
pub const ST_L_MARKS: u32 = 12;
pub const ST_L_STEP_MARKS: u32 = 13;
pub const ST_C_MARKS: u32 = 14;
pub const ST_C_DROPS: u32 = 15;

/// RFC 9332 Appendix A's PI2, as the simulator runs it (`mpquic_sim::dualq`): the update
/// interval, the integral and proportional gains, and the coupling factor.
pub const PI2_T_UPDATE_NS: u64 = 16_000_000;
pub const PI2_ALPHA: f64 = 0.16;
pub const PI2_BETA: f64 = 3.2;
pub const PI2_K: f64 = 2.0;

/// Checks that the tools the marker needs are installed; the error names the Debian package.
pub fn check_tools() -> Result<()> {
    if which("clang").is_none() {
        bail!("clang not found: install the Debian package `clang` (see testbeds/install-deps.sh)");
    }
    if !Path::new("/usr/include/bpf/bpf_helpers.h").exists() {
        bail!("/usr/include/bpf/bpf_helpers.h missing: install the Debian package `libbpf-dev`");
    }
    if which("tc").is_none() || which("ip").is_none() {
        bail!("ip/tc not found: install the Debian package `iproute2`");
    }
    let v = run("ip", &["-V"])?;
    if !v.contains("libbpf") {
        bail!("iproute2 is built without libbpf ({}): tc cannot load BTF maps", v.trim());
    }
    Ok(())
}

pub fn which(tool: &str) -> Option<PathBuf> {
    std::env::var_os("PATH")?
        .to_str()?
        .split(':')
        .map(|d| Path::new(d).join(tool))
        .find(|p| p.is_file())
}

/// Mounts a private bpffs for the run's pinned maps (outside /sys, which `ip netns exec`
/// and `tc -n` remount).
pub fn mount_bpffs(dir: &Path) -> Result<()> {
    std::fs::create_dir_all(dir)?;
    nix::mount::mount(Some("bpf"), dir, Some("bpf"), nix::mount::MsFlags::empty(), None::<&str>)
        .with_context(|| format!("mounting bpffs at {}", dir.display()))
}

/// What a marker models: the link's drain rate, its marking threshold, its random loss.
#[derive(Debug, Clone, Copy)]
pub struct MarkerConfig {
    pub rate_bytes_per_s: u64,
    pub k_bytes: u64,
    pub loss: f64,
    /// A dual queue (RFC 9332) instead of the single FIFO.
    pub dualq: Option<DualMarker>,
}

/// A dual queue as the marker models it.
#[derive(Debug, Clone, Copy)]
pub struct DualMarker {
    /// The L step as a backlog: the step's sojourn times the rate.
    pub l_step_bytes: u64,
    /// The classic queue's PI2 target, seconds.
    pub classic_target_s: f64,
    /// The htb class ids of the L and the classic class.
    pub priorities: (u32, u32),
}

/// PI2's state, run on the resync loop's thread from the real backlogs.
#[derive(Debug, Clone, Copy)]
struct Pi2 {
    target_s: f64,
    /// `p'`.
    base: f64,
    last_qdelay_s: f64,
    next_ns: u64,
}

impl Pi2 {
    /// Brings `p'` up to `now_ns` on the classic delay `qdelay_s`: one step per elapsed
    /// interval, `p' += ALPHA * (qdelay - target) + BETA * (qdelay - qdelay_prev)` clamped to
    /// [0, 1], as the simulator's `DualQueue::update_base`. Whether it stepped.
    fn update(&mut self, now_ns: u64, qdelay_s: f64) -> bool {
        if self.next_ns == 0 {
            self.next_ns = now_ns + PI2_T_UPDATE_NS;
        }
        let mut stepped = false;
        while now_ns >= self.next_ns {
            let d =
                PI2_ALPHA * (qdelay_s - self.target_s) + PI2_BETA * (qdelay_s - self.last_qdelay_s);
            self.base = (self.base + d).clamp(0.0, 1.0);
            self.last_qdelay_s = qdelay_s;
            self.next_ns += PI2_T_UPDATE_NS;
            stepped = true;
        }
        stepped
    }
}

/// The sojourn of the packet at the head of one leaf FIFO, from the qdisc's counters alone (the
/// marker sees arrivals, not departures). A FIFO's bytes that arrived by time t are the bytes it
/// has dequeued plus its backlog (drops at a full FIFO never enter it); the head is byte number
/// `dequeued`, so it arrived when the arrivals first passed that number, and has waited since.
/// This is the sojourn RFC 9332's PI2 reads (`cq.time()`), and the simulator's: the time the
/// packet leaving now has waited. A backlog over the link rate is not: behind a priority L queue
/// the classic queue drains at what L leaves over (at L1's first netns run, 19 of 100 Mbit/s:
/// (L+C)/rate read 13 ms where the classic head waited ~60 ms, so PI2 never pushed back).
#[derive(Debug, Default)]
pub struct HeadSojourn {
    /// (time ns, bytes arrived by then), increasing in both; the oldest kept is the last at or
    /// below the head's byte number, so that the head's arrival can be interpolated.
    arrivals: std::collections::VecDeque<(u64, u64)>,
    last_packets: Option<u64>,
}

impl HeadSojourn {
    /// One sample of the leaf at `now_ns`: its backlog, and the bytes and packets it has
    /// dequeued since it was created. Returns the head's sojourn in ns (0 when the FIFO is
    /// empty) and the packets dequeued since the previous sample (a weight: the packets that
    /// left with about this sojourn).
    pub fn sample(&mut self, now_ns: u64, backlog: u64, dequeued: u64, packets: u64) -> (u64, u64) {
        let arrived = dequeued + backlog;
        if self.arrivals.back().is_none_or(|&(_, a)| arrived > a) {
            self.arrivals.push_back((now_ns, arrived));
        }
        while self.arrivals.len() > 1 && self.arrivals[1].1 <= dequeued {
            self.arrivals.pop_front();
        }
        let left = packets - self.last_packets.unwrap_or(packets).min(packets);
        self.last_packets = Some(packets);
        if backlog == 0 {
            return (0, left);
        }
        // The head arrived between the first sample past `dequeued` and the one before it:
        // interpolated as if the bytes arrived evenly in between.
        let arrived_at = match (self.arrivals.front(), self.arrivals.get(1)) {
            (Some(&(t0, a0)), Some(&(t1, a1))) if a0 <= dequeued => {
                t0 + ((t1 - t0) as f64 * (dequeued - a0) as f64 / (a1 - a0) as f64) as u64
            }
            (Some(&(t0, _)), _) => t0,
            (None, _) => now_ns,
        };
        (now_ns.saturating_sub(arrived_at), left)
    }
}

/// A probability as the marker compares it with `bpf_get_prandom_u32()`.
fn u32_prob(p: f64) -> u64 {
    (p.clamp(0.0, 1.0) * u32::MAX as f64).round() as u64
}

/// What one dual-queue resync saw: the model's backlogs before it (bytes), `p'`, and each
/// queue's head sojourn (ns) with the packets it dequeued since the previous resync.
#[derive(Debug, Clone, Copy)]
pub struct DualSync {
    pub model_l: i64,
    pub model_c: i64,
    pub base: f64,
    pub l_sojourn_ns: u64,
    pub l_left: u64,
    pub c_sojourn_ns: u64,
    pub c_left: u64,
}

/// One leaf FIFO's counters as rtnetlink reports them: its backlog (bytes) and the bytes and
/// packets it has dequeued.
#[derive(Debug, Clone, Copy)]
pub struct Leaf {
    pub backlog: u64,
    pub bytes: u64,
    pub packets: u64,
}

/// A marker attached to one device; its maps opened.
pub struct Marker {
    cfg: Array<MapData, u64>,
    state: Array<MapData, u64>,
    pi2: Option<Pi2>,
    /// A dual queue's L and classic heads.
    heads: [HeadSojourn; 2],
}

fn open(path: &Path) -> Result<Array<MapData, u64>> {
    let data = MapData::from_pin(path)
        .map_err(|e| anyhow!("opening pinned map {}: {e}", path.display()))?;
    Array::try_from(Map::Array(data)).map_err(|e| anyhow!("map {}: {e}", path.display()))
}

impl Marker {
    /// Compiles the program for link `link_id`, attaches it to egress of `dev` in `ns` and
    /// writes its configuration.
    pub fn attach(
        work: &Path,
        bpffs: &Path,
        link_id: usize,
        ns: &str,
        dev: &str,
        conf: MarkerConfig,
    ) -> Result<Marker> {
        let src = work.join("ecn_marker.c");
        if !src.exists() {
            std::fs::write(&src, SOURCE)?;
        }
        let obj = work.join(format!("ecn_marker_l{link_id}.o"));
        let arch_inc = format!("-I/usr/include/{}-linux-gnu", std::env::consts::ARCH);
        let suffix = format!("-DMAP_SUFFIX=l{link_id}");
        run(
            "clang",
            &[
                "-O2",
                "-g",
                "-target",
                "bpf",
                &arch_inc,
                &suffix,
                "-c",
                src.to_str().unwrap(),
                "-o",
                obj.to_str().unwrap(),
            ],
        )
        .context("compiling bpf/ecn_marker.c")?;
        run("tc", &["-n", ns, "qdisc", "add", "dev", dev, "clsact"])?;
        let out = std::process::Command::new("tc")
            .env("TC_BPF_MNT", bpffs)
            .args(["-n", ns, "filter", "add", "dev", dev, "egress", "bpf", "da", "obj"])
            .arg(&obj)
            .args(["sec", "tc"])
            .output()?;
        if !out.status.success() {
            bail!("attaching the marker: {}", String::from_utf8_lossy(&out.stderr));
        }
        let globals = bpffs.join("tc/globals");
        let mut cfg = open(&globals.join(format!("mqcl{link_id}")))?;
        let state = open(&globals.join(format!("mqsl{link_id}")))?;
        cfg.set(CFG_RATE_BPS, conf.rate_bytes_per_s, 0)?;
        cfg.set(CFG_K_BYTES, conf.k_bytes, 0)?;
        let loss_u32 = (conf.loss * u32::MAX as f64).round() as u64;
        cfg.set(CFG_LOSS_U32, loss_u32, 0)?;
        let pi2 = match conf.dualq {
            Some(d) => {
                cfg.set(CFG_L_STEP_BYTES, d.l_step_bytes, 0)?;
                cfg.set(CFG_PRIO_L, d.priorities.0 as u64, 0)?;
                cfg.set(CFG_PRIO_C, d.priorities.1 as u64, 0)?;
                cfg.set(CFG_DUALQ, 1, 0)?;
                let target_s = d.classic_target_s;
                Some(Pi2 { target_s, base: 0.0, last_qdelay_s: 0.0, next_ns: 0 })
            }
            None => None,
        };
        Ok(Marker { cfg, state, pi2, heads: Default::default() })
    }

    pub fn get(&self, idx: u32) -> u64 {
        self.state.get(&idx, 0).unwrap_or(0)
    }

    /// Closes a dual queue's loop: writes the real L and classic backlogs into the model, steps
    /// PI2 on the classic head's sojourn (see [`HeadSojourn`]) and writes `p_L = min(K p', 1)`
    /// and `p_C = p'^2`. Returns the model before (drained to `now_ns`, L first), `p'` and the
    /// heads' sojourns.
    pub fn resync_dual(&mut self, l_leaf: Leaf, c_leaf: Leaf, now_ns: u64) -> Result<DualSync> {
        let (real_l, real_c) = (l_leaf.backlog, c_leaf.backlog);
        let (l_sojourn_ns, l_left) =
            self.heads[0].sample(now_ns, real_l, l_leaf.bytes, l_leaf.packets);
        let (c_sojourn_ns, c_left) =
            self.heads[1].sample(now_ns, real_c, c_leaf.bytes, c_leaf.packets);
        let rate = self.cfg.get(&CFG_RATE_BPS, 0).unwrap_or(0);
        let last = self.get(ST_LAST_NS);
        let drained = (now_ns.saturating_sub(last) as u128 * rate as u128 / 1_000_000_000) as u64;
        let (l, c) = (self.get(ST_L_BACKLOG), self.get(ST_BACKLOG));
        let model_l = l.saturating_sub(drained);
        let model_c = c.saturating_sub(drained - (l - model_l));
        self.state.set(ST_L_BACKLOG, real_l, 0)?;
        self.state.set(ST_BACKLOG, real_c, 0)?;
        self.state.set(ST_LAST_NS, now_ns, 0)?;
        let pi2 = self.pi2.as_mut().expect("resync_dual on a dual-queue marker");
        if pi2.update(now_ns, c_sojourn_ns as f64 / 1e9) {
            let base = pi2.base;
            self.cfg.set(CFG_PL_U32, u32_prob(PI2_K * base), 0)?;
            self.cfg.set(CFG_PC_U32, u32_prob(base * base), 0)?;
        }
        let base = self.pi2.map_or(0.0, |p| p.base);
        Ok(DualSync {
            model_l: model_l as i64,
            model_c: model_c as i64,
            base,
            l_sojourn_ns,
            l_left,
            c_sojourn_ns,
            c_left,
        })
    }

    /// Closes the loop: returns the model's backlog (drained to `now_ns`) and replaces it with
    /// the real one.
    pub fn resync(&mut self, real_backlog: u64, now_ns: u64) -> Result<i64> {
        let b = self.get(ST_BACKLOG);
        let last = self.get(ST_LAST_NS);
        let rate = self.cfg.get(&CFG_RATE_BPS, 0).unwrap_or(0);
        let drained = now_ns.saturating_sub(last) as u128 * rate as u128 / 1_000_000_000;
        let model = (b as u128).saturating_sub(drained) as i64;
        self.state.set(ST_BACKLOG, real_backlog, 0)?;
        self.state.set(ST_LAST_NS, now_ns, 0)?;
        Ok(model)
    }
}

/// CLOCK_MONOTONIC in ns, the clock of `bpf_ktime_get_ns`.
pub fn mono_ns() -> u64 {
    let t = nix::time::clock_gettime(nix::time::ClockId::CLOCK_MONOTONIC).expect("clock_gettime");
    t.tv_sec() as u64 * 1_000_000_000 + t.tv_nsec() as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    /// A FIFO that has taken 1000 bytes by 0 ms and 1000 more every ms, and dequeues from
    /// 6 ms on. The head is byte number `dequeued`; it arrived just after the last sample whose
    /// arrivals did not pass it (interpolated inside the interval), and has waited since. The
    /// weight is the packets dequeued since the sample before; an empty FIFO has no sojourn.
    #[test]
    fn the_head_sojourn_is_the_time_since_the_arrivals_passed_the_dequeued_bytes() {
        let mut h = HeadSojourn::default();
        for t in 0..=5 {
            // Nothing dequeued: byte 0, there since 0 ms.
            assert_eq!(h.sample(t * MS, (t + 1) * 1000, 0, 0), (t * MS, 0));
        }
        // Byte 1000 arrived after 0 ms (1000 by then), byte 2000 after 1 ms.
        assert_eq!(h.sample(6 * MS, 6000, 1000, 1), (6 * MS, 1));
        assert_eq!(h.sample(7 * MS, 6000, 2000, 2), (6 * MS, 1));
        // Byte 2500, half way between 1 ms (2000) and 2 ms (3000): 1.5 ms.
        assert_eq!(h.sample(8 * MS, 6000, 2500, 3), (8 * MS - 3 * MS / 2, 1));
        // Drained: no head, no sojourn; six packets left.
        assert_eq!(h.sample(9 * MS, 0, 8500, 9), (0, 6));
    }

    /// PI2 steps once per 16 ms interval by RFC 9332 Appendix A's per-update gains (alpha and
    /// beta "in Hz" are already per update: alpha = 0.1 T_update / RTT_max^2 carries T_update,
    /// and Linux's dualpi2 adds alpha * (qdelay - target) per update the same way).
    #[test]
    fn pi2_steps_by_its_gains_once_per_interval() {
        let mut p = Pi2 { target_s: 0.015, base: 0.0, last_qdelay_s: 0.0, next_ns: 0 };
        assert!(!p.update(1, 0.025));
        assert!(!p.update(1 + PI2_T_UPDATE_NS - 1, 0.025));
        assert!(p.update(1 + PI2_T_UPDATE_NS, 0.025));
        let expected = PI2_ALPHA * 0.010 + PI2_BETA * 0.025;
        assert!((p.base - expected).abs() < 1e-12, "{}", p.base);
        // Two intervals late: two steps, the second with no change in delay.
        assert!(p.update(1 + 3 * PI2_T_UPDATE_NS, 0.025));
        let expected = expected + PI2_ALPHA * 0.010 * 2.0;
        assert!((p.base - expected).abs() < 1e-12, "{} vs {expected}", p.base);
    }
}
