"""The host's noise over a benchmark, for the benchmarks in this folder to print beside their
numbers."""
import os


class HostNoise:
    """The host's load average and the CPU time the hypervisor took from it (steal, from
    /proc/stat) over a measurement: on a VM, steal slows every configuration without showing in
    the load, and interleaving spreads it over them but does not remove it."""

    def __init__(self):
        self.load_before = os.getloadavg()[0]
        self.cpu_before = self._cpu_times()

    @staticmethod
    def _cpu_times():
        with open("/proc/stat") as f:
            ticks = [int(t) for t in f.readline().split()[1:9]]
        return ticks[7], sum(ticks)  # steal, and user..steal (guest time is inside user)

    def report(self):
        steal, total = self._cpu_times()
        share = 100 * (steal - self.cpu_before[0]) / max(total - self.cpu_before[1], 1)
        return f"host: 1-min load {self.load_before:.2f} -> {os.getloadavg()[0]:.2f}, CPU steal {share:.1f}%"
