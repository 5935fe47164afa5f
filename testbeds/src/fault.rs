//! Path failure mid-run: black-hole both directions of a link and later restore them as they
//! were.
//!
//! This kernel has no netem, matchall or gact, so a direction is black-holed with the
//! `blackhole` qdisc, which drops everything silently (the sender's `sendmsg` still succeeds: a
//! dead path, not an unreachable one). A shaped direction gets it in place of its bottleneck
//! queue (`backend::leaf_position`, handle 10:): the htb rate, the eBPF marker on clsact and
//! the queue's handle stay, so the sampler keeps reading the link (an empty queue while
//! black-holed) and restoring puts back the very queue the link had. An unshaped direction gets
//! it as its root qdisc; restoring deletes it, which gives the device its default (`noqueue`
//! on veth) back.

use crate::backend::{self, Backend, DelayMethod};
use crate::netns::run;
use crate::plan::LinkParams;
use anyhow::{bail, Context, Result};
use std::io::Write;
use std::process::{Command, Stdio};

/// How one direction of a link leaves its device.
#[derive(Debug, Clone)]
pub enum Egress {
    /// Shaped by `backend::shape` with these parameters.
    Shaped { ns: String, dev: String, link: LinkParams, backend: Backend, delay: DelayMethod },
    /// The device's default qdisc.
    Plain { ns: String, dev: String },
}

impl Egress {
    fn device(&self) -> (&str, &str) {
        match self {
            Egress::Shaped { ns, dev, .. } | Egress::Plain { ns, dev } => (ns, dev),
        }
    }

    fn blackhole_commands(&self) -> (&str, Vec<String>) {
        match self {
            Egress::Shaped { ns, dev, link, backend, delay } => {
                let leaf = backend::leaf_position(dev, link, *backend, *delay);
                (ns, vec![format!("qdisc del {leaf}"), format!("qdisc add {leaf} blackhole")])
            }
            Egress::Plain { ns, dev } => {
                (ns, vec![format!("qdisc replace dev {dev} root blackhole")])
            }
        }
    }

    fn restore_commands(&self) -> (&str, Vec<String>) {
        match self {
            Egress::Shaped { ns, dev, link, backend, delay } => {
                let leaf = backend::leaf_position(dev, link, *backend, *delay);
                let queue = backend::leaf_qdisc(link, *backend);
                (ns, vec![format!("qdisc del {leaf}"), format!("qdisc add {leaf} {queue}")])
            }
            Egress::Plain { ns, dev } => (ns, vec![format!("qdisc del dev {dev} root")]),
        }
    }
}

/// Both directions of one link, ready to be black-holed and restored.
#[derive(Debug, Clone)]
pub struct LinkFault {
    pub directions: [Egress; 2],
}

impl LinkFault {
    /// Drops everything on the link, both ways.
    pub fn blackhole(&self) -> Result<()> {
        for d in &self.directions {
            let (ns, cmds) = d.blackhole_commands();
            tc_batch(ns, &cmds).context("black-holing a link")?;
        }
        Ok(())
    }

    /// Puts back what the link had before `blackhole`.
    pub fn restore(&self) -> Result<()> {
        for d in &self.directions {
            let (ns, cmds) = d.restore_commands();
            tc_batch(ns, &cmds).context("restoring a link")?;
        }
        Ok(())
    }
}

impl LinkFault {
    /// Makes the link gray: drops `percent` of its packets at random, both ways, until
    /// `stop_losing`. An iptables `statistic` rule on each direction's device (FORWARD for a
    /// router's, OUTPUT for a host's: both are added, one of them matches), as this kernel has
    /// no netem.
    pub fn lose(&self, percent: f64) -> Result<()> {
        self.loss_rules("-A", percent).context("making a link lossy")
    }

    /// Takes away what `lose(percent)` added.
    pub fn stop_losing(&self, percent: f64) -> Result<()> {
        self.loss_rules("-D", percent).context("healing a lossy link")
    }

    fn loss_rules(&self, action: &str, percent: f64) -> Result<()> {
        let probability = format!("{:.4}", percent / 100.0);
        for d in &self.directions {
            let (ns, dev) = d.device();
            for chain in ["FORWARD", "OUTPUT"] {
                let rule = ["-w", action, chain, "-o", dev, "-m", "statistic", "--mode", "random"];
                let drop = ["--probability", &probability, "-j", "DROP"];
                let args: Vec<&str> =
                    ["netns", "exec", ns, "iptables"].into_iter().chain(rule).chain(drop).collect();
                run("ip", &args)?;
            }
        }
        Ok(())
    }

    /// Both directions' qdiscs and egress filters (the marker) as `tc` lists them: `restore`
    /// gives back this.
    pub fn qdiscs(&self) -> Result<String> {
        let mut listing = String::new();
        for d in &self.directions {
            let (ns, dev) = d.device();
            listing += &run("tc", &["-n", ns, "qdisc", "show", "dev", dev])?;
            listing += &run("tc", &["-n", ns, "filter", "show", "dev", dev, "egress"])?;
        }
        Ok(listing)
    }
}

/// Runs tc commands in one `tc -batch` process: the swap of a queue (delete, add) leaves the
/// class on its default FIFO for microseconds, not for a process start.
fn tc_batch(ns: &str, commands: &[String]) -> Result<()> {
    let mut child = Command::new("tc")
        .args(["-n", ns, "-batch", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .context("starting tc (is iproute2 installed?)")?;
    let mut stdin = child.stdin.take().context("tc's stdin")?;
    stdin.write_all((commands.join("\n") + "\n").as_bytes())?;
    drop(stdin);
    let out = child.wait_with_output()?;
    if !out.status.success() {
        bail!(
            "tc -n {ns} -batch [{}] failed: {}",
            commands.join("; "),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(())
}
