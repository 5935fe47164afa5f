//! Which paths may take the next packet.
//!
//! noq's own packet scheduler is fixed: it tries paths in id order and sends on the first one
//! with congestion-window room. A policy is imposed on top of it by *gating* windows: a path the
//! policy does not want right now reports a window no larger than its bytes in flight, so noq
//! passes over it. Gating never lets a path exceed its controller's window.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use mpquic_cc::PathId;
use serde::Serialize;

/// A packet-scheduling policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Scheduler {
    /// noq's order: the lowest path id with window room sends.
    #[default]
    Stack,
    /// The path with the lowest smoothed RTT and window room sends (Linux MPTCP's default).
    LowestRtt,
    /// Packets are spread evenly: the path that has sent the fewest packets and has room sends.
    RoundRobin,
}

/// What the scheduler needs to know of one path that may carry data.
#[derive(Debug, Clone, Copy)]
pub struct PathLoad {
    /// Another full-sized packet fits in its window.
    pub has_room: bool,
    /// Its smoothed RTT, once measured.
    pub smoothed_rtt: Option<Duration>,
    /// Ack-eliciting packets sent on it so far.
    pub packets_sent: u64,
}

impl Scheduler {
    /// Every policy.
    pub const ALL: [Scheduler; 3] = [Scheduler::Stack, Scheduler::LowestRtt, Scheduler::RoundRobin];

    /// The name used on command lines.
    pub fn name(self) -> &'static str {
        match self {
            Scheduler::Stack => "stack",
            Scheduler::LowestRtt => "lowest-rtt",
            Scheduler::RoundRobin => "round-robin",
        }
    }

    /// Whether `path` may take new data now. `load` describes every path that may carry data
    /// (`None` for suppressed, removed or unknown ones); `paths` bounds the ids to look at.
    pub fn admits(
        self,
        path: PathId,
        load: impl Fn(PathId) -> Option<PathLoad>,
        paths: u32,
    ) -> bool {
        let Some(own) = load(path) else { return false };
        let others = (0..paths).map(PathId).filter(|&p| p != path);
        match self {
            Scheduler::Stack => true,
            // A path waits while a faster one still has room. Unmeasured paths count as fast
            // so that they get measured.
            Scheduler::LowestRtt => {
                let rank = |l: &PathLoad| l.smoothed_rtt.unwrap_or(Duration::ZERO);
                others.filter_map(&load).all(|other| !other.has_room || rank(&other) >= rank(&own))
            }
            Scheduler::RoundRobin => others
                .filter_map(&load)
                .all(|other| !other.has_room || other.packets_sent >= own.packets_sent),
        }
    }
}

impl fmt::Display for Scheduler {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// An unknown scheduler name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown scheduler `{0}` (known: stack, lowest-rtt, round-robin)")]
pub struct UnknownScheduler(pub String);

impl FromStr for Scheduler {
    type Err = UnknownScheduler;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Scheduler::ALL
            .into_iter()
            .find(|p| p.name().eq_ignore_ascii_case(s))
            .ok_or_else(|| UnknownScheduler(s.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(table: &[(bool, u64, u64)]) -> impl Fn(PathId) -> Option<PathLoad> + '_ {
        |p: PathId| {
            table.get(p.0 as usize).map(|&(has_room, rtt_ms, packets_sent)| PathLoad {
                has_room,
                smoothed_rtt: Some(Duration::from_millis(rtt_ms)),
                packets_sent,
            })
        }
    }

    #[test]
    fn lowest_rtt_holds_a_slow_path_while_a_faster_one_has_room() {
        let table = [(true, 10, 0), (true, 5, 0)];
        assert!(!Scheduler::LowestRtt.admits(PathId(0), load(&table), 2));
        assert!(Scheduler::LowestRtt.admits(PathId(1), load(&table), 2));
        let faster_full = [(true, 10, 0), (false, 5, 0)];
        assert!(Scheduler::LowestRtt.admits(PathId(0), load(&faster_full), 2));
    }

    #[test]
    fn round_robin_admits_the_path_that_sent_least() {
        let table = [(true, 1, 7), (true, 1, 6), (false, 1, 0)];
        assert!(!Scheduler::RoundRobin.admits(PathId(0), load(&table), 3));
        assert!(Scheduler::RoundRobin.admits(PathId(1), load(&table), 3));
    }

    #[test]
    fn stack_admits_every_live_path_and_no_dead_one() {
        let table = [(false, 1, 0)];
        assert!(Scheduler::Stack.admits(PathId(0), load(&table), 1));
        assert!(!Scheduler::Stack.admits(PathId(5), load(&table), 1));
    }

    #[test]
    fn names_round_trip() {
        for s in Scheduler::ALL {
            assert_eq!(s.name().parse::<Scheduler>(), Ok(s));
        }
        assert_eq!("fastest".parse::<Scheduler>(), Err(UnknownScheduler("fastest".into())));
    }
}
