//! Durations as QA writes them (`1s`, `250ms`, `1.5s`, `2m`) and the
//! canonical text the trace prints, plus wait expectations that may be a
//! range (`0s..4s`).
//!
//! Canonical text picks the largest unit that divides the value exactly
//! (`1500ms`, not `1.5s`), so a trace line never depends on float
//! formatting.

use std::fmt;
use std::time::Duration;

/// Parses `30s`, `250ms`, `1.5s`, `2m`, `1h`, `100us`, `5ns` or a bare `0`.
pub fn parse(text: &str) -> Result<Duration, String> {
    let t = text.trim();
    if t == "0" {
        return Ok(Duration::ZERO);
    }
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .ok_or_else(|| format!("`{t}` has no unit: write it as `{t}s` or `{t}ms`"))?;
    let (num, unit) = t.split_at(split);
    if num.is_empty() {
        return Err(format!(
            "`{t}` is not a duration: expected a number and a unit such as `1s` or `250ms`"
        ));
    }
    let nanos_per: u128 = match unit {
        "ns" => 1,
        "us" | "µs" => 1_000,
        "ms" => 1_000_000,
        "s" => 1_000_000_000,
        "m" => 60_000_000_000,
        "h" => 3_600_000_000_000,
        other => {
            return Err(format!(
                "`{t}` has unknown unit `{other}`: expected one of ns, us, ms, s, m, h"
            ))
        }
    };
    let (int, frac) = match num.split_once('.') {
        Some((i, f)) => (i, f),
        None => (num, ""),
    };
    if int.is_empty() && frac.is_empty() || frac.contains('.') {
        return Err(format!("`{t}` is not a duration"));
    }
    let int_v: u128 = if int.is_empty() {
        0
    } else {
        int.parse()
            .map_err(|_| format!("`{t}` is not a duration"))?
    };
    let mut nanos = int_v
        .checked_mul(nanos_per)
        .ok_or_else(|| format!("`{t}` is too long"))?;
    if !frac.is_empty() {
        let digits = frac.len().min(18) as u32;
        let f: u128 = frac[..digits as usize]
            .parse()
            .map_err(|_| format!("`{t}` is not a duration"))?;
        let add = f * nanos_per / 10u128.pow(digits);
        if add * 10u128.pow(digits) != f * nanos_per {
            return Err(format!("`{t}` is finer than a nanosecond"));
        }
        nanos += add;
    }
    if nanos > u64::MAX as u128 {
        return Err(format!("`{t}` is too long"));
    }
    Ok(Duration::from_nanos(nanos as u64))
}

/// Canonical text of a duration: `0s`, `1s`, `1500ms`, `250us`, `7ns`.
pub fn format(d: Duration) -> String {
    let n = d.as_nanos();
    if n == 0 {
        return "0s".into();
    }
    for (per, unit) in [(1_000_000_000u128, "s"), (1_000_000, "ms"), (1_000, "us")] {
        if n % per == 0 {
            return format!("{}{unit}", n / per);
        }
    }
    format!("{n}ns")
}

/// An expected duration: exact, or an inclusive range `lo..hi`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DurationSpec {
    /// Exactly this duration.
    Exact(Duration),
    /// Anything from `lo` to `hi`, both included.
    Range(Duration, Duration),
}

impl DurationSpec {
    /// Parses `1s` or `0s..4s`.
    pub fn parse(text: &str) -> Result<Self, String> {
        match text.split_once("..") {
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

    #[test]
    fn parses_and_formats() {
        for (text, canon) in [
            ("1s", "1s"),
            ("1.5s", "1500ms"),
            ("250ms", "250ms"),
            ("2m", "120s"),
            ("0", "0s"),
            ("0.25ms", "250us"),
            ("1h", "3600s"),
        ] {
            assert_eq!(format(parse(text).unwrap()), canon, "{text}");
        }
    }

    #[test]
    fn rejects_bad_input() {
        assert!(parse("5").unwrap_err().contains("no unit"));
        assert!(parse("5 sec").unwrap_err().contains("unknown unit"));
        assert!(parse("s").is_err());
        assert!(parse("1.2.3s").is_err());
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
