//! Durations as QA writes them (`1s`, `250ms`, `1.5s`, `2m`) and the
//! canonical text the trace prints ([`parse`] and [`format`], from the
//! controller crate), plus wait expectations that may be a range
//! (`0s..4s`).
//!
//! Canonical text picks the largest unit that divides the value exactly
//! (`1500ms`, not `1.5s`), so a trace line never depends on float
//! formatting.

use std::fmt;
use std::time::Duration;

pub use faultmatrix_controller::duration::{format, parse, sub_millisecond};

/// Rounds a real duration to the millisecond (trace text of real-time rows
/// stays readable).
pub fn round_ms(d: Duration) -> Duration {
    Duration::from_millis(((d.as_micros() + 500) / 1000) as u64)
}

/// An expected duration: exact, or an inclusive range `lo..hi`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum DurationSpec {
    /// Exactly this duration.
    Exact(Duration),
    /// Anything from `lo` to `hi`, both included.
    Range(Duration, Duration),
}

impl DurationSpec {
    /// Parses `1s` or `0s..4s`.
    pub fn parse(text: &str) -> Result<Self, String> {
        // `..` looked for a byte pair at a time: a substring searcher is
        // set up for each call (about 350 instructions for `1s`).
        let range = text
            .as_bytes()
            .windows(2)
            .position(|w| w == b"..")
            .map(|i| (&text[..i], &text[i + 2..]));
        match range {
            Some((lo, hi)) => {
                let lo = parse(lo)?;
                let hi = parse(hi)?;
                if lo > hi {
                    return Err(format!(
                        "range `{text}` is empty: its lower bound is above its upper bound"
                    ));
                }
                Ok(Self::Range(lo, hi))
            }
            None => parse(text).map(Self::Exact),
        }
    }

    /// Whether `d` satisfies the expectation.
    pub fn holds(&self, d: Duration) -> bool {
        match *self {
            Self::Exact(x) => x == d,
            Self::Range(lo, hi) => lo <= d && d <= hi,
        }
    }
}

impl fmt::Display for DurationSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Self::Exact(d) => f.write_str(&format(d)),
            Self::Range(lo, hi) => write!(f, "{}..{}", format(lo), format(hi)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A range splits at its first `..`, as `split_once` would.
    #[test]
    fn ranges_split_at_the_first_double_dot() {
        assert_eq!(
            DurationSpec::parse("1.5s..2s"),
            Ok(DurationSpec::Range(
                Duration::from_millis(1500),
                Duration::from_secs(2)
            ))
        );
        assert_eq!(
            DurationSpec::parse("250ms"),
            Ok(DurationSpec::Exact(Duration::from_millis(250)))
        );
        for bad in ["..", "1s..", "..1s", "1s..2s..3s", "1s...2s"] {
            assert!(DurationSpec::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn empty_ranges_are_rejected() {
        assert!(DurationSpec::parse("4s..1s").unwrap_err().contains("empty"));
    }

    #[test]
    fn ranges_hold_inclusively() {
        let r = DurationSpec::parse("1s..2s").unwrap();
        assert!(r.holds(Duration::from_secs(1)));
        assert!(r.holds(Duration::from_secs(2)));
        assert!(!r.holds(Duration::from_millis(2001)));
    }
}
