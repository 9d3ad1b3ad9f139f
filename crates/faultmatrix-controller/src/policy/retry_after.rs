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
            (
                rfc850_year(yy, now_year),
                month(dmy[1])?,
                two_digits(dmy[0])?,
                hms(parts[1])?,
            )
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

/// The year a two-digit RFC 850 year `yy` names, read in `now_year`: RFC
/// 9110 §5.6.7 says a date that appears to be more than 50 years in the
/// future is the most recent past year with the same last two digits. So
/// it is the latest year ending in `yy` that is at most 50 years after
/// `now_year`, in the next century as well as this one (`23` read in 1994
/// is 2023, 29 years ahead, not 1923).
fn rfc850_year(yy: i64, now_year: i64) -> i64 {
    let latest = now_year + 50;
    latest - (latest - yy).rem_euclid(100)
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

fn civil_from_days(z: i64) -> (i64, u32, u32) {
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

/// The three HTTP-date forms of RFC 9110 §5.6.7.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DateForm {
    /// `Sun, 06 Nov 1994 08:49:37 GMT` (the preferred form).
    #[default]
    ImfFixdate,
    /// `Sunday, 06-Nov-94 08:49:37 GMT` (obsolete, two-digit year).
    Rfc850,
    /// `Sun Nov  6 08:49:37 1994` (C's asctime).
    Asctime,
}

impl DateForm {
    /// Every form by its name: `imf-fixdate`, `rfc850`, `asctime`.
    pub const NAMES: [(&'static str, DateForm); 3] = [
        ("imf-fixdate", DateForm::ImfFixdate),
        ("rfc850", DateForm::Rfc850),
        ("asctime", DateForm::Asctime),
    ];
}

/// Writes `t` (whole seconds, UTC) as an HTTP-date in the given form. A
/// time before 1970 is written as 1970-01-01 00:00:00.
pub fn format_http_date(t: SystemTime, form: DateForm) -> String {
    let s = secs(t).max(0);
    let days = s.div_euclid(86_400);
    let (y, mo, d) = civil_from_days(days);
    let rem = s.rem_euclid(86_400);
    let (h, mi, sec) = (rem / 3600, rem % 3600 / 60, rem % 60);
    // 1970-01-01 was a Thursday (index 3 from Monday).
    let wd = (days + 3).rem_euclid(7) as usize;
    let mon = MONTHS[mo as usize - 1];
    match form {
        DateForm::ImfFixdate => format!(
            "{}, {d:02} {mon} {y:04} {h:02}:{mi:02}:{sec:02} GMT",
            DAYS[wd]
        ),
        DateForm::Rfc850 => format!(
            "{}, {d:02}-{mon}-{:02} {h:02}:{mi:02}:{sec:02} GMT",
            LONG_DAYS[wd],
            y.rem_euclid(100)
        ),
        DateForm::Asctime => format!("{} {mon} {d:>2} {h:02}:{mi:02}:{sec:02} {y:04}", DAYS[wd]),
    }
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
        assert_eq!(
            parse_retry_after("Monday, 30-Nov-26 00:00:10 GMT", now),
            Some(Duration::from_secs(10))
        );
    }

    #[test]
    fn rfc850_two_digit_years_may_be_in_the_next_century() {
        // Read in 1994 (the default wall clock), `23` is 2023: 29 years
        // ahead is not "more than 50 years in the future".
        let t = parse_http_date("Friday, 29-Sep-23 12:00:00 GMT", now()).unwrap();
        assert_eq!(civil_from_days(secs(t).div_euclid(86_400)), (2023, 9, 29));
        assert_eq!(rfc850_year(23, 1994), 2023);
        assert_eq!(rfc850_year(44, 1994), 2044);
        assert_eq!(rfc850_year(45, 1994), 1945);
        assert_eq!(rfc850_year(94, 1994), 1994);
        assert_eq!(rfc850_year(0, 1999), 2000);
        assert_eq!(rfc850_year(49, 1999), 2049);
        assert_eq!(rfc850_year(50, 1999), 1950);
        assert_eq!(rfc850_year(76, 2026), 2076);
        assert_eq!(rfc850_year(77, 2026), 1977);
        // Seen as guidance from 1994, 2023 is about 29 years away.
        let wait = parse_retry_after("Friday, 29-Sep-23 12:00:00 GMT", now()).unwrap();
        assert!(wait > Duration::from_secs(28 * 365 * 86_400), "{wait:?}");
    }

    #[test]
    fn formats_each_form_and_reads_it_back() {
        let t = now();
        assert_eq!(
            format_http_date(t, DateForm::ImfFixdate),
            "Sun, 06 Nov 1994 08:49:37 GMT"
        );
        assert_eq!(
            format_http_date(t, DateForm::Rfc850),
            "Sunday, 06-Nov-94 08:49:37 GMT"
        );
        assert_eq!(
            format_http_date(t, DateForm::Asctime),
            "Sun Nov  6 08:49:37 1994"
        );
        let later = t + Duration::from_secs(86_400 * 4000 + 3661);
        for (_, form) in DateForm::NAMES {
            let text = format_http_date(later, form);
            assert_eq!(parse_http_date(&text, t), Some(later), "{text}");
        }
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
