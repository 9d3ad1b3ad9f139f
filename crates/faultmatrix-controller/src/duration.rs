//! Durations as people write them (`1s`, `250ms`, `1.5s`, `2m`) and the
//! canonical text faultmatrix prints.
//!
//! Canonical text picks the largest unit that divides the value exactly
//! (`1500ms`, not `1.5s`), so a trace line never depends on float
//! formatting.

use std::fmt;
use std::time::Duration;

use serde::de::{self, Deserializer, Visitor};
use serde::Deserialize;

/// The longest duration a file may give: 10 years (3650 days of 24 h).
/// Longer values are refused rather than clamped (tokio's timers clamp at
/// about 30 years, and a virtual clock must keep every wait exactly).
pub const MAX: Duration = Duration::from_secs(3650 * 24 * 3600);

/// [`MAX`] as the messages write it.
pub const MAX_TEXT: &str = "87600h (10 years)";

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
    let too_long = || format!("`{t}` is too long: the longest duration is {MAX_TEXT}");
    let mut nanos = int_v.checked_mul(nanos_per).ok_or_else(too_long)?;
    if !frac.is_empty() {
        if !frac.bytes().all(|b| b.is_ascii_digit()) {
            return Err(format!("`{t}` is not a duration"));
        }
        // Digits past the 18th are below a nanosecond for every unit: they
        // must be zeros, never silently dropped.
        let digits = frac.len().min(18) as u32;
        if frac.bytes().skip(18).any(|b| b != b'0') {
            return Err(format!("`{t}` is finer than a nanosecond"));
        }
        let f: u128 = frac[..digits as usize]
            .parse()
            .map_err(|_| format!("`{t}` is not a duration"))?;
        let scale = 10u128.pow(digits);
        // f < 10^18 and nanos_per <= 3.6e12: the product fits a u128.
        let scaled = f * nanos_per;
        if scaled % scale != 0 {
            return Err(format!("`{t}` is finer than a nanosecond"));
        }
        nanos = nanos.checked_add(scaled / scale).ok_or_else(too_long)?;
    }
    if nanos > MAX.as_nanos() {
        return Err(too_long());
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

/// A duration in a configuration file, written as `1s`, `250ms` or `0`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dur(pub Duration);

impl<'de> Deserialize<'de> for Dur {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Dur;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a duration such as `1s` or `250ms`")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Dur, E> {
                parse(s).map(Dur).map_err(E::custom)
            }
            fn visit_u64<E: de::Error>(self, n: u64) -> Result<Dur, E> {
                if n == 0 {
                    Ok(Dur(Duration::ZERO))
                } else {
                    Err(E::custom(format!(
                        "`{n}` has no unit: write it as `{n}s` or `{n}ms`"
                    )))
                }
            }
            fn visit_i64<E: de::Error>(self, n: i64) -> Result<Dur, E> {
                if n < 0 {
                    Err(E::custom(format!(
                        "`{n}` is negative: a duration is 0 or more"
                    )))
                } else {
                    self.visit_u64(n as u64)
                }
            }
            fn visit_f64<E: de::Error>(self, n: f64) -> Result<Dur, E> {
                Err(E::custom(format!(
                    "`{n}` has no unit: write it as `{n}s` or `{n}ms`"
                )))
            }
        }
        d.deserialize_any(V)
    }
}

/// The JSON Schema of a duration string, shared by every file format.
#[cfg(feature = "schema")]
pub fn duration_schema() -> schemars::Schema {
    schemars::json_schema!({
        "description": "A duration such as `1s`, `250ms`, `1.5s`, `2m`, or `0`.",
        "anyOf": [
            { "type": "string", "pattern": "^\\s*(0|[0-9]*\\.?[0-9]+(ns|us|µs|ms|s|m|h))\\s*$" },
            { "const": 0 }
        ]
    })
}

#[cfg(feature = "schema")]
impl schemars::JsonSchema for Dur {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Duration".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        duration_schema()
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
    }

    #[test]
    fn overflow_is_an_error_never_a_wrap_or_a_panic() {
        // Overflowed a u128 add before: read as 543ns in release, a panic
        // in debug builds.
        let e = parse("340282366920938463463374607431768211.999us").unwrap_err();
        assert!(e.contains("too long"), "{e}");
        let e = parse("340282366920938463463374607431768211455h").unwrap_err();
        assert!(e.contains("too long"), "{e}");
        assert!(parse("99999999999999999999999999999999999999999s").is_err());
        assert!(parse("87601h").unwrap_err().contains("87600h (10 years)"));
        assert_eq!(parse("87600h").unwrap(), MAX);
        assert_eq!(
            parse("87599.999999999999999999h").unwrap_err(),
            "`87599.999999999999999999h` is finer than a nanosecond"
        );
    }

    #[test]
    fn digits_below_a_nanosecond_are_refused_not_dropped() {
        assert!(parse("1.0000000000000000001s")
            .unwrap_err()
            .contains("finer"));
        assert_eq!(
            parse("1.00000000000000000000s").unwrap(),
            Duration::from_secs(1)
        );
        assert!(parse("1.5ns").unwrap_err().contains("finer"));
        assert_eq!(parse("0.000000001s").unwrap(), Duration::from_nanos(1));
    }
}
