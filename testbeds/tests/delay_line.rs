//! The NFQUEUE delay line (`__delay-line`, started the way the runner starts it: in a router's
//! namespace, with an iptables NFQUEUE rule on the egress device): `delay = 20 ms` adds 20 +- 2
//! ms to the median ping RTT, and a window-limited TCP transfer slows as the BDP predicts
//! (goodput = window / RTT: doubling the delay halves it, measured side by side in one test).

mod common;
use common::*;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

/// Sender a, router r, receiver b (a -- r -- b), removed on drop. The delay line sits on the
/// router, as in the testbed: a sender's own egress would hold its socket's packets, and TCP
/// small queues would then throttle the socket. Named like the runner's namespaces
/// (`mqtb-<pid>-`), so `mpquic-testbed cleanup` recognises leftovers.
struct Pair {
    a: String,
    r: String,
    b: String,
}

impl Pair {
    fn new() -> Pair {
        let id = std::process::id();
        let name = |n: &str| format!("mqtb-{id}-dl{n}");
        let p = Pair { a: name("a"), r: name("r"), b: name("b") };
        for ns in [&p.a, &p.r, &p.b] {
            ip(&["netns", "add", ns]);
            ip(&["-n", ns, "link", "set", "lo", "up"]);
        }
        let links = [(&p.a, "a0", &p.r, "r0", "10.9.0"), (&p.r, "r1", &p.b, "b0", "10.9.1")];
        for (x, xdev, y, ydev, net) in links {
            ip(&[
                "link", "add", xdev, "netns", x, "type", "veth", "peer", "name", ydev, "netns", y,
            ]);
            for (ns, dev, host) in [(x, xdev, 1), (y, ydev, 2)] {
                ip(&["-n", ns, "addr", "add", &format!("{net}.{host}/24"), "dev", dev]);
                ip(&["-n", ns, "link", "set", dev, "up"]);
            }
        }
        ip(&["-n", &p.a, "route", "add", "default", "via", "10.9.0.2"]);
        ip(&["-n", &p.b, "route", "add", "default", "via", "10.9.1.1"]);
        let o = p.exec(&p.r, &["sysctl", "-qw", "net.ipv4.ip_forward=1"]).output().unwrap();
        assert!(o.status.success());
        p
    }

    fn exec(&self, ns: &str, args: &[&str]) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", ns]).args(args);
        c
    }
}

impl Drop for Pair {
    fn drop(&mut self) {
        for ns in [&self.a, &self.r, &self.b] {
            let _ = Command::new("ip").args(["netns", "del", ns]).status();
        }
    }
}

fn ip(args: &[&str]) {
    let o = Command::new("ip").args(args).output().unwrap();
    assert!(o.status.success(), "ip {args:?}: {}", String::from_utf8_lossy(&o.stderr));
}

/// Starts the delay line in `r` for r1, toward b (queue 0) and adds the NFQUEUE rule; killed on drop.
struct Line(Child);

impl Line {
    fn start(p: &Pair, delay_us: u64) -> Line {
        let q = format!("0:{delay_us}:0");
        let mut child = p
            .exec(&p.r, &[bin(), "__delay-line", "--queue", &q])
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        assert_eq!(line.trim(), "ready");
        let o = p
            .exec(&p.r, &["iptables", "-t", "mangle", "-A", "POSTROUTING", "-o", "r1"])
            .args(["-j", "NFQUEUE", "--queue-num", "0"])
            .output()
            .unwrap();
        assert!(o.status.success(), "iptables: {}", String::from_utf8_lossy(&o.stderr));
        Line(child)
    }

    fn stop(mut self, p: &Pair) {
        let o = p.exec(&p.r, &["iptables", "-t", "mangle", "-F", "POSTROUTING"]).output().unwrap();
        assert!(o.status.success());
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Drop for Line {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Median ping RTT (ms) from a to b over 40 pings.
fn ping_median_ms(p: &Pair) -> f64 {
    let o = p.exec(&p.a, &["ping", "-n", "-c", "40", "-i", "0.05", "10.9.1.2"]).output().unwrap();
    let mut rtts: Vec<f64> = String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter_map(|l| l.split("time=").nth(1)?.split_whitespace().next()?.parse().ok())
        .collect();
    assert!(rtts.len() >= 35, "too few ping replies: {rtts:?}");
    rtts.sort_by(f64::total_cmp);
    rtts[rtts.len() / 2]
}

/// Goodput (Mbit/s) of one kernel TCP transfer a -> b of `bytes`.
fn tcp_goodput(p: &Pair, bytes: u64) -> f64 {
    let mut sink = p
        .exec(&p.b, &[bin(), "__sink", "--listen", "10.9.1.2:5301", "--proto", "tcp"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(sink.stdout.take().unwrap()).read_line(&mut line).unwrap();
    assert!(line.contains("listening"), "{line}");
    let o = p
        .exec(&p.a, &[bin(), "__send", "--server", "10.9.1.2:5301", "--proto", "tcp"])
        .args(["--cc", "cubic", "--bytes", &bytes.to_string()])
        .output()
        .unwrap();
    let _ = sink.kill();
    let _ = sink.wait();
    assert!(o.status.success(), "send: {}", String::from_utf8_lossy(&o.stderr));
    let rec: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    rec["goodput_mbps"].as_f64().unwrap()
}

fn tools_missing() -> Option<&'static str> {
    ["ping", "iptables"].into_iter().find(|t| Command::new(t).arg("-V").output().is_err())
}

#[test]
fn delay_line_adds_the_delay_to_rtt_and_bdp_limits_a_window_limited_flow() {
    let Some(_serial) = netns_test("delay_line_adds_the_delay") else { return };
    if let Some(t) = tools_missing() {
        println!(
            "SKIPPED delay_line_adds_the_delay: `{t}` missing (Debian: iputils-ping, iptables)"
        );
        return;
    }
    let p = Pair::new();
    let base = ping_median_ms(&p);
    let line = Line::start(&p, 20_000);
    let delayed = ping_median_ms(&p);
    println!("ping median: {base:.3} ms without, {delayed:.3} ms with delay 20 ms");
    assert!(
        (18.0..=22.0).contains(&(delayed - base)),
        "delay 20 ms added {:.3} ms of RTT",
        delayed - base
    );

    // Window-limited: b's receive buffer caps the window at well under 20 ms x veth rate.
    let o =
        p.exec(&p.b, &["sysctl", "-qw", "net.ipv4.tcp_rmem=4096 131072 131072"]).output().unwrap();
    assert!(o.status.success());
    let bytes = 3_000_000;
    let g20 = tcp_goodput(&p, bytes);
    line.stop(&p);
    let line = Line::start(&p, 40_000);
    let g40 = tcp_goodput(&p, bytes);
    line.stop(&p);
    println!("window-limited goodput: {g20:.1} Mbit/s at 20 ms, {g40:.1} Mbit/s at 40 ms");
    // The window never exceeds the 128 KiB receive buffer: goodput <= 128 KiB / RTT.
    let bound = 131072.0 * 8.0 / (delayed / 1000.0) / 1e6;
    assert!(g20 <= bound * 1.05, "goodput {g20:.1} above window/RTT = {bound:.1} Mbit/s");
    // Doubling the delay doubles the RTT (minus the base): the goodput halves.
    let ratio = g20 / g40;
    assert!((1.6..=2.4).contains(&ratio), "goodput 20 ms / 40 ms = {ratio:.2}, expected ~2");
}
