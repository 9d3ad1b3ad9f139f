//! `clock:` (per file or per row): where the row's wall clock starts. The
//! virtual clock still starts at zero; the wall clock a system reads
//! (HTTP-dates in `Retry-After`, `Date`) starts at `wall`.
//!
//! `wall` is an HTTP-date in any of its three forms (IMF-fixdate
//! `Fri, 29 Sep 2023 12:00:00 GMT`, RFC 850 `Friday, 29-Sep-23 12:00:00
//! GMT`, asctime `Fri Sep 29 12:00:00 2023`) or RFC 3339
//! (`2023-09-29T12:00:00Z`, `2023-09-29T14:00:00+02:00`). A two-digit RFC
//! 850 year in `wall` itself reads as 1951 to 2050. Default: Sun, 06 Nov
//! 1994 08:49:37 GMT (RFC 9110's example date).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::Deserialize;

/// `clock:` as written.
#[derive(Debug, Clone, Default, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct RawClock {
    /// Where the wall clock starts: an HTTP-date (any of its three forms)
    /// or RFC 3339 (`2023-09-29T12:00:00Z`).
    #[serde(default)]
    pub wall: Option<String>,
}

/// Parses a `wall` value.
pub fn parse_wall(text: &str) -> Result<SystemTime, String> {
    let t = text.trim();
    // Two-digit years relative to 2000: 1951..2050.
    let y2k = UNIX_EPOCH + Duration::from_secs(946_684_800);
    if let Some(at) = faultmatrix_controller::policy::retry_after::parse_http_date(t, y2k) {
        return Ok(at);
    }
    rfc3339(t).ok_or_else(|| {
        format!(
            "`{t}` is not a wall-clock time: expected an HTTP-date (`Fri, 29 Sep 2023 12:00:00 GMT`) or RFC 3339 (`2023-09-29T12:00:00Z`)"
        )
    })
}

fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn num(s: &str, len: usize) -> Option<i64> {
    (s.len() == len && s.bytes().all(|b| b.is_ascii_digit()))
        .then(|| s.parse().ok())
        .flatten()
}

/// `YYYY-MM-DDTHH:MM:SS[.frac](Z|±HH:MM)`.
fn rfc3339(t: &str) -> Option<SystemTime> {
    let (date, time) = t.split_once(['T', 't', ' '])?;
    let mut d = date.split('-');
    let (y, mo, da) = (num(d.next()?, 4)?, num(d.next()?, 2)?, num(d.next()?, 2)?);
    if d.next().is_some() || !(1..=12).contains(&mo) || !(1..=31).contains(&da) {
        return None;
    }
    let (clock, offset) = if let Some(c) = time.strip_suffix(['Z', 'z']) {
        (c, 0)
    } else {
        let i = time.rfind(['+', '-'])?;
        let (c, off) = time.split_at(i);
        let sign = if off.starts_with('-') { -1 } else { 1 };
        let (oh, om) = off[1..].split_once(':')?;
        (c, sign * (num(oh, 2)? * 3600 + num(om, 2)? * 60))
    };
    let (hms, frac) = match clock.split_once('.') {
        Some((h, f)) if !f.is_empty() && f.bytes().all(|b| b.is_ascii_digit()) => (h, f),
        Some(_) => return None,
        None => (clock, ""),
    };
    let mut p = hms.split(':');
    let (h, mi, s) = (num(p.next()?, 2)?, num(p.next()?, 2)?, num(p.next()?, 2)?);
    if p.next().is_some() || h > 23 || mi > 59 || s > 60 {
        return None;
    }
    let secs = days_from_civil(y, mo, da) * 86_400 + h * 3600 + mi * 60 + s - offset;
    let nanos: u32 = if frac.is_empty() {
        0
    } else {
        let f = &frac[..frac.len().min(9)];
        f.parse::<u32>().ok()? * 10u32.pow(9 - f.len() as u32)
    };
    (secs >= 0).then(|| UNIX_EPOCH + Duration::new(secs as u64, nanos))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_form_gives_the_same_instant() {
        let want = parse_wall("2023-09-29T12:00:00Z").unwrap();
        for t in [
            "Fri, 29 Sep 2023 12:00:00 GMT",
            "Friday, 29-Sep-23 12:00:00 GMT",
            "Fri Sep 29 12:00:00 2023",
            "2023-09-29T14:00:00+02:00",
            "2023-09-29t12:00:00.000z",
        ] {
            assert_eq!(parse_wall(t).unwrap(), want, "{t}");
        }
        assert_eq!(
            parse_wall("1994-11-06T08:49:37Z").unwrap(),
            UNIX_EPOCH + Duration::from_secs(784_111_777)
        );
        assert!(parse_wall("yesterday")
            .unwrap_err()
            .contains("not a wall-clock time"));
        assert!(parse_wall("2023-13-01T00:00:00Z").is_err());
    }
}
