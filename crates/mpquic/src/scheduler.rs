//! Which path takes the next packet.
//!
//! noq offers the next packet to a connection's paths in the order of their controllers'
//! `send_rank` (our noq-proto patch 2): the lowest rank with window room fills the next GSO
//! batch. A scheduler here is a rule for that rank; a path the controller keeps from data (AMP's
//! suppression, MPTCP-D's elimination) has no rank at all. Every path keeps its controller's
//! real window: the rank only orders.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

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
    /// Packets are spread evenly: the path that has sent the fewest packets and has room sends
    /// (a whole GSO batch at a time).
    RoundRobin,
}

/// What the scheduler knows of one path that may carry data.
#[derive(Debug, Clone, Copy)]
pub struct PathLoad {
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

    /// A path's rank: the stack offers the next packet to the lowest rank with window room
    /// (ties go to the lower path id).
    pub fn rank(self, load: &PathLoad) -> u64 {
        match self {
            Scheduler::Stack => 0,
            // Unmeasured paths count as fast, so that they get measured.
            Scheduler::LowestRtt => load.smoothed_rtt.map_or(0, |rtt| rtt.as_micros() as u64),
            Scheduler::RoundRobin => load.packets_sent,
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

    fn load(rtt_ms: Option<u64>, packets_sent: u64) -> PathLoad {
        PathLoad { smoothed_rtt: rtt_ms.map(Duration::from_millis), packets_sent }
    }

    #[test]
    fn lowest_rtt_ranks_the_faster_path_first_and_an_unmeasured_one_before_both() {
        let rank = |l| Scheduler::LowestRtt.rank(&l);
        assert!(rank(load(Some(5), 9)) < rank(load(Some(10), 0)));
        assert!(rank(load(None, 9)) < rank(load(Some(5), 0)));
    }

    #[test]
    fn round_robin_ranks_the_path_that_sent_least_first() {
        let rank = |l| Scheduler::RoundRobin.rank(&l);
        assert!(rank(load(Some(1), 6)) < rank(load(Some(1), 7)));
        assert!(rank(load(Some(100), 6)) < rank(load(Some(1), 7)), "RTT does not matter");
    }

    #[test]
    fn stack_ranks_every_path_alike() {
        assert_eq!(Scheduler::Stack.rank(&load(Some(1), 0)), Scheduler::Stack.rank(&load(None, 9)));
    }

    #[test]
    fn names_round_trip() {
        for s in Scheduler::ALL {
            assert_eq!(s.name().parse::<Scheduler>(), Ok(s));
        }
        assert_eq!("fastest".parse::<Scheduler>(), Err(UnknownScheduler("fastest".into())));
    }
}
