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
}

/// A marker attached to one device; its maps opened.
pub struct Marker {
    cfg: Array<MapData, u64>,
    state: Array<MapData, u64>,
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
        Ok(Marker { cfg, state })
    }

    pub fn get(&self, idx: u32) -> u64 {
        self.state.get(&idx, 0).unwrap_or(0)
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
