//! Which path takes the next packet.
//!
//! noq offers the next packet to a connection's paths in the order of their controllers'
//! `send_rank` (our noq-proto patch 2): the lowest rank with window room fills the next GSO
//! batch, so a batch stays whole on one path. A scheduler here is a rule for that rank, asked
//! once per path per batch under the lock the connection's controller already takes: a
//! [`PathScheduler`] ranks one path from what it sees of every path ([`PathLoad`]) and of the
//! connection ([`ConnectionLoad`]), or keeps it from new data (`None`). A path the controller
//! keeps from data (AMP's suppression, MPTCP-D's elimination) is never asked. Every path keeps
//! its controller's real window: the rank only orders.
//!
//! The built-ins are chosen by name ([`Scheduler`]'s `FromStr`: `stack`, `lowest-rtt`,
//! `round-robin`, `ecf`); a program adds its own with [`Scheduler::custom`] or, to choose it by
//! name everywhere a built-in's name is taken (the CLI's `--scheduler`, scenario files, the
//! simulator), with [`register_scheduler`].
//!
//! Backup paths (RFC 10069) are the library's business, not a scheduler's: noq gives data to a
//! backup path only while no validated available path exists, whatever the rank says.

mod ecf;

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use mpquic_cc::PathId;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

pub use ecf::Ecf;

/// What a scheduler knows of one path of the connection.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub struct PathLoad {
    /// The path's slot in the connection's controller: stable while the path lives, and the
    /// index of this load in [`ConnectionLoad::paths`].
    pub id: PathId,
    /// Whether the path may carry new data: open, and not kept from data by the controller.
    /// Only such paths are ranked; the others are listed for what they tell.
    pub may_send: bool,
    /// Whether this end set the path's status to backup (RFC 10069).
    pub backup: bool,
    /// Its smoothed RTT, once measured.
    pub smoothed_rtt: Option<Duration>,
    /// Its RTT variance (RFC 6298's, over the same samples), once measured.
    pub rtt_var: Option<Duration>,
    /// The controller's congestion window, bytes.
    pub window: u64,
    /// Bytes in flight on it, as of its latest rank.
    pub in_flight: u64,
    /// Its maximum segment size, bytes.
    pub mss: u64,
    /// The fraction of its acknowledged packets that were CE-marked, smoothed per ACK frame
    /// (gain 1/16, as DCTCP's alpha).
    pub ce_fraction: f64,
    /// Ack-eliciting packets sent on it so far.
    pub packets_sent: u64,
}

impl PathLoad {
    /// A path that has sent nothing yet, for `id`: what a scheduler sees of a new path (and a
    /// starting point for tests of a scheduler).
    pub fn new(id: PathId, mss: u64) -> Self {
        PathLoad {
            id,
            may_send: true,
            backup: false,
            smoothed_rtt: None,
            rtt_var: None,
            window: 0,
            in_flight: 0,
            mss,
            ce_fraction: 0.0,
            packets_sent: 0,
        }
    }

    /// Window room left, bytes.
    pub fn room(&self) -> u64 {
        self.window.saturating_sub(self.in_flight)
    }
}

/// What a scheduler knows of the connection when it ranks one of its paths.
#[derive(Debug, Clone, Copy)]
pub struct ConnectionLoad<'a> {
    /// Stream bytes written by the application that are neither acknowledged nor in flight:
    /// what waits to be sent.
    pub backlog: u64,
    /// Every path the connection's controller has had, by [`PathLoad::id`] (closed ones with
    /// `may_send` false).
    pub paths: &'a [PathLoad],
}

/// A packet-scheduling rule: one connection's, built for it by its [`Scheduler`].
///
/// `rank` is asked for each path that may carry data, once per packet batch, with the
/// connection's controller locked: keep it to arithmetic over the loads.
pub trait PathScheduler: Send + Sync + fmt::Debug {
    /// The rule's name, as [`Scheduler`] parses it.
    fn name(&self) -> &'static str;

    /// `path`'s place in the order noq offers the next packet batch in: lowest first, ties to
    /// the lower path id; `None` keeps it from new data now (it still sends probes and
    /// acknowledgements; if no path ranks, all are offered data alike).
    fn rank(&mut self, path: &PathLoad, connection: &ConnectionLoad<'_>) -> Option<u64>;
}

/// Builds one connection's scheduler.
type Build = dyn Fn() -> Box<dyn PathScheduler> + Send + Sync;

/// A scheduler the program supplies: a name and how to build one per connection.
#[derive(Clone)]
pub struct CustomScheduler {
    name: &'static str,
    build: Arc<Build>,
}

impl fmt::Debug for CustomScheduler {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CustomScheduler").field("name", &self.name).finish_non_exhaustive()
    }
}

/// A packet-scheduling policy, chosen per connection (`mpquic::Options::scheduler`).
#[derive(Debug, Clone, Default)]
pub enum Scheduler {
    /// noq's order: the lowest path id with window room sends. A path opened mid-transfer gets
    /// data only while the earlier paths' windows are full; where they never fill (loopback, a
    /// first path limited by flow control) it carries next to nothing, so pick another policy
    /// to use paths that join later.
    #[default]
    Stack,
    /// The path with the lowest smoothed RTT and window room sends (Linux MPTCP's default).
    LowestRtt,
    /// Packets are spread evenly: the path that has sent the fewest packets and has room sends
    /// (a whole GSO batch at a time).
    RoundRobin,
    /// Earliest completion first, for paths of different RTTs: see [`Ecf`].
    Ecf,
    /// A rule of the program's own ([`Scheduler::custom`], [`register_scheduler`]).
    Custom(CustomScheduler),
}

impl Scheduler {
    /// Every built-in policy.
    pub const ALL: [Scheduler; 4] =
        [Scheduler::Stack, Scheduler::LowestRtt, Scheduler::RoundRobin, Scheduler::Ecf];

    /// A policy of the program's own: `build` makes one connection's scheduler, whose
    /// [`PathScheduler::name`] should be `name`.
    pub fn custom(
        name: &'static str,
        build: impl Fn() -> Box<dyn PathScheduler> + Send + Sync + 'static,
    ) -> Self {
        Scheduler::Custom(CustomScheduler { name, build: Arc::new(build) })
    }

    /// The name used on command lines.
    pub fn name(&self) -> &'static str {
        match self {
            Scheduler::Stack => "stack",
            Scheduler::LowestRtt => "lowest-rtt",
            Scheduler::RoundRobin => "round-robin",
            Scheduler::Ecf => "ecf",
            Scheduler::Custom(custom) => custom.name,
        }
    }

    /// One connection's scheduler.
    pub fn build(&self) -> Box<dyn PathScheduler> {
        match self {
            Scheduler::Stack => Box::new(Stack),
            Scheduler::LowestRtt => Box::new(LowestRtt),
            Scheduler::RoundRobin => Box::new(RoundRobin),
            Scheduler::Ecf => Box::new(Ecf::default()),
            Scheduler::Custom(custom) => (custom.build)(),
        }
    }
}

impl PartialEq for Scheduler {
    /// Policies are equal when their names are (a name is registered once).
    fn eq(&self, other: &Self) -> bool {
        self.name() == other.name()
    }
}

impl Eq for Scheduler {}

impl Serialize for Scheduler {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.name())
    }
}

/// From its name, through [`FromStr`] (the one parser: a registered name too, once registered).
impl<'de> Deserialize<'de> for Scheduler {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let name = String::deserialize(deserializer)?;
        name.parse().map_err(serde::de::Error::custom)
    }
}

impl fmt::Display for Scheduler {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// An unknown scheduler name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown scheduler `{0}` (known: {known})", known = known_names())]
pub struct UnknownScheduler(pub String);

fn known_names() -> String {
    let builtins = Scheduler::ALL.iter().map(Scheduler::name);
    builtins.chain(registered_schedulers()).collect::<Vec<_>>().join(", ")
}

impl FromStr for Scheduler {
    type Err = UnknownScheduler;

    /// A built-in's name or a registered one, case-insensitive.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Scheduler::ALL
            .into_iter()
            .find(|p| p.name().eq_ignore_ascii_case(s))
            .or_else(|| lookup(s).map(Scheduler::Custom))
            .ok_or_else(|| UnknownScheduler(s.to_owned()))
    }
}

static REGISTRY: RwLock<BTreeMap<&'static str, CustomScheduler>> = RwLock::new(BTreeMap::new());

fn lookup(name: &str) -> Option<CustomScheduler> {
    let registry = REGISTRY.read().unwrap_or_else(|poisoned| poisoned.into_inner());
    registry.get(name.to_ascii_lowercase().as_str()).cloned()
}

/// The names registered with [`register_scheduler`] so far, sorted.
pub fn registered_schedulers() -> Vec<&'static str> {
    REGISTRY.read().unwrap_or_else(|poisoned| poisoned.into_inner()).keys().copied().collect()
}

/// Why a scheduler registration was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RegisterSchedulerError {
    /// The name does not fit the grammar names share with controllers.
    #[error("scheduler name `{0}` must be lowercase ASCII letters, digits, `-` or `_`, starting with a letter")]
    BadName(String),
    /// A built-in or an earlier registration has the name.
    #[error("scheduler name `{0}` is taken")]
    Taken(String),
    /// The scheduler built reports another name.
    #[error("scheduler registered as `{registered}` calls itself `{reported}`")]
    NameMismatch {
        /// The name registered.
        registered: String,
        /// What its scheduler's `name()` says.
        reported: String,
    },
}

/// Register a scheduler by name, as [`mpquic_cc::register`] does controllers: from then on the
/// name parses as a [`Scheduler`] in this process (the CLI's `--scheduler`, scenario files, the
/// simulator). The name must fit the controller names' grammar and be new, and the scheduler
/// `build` makes must report it.
///
/// A service that keeps a backup-like path cool without making it a backup: the path with the
/// fewest CE marks goes first, the faster of equally marked ones before the other, and a path
/// whose marks pass a fifth is kept from new data while another path can send.
///
/// ```
/// use mpquic_choice::{register_scheduler, ConnectionLoad, PathLoad, PathScheduler, Scheduler};
///
/// #[derive(Debug)]
/// struct Coolest;
///
/// impl PathScheduler for Coolest {
///     fn name(&self) -> &'static str {
///         "coolest"
///     }
///     fn rank(&mut self, path: &PathLoad, connection: &ConnectionLoad<'_>) -> Option<u64> {
///         let others_can_send = connection.paths.iter().any(|p| p.id != path.id && p.may_send);
///         if path.ce_fraction > 0.2 && others_can_send {
///             return None;
///         }
///         // Marks in steps of 1%, then the smoothed RTT in microseconds.
///         let marks = (path.ce_fraction * 100.0) as u64;
///         let rtt = path.smoothed_rtt.map_or(0, |rtt| rtt.as_micros() as u64);
///         Some(marks << 40 | rtt.min((1 << 40) - 1))
///     }
/// }
///
/// register_scheduler("coolest", || Box::new(Coolest))?;
/// // From now on the name works wherever a built-in's does:
/// let scheduler: Scheduler = "coolest".parse()?;
/// assert_eq!(scheduler.name(), "coolest");
/// // A connection of the program's own can also take it unregistered:
/// let _ = Scheduler::custom("coolest", || Box::new(Coolest));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn register_scheduler(
    name: &'static str,
    build: impl Fn() -> Box<dyn PathScheduler> + Send + Sync + 'static,
) -> Result<(), RegisterSchedulerError> {
    if !mpquic_cc::is_valid_name(name) {
        return Err(RegisterSchedulerError::BadName(name.to_owned()));
    }
    let reported = build().name();
    if reported != name {
        let (registered, reported) = (name.to_owned(), reported.to_owned());
        return Err(RegisterSchedulerError::NameMismatch { registered, reported });
    }
    let taken = || RegisterSchedulerError::Taken(name.to_owned());
    if Scheduler::ALL.iter().any(|s| s.name() == name) {
        return Err(taken());
    }
    let mut registry = REGISTRY.write().unwrap_or_else(|poisoned| poisoned.into_inner());
    if registry.contains_key(name) {
        return Err(taken());
    }
    registry.insert(name, CustomScheduler { name, build: Arc::new(build) });
    Ok(())
}

/// A path's smoothed RTT as a rank, microseconds; unmeasured paths count as fastest, so that
/// they get measured.
pub(crate) fn rtt_rank(path: &PathLoad) -> u64 {
    path.smoothed_rtt.map_or(0, |rtt| rtt.as_micros() as u64)
}

/// noq's own order: every path ranks alike.
#[derive(Debug)]
struct Stack;

impl PathScheduler for Stack {
    fn name(&self) -> &'static str {
        "stack"
    }
    fn rank(&mut self, _: &PathLoad, _: &ConnectionLoad<'_>) -> Option<u64> {
        Some(0)
    }
}

/// The lowest smoothed RTT first.
#[derive(Debug)]
struct LowestRtt;

impl PathScheduler for LowestRtt {
    fn name(&self) -> &'static str {
        "lowest-rtt"
    }
    fn rank(&mut self, path: &PathLoad, _: &ConnectionLoad<'_>) -> Option<u64> {
        Some(rtt_rank(path))
    }
}

/// The fewest packets sent first.
#[derive(Debug)]
struct RoundRobin;

impl PathScheduler for RoundRobin {
    fn name(&self) -> &'static str {
        "round-robin"
    }
    fn rank(&mut self, path: &PathLoad, _: &ConnectionLoad<'_>) -> Option<u64> {
        Some(path.packets_sent)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) fn load(id: u32, rtt_ms: Option<u64>, packets_sent: u64) -> PathLoad {
        PathLoad {
            smoothed_rtt: rtt_ms.map(Duration::from_millis),
            packets_sent,
            ..PathLoad::new(PathId(id), 1200)
        }
    }

    fn rank(scheduler: Scheduler, path: PathLoad) -> Option<u64> {
        let paths = [path];
        scheduler.build().rank(&path, &ConnectionLoad { backlog: 0, paths: &paths })
    }

    #[test]
    fn lowest_rtt_ranks_the_faster_path_first_and_an_unmeasured_one_before_both() {
        let rank = |l| rank(Scheduler::LowestRtt, l);
        assert!(rank(load(0, Some(5), 9)) < rank(load(0, Some(10), 0)));
        assert!(rank(load(0, None, 9)) < rank(load(0, Some(5), 0)));
    }

    #[test]
    fn round_robin_ranks_the_path_that_sent_least_first() {
        let rank = |l| rank(Scheduler::RoundRobin, l);
        assert!(rank(load(0, Some(1), 6)) < rank(load(0, Some(1), 7)));
        assert!(rank(load(0, Some(100), 6)) < rank(load(0, Some(1), 7)), "RTT does not matter");
    }

    #[test]
    fn stack_ranks_every_path_alike() {
        let rank = |l| rank(Scheduler::Stack, l);
        assert_eq!(rank(load(0, Some(1), 0)), rank(load(0, None, 9)));
    }

    #[test]
    fn names_round_trip() {
        for s in Scheduler::ALL {
            assert_eq!(s.name().parse::<Scheduler>(), Ok(s.clone()));
            assert_eq!(s.build().name(), s.name());
        }
        let err = "fastest".parse::<Scheduler>().unwrap_err();
        assert_eq!(err, UnknownScheduler("fastest".into()));
        assert!(err.to_string().contains("stack, lowest-rtt, round-robin, ecf"), "{err}");
        for s in Scheduler::ALL {
            let json = serde_json::to_string(&s).unwrap();
            assert_eq!(serde_json::from_str::<Scheduler>(&json).unwrap(), s);
        }
        assert!(serde_json::from_str::<Scheduler>(r#""fastest""#).is_err());
    }

    /// The path with the most window room first.
    #[derive(Debug)]
    struct MostRoom(&'static str);

    impl PathScheduler for MostRoom {
        fn name(&self) -> &'static str {
            self.0
        }
        fn rank(&mut self, path: &PathLoad, _: &ConnectionLoad<'_>) -> Option<u64> {
            Some(u64::MAX - path.room())
        }
    }

    #[test]
    fn a_registered_scheduler_parses_like_a_builtin_and_registration_checks_its_name() {
        assert_eq!(
            register_scheduler("test-most-room", || Box::new(MostRoom("test-most-room"))),
            Ok(())
        );
        let parsed: Scheduler = "TEST-MOST-ROOM".parse().unwrap();
        assert_eq!(parsed.name(), "test-most-room");
        assert!(registered_schedulers().contains(&"test-most-room"));
        let roomy = PathLoad { window: 10_000, ..load(0, None, 0) };
        assert_eq!(rank(parsed, roomy), Some(u64::MAX - 10_000));
        let taken = |name| Err(RegisterSchedulerError::Taken(String::from(name)));
        assert_eq!(
            register_scheduler("test-most-room", || Box::new(MostRoom("test-most-room"))),
            taken("test-most-room")
        );
        assert_eq!(register_scheduler("ecf", || Box::new(MostRoom("ecf"))), taken("ecf"));
        assert_eq!(
            register_scheduler("Bad Name", || Box::new(MostRoom("Bad Name"))),
            Err(RegisterSchedulerError::BadName("Bad Name".into()))
        );
        assert!(matches!(
            register_scheduler("test-liar", || Box::new(MostRoom("someone-else"))),
            Err(RegisterSchedulerError::NameMismatch { .. })
        ));
        assert!("test-liar".parse::<Scheduler>().is_err());
        let json = serde_json::to_string(&Scheduler::custom("mine", || Box::new(MostRoom("mine"))));
        assert_eq!(json.unwrap(), r#""mine""#);
    }
}
