//! The NFQUEUE delay line: link delay on kernels without netem (nor fq/etf for EDT delay).
//!
//! An iptables rule in the router's namespace (`mangle POSTROUTING -o <dev> -j NFQUEUE`) hands
//! every packet leaving a delayed direction to a queue; a process in that namespace (this
//! binary's hidden `__delay-line` command, a thread per queue) holds each packet's verdict until
//! its release time and then accepts it, so the packet continues to the link's qdisc (rate,
//! FIFO, marker) `delay_ms` (+- `jitter_ms`) after it arrived. A delay-only direction a host
//! sends (`plan::DelayOnly`) is taken where it enters the router instead (`mangle PREROUTING
//! -i <dev>`), so the host's own qdisc and socket never hold its packets. Release times never decrease, so
//! a link keeps FIFO order even with jitter (the cost: a packet drawn early waits for the one
//! before it). The netfilter-queue netlink protocol is the `nfq` crate's.
//!
//! The socket cannot be polled through `nfq`, so a queue thread wakes every `POLL` to take new
//! packets: a packet's arrival is stamped up to `POLL` (plus timer slack) late, and each wake-up
//! costs a little CPU even when idle. Queue threads run at real-time priority (SCHED_FIFO 10)
//! so that other processes on a loaded machine do not hold releases back. Every second a queue
//! prints (to the run's log) how many packets it released and how late (percentiles), which is
//! how the limits in the README were measured.

use crate::netns::run;
use crate::plan::Hook;
use anyhow::{bail, Context, Result};
use serde::Serialize;
use std::collections::VecDeque;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How often a queue thread looks for new packets while it holds none due sooner.
const POLL: Duration = Duration::from_micros(100);
/// Packets the kernel keeps per queue (held ones included) before it drops: 1 s of 1 Gbit/s.
const QUEUE_MAX_LEN: u32 = 100_000;
/// Bytes of each packet copied to us: none are read, but the kernel needs a copy mode.
const COPY_RANGE: u16 = 64;

/// One delayed link direction: its queue number (per namespace) and delay.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct QueueSpec {
    pub num: u16,
    pub delay: Duration,
    pub jitter: Duration,
}

impl std::str::FromStr for QueueSpec {
    type Err = anyhow::Error;

    /// `NUM:DELAY_US:JITTER_US`, the `__delay-line --queue` syntax.
    fn from_str(s: &str) -> Result<QueueSpec> {
        let parts: Vec<&str> = s.split(':').collect();
        let [num, delay, jitter] = parts[..] else {
            bail!("--queue {s:?}: expected NUM:DELAY_US:JITTER_US");
        };
        let us = |x: &str| x.parse().map(Duration::from_micros);
        Ok(QueueSpec {
            num: num.parse().with_context(|| format!("--queue {s:?}: queue number"))?,
            delay: us(delay).with_context(|| format!("--queue {s:?}: delay"))?,
            jitter: us(jitter).with_context(|| format!("--queue {s:?}: jitter"))?,
        })
    }
}

impl std::fmt::Display for QueueSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}:{}", self.num, self.delay.as_micros(), self.jitter.as_micros())
    }
}

/// Release times for one link: arrival + delay + uniform jitter, never earlier than the
/// previous packet's release (FIFO).
pub struct Schedule {
    delay: Duration,
    jitter: Duration,
    last: Option<Instant>,
    rng: fastrand::Rng,
}

impl Schedule {
    pub fn new(spec: &QueueSpec, seed: u64) -> Schedule {
        Schedule {
            delay: spec.delay,
            jitter: spec.jitter.min(spec.delay),
            last: None,
            rng: fastrand::Rng::with_seed(seed),
        }
    }

    /// When a packet that arrived at `arrival` leaves.
    pub fn release_at(&mut self, arrival: Instant) -> Instant {
        let j = self.jitter.as_nanos() as u64;
        // delay - jitter + U[0, 2 jitter]: never negative, as jitter <= delay.
        let d = self.delay - self.jitter + Duration::from_nanos(self.rng.u64(0..=2 * j));
        let t = self.last.map_or(arrival + d, |last| (arrival + d).max(last));
        self.last = Some(t);
        t
    }
}

/// The `__delay-line` process: binds every queue, prints `ready`, then serves them (a thread
/// each) until killed.
pub fn serve(queues: Vec<QueueSpec>) -> Result<()> {
    if queues.is_empty() {
        bail!("__delay-line: no --queue given");
    }
    // Sleeps end within ~1 us of their deadline instead of the default 50 us slack.
    // SAFETY: prctl with PR_SET_TIMERSLACK takes one integer argument and touches no memory.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1000u64) };
    let (tx, rx) = std::sync::mpsc::channel();
    let mut threads = Vec::new();
    for q in queues {
        let tx = tx.clone();
        threads.push(std::thread::spawn(move || serve_queue(q, tx)));
    }
    drop(tx);
    // Every thread reports once bound (Ok) or failed (Err).
    for bound in rx {
        bound?;
    }
    println!("ready");
    for t in threads {
        t.join().map_err(|_| anyhow::anyhow!("delay-line thread panicked"))??;
    }
    Ok(())
}

/// Runs the calling thread at SCHED_FIFO priority 10, so that a loaded machine delays its
/// releases less (netem runs in the kernel and is not preempted by user processes; this thread
/// is). Without the privilege it runs as before, and says so.
fn realtime_priority(num: u16) {
    let param = libc::sched_param { sched_priority: 10 };
    // SAFETY: pid 0 is the calling thread; `param` outlives the call.
    if unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) } != 0 {
        let e = std::io::Error::last_os_error();
        eprintln!("queue {num}: no real-time priority ({e}): releases may be late under load");
    }
}

fn open_queue(q: &QueueSpec) -> Result<nfq::Queue> {
    let mut queue = nfq::Queue::open().context("opening the netfilter queue socket")?;
    queue.bind(q.num).with_context(|| format!("binding NFQUEUE {}", q.num))?;
    queue.set_copy_range(q.num, COPY_RANGE)?;
    queue.set_queue_max_len(q.num, QUEUE_MAX_LEN)?;
    queue.set_nonblocking(true);
    Ok(queue)
}

fn serve_queue(q: QueueSpec, bound: std::sync::mpsc::Sender<Result<()>>) -> Result<()> {
    let mut queue = match open_queue(&q) {
        Ok(queue) => {
            let _ = bound.send(Ok(()));
            queue
        }
        Err(e) => {
            let _ = bound.send(Err(anyhow::anyhow!("queue {}: {e:#}", q.num)));
            return Ok(());
        }
    };
    drop(bound);
    realtime_priority(q.num);
    let mut schedule = Schedule::new(&q, u64::from(q.num) + 1);
    let mut held: VecDeque<(Instant, nfq::Message)> = VecDeque::new();
    let mut stats = Stats::new(q.num);
    loop {
        loop {
            match queue.recv() {
                Ok(msg) => held.push_back((schedule.release_at(Instant::now()), msg)),
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                Err(e) => return Err(e).context("receiving from NFQUEUE"),
            }
        }
        let now = Instant::now();
        while held.front().is_some_and(|(t, _)| *t <= now) {
            let (t, mut msg) = held.pop_front().expect("checked non-empty");
            msg.set_verdict(nfq::Verdict::Accept);
            queue.verdict(msg).context("sending an NFQUEUE verdict")?;
            stats.released(now - t, held.len());
        }
        stats.maybe_print(now);
        let next = held.front().map_or(now + POLL, |(t, _)| *t);
        std::thread::sleep(next.saturating_duration_since(Instant::now()).min(POLL));
    }
}

/// Per-second counters of one queue, printed to stderr (the run's delay-line log): packets,
/// and how late after its release time each was released (percentiles in microseconds).
struct Stats {
    num: u16,
    since: Instant,
    late_us: hdrhistogram::Histogram<u64>,
    max_held: usize,
}

impl Stats {
    fn new(num: u16) -> Stats {
        // Up to 1 s late; later ones count as 1 s.
        let late_us = hdrhistogram::Histogram::new_with_max(1_000_000, 3).expect("valid bounds");
        Stats { num, since: Instant::now(), late_us, max_held: 0 }
    }

    fn released(&mut self, late: Duration, held: usize) {
        self.late_us.saturating_record(late.as_micros() as u64);
        self.max_held = self.max_held.max(held);
    }

    fn maybe_print(&mut self, now: Instant) {
        let span = now - self.since;
        if span < Duration::from_secs(1) {
            return;
        }
        let h = &self.late_us;
        if !h.is_empty() {
            let second = DelaySecond {
                queue: self.num,
                pkt_per_s: (h.len() as f64 / span.as_secs_f64()).round(),
                late_p50_us: h.value_at_quantile(0.5),
                late_p99_us: h.value_at_quantile(0.99),
                late_max_us: h.max(),
            };
            eprintln!("{second}, max held {}", self.max_held);
        }
        *self = Stats::new(self.num);
    }
}

/// One queue's second as its log line states it: packets released per second and how late
/// after their release time (percentiles, microseconds).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct DelaySecond {
    pub queue: u16,
    pub pkt_per_s: f64,
    pub late_p50_us: u64,
    pub late_p99_us: u64,
    pub late_max_us: u64,
}

impl std::fmt::Display for DelaySecond {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "queue {}: {:.0} pkt/s, release lateness p50 {} us p99 {} us max {} us",
            self.queue, self.pkt_per_s, self.late_p50_us, self.late_p99_us, self.late_max_us
        )
    }
}

impl DelaySecond {
    /// The record of a log line written by [`Stats`] (`None`: another line, e.g. an error).
    pub fn parse(line: &str) -> Option<DelaySecond> {
        let words: Vec<&str> = line.split_whitespace().collect();
        let [_queue, num, rate, _pkt, _release, _lateness, _p50, p50, _us, _p99, p99, _us2, _max, max, ..] =
            words[..]
        else {
            return None;
        };
        Some(DelaySecond {
            queue: num.strip_suffix(':')?.parse().ok()?,
            pkt_per_s: rate.parse().ok()?,
            late_p50_us: p50.parse().ok()?,
            late_p99_us: p99.parse().ok()?,
            late_max_us: max.parse().ok()?,
        })
    }
}

/// A running `__delay-line` process for one router namespace and its iptables rules.
pub struct DelayLine {
    child: Child,
    log: std::path::PathBuf,
}

impl DelayLine {
    /// Starts the delay line for `dirs` (where it takes the packets, device, queue) in
    /// namespace `ns`, then adds the rules that send those devices' packets to it (rules only
    /// after the queues are bound: an unbound queue drops). Its stderr goes to `log`.
    pub fn start(
        ns: &str,
        dirs: &[(Hook, String, QueueSpec)],
        log: &std::path::Path,
    ) -> Result<Self> {
        let me = crate::programs::testbed();
        let mut args =
            vec!["netns".to_string(), "exec".into(), ns.into(), me, "__delay-line".into()];
        for (_, _, q) in dirs {
            args.extend(["--queue".into(), q.to_string()]);
        }
        let mut child = Command::new("ip")
            .args(&args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(log)?)
            .spawn()
            .context("starting the delay line")?;
        let mut line = String::new();
        let stdout = child.stdout.take().expect("piped");
        BufReader::new(stdout).read_line(&mut line)?;
        let mut dl = DelayLine { child, log: log.to_path_buf() };
        if line.trim() != "ready" {
            let _ = dl.child.wait();
            let why = std::fs::read_to_string(log).unwrap_or_default();
            bail!("the delay line in {ns} did not start: {}", why.trim());
        }
        for (hook, dev, q) in dirs {
            let num = q.num.to_string();
            let (chain, side) = match hook {
                Hook::Egress => ("POSTROUTING", "-o"),
                Hook::Ingress => ("PREROUTING", "-i"),
            };
            let rule = ["-t", "mangle", "-A", chain, side, dev, "-j", "NFQUEUE"];
            let mut a = vec!["netns", "exec", ns, "iptables"];
            a.extend(rule);
            a.extend(["--queue-num", &num]);
            run("ip", &a).context("adding the NFQUEUE rule (is iptables installed?)")?;
        }
        Ok(dl)
    }
}

impl DelayLine {
    /// Stops the process and returns the seconds its log recorded (an unreadable log has
    /// none: the run's result then shows no delay-line seconds).
    pub fn finish(self) -> Vec<DelaySecond> {
        let log = self.log.clone();
        drop(self);
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        text.lines().filter_map(DelaySecond::parse).collect()
    }
}

impl Drop for DelayLine {
    fn drop(&mut self) {
        // The rules die with the namespace; the process is ours to end.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(delay_ms: u64, jitter_ms: u64) -> QueueSpec {
        QueueSpec {
            num: 0,
            delay: Duration::from_millis(delay_ms),
            jitter: Duration::from_millis(jitter_ms),
        }
    }

    #[test]
    fn without_jitter_every_packet_waits_exactly_the_delay() {
        let mut s = Schedule::new(&spec(20, 0), 1);
        let t0 = Instant::now();
        for i in 0..100 {
            let a = t0 + Duration::from_micros(i * 37);
            assert_eq!(s.release_at(a), a + Duration::from_millis(20));
        }
    }

    #[test]
    fn jitter_is_uniform_within_bounds_when_packets_are_sparse() {
        // 11 ms apart: a predecessor leaves by a + 14 ms, before the earliest draw (15 ms).
        let mut s = Schedule::new(&spec(20, 5), 7);
        let t0 = Instant::now();
        let mut early = 0;
        for i in 0..10_000u64 {
            let a = t0 + Duration::from_millis(11 * i);
            let d = s.release_at(a) - a;
            assert!(d >= Duration::from_millis(15) && d <= Duration::from_millis(25), "{d:?}");
            early += usize::from(d < Duration::from_millis(19));
        }
        // P(d < 19 ms) = 0.4.
        assert!((3600..4400).contains(&early), "{early} of 10000 draws below 19 ms");
    }

    #[test]
    fn jitter_never_reorders_dense_packets() {
        let mut s = Schedule::new(&spec(20, 5), 7);
        let t0 = Instant::now();
        let mut last = t0;
        for i in 0..10_000u64 {
            let a = t0 + Duration::from_micros(100 * i);
            let r = s.release_at(a);
            assert!(r >= last, "packet {i} released before its predecessor");
            assert!(r >= a + Duration::from_millis(15), "packet {i} earlier than delay - jitter");
            last = r;
        }
    }

    #[test]
    fn queue_spec_round_trips_and_rejects_garbage() {
        let q: QueueSpec = "3:20000:500".parse().unwrap();
        assert_eq!(q, QueueSpec { num: 3, ..spec(20, 0) }.with_jitter_us(500));
        assert_eq!(q.to_string().parse::<QueueSpec>().unwrap(), q);
        let e = "3:20000".parse::<QueueSpec>().unwrap_err().to_string();
        assert!(e.contains("expected NUM:DELAY_US:JITTER_US"), "{e}");
        let e = format!("{:#}", "x:1:2".parse::<QueueSpec>().unwrap_err());
        assert!(e.contains("queue number"), "{e}");
    }

    #[test]
    fn a_second_reads_back_from_its_log_line() {
        let s = DelaySecond {
            queue: 2,
            pkt_per_s: 8342.0,
            late_p50_us: 12,
            late_p99_us: 282,
            late_max_us: 1130,
        };
        assert_eq!(DelaySecond::parse(&format!("{s}, max held 17")), Some(s));
        assert_eq!(DelaySecond::parse("delay line: queue 2: bind failed"), None);
    }

    impl QueueSpec {
        fn with_jitter_us(self, us: u64) -> QueueSpec {
            QueueSpec { jitter: Duration::from_micros(us), ..self }
        }
    }
}
