//! Reading an observed call against its expected line by value, not by
//! spelling: `wait=1.5s` and `wait=1500ms` are the same, fields may come in
//! any order, and a line that holds is shown exactly as written.
//!
//! An observed call is paired with the expected line for the same call
//! (route and attempt), never with whatever line happens to sit at its
//! position, so a missing or extra call cannot lend its shape to another.
//! A line that does not hold is shown with the observed values, keeping the
//! expected line's field order and, for each field that holds, its written
//! token; a field the expected line asserts and the call lacks is shown as
//! `absent` and explained in a note, never dropped from both sides.

use std::borrow::Cow;
use std::time::Duration;

use crate::base::duration::{self, DurationSpec};
use crate::exec::trace::{call_label, ObservedLine};
use crate::model::ExpectedLine;

/// The token written for an asserted field the observed call does not have.
pub const ABSENT: &str = "absent";

/// The expected line for the same call as `line` (same route and attempt),
/// looking first at position `i`.
pub fn expected_for<'a>(
    expected: &'a [ExpectedLine],
    i: usize,
    line: &ObservedLine,
) -> Option<&'a ExpectedLine> {
    let same = |e: &&ExpectedLine| e.route() == line.route && e.attempt == line.attempt;
    expected
        .get(i)
        .filter(same)
        .or_else(|| expected.iter().find(same))
}

/// Whether an observed wait satisfies what the expected line says of it: a
/// written wait must be there and hold; none written means none or zero.
fn wait_holds(spec: Option<&DurationSpec>, wait: Option<Duration>) -> bool {
    match (spec, wait) {
        (Some(s), Some(w)) => s.holds(w),
        (Some(_), None) => false,
        (None, w) => w.is_none_or(|w| w.is_zero()),
    }
}

/// Whether every field of `exp` holds for `line`.
pub fn holds(exp: &ExpectedLine, line: &ObservedLine) -> bool {
    exp.route() == line.route
        && exp.attempt == line.attempt
        && exp.outcome() == line.outcome
        && exp.code() == line.code.as_deref()
        && exp.decision.as_str() == line.decision
        && wait_holds(exp.wait.as_ref(), line.wait)
        && exp.at.as_ref().is_none_or(|s| s.holds(line.at))
        && exp
            .id
            .as_ref()
            .is_none_or(|id| line.id.as_ref() == Some(id))
        && exp.size.is_none_or(|s| s == line.size)
}

/// The `key=value` tokens of an expected line as written, in order.
fn written_fields(text: &str) -> impl Iterator<Item = (&str, &str)> {
    text.split_whitespace()
        .filter_map(|t| t.split_once('=').map(|(k, _)| (k, t)))
}

/// An observed line as shown against the expected trace, and the notes
/// that explain fields shown as [`ABSENT`].
///
/// A line that holds is shown as written, borrowed: it is most lines, and
/// a copy of each cost an allocation.
pub fn shown<'e>(
    exp: Option<&'e ExpectedLine>,
    line: &ObservedLine,
) -> (Cow<'e, str>, Vec<String>) {
    let Some(exp) = exp else {
        return (line.render(None).into(), Vec::new());
    };
    if holds(exp, line) {
        return (Cow::Borrowed(&exp.text), Vec::new());
    }
    let label = call_label(&line.route, line.attempt);
    let mut s = format!("{label} {}", line.outcome);
    if let Some(code) = &line.code {
        s.push(' ');
        s.push_str(code);
    }
    s.push(' ');
    s.push_str(line.decision);
    let mut notes = Vec::new();
    let mut wait_shown = false;
    for (key, token) in written_fields(&exp.text) {
        let value = match key {
            "wait" => {
                wait_shown = true;
                match line.wait {
                    Some(w) if wait_holds(exp.wait.as_ref(), Some(w)) => None,
                    Some(w) => Some(duration::format(w)),
                    None => {
                        notes.push(format!(
                            "{label}: `{token}` is asserted, but no wait followed the call (nothing was called after it)"
                        ));
                        Some(ABSENT.to_string())
                    }
                }
            }
            "at" => match &exp.at {
                Some(at) if at.holds(line.at) => None,
                _ => Some(duration::format(line.at)),
            },
            "id" => match (&exp.id, &line.id) {
                (Some(want), Some(got)) if want == got => None,
                (_, Some(got)) => Some(got.clone()),
                (_, None) => {
                    notes.push(format!(
                        "{label}: `{token}` is asserted, but the call carried no request id"
                    ));
                    Some(ABSENT.to_string())
                }
            },
            "size" => match exp.size {
                Some(want) if want == line.size => None,
                _ => Some(line.size.to_string()),
            },
            _ => None,
        };
        s.push(' ');
        match value {
            None => s.push_str(token),
            Some(v) => {
                s.push_str(key);
                s.push('=');
                s.push_str(&v);
            }
        }
    }
    if !wait_shown {
        if let Some(w) = line.wait.filter(|w| !w.is_zero()) {
            s.push_str(" wait=");
            s.push_str(&duration::format(w));
        }
    }
    (s.into(), notes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::trace_line::parse_line;

    fn routes() -> Vec<String> {
        vec!["A".into(), "B".into()]
    }

    fn exp(text: &str) -> ExpectedLine {
        parse_line(text, &routes()).unwrap()
    }

    fn obs(
        route: &str,
        attempt: u32,
        decision: &'static str,
        wait: Option<u64>,
        at: u64,
    ) -> ObservedLine {
        ObservedLine {
            route: route.into(),
            attempt,
            outcome: if decision == "return" { "200" } else { "503" }.into(),
            code: (decision != "return").then(|| "UPSTREAM_UNAVAILABLE".into()),
            decision,
            wait: wait.map(Duration::from_millis),
            at: Duration::from_millis(at),
            id: None,
            size: 10,
            late: false,
        }
    }

    #[test]
    fn waits_compare_by_value_in_any_unit_and_fields_in_any_order() {
        let o = obs("A", 1, "retry", Some(1500), 0);
        for text in [
            "A1 503 UPSTREAM_UNAVAILABLE retry wait=1.5s",
            "A1 503 UPSTREAM_UNAVAILABLE retry wait=1500ms",
            "A1 503 UPSTREAM_UNAVAILABLE retry wait=1.5s..1.5s",
            "A1 503 UPSTREAM_UNAVAILABLE retry at=0s wait=1.5s",
            "A1 503 UPSTREAM_UNAVAILABLE retry wait=1500ms at=0ms",
        ] {
            let e = exp(text);
            assert!(holds(&e, &o), "{text}");
            assert_eq!(shown(Some(&e), &o).0, text, "shown as written");
        }
        let o = obs("A", 1, "retry", Some(1000), 0);
        assert!(holds(
            &exp("A1 503 UPSTREAM_UNAVAILABLE retry wait=1000ms"),
            &o
        ));
    }

    #[test]
    fn a_failing_line_keeps_the_tokens_that_hold() {
        let e = exp("A1 503 UPSTREAM_UNAVAILABLE retry at=0s wait=1.5s..1.5s");
        let o = obs("A", 1, "switch", Some(1500), 0);
        assert_eq!(
            shown(Some(&e), &o).0,
            "A1 503 UPSTREAM_UNAVAILABLE switch at=0s wait=1.5s..1.5s"
        );
        let o = obs("A", 1, "retry", Some(2000), 0);
        assert_eq!(
            shown(Some(&e), &o).0,
            "A1 503 UPSTREAM_UNAVAILABLE retry at=0s wait=2s"
        );
    }

    #[test]
    fn asserted_fields_the_call_lacks_are_shown_absent() {
        let e = exp("A1 503 UPSTREAM_UNAVAILABLE retry wait=1s");
        let o = obs("A", 1, "fail", None, 0);
        let (s, notes) = shown(Some(&e), &o);
        assert_eq!(s, "A1 503 UPSTREAM_UNAVAILABLE fail wait=absent");
        assert!(notes[0].contains("no wait followed"), "{notes:?}");
        let e = exp("B1 200 return at=12s id=req-1");
        let o = obs("B", 1, "return", None, 3000);
        let (s, notes) = shown(Some(&e), &o);
        assert_eq!(s, "B1 200 return at=3s id=absent");
        assert!(notes[0].contains("no request id"), "{notes:?}");
    }

    #[test]
    fn pairs_by_call_not_by_position() {
        let e = vec![
            exp("A1 503 UPSTREAM_UNAVAILABLE switch"),
            exp("B1 200 return at=12s"),
        ];
        let a2 = obs("A", 2, "switch", None, 1000);
        let b1 = obs("B", 1, "return", None, 3000);
        assert!(expected_for(&e, 1, &a2).is_none());
        let (s, _) = shown(expected_for(&e, 2, &b1), &b1);
        assert_eq!(s, "B1 200 return at=3s");
    }
}
