//! A response header written relative to the row's wall clock, for
//! scripting server guidance as a date:
//!
//! ```yaml
//! headers:
//!   retry-after: { http-date: now+20s }                 # IMF-fixdate
//!   x-reset-at: { http-date: now-5s, form: rfc850 }     # in the past
//! ```
//!
//! `now` is the row's wall clock (`clock: { wall: ... }`, default RFC
//! 9110's example date) plus the virtual time elapsed when the answer is
//! sent, so `now+20s` always reads as 20 seconds of guidance. `form` picks
//! one of the three HTTP-date forms: `imf-fixdate` (default), `rfc850`,
//! `asctime`. The value is rendered by
//! [`ScriptedResponse::render_dates`](crate::model::ScriptedResponse::render_dates).

use super::ctx::{child, dyn_key, key, Ctx};
use crate::base::diag::did_you_mean;
use crate::base::yaml::{Seg, Value};
use crate::model::script::RelativeDate;
use faultmatrix_controller::policy::retry_after::DateForm;

const KEYS: [&str; 2] = ["http-date", "form"];

/// A relative date for the `header`-th header, from its value `v` (a
/// mapping) at `path`, or the errors it has.
pub(crate) fn parse(
    cx: &mut Ctx<'_>,
    v: &Value,
    path: &[Seg],
    header: usize,
) -> Option<RelativeDate> {
    let Some(map) = v.as_mapping() else {
        cx.error(
            path,
            "a header value is a word, a number, a string, or `{ http-date: now+20s }`",
        );
        return None;
    };
    let mut ok = true;
    for k in map.keys() {
        let name = k.as_str().unwrap_or("");
        if !KEYS.contains(&name) {
            let pos = cx.key_pos(&child(path, dyn_key(name)));
            cx.error_at(
                pos,
                format!("unknown key `{name}` in a header value"),
                Some(format!("expected one of: {}", KEYS.join(", "))),
                did_you_mean(name, KEYS),
            );
            ok = false;
        }
    }
    let at = child(path, key("http-date"));
    let relative = match map.get("http-date") {
        // A misspelt key was reported with its suggestion.
        None if !ok => None,
        None => {
            cx.error(
                path,
                "a header value written as a map needs `http-date`: `{ http-date: now+20s }`",
            );
            None
        }
        Some(Value::String(s)) => match offset(s) {
            Ok(o) => Some(o),
            Err(e) => {
                cx.error(&at, e);
                None
            }
        },
        Some(_) => {
            cx.error(&at, "`http-date` is `now`, `now+20s` or `now-5s`");
            None
        }
    };
    let form = match map.get("form") {
        None => Some(DateForm::ImfFixdate),
        Some(f) => {
            let word = f.as_str().unwrap_or("");
            let names = DateForm::NAMES.map(|(n, _)| n);
            match DateForm::NAMES.iter().find(|(n, _)| *n == word) {
                Some((_, form)) => Some(*form),
                None => {
                    let pos = cx.pos(&child(path, key("form")));
                    cx.error_at(
                        pos,
                        format!("unknown HTTP-date form `{word}`"),
                        Some(format!("expected one of: {}", names.join(", "))),
                        did_you_mean(word, names),
                    );
                    None
                }
            }
        }
    };
    let ((past, offset), form) = (relative?, form?);
    ok.then_some(RelativeDate {
        header,
        past,
        offset,
        form,
    })
}

/// `now`, `now+20s`, `now - 1m30s`: whether it is in the past, and how far.
fn offset(text: &str) -> Result<(bool, std::time::Duration), String> {
    let t = text.trim();
    let bad = || format!("`{t}` is not a time relative to now: write `now+20s`, `now-5s` or `now`");
    let rest = t.strip_prefix("now").ok_or_else(bad)?.trim_start();
    if rest.is_empty() {
        return Ok((false, std::time::Duration::ZERO));
    }
    let (past, d) = match rest.split_at(1) {
        ("+", d) => (false, d),
        ("-", d) => (true, d),
        _ => return Err(bad()),
    };
    let d = crate::base::duration::parse(d.trim()).map_err(|e| format!("`{t}`: {e}"))?;
    Ok((past, d))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn offsets() {
        assert_eq!(offset("now+20s"), Ok((false, Duration::from_secs(20))));
        assert_eq!(offset("now - 1m30s"), Ok((true, Duration::from_secs(90))));
        assert_eq!(offset("now"), Ok((false, Duration::ZERO)));
        assert!(offset("tomorrow")
            .unwrap_err()
            .contains("not a time relative to now"));
        assert!(offset("now*2").is_err());
        assert!(offset("now+20").unwrap_err().contains("no unit"));
    }
}
