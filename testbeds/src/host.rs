//! What the host itself did while a run measured it: its load average, and the CPU time the
//! hypervisor gave to other guests (steal). This VM's steal reached 12-27% in bursts while its
//! 1-minute load read 1-2, and single-path controls moved by 10-20% in those runs: the load alone
//! hides it. It is not the host's only noise (a control moved as much at 1-4% steal).

pub use mpquic_scenario::results::STEAL_SUSPECT_PCT;

/// The host's 1-minute load average (the machine may be shared: a measurement on a loaded
/// host is CPU-bound, and the result should say so).
pub fn loadavg() -> f64 {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(f64::NAN)
}

/// The host's CPU time counters at one moment (`/proc/stat`'s `cpu` line, in clock ticks).
#[derive(Debug, Clone, Copy, PartialEq)]
struct CpuTimes {
    steal: u64,
    total: u64,
}

impl CpuTimes {
    /// Now; none where `/proc/stat` cannot be read or has no steal column (not a VM's kernel).
    fn now() -> Option<CpuTimes> {
        std::fs::read_to_string("/proc/stat").ok().as_deref().and_then(CpuTimes::parse)
    }

    /// From `/proc/stat`'s text: the first line's user, nice, system, idle, iowait, irq,
    /// softirq and steal (guest time is counted inside user and nice already).
    fn parse(stat: &str) -> Option<CpuTimes> {
        let line = stat.lines().find(|l| l.starts_with("cpu "))?;
        let ticks: Vec<u64> = line
            .split_whitespace()
            .skip(1)
            .take(8)
            .map(|t| t.parse().ok())
            .collect::<Option<_>>()?;
        let steal = *ticks.get(7)?;
        Some(CpuTimes { steal, total: ticks.iter().sum() })
    }

    /// The share of the host's CPU time between `self` and `later` that the hypervisor took
    /// (steal), percent; none when no time passed.
    fn steal_pct_until(self, later: CpuTimes) -> Option<f64> {
        let total = later.total.checked_sub(self.total).filter(|&t| t > 0)?;
        Some(100.0 * later.steal.saturating_sub(self.steal) as f64 / total as f64)
    }
}

/// The host's state when a measurement began, to be read again at its end.
pub struct HostSpan {
    load_before: f64,
    cpu_before: Option<CpuTimes>,
}

impl HostSpan {
    /// Now, at the measurement's start.
    pub fn start() -> HostSpan {
        HostSpan { load_before: loadavg(), cpu_before: CpuTimes::now() }
    }

    /// Now, at its end: the 1-minute load at the start and now, and the steal over the span
    /// (% of the host's CPU time; none where `/proc/stat` gave no reading).
    pub fn end(&self) -> ([f64; 2], Option<f64>) {
        let steal = self.cpu_before.zip(CpuTimes::now()).and_then(|(a, b)| a.steal_pct_until(b));
        ([self.load_before, loadavg()], steal)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const STAT: &str = "cpu  100 10 50 800 5 0 5 30 7 0\ncpu0 50 5 25 400 2 0 2 15 3 0\n";

    #[test]
    fn reads_steal_and_the_total_from_the_cpu_line() {
        assert_eq!(CpuTimes::parse(STAT), Some(CpuTimes { steal: 30, total: 1000 }));
    }

    #[test]
    fn a_kernel_without_a_steal_column_gives_none() {
        assert_eq!(CpuTimes::parse("cpu  100 10 50 800 5 0 5\n"), None);
        assert_eq!(CpuTimes::parse("intr 5\n"), None);
    }

    #[test]
    fn steal_is_its_share_of_the_time_between_two_readings() {
        let before = CpuTimes { steal: 30, total: 1000 };
        let after = CpuTimes { steal: 130, total: 1800 };
        assert_eq!(before.steal_pct_until(after), Some(12.5));
        assert_eq!(before.steal_pct_until(before), None);
    }

    #[test]
    fn this_host_gives_a_reading() {
        let now = CpuTimes::now().expect("/proc/stat has a cpu line with steal on Linux");
        assert!(now.total > 0);
    }
}
