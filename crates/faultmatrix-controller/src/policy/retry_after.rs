//! Server guidance: `retry-after-ms`, and `Retry-After` as delay-seconds or
//! any of the three HTTP-date forms of RFC 9110 §5.6.7 (IMF-fixdate,
//! obsolete RFC 850, asctime), evaluated against a given "now".
//!
//! Unparseable, negative and past values give no guidance (`None`), so the
//! caller falls back to its own backoff.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Guidance from response headers (`retry-after-ms` wins over `Retry-After`).
pub fn guidance<'a, I>(headers: I, now: SystemTime) -> Option<Duration>
where
    I: IntoIterator<Item = (&'a str, &'a str)> + Clone,
{
    let find = |name: &str| {
        headers
            .clone()
            .into_iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v)
    };
    if let Some(ms) = find("retry-after-ms").and_then(parse_millis) {
        return Some(ms);
    }
    find("retry-after").and_then(|v| parse_retry_after(v, now))
}

fn parse_millis(v: &str) -> Option<Duration> {
    let ms: f64 = v.trim().parse().ok()?;
    if !ms.is_finite() || ms < 0.0 {
        return None;
    }
    Some(Duration::from_nanos((ms * 1_000_000.0).round() as u64))
}

/// Parses one `Retry-After` value against `now`.
pub fn parse_retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let v = value.trim();
    if !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()) {
        // delay-seconds; a value too large for u64 is still "very long"
        // (above any cap), not unparseable.
        return Some(Duration::from_secs(v.parse::<u64>().unwrap_or(u64::MAX)));
    }
    let at = parse_http_date(v, now)?;
    at.duration_since(now).ok().filter(|d| !d.is_zero())
}

const DAYS: [&str; 7] = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"];
const LONG_DAYS: [&str; 7] = [
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
    "Sunday",
];
const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];

fn month(s: &str) -> Option<u32> {
    MONTHS.iter().position(|m| *m == s).map(|i| i as u32 + 1)
}

fn hms(s: &str) -> Option<(u32, u32, u32)> {
    let mut it = s.split(':');
    let h = two_digits(it.next()?)?;
    let m = two_digits(it.next()?)?;
    let sec = two_digits(it.next()?)?;
    if it.next().is_some() || h > 23 || m > 59 || sec > 60 {
        return None;
    }
    Some((h, m, sec))
}

fn two_digits(s: &str) -> Option<u32> {
    if s.len() == 2 && s.bytes().all(|b| b.is_ascii_digit()) {
        s.parse().ok()
    } else {
        None
    }
}

fn year4(s: &str) -> Option<i64> {
    if s.len() == 4 && s.bytes().all(|b| b.is_ascii_digit()) {
        s.parse().ok()
    } else {
        None
    }
}

/// Parses an HTTP-date in any of the three forms.
pub fn parse_http_date(v: &str, now: SystemTime) -> Option<SystemTime> {
    let (y, mo, d, (h, mi, s)) = if let Some((day, rest)) = v.split_once(", ") {
        let parts: Vec<&str> = rest.split(' ').collect();
        if DAYS.contains(&day) && parts.len() == 5 {
            // IMF-fixdate: Sun, 06 Nov 1994 08:49:37 GMT
            if parts[4] != "GMT" {
                return None;
            }
            (
                year4(parts[2])?,
                month(parts[1])?,
                two_digits(parts[0])?,
                hms(parts[3])?,
            )
        } else if LONG_DAYS.contains(&day) && parts.len() == 3 {
            // RFC 850: Sunday, 06-Nov-94 08:49:37 GMT
            if parts[2] != "GMT" {
                return None;
            }
            let dmy: Vec<&str> = parts[0].split('-').collect();
            if dmy.len() != 3 {
                return None;
            }
            let yy = two_digits(dmy[2])? as i64;
            let now_year = civil_from_days(secs(now).div_euclid(86_400)).0;
            // RFC 9110 §5.6.7: a year more than 50 years ahead is the
            // most recent past year with those digits; so the year is the
            // one within 50 years ahead or, failing that, behind (`00`
            // read on 31 Dec 1999 is 2000, not 1900).
            let mut year = now_year - now_year.rem_euclid(100) + yy;
            if year > now_year + 50 {
                year -= 100;
            } else if year + 100 <= now_year + 50 {
                year += 100;
            }
            (year, month(dmy[1])?, two_digits(dmy[0])?, hms(parts[1])?)
        } else {
            return None;
        }
    } else {
        // asctime: Sun Nov  6 08:49:37 1994
        let parts: Vec<&str> = v.split_whitespace().collect();
        if parts.len() != 5 || !DAYS.contains(&parts[0]) {
            return None;
        }
        let day = parts[2];
        if day.is_empty() || day.len() > 2 || !day.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        (
            year4(parts[4])?,
            month(parts[1])?,
            day.parse().ok()?,
            hms(parts[3])?,
        )
    };
    if d == 0 || d > days_in_month(y, mo) {
        return None;
    }
    let days = days_from_civil(y, mo, d);
    let t = days * 86_400 + (h * 3600 + mi * 60 + s) as i64;
    if t < 0 {
        return None;
    }
    Some(UNIX_EPOCH + Duration::from_secs(t as u64))
}

fn secs(t: SystemTime) -> i64 {
    match t.duration_since(UNIX_EPOCH) {
        Ok(d) => d.as_secs() as i64,
        Err(e) => -(e.duration().as_secs() as i64),
    }
}

fn days_in_month(y: i64, m: u32) -> u32 {
    match m {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        _ if (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 => 29,
        _ => 28,
    }
}

/// Days since 1970-01-01 (Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let m = m as i64;
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + d as i64 - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The date (year, month, day) of a day counted from 1970-01-01.
pub fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// `t` (whole seconds; before 1970 reads as 1970) as an HTTP-date in
/// IMF-fixdate (`form` 0: `Sun, 06 Nov 1994 08:49:37 GMT`), obsolete RFC
/// 850 (1: `Sunday, 06-Nov-94 08:49:37 GMT`) or asctime (2: `Sun Nov  6
/// 08:49:37 1994`) form: the inverse of [`parse_http_date`].
pub fn format_http_date(t: SystemTime, form: u8) -> String {
    let s = secs(t).max(0);
    let days = s.div_euclid(86_400);
    let tod = s.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    // 1970-01-01 was a Thursday (index 3 from Monday).
    let wd = (days + 3).rem_euclid(7) as usize;
    let (h, mi, sec) = (tod / 3600, tod / 60 % 60, tod % 60);
    let mon = MONTHS[m as usize - 1];
    match form {
        0 => format!(
            "{}, {d:02} {mon} {y:04} {h:02}:{mi:02}:{sec:02} GMT",
            DAYS[wd]
        ),
        1 => format!(
            "{}, {d:02}-{mon}-{:02} {h:02}:{mi:02}:{sec:02} GMT",
            LONG_DAYS[wd],
            y.rem_euclid(100)
        ),
        _ => format!("{} {mon} {d:>2} {h:02}:{mi:02}:{sec:02} {y:04}", DAYS[wd]),
    }
}

/// The three HTTP-date forms of RFC 9110 §5.6.7, by name for matrix files;
/// `form as u8` is [`format_http_date`]'s form number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[repr(u8)]
pub enum DateForm {
    /// `Sun, 06 Nov 1994 08:49:37 GMT` (the preferred form).
    #[default]
    ImfFixdate = 0,
    /// `Sunday, 06-Nov-94 08:49:37 GMT` (obsolete, two-digit year).
    Rfc850 = 1,
    /// `Sun Nov  6 08:49:37 1994` (C's asctime).
    Asctime = 2,
}

impl DateForm {
    /// Every form by its name: `imf-fixdate`, `rfc850`, `asctime`.
    pub const NAMES: [(&'static str, DateForm); 3] = [
        ("imf-fixdate", DateForm::ImfFixdate),
        ("rfc850", DateForm::Rfc850),
        ("asctime", DateForm::Asctime),
    ];
}

/// The virtual wall clock's default start: the RFC 9110 example date,
/// Sun, 06 Nov 1994 08:49:37 GMT, so examples can be copied from the RFC.
pub fn default_wall_start() -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(784_111_777)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn now() -> SystemTime {
        default_wall_start()
    }

    #[test]
    fn rfc850_two_digit_years_may_be_in_the_next_century() {
        // Read in 1994 (the default wall clock), `23` is 2023: 29 years
        // ahead is not "more than 50 years in the future".
        let t = parse_http_date("Friday, 29-Sep-23 12:00:00 GMT", now()).unwrap();
        assert_eq!(civil_from_days(secs(t).div_euclid(86_400)), (2023, 9, 29));
        let wait = parse_retry_after("Friday, 29-Sep-23 12:00:00 GMT", now()).unwrap();
        assert!(wait > Duration::from_secs(28 * 365 * 86_400), "{wait:?}");
        for (name, form) in DateForm::NAMES {
            let text = format_http_date(now(), form as u8);
            assert_eq!(parse_http_date(&text, now()), Some(now()), "{name}: {text}");
        }
    }

    #[test]
    fn formatted_dates_parse_back() {
        assert_eq!(format_http_date(now(), 0), "Sun, 06 Nov 1994 08:49:37 GMT");
        assert_eq!(format_http_date(now(), 1), "Sunday, 06-Nov-94 08:49:37 GMT");
        assert_eq!(format_http_date(now(), 2), "Sun Nov  6 08:49:37 1994");
        // Around a leap day, a century and the two-digit-year window.
        for at in [now(), at(2024, 2, 29), at(2000, 1, 1), at(2070, 1, 1)] {
            let base = at - Duration::from_secs(5);
            for form in 0..3 {
                let text = format_http_date(at, form);
                assert_eq!(parse_http_date(&text, base), Some(at), "{text}");
            }
        }
        assert_eq!(
            format_http_date(at(2024, 2, 29), 0),
            "Thu, 29 Feb 2024 00:00:00 GMT"
        );
    }

    fn at(y: i64, m: u32, d: u32) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(days_from_civil(y, m, d) as u64 * 86_400)
    }

    #[test]
    fn all_three_date_forms() {
        let later = Some(Duration::from_secs(10));
        assert_eq!(
            parse_retry_after("Sun, 06 Nov 1994 08:49:47 GMT", now()),
            later
        );
        assert_eq!(
            parse_retry_after("Sunday, 06-Nov-94 08:49:47 GMT", now()),
            later
        );
        assert_eq!(parse_retry_after("Sun Nov  6 08:49:47 1994", now()), later);
    }

    #[test]
    fn seconds_and_edges() {
        assert_eq!(parse_retry_after("2", now()), Some(Duration::from_secs(2)));
        assert_eq!(
            parse_retry_after("99999999999999999999999", now()),
            Some(Duration::from_secs(u64::MAX))
        );
        assert_eq!(parse_retry_after("1.5", now()), None);
        assert_eq!(parse_retry_after("", now()), None);
        assert_eq!(parse_retry_after("-2", now()), None);
        assert_eq!(parse_retry_after("soon", now()), None);
        assert_eq!(
            parse_retry_after("Sun, 06 Nov 1994 08:49:30 GMT", now()),
            None
        );
        assert_eq!(
            parse_retry_after("Sun, 31 Feb 1994 08:49:30 GMT", now()),
            None
        );
        let h = [("retry-after-ms", "1500"), ("Retry-After", "9")];
        assert_eq!(guidance(h, now()), Some(Duration::from_millis(1500)));
    }

    #[test]
    fn rfc850_two_digit_years_are_never_more_than_50_years_ahead() {
        // Now: Mon, 30 Nov 2026 00:00:00 GMT.
        let now = UNIX_EPOCH + Duration::from_secs(days_from_civil(2026, 11, 30) as u64 * 86_400);
        let year = |v: &str| {
            let t = parse_http_date(v, now).unwrap();
            civil_from_days(secs(t).div_euclid(86_400)).0
        };
        assert_eq!(year("Monday, 30-Nov-26 00:00:10 GMT"), 2026);
        assert_eq!(year("Tuesday, 01-Jan-30 00:00:00 GMT"), 2030);
        assert_eq!(year("Saturday, 01-Jan-95 00:00:00 GMT"), 1995);
        // The century turns over within the window.
        let eve = at(1999, 12, 31);
        let year_at = |v: &str, now| {
            civil_from_days(secs(parse_http_date(v, now).unwrap()).div_euclid(86_400)).0
        };
        assert_eq!(year_at("Saturday, 01-Jan-00 00:00:00 GMT", eve), 2000);
        assert_eq!(year_at("Friday, 01-Jan-49 00:00:00 GMT", eve), 2049);
        assert_eq!(year_at("Thursday, 01-Jan-70 00:00:00 GMT", eve), 1970);
        assert_eq!(
            parse_retry_after("Monday, 30-Nov-26 00:00:10 GMT", now),
            Some(Duration::from_secs(10))
        );
    }

    #[test]
    fn epoch_is_the_rfc_example() {
        assert_eq!(
            parse_http_date("Sun, 06 Nov 1994 08:49:37 GMT", now()),
            Some(default_wall_start())
        );
        assert_eq!(civil_from_days(days_from_civil(2000, 2, 29)), (2000, 2, 29));
    }
}
