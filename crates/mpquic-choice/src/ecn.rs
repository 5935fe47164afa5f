//! How the sender's ACK feedback is shaped for ECN, by name.

use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize};

/// How the sender's ACK feedback is shaped for ECN.
///
/// The controller always gets exact CE counts: the stack hands over the increase of the peer's
/// CE count with every ACK frame (`third_party/noq-proto`, patch 1), whatever the frame covers.
/// What this chooses is only the granularity the network and the receiver see.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum EcnPrecision {
    /// GSO batches and the stack's ACK frequency: the counts are exact, at the stack's speed.
    #[default]
    Auto,
    /// A measurement option: one packet per datagram and an ACK for every packet, so that a
    /// queue that marks whole GSO batches (one skb) marks single packets instead. Costs 2-3x the
    /// CPU per byte. `exact` is its name from before the counts came from the ACK frame.
    PerPacket,
}

impl EcnPrecision {
    /// Every setting.
    pub const ALL: [EcnPrecision; 2] = [EcnPrecision::Auto, EcnPrecision::PerPacket];

    /// The name used on command lines.
    pub fn name(self) -> &'static str {
        match self {
            EcnPrecision::Auto => "auto",
            EcnPrecision::PerPacket => "per-packet",
        }
    }
}

impl FromStr for EcnPrecision {
    type Err = String;

    /// Also reads the names of earlier releases, with the same wire behaviour: `exact` (GSO off,
    /// an ACK per packet) and `batched` (the stack's defaults).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_lowercase().as_str() {
            "auto" | "batched" => Ok(EcnPrecision::Auto),
            "per-packet" | "exact" => Ok(EcnPrecision::PerPacket),
            _ => Err(format!("unknown ECN precision `{s}` (known: auto, per-packet)")),
        }
    }
}

/// From its name, through [`FromStr`] (the one parser: old names and any case too).
impl<'de> Deserialize<'de> for EcnPrecision {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let name = String::deserialize(deserializer)?;
        name.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ecn_precision_reads_its_old_names_with_the_same_wire_behaviour() {
        assert_eq!("exact".parse(), Ok(EcnPrecision::PerPacket));
        assert_eq!("batched".parse(), Ok(EcnPrecision::Auto));
        for p in EcnPrecision::ALL {
            assert_eq!(p.name().parse(), Ok(p));
        }
        assert!("sometimes".parse::<EcnPrecision>().unwrap_err().contains("per-packet"));
        let read: EcnPrecision = serde_json::from_str(r#""Exact""#).unwrap();
        assert_eq!(read, EcnPrecision::PerPacket);
        for p in EcnPrecision::ALL {
            let json = serde_json::to_string(&p).unwrap();
            assert_eq!(json, format!("\"{}\"", p.name()));
            assert_eq!(serde_json::from_str::<EcnPrecision>(&json).unwrap(), p);
        }
    }
}
