//! A share of a sweep's runs for one machine of several: `I/N` runs the runs `k` (numbered from
//! 0 in the sweep's order) with `k mod N = I`.

use std::str::FromStr;

/// Which share of a sweep's runs to run: shard `index` of `count` (`I/N`, 0 <= I < N).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    /// I: this shard, from 0.
    pub index: usize,
    /// N: the number of shards.
    pub count: usize,
}

impl FromStr for Shard {
    type Err = String;

    fn from_str(s: &str) -> Result<Shard, String> {
        let bad = || format!("`{s}`: a shard is I/N with 0 <= I < N, e.g. 0/4");
        let (i, n) = s.split_once('/').ok_or_else(bad)?;
        let (index, count) =
            (i.trim().parse().map_err(|_| bad())?, n.trim().parse().map_err(|_| bad())?);
        if index >= count {
            return Err(bad());
        }
        Ok(Shard { index, count })
    }
}

impl Shard {
    /// Whether run `k` of the sweep is this shard's.
    pub fn owns(&self, k: usize) -> bool {
        k % self.count == self.index
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_parse_as_i_of_n() {
        assert_eq!("1/4".parse::<Shard>(), Ok(Shard { index: 1, count: 4 }));
        for bad in ["4/4", "1", "a/2", "0/0"] {
            assert!(bad.parse::<Shard>().is_err(), "{bad}");
        }
        let owned: Vec<usize> = (0..7).filter(|&k| Shard { index: 1, count: 3 }.owns(k)).collect();
        assert_eq!(owned, [1, 4]);
    }
}
