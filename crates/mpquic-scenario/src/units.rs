//! Quantities as strings with units, parsed in one place: durations (`"2us"`), rates
//! (`"10Gbps"`, `"100Mbit"`), sizes (`"128KB"`, or a plain integer of bytes) and queue amounts
//! (`"100pkt"`, `"150KB"`, or a plain integer of packets).

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Picoseconds: the unit of every time in a scenario.
pub type Ps = u64;

/// Picoseconds per microsecond.
pub const PS_PER_US: Ps = 1_000_000;

/// Splits `"1.5ms"` into `("1.5", "ms")`.
fn split_unit(s: &str) -> (&str, &str) {
    let idx = s.find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '_')).unwrap_or(s.len());
    (s[..idx].trim(), s[idx..].trim())
}

fn number(num: &str, whole: &str, what: &str) -> Result<f64, String> {
    let x: f64 = num.replace('_', "").parse().map_err(|_| format!("bad {what} `{whole}`"))?;
    if x.is_finite() {
        Ok(x)
    } else {
        Err(format!("bad {what} `{whole}`"))
    }
}

/// A duration, written `"2us"`, `"1.5ms"`, `"1s"`, `"500ns"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default, Hash)]
pub struct Dur(pub Ps);

impl Dur {
    /// From microseconds.
    pub const fn us(us: u64) -> Dur {
        Dur(us * PS_PER_US)
    }
    /// From milliseconds.
    pub const fn ms(ms: u64) -> Dur {
        Dur(ms * 1000 * PS_PER_US)
    }
    /// In seconds.
    pub fn secs(self) -> f64 {
        self.0 as f64 / 1e12
    }
    /// Whether it is zero (a default left out of serialized scenarios).
    pub fn is_zero(&self) -> bool {
        self.0 == 0
    }
}

impl FromStr for Dur {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let (num, unit) = split_unit(s.trim());
        let x = number(num, s, "duration")?;
        let scale = match unit {
            "ps" => 1.0,
            "ns" => 1e3,
            "us" | "µs" => 1e6,
            "ms" => 1e9,
            "s" => 1e12,
            _ => return Err(format!("bad duration unit in `{s}` (ns, us, ms, s)")),
        };
        Ok(Dur((x * scale).round() as Ps))
    }
}

impl fmt::Display for Dur {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ps = self.0;
        if ps.is_multiple_of(1_000_000_000_000) {
            write!(f, "{}s", ps / 1_000_000_000_000)
        } else if ps.is_multiple_of(1_000_000_000) {
            write!(f, "{}ms", ps / 1_000_000_000)
        } else if ps.is_multiple_of(1_000_000) {
            write!(f, "{}us", ps / 1_000_000)
        } else {
            write!(f, "{}ns", ps as f64 / 1000.0)
        }
    }
}

/// A link rate in bits per second, written `"10Gbps"`, `"100Mbit"`, `"1.5Gbps"` (`bps`/`bit`,
/// `K`, `M`, `G` prefixes, decimal).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Rate(pub u64);

impl FromStr for Rate {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let (num, unit) = split_unit(s.trim());
        let x = number(num, s, "rate")?;
        let unit = unit.to_ascii_lowercase();
        let prefix = unit.strip_suffix("bps").or_else(|| unit.strip_suffix("bit"));
        let scale = match prefix {
            Some("") => 1.0,
            Some("k") => 1e3,
            Some("m") => 1e6,
            Some("g") => 1e9,
            _ => return Err(format!("bad rate unit in `{s}` (bps, Kbps, Mbps, Gbps or Mbit...)")),
        };
        let bps = (x * scale).round() as u64;
        if bps == 0 {
            return Err(format!("rate `{s}` must be positive"));
        }
        Ok(Rate(bps))
    }
}

impl fmt::Display for Rate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_multiple_of(1_000_000_000) {
            write!(f, "{}Gbps", self.0 / 1_000_000_000)
        } else if self.0.is_multiple_of(1_000_000) {
            write!(f, "{}Mbps", self.0 / 1_000_000)
        } else {
            write!(f, "{}bps", self.0)
        }
    }
}

/// Bytes per unit of a size suffix: binary, as the papers' "128 KB" flows (131072 bytes).
fn byte_scale(unit: &str) -> Option<f64> {
    Some(match unit.to_ascii_uppercase().as_str() {
        "" | "B" => 1.0,
        "K" | "KB" | "KIB" => 1024.0,
        "M" | "MB" | "MIB" => 1024.0 * 1024.0,
        "G" | "GB" | "GIB" => 1024.0 * 1024.0 * 1024.0,
        _ => return None,
    })
}

/// A number of bytes: an integer, or a string `"128KB"`, `"1.5MB"` (K = 1024).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default, Hash)]
pub struct Bytes(pub u64);

impl FromStr for Bytes {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let (num, unit) = split_unit(s.trim());
        let x = number(num, s, "size")?;
        let scale =
            byte_scale(unit).ok_or_else(|| format!("bad size unit in `{s}` (B, KB, MB, GB)"))?;
        Ok(Bytes((x * scale).round() as u64))
    }
}

impl fmt::Display for Bytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// A queue amount (buffer size, marking threshold): packets, or bytes that each backend turns
/// into its own unit (the simulator divides by the full packet's wire size, the testbed
/// multiplies packets by its frame size). An integer or `"100pkt"` is packets, `"150KB"` bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Amount {
    /// Whole packets.
    Packets(u64),
    /// Bytes.
    Bytes(u64),
}

impl Amount {
    /// In packets of `packet_bytes` each (bytes rounded down, as a byte-limited FIFO holds).
    pub fn packets(self, packet_bytes: u64) -> u64 {
        match self {
            Amount::Packets(n) => n,
            Amount::Bytes(b) => b / packet_bytes.max(1),
        }
    }

    /// In bytes, with packets of `packet_bytes` each.
    pub fn bytes(self, packet_bytes: u64) -> u64 {
        match self {
            Amount::Packets(n) => n * packet_bytes,
            Amount::Bytes(b) => b,
        }
    }
}

impl FromStr for Amount {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let (num, unit) = split_unit(s.trim());
        if matches!(unit, "pkt" | "pkts" | "packets" | "") {
            let n = num.replace('_', "");
            return n.parse().map(Amount::Packets).map_err(|_| format!("bad packet count `{s}`"));
        }
        s.parse::<Bytes>()
            .map(|b| Amount::Bytes(b.0))
            .map_err(|_| format!("bad amount `{s}` (packets: `100pkt`; bytes: `150KB`)"))
    }
}

impl fmt::Display for Amount {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Amount::Packets(n) => write!(f, "{n}pkt"),
            Amount::Bytes(b) => write!(f, "{b}B"),
        }
    }
}

/// Serde through the text form (`FromStr` / `Display`), as scenario files write the value.
macro_rules! serde_as_text {
    ($($t:ty),*) => {$(
        impl<'de> Deserialize<'de> for $t {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                String::deserialize(d)?.parse().map_err(serde::de::Error::custom)
            }
        }

        impl Serialize for $t {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.collect_str(self)
            }
        }
    )*};
}

serde_as_text!(Dur, Rate);

/// A TOML integer or a string with a unit.
#[derive(Deserialize)]
#[serde(untagged)]
enum IntOrText {
    Int(u64),
    Text(String),
}

impl<'de> Deserialize<'de> for Bytes {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match IntOrText::deserialize(d)? {
            IntOrText::Int(n) => Ok(Bytes(n)),
            IntOrText::Text(s) => s.parse().map_err(serde::de::Error::custom),
        }
    }
}

/// Written as a plain integer, as scenario files have always written sizes.
impl Serialize for Bytes {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(self.0)
    }
}

impl<'de> Deserialize<'de> for Amount {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match IntOrText::deserialize(d)? {
            IntOrText::Int(n) => Ok(Amount::Packets(n)),
            IntOrText::Text(s) => s.parse().map_err(serde::de::Error::custom),
        }
    }
}

/// Serde `deserialize_with` for byte counts kept as `u64`: an integer or `"128KB"`.
pub fn de_bytes<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    Bytes::deserialize(d).map(|b| b.0)
}

/// [`de_bytes`] for an optional field.
pub fn de_bytes_opt<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    Option::<Bytes>::deserialize(d).map(|b| b.map(|b| b.0))
}

/// Packets as a plain integer (the long-standing spelling), bytes as `"<n>B"`.
impl Serialize for Amount {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Amount::Packets(n) => s.serialize_u64(*n),
            Amount::Bytes(_) => s.collect_str(self),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_parse_and_print() {
        assert_eq!("2us".parse::<Dur>().unwrap(), Dur::us(2));
        assert_eq!("1.5ms".parse::<Dur>().unwrap(), Dur(1_500_000_000));
        assert_eq!(
            "3 parsecs".parse::<Dur>(),
            Err("bad duration unit in `3 parsecs` (ns, us, ms, s)".into())
        );
        assert_eq!(Dur::us(50).to_string(), "50us");
        assert_eq!("10Gbps".parse::<Rate>().unwrap(), Rate(10_000_000_000));
        assert_eq!("100Mbit".parse::<Rate>().unwrap(), Rate(100_000_000));
        assert_eq!("0Mbit".parse::<Rate>(), Err("rate `0Mbit` must be positive".into()));
        assert!("10 furlongs".parse::<Rate>().unwrap_err().starts_with("bad rate unit"));
        assert_eq!("128KB".parse::<Bytes>().unwrap(), Bytes(131_072));
        assert_eq!("100pkt".parse::<Amount>().unwrap(), Amount::Packets(100));
        assert_eq!("150KB".parse::<Amount>().unwrap(), Amount::Bytes(153_600));
        assert_eq!(Amount::Bytes(151_400).packets(1514), 100);
        assert_eq!(Amount::Packets(100).bytes(1514), 151_400);
    }
}
