//! RESULTS' verdict words agree with the intervals of the cells they cite (issue 43 part 2).
//!
//! `docs/results/verdicts.toml` lists the verdicts that rest on cells with a 95% interval of
//! the median (6 runs or more; [`mpquic_stats::Sorted::median_interval`]): for each, the
//! RESULTS.md row, its word, the committed `experiment.json` and the tests the claim needs, each
//! a cell's interval against a bound or against another cell's interval. A test *supports* the
//! claim when the interval lies wholly on the claimed side (of the bound, or of the other
//! interval), *contradicts* it when it lies wholly on the other, and *overlaps* otherwise. The
//! word follows:
//!
//! - any test overlaps: **inconclusive** (these intervals cannot decide it);
//! - every test supports: **holds**; every test contradicts: **differs** (RESULTS.md's word);
//! - some support and some contradict: **holds partly**.
//!
//! The test recomputes each word from the committed data and fails when it differs from the
//! file's word, or when RESULTS.md's row does not carry that word in bold.

use std::path::{Path, PathBuf};

use mpquic_scenario::results::ExperimentResults;
use serde::Deserialize;

#[derive(Debug, Deserialize)]
struct Verdicts {
    verdict: Vec<Verdict>,
}

/// One verdict of RESULTS.md.
#[derive(Debug, Deserialize)]
struct Verdict {
    /// The start of its row in RESULTS.md, after `| `.
    row: String,
    /// Its word: holds, holds partly, differs, inconclusive.
    word: String,
    /// The committed results it rests on, from the repository's root.
    file: String,
    test: Vec<CellTest>,
}

/// A cell's interval against a bound (`above`, `below`, or `within = [lo, hi]`), or against
/// the interval of the same metric at another point (`above_point`, `below_point`: a claim
/// that one controller's cell is larger than another's).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CellTest {
    /// The sweep point: its axis values, `axis=value` joined by commas, as the summary labels it.
    point: String,
    metric: String,
    above: Option<f64>,
    below: Option<f64>,
    within: Option<[f64; 2]>,
    above_point: Option<String>,
    below_point: Option<String>,
}

/// What a test claims of its cell's interval, with any other cell's interval read.
#[derive(Debug, Clone, Copy)]
enum Claim {
    Above(f64),
    Below(f64),
    Within(f64, f64),
    /// Above the interval `(lo, hi)` of another cell: it supports when the two separate with
    /// this one higher, contradicts when they separate the other way.
    AboveCell(f64, f64),
    BelowCell(f64, f64),
}

#[derive(Debug, PartialEq)]
enum Outcome {
    Supports,
    Contradicts,
    Overlaps,
}

impl CellTest {
    /// The claim, reading the other cell's interval from `r` where the test names one.
    fn claim(&self, r: &ExperimentResults) -> Result<Claim, String> {
        let other = |point: &String| interval(r, point, &self.metric);
        let claims = [
            self.above.map(|b| Ok(Claim::Above(b))),
            self.below.map(|b| Ok(Claim::Below(b))),
            self.within.map(|[a, b]| Ok(Claim::Within(a, b))),
            self.above_point.as_ref().map(|p| other(p).map(|(a, b)| Claim::AboveCell(a, b))),
            self.below_point.as_ref().map(|p| other(p).map(|(a, b)| Claim::BelowCell(a, b))),
        ];
        let mut given = claims.into_iter().flatten();
        match (given.next(), given.next()) {
            (Some(claim), None) => claim,
            _ => {
                Err(format!("{self:?}: give one of above, below, within, above_point, below_point"))
            }
        }
    }
}

/// Where the interval `(lo, hi)` lies against the claim.
fn outcome(claim: Claim, (lo, hi): (f64, f64)) -> Outcome {
    let (supports, contradicts) = match claim {
        Claim::Above(b) => (lo > b, hi <= b),
        Claim::Below(b) => (hi < b, lo >= b),
        Claim::Within(a, b) => (lo >= a && hi <= b, hi < a || lo > b),
        Claim::AboveCell(a, b) => (lo > b, hi < a),
        Claim::BelowCell(a, b) => (hi < a, lo > b),
    };
    match (supports, contradicts) {
        (true, _) => Outcome::Supports,
        (_, true) => Outcome::Contradicts,
        _ => Outcome::Overlaps,
    }
}

/// The word the outcomes give (the module's rule).
fn word(outcomes: &[Outcome]) -> &'static str {
    let count = |o: Outcome| outcomes.iter().filter(|x| **x == o).count();
    if count(Outcome::Overlaps) > 0 {
        "inconclusive"
    } else if count(Outcome::Contradicts) == 0 {
        "holds"
    } else if count(Outcome::Supports) == 0 {
        "differs"
    } else {
        "holds partly"
    }
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The interval of `metric` at `point` in `r`, or why there is none.
fn interval(r: &ExperimentResults, point: &str, metric: &str) -> Result<(f64, f64), String> {
    let label = |row: &mpquic_scenario::metrics::SummaryRow| {
        row.labels.iter().map(|(a, v)| format!("{a}={v}")).collect::<Vec<_>>().join(",")
    };
    let row = r.summary.iter().find(|row| label(row) == point).ok_or_else(|| {
        let points: Vec<String> = r.summary.iter().map(label).collect();
        format!("no point {point} (points: {})", points.join("; "))
    })?;
    let spread = row.metrics.get(metric).ok_or(format!("no metric {metric}"))?;
    spread.ci95.ok_or(format!("{metric} at {point}: {} runs, no 95% interval", spread.n))
}

#[test]
fn the_word_rule_reads_the_intervals() {
    use Claim::*;
    assert_eq!(outcome(Above(1.0), (1.2, 1.5)), Outcome::Supports);
    assert_eq!(outcome(Above(1.0), (0.7, 1.0)), Outcome::Contradicts);
    assert_eq!(outcome(Above(1.0), (0.9, 1.1)), Outcome::Overlaps);
    assert_eq!(outcome(Within(0.9, 1.1), (0.95, 1.05)), Outcome::Supports);
    assert_eq!(outcome(Within(0.9, 1.1), (0.8, 0.85)), Outcome::Contradicts);
    assert_eq!(outcome(Within(0.9, 1.1), (0.85, 0.95)), Outcome::Overlaps);
    assert_eq!(outcome(AboveCell(0.7, 0.8), (0.9, 1.0)), Outcome::Supports);
    assert_eq!(outcome(AboveCell(0.9, 1.0), (0.7, 0.8)), Outcome::Contradicts);
    assert_eq!(outcome(AboveCell(0.75, 0.95), (0.9, 1.0)), Outcome::Overlaps);
    assert_eq!(outcome(BelowCell(0.9, 1.0), (0.7, 0.8)), Outcome::Supports);
    use Outcome::*;
    assert_eq!(word(&[Supports, Supports]), "holds");
    assert_eq!(word(&[Supports, Contradicts]), "holds partly");
    assert_eq!(word(&[Contradicts]), "differs");
    assert_eq!(word(&[Supports, Overlaps]), "inconclusive");
}

#[test]
fn results_verdict_words_agree_with_the_intervals_they_cite() {
    let text = std::fs::read_to_string(root().join("docs/results/verdicts.toml")).unwrap();
    let verdicts: Verdicts = toml::from_str(&text).unwrap();
    let results = std::fs::read_to_string(root().join("docs/RESULTS.md")).unwrap();
    let mut wrong = vec![];
    for v in &verdicts.verdict {
        let r = ExperimentResults::read(&root().join(&v.file)).unwrap_or_else(|e| panic!("{e}"));
        let outcomes: Result<Vec<Outcome>, String> = v
            .test
            .iter()
            .map(|t| Ok(outcome(t.claim(&r)?, interval(&r, &t.point, &t.metric)?)))
            .collect();
        let got = match outcomes {
            Ok(o) => word(&o),
            Err(e) => panic!("{}: {e}", v.row),
        };
        if got != v.word {
            wrong.push(format!("{}: the intervals say {got}, the file says {}", v.row, v.word));
        }
        let row = results.lines().find(|l| l.starts_with(&format!("| {}", v.row)));
        match row {
            None => wrong.push(format!("{}: no such row in RESULTS.md", v.row)),
            Some(l) if !l.contains(&format!("**{}**", v.word)) => {
                wrong.push(format!("{}: RESULTS.md's row does not say **{}**", v.row, v.word))
            }
            Some(_) => {}
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    assert!(!verdicts.verdict.is_empty());
}
