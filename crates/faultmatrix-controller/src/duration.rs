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

/// Why `d` cannot be waited exactly, if it cannot: tokio's timers fire on
/// whole milliseconds (in production as on a paused test clock), so a
/// `250us` backoff would wait 1ms. Durations that become timers are
/// refused unless they are whole milliseconds, never silently rounded.
pub fn sub_millisecond(d: Duration) -> Option<String> {
    let ns = d.as_nanos();
    (ns % 1_000_000 != 0).then(|| {
        let up = Duration::from_millis((ns / 1_000_000) as u64 + 1);
        format!(
            "{} is not a whole number of milliseconds: timers fire on whole milliseconds, so it would be waited as {}; write `{}` or `{}`",
            format(d),
            format(up),
            format(Duration::from_millis((ns / 1_000_000) as u64)),
            format(up)
        )
    })
}

/// Parses a duration in the humantime grammar, plus fractions: one or
/// more spans of a number and a unit, with or without spaces between them
/// (`30s`, `250ms`, `1.5s`, `2m`, `1m30s`, `1m 30s`, `2min`, `2sec`,
/// `1h 5min`), or a bare `0`. At most [`MAX`]; digits finer than a
/// nanosecond are refused, never dropped.
///
/// Units: `ns`/`nsec`, `us`/`µs`/`usec`, `ms`/`msec`/`millis`,
/// `s`/`sec`/`secs`/`second`/`seconds`, `m`/`min`/`mins`/`minute`/`minutes`,
/// `h`/`hr`/`hrs`/`hour`/`hours`, `d`/`day`/`days`, `w`/`week`/`weeks`.
/// Months and years (which humantime reads as 30.44 and 365.25 days) are
/// refused: a retry policy has no use for them and they have no exact length.
pub fn parse(text: &str) -> Result<Duration, String> {
    let t = text.trim();
    if t == "0" {
        return Ok(Duration::ZERO);
    }
    if t.is_empty() {
        return Err(
            "an empty duration: expected a number and a unit such as `1s` or `250ms`".into(),
        );
    }
    if t.starts_with('-') {
        return Err(format!("`{t}` is negative: a duration is 0 or more"));
    }
    match whole(t) {
        Some(d) => Ok(d),
        None => general(t),
    }
}

/// A trimmed, non-empty, non-negative duration text read number by unit.
fn general(t: &str) -> Result<Duration, String> {
    let mut nanos: u128 = 0;
    let mut rest = t;
    while !rest.is_empty() {
        let split = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let (num, after) = rest.split_at(split);
        if num.is_empty() {
            return Err(format!(
                "`{t}` is not a duration: expected a number and a unit such as `1s` or `250ms`"
            ));
        }
        let after = after.trim_start();
        let unit_len = after
            .find(|c: char| c.is_ascii_digit() || c == '.' || c.is_whitespace())
            .unwrap_or(after.len());
        let (unit, next) = after.split_at(unit_len);
        if unit.is_empty() {
            return Err(format!("`{t}` has no unit: write it as `{t}s` or `{t}ms`"));
        }
        let per = unit_nanos(unit).ok_or_else(|| {
            format!(
                "`{t}` has unknown unit `{unit}`: expected one of ns, us, ms, s, m, h, d, w (or sec, min, hr, ...)"
            )
        })?;
        let too_long = || format!("`{t}` is too long: the longest duration is {MAX_TEXT}");
        nanos = nanos.checked_add(span(t, num, per)?).ok_or_else(too_long)?;
        if nanos > MAX.as_nanos() {
            return Err(too_long());
        }
        rest = next.trim_start();
    }
    Ok(Duration::from_nanos(nanos as u64))
}

/// The common duration, whole digits and one short unit (`1s`, `250ms`,
/// `5m`, `2h`), read directly: the general reading above cost about 600
/// instructions. `None` for anything else, which the general reading
/// takes (or refuses) as before.
fn whole(t: &str) -> Option<Duration> {
    let b = t.as_bytes();
    let digits = b.iter().take_while(|c| c.is_ascii_digit()).count();
    if digits == 0 || digits > 9 {
        return None;
    }
    let n = b[..digits]
        .iter()
        .fold(0u64, |n, &c| n * 10 + u64::from(c - b'0'));
    let per_ms: u64 = match &b[digits..] {
        b"ms" => 1,
        b"s" => 1_000,
        b"m" => 60_000,
        b"h" => 3_600_000,
        _ => return None,
    };
    // At most 999,999,999 hours in milliseconds: it fits a u64.
    let d = Duration::from_millis(n * per_ms);
    (d <= MAX).then_some(d)
}

/// Nanoseconds in one `unit`, for the unit names humantime accepts.
fn unit_nanos(unit: &str) -> Option<u128> {
    const S: u128 = 1_000_000_000;
    Some(match unit {
        "ns" | "nsec" | "nanos" => 1,
        "us" | "µs" | "usec" | "micros" => 1_000,
        "ms" | "msec" | "millis" => 1_000_000,
        "s" | "sec" | "secs" | "second" | "seconds" => S,
        "m" | "min" | "mins" | "minute" | "minutes" => 60 * S,
        "h" | "hr" | "hrs" | "hour" | "hours" => 3_600 * S,
        "d" | "day" | "days" => 86_400 * S,
        "w" | "week" | "weeks" => 604_800 * S,
        _ => return None,
    })
}

/// One span: `num` (digits, at most one `.`) times `per` nanoseconds.
fn span(t: &str, num: &str, per: u128) -> Result<u128, String> {
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
            .map_err(|_| format!("`{t}` is too long: the longest duration is {MAX_TEXT}"))?
    };
    let too_long = || format!("`{t}` is too long: the longest duration is {MAX_TEXT}");
    let mut nanos = int_v.checked_mul(per).ok_or_else(too_long)?;
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
        // f < 10^18 and per <= 6.048e14 (a week): the product fits a u128.
        let scaled = f * per;
        if scaled % scale != 0 {
            return Err(format!("`{t}` is finer than a nanosecond"));
        }
        nanos = nanos.checked_add(scaled / scale).ok_or_else(too_long)?;
    }
    Ok(nanos)
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
        "description": "A duration such as `1s`, `250ms`, `1.5s`, `2m`, `1m30s`, `1m 30s`, `2min`, or `0`.",
        "anyOf": [
            { "type": "string", "pattern": "^\\s*(0|([0-9]*\\.?[0-9]+\\s*(nsec|nanos|ns|usec|micros|us|µs|msec|millis|ms|seconds|second|secs|sec|s|minutes|minute|mins|min|m|hours|hour|hrs|hr|h|days|day|d|weeks|week|w)\\s*)+)$" },
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
    /// The direct reading of whole durations agrees with the general one
    /// wherever it answers, and leaves every other text to it.
    #[test]
    fn whole_durations_read_as_the_general_reading_does() {
        let mut answered = 0;
        for n in [
            "0",
            "1",
            "7",
            "10",
            "250",
            "999999999",
            "1000000000",
            "01",
            "87600",
            "87601",
        ] {
            for unit in ["ms", "s", "m", "h", "us", "d", "sec", "S", "", " s", "s "] {
                let t = format!("{n}{unit}");
                if let Some(d) = super::whole(&t) {
                    answered += 1;
                    assert_eq!(Ok(d), super::general(&t), "{t}");
                } else if ["ms", "s", "m", "h"].contains(&unit) && n.len() <= 9 {
                    // Only a duration past the longest is left to the general reading.
                    assert!(super::general(&t).is_err(), "{t} was left out");
                }
            }
        }
        assert!(answered >= 30, "{answered}");
        assert_eq!(super::parse("250ms"), Ok(Duration::from_millis(250)));
        assert!(super::parse("87601h").unwrap_err().contains("too long"));
    }

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
            ("1m30s", "90s"),
            ("1m 30s", "90s"),
            ("2min", "120s"),
            ("2sec", "2s"),
            ("1min", "60s"),
            ("1 sec", "1s"),
            ("1h 5min 2.5s", "3902500ms"),
            ("250msec", "250ms"),
            ("1d", "86400s"),
            ("1.5m", "90s"),
        ] {
            assert_eq!(format(parse(text).unwrap()), canon, "{text}");
        }
    }

    #[test]
    fn rejects_bad_input() {
        assert!(parse("5").unwrap_err().contains("no unit"));
        assert!(parse("5 secs").is_ok());
        assert!(parse("5 fortnights")
            .unwrap_err()
            .contains("unknown unit `fortnights`"));
        assert!(parse("1m30x").unwrap_err().contains("unknown unit `x`"));
        assert!(parse("2 months").unwrap_err().contains("unknown unit"));
        assert!(parse("s").is_err());
        assert!(parse("").unwrap_err().contains("empty"));
        assert!(parse("  ").unwrap_err().contains("empty"));
        assert!(parse("1.2.3s").is_err());
        assert_eq!(
            parse(" -250ms").unwrap_err(),
            "`-250ms` is negative: a duration is 0 or more"
        );
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
    fn only_whole_milliseconds_can_be_waited() {
        assert_eq!(sub_millisecond(Duration::from_millis(250)), None);
        assert_eq!(sub_millisecond(Duration::ZERO), None);
        let e = sub_millisecond(Duration::from_micros(250)).unwrap();
        assert!(
            e.starts_with("250us is not a whole number of milliseconds"),
            "{e}"
        );
        assert!(e.contains("waited as 1ms"), "{e}");
        let e = sub_millisecond(Duration::from_micros(1500)).unwrap();
        assert!(e.contains("write `1ms` or `2ms`"), "{e}");
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
