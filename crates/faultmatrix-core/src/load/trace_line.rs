//! The grammar of an expected trace line:
//! `<route><attempt> <outcome> [CODE] <decision> [wait=..] [at=..] [id=..] [size=..]`.

use crate::base::duration::DurationSpec;
use crate::model::{Decision, ExpectedLine, TextSpan};

/// Parses one expected line. `routes` are the names a label may use.
pub fn parse_line(text: &str, routes: &[String]) -> Result<ExpectedLine, String> {
    let text = crate::base::text::trim(text);
    // The common line is printable ASCII: its fields are split at spaces
    // without decoding characters (the same answers: an ASCII control
    // character is a byte below 0x20 or 0x7F, and once none is left the
    // only ASCII whitespace is the space). One pass without an early exit,
    // which the compiler vectorizes (a byte at a time with `any` cost a
    // row of three lines about 750 instructions).
    if text
        .bytes()
        .fold(true, |ok, b| ok & (0x20..0x7f).contains(&b))
    {
        return fields(text, space_separated(text), routes);
    }
    // Anything else: a control character is refused, and other text splits
    // at any Unicode space.
    if let Some(c) = text.chars().find(|c| c.is_control()) {
        // A tab looks like a space in a diff: the two lines would look the same.
        let before: String = text.chars().take_while(|x| *x != c).collect();
        let last = before.split_whitespace().last().unwrap_or("");
        let what = if c == '\t' {
            "a tab".to_string()
        } else {
            format!("control character U+{:04X}", c as u32)
        };
        return Err(format!(
            "{what} after `{last}`: separate the fields of a trace line with spaces (a tab looks like a space in a diff)"
        ));
    }
    fields(text, text.split_whitespace(), routes)
}

/// The fields of a trimmed line without control characters, as `tokens`
/// splits it.
fn fields<'t>(
    text: &'t str,
    mut tokens: impl Iterator<Item = &'t str>,
    routes: &[String],
) -> Result<ExpectedLine, String> {
    let label = tokens
        .next()
        .ok_or("empty trace line: expected `<route><attempt> <outcome> [CODE] <decision>`")?;
    let (route, attempt) = parse_label(label, routes)?;
    let outcome = tokens
        .next()
        .ok_or_else(|| format!("`{label}` has no outcome: expected a status such as `503`, or `timeout`, `reset`, `malformed`, `broken`"))?;
    if !(outcome.len() == 3 && outcome.bytes().all(|b| b.is_ascii_digit())
        || OUTCOMES.contains(&outcome))
    {
        return Err(format!(
            "`{outcome}` is not an outcome: expected a status such as `503`, or one of {}",
            OUTCOMES.join(", ")
        ));
    }
    let mut code = None;
    let mut decision = None;
    // Up to the decision; the fields after it are read below, from the
    // same iterator (no list of them is kept).
    for tok in tokens.by_ref() {
        if let Some(d) = Decision::parse(tok) {
            decision = Some(d);
            break;
        }
        if code.is_none()
            && tok
                .bytes()
                .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_')
        {
            code = Some(tok);
            continue;
        }
        let hint = crate::base::diag::hint_suffix(tok, Decision::ALL);
        return Err(format!(
            "`{tok}` is not a decision: expected one of retry, switch, return, fail{hint}"
        ));
    }
    let decision = decision.ok_or_else(|| {
        format!("`{text}` has no decision: expected one of retry, switch, return, fail at the end")
    })?;
    let mut line = ExpectedLine {
        text: text.to_string(),
        route_at: TextSpan::of(text, route),
        attempt,
        outcome_at: TextSpan::of(text, outcome),
        code_at: code.map(|c| TextSpan::of(text, c)),
        decision,
        wait: None,
        at: None,
        id: None,
        size: None,
    };
    for tok in tokens {
        let (k, v) = split_at_byte(tok, b'=').ok_or_else(|| {
            format!("`{tok}` is not a field: expected `wait=`, `at=`, `id=` or `size=`")
        })?;
        if v.is_empty() {
            return Err(format!(
                "`{tok}` has no value: write it right after `=`, without a space (`{k}=1s`)"
            ));
        }
        match k {
            "wait" => line.wait = Some(DurationSpec::parse(v).map_err(|e| format!("wait: {e}"))?),
            "at" => line.at = Some(DurationSpec::parse(v).map_err(|e| format!("at: {e}"))?),
            "id" => line.id = Some(v.to_string()),
            "size" => {
                line.size = Some(
                    v.parse()
                        .map_err(|_| format!("size: `{v}` is not a number of bytes"))?,
                )
            }
            other => {
                let hint = crate::base::diag::hint_suffix(other, ["wait", "at", "id", "size"]);
                return Err(format!(
                    "unknown field `{other}`: expected `wait=`, `at=`, `id=` or `size=`{hint}"
                ));
            }
        }
    }
    if matches!(decision, Decision::Return | Decision::Fail) && line.wait.is_some() {
        return Err(format!(
            "`{text}` ends the run ({}) but gives a wait: only `retry` and `switch` are followed by a wait",
            decision.as_str()
        ));
    }
    Ok(line)
}

/// The non-empty fields of `text` between spaces: `split(' ')` without
/// its character searcher (a space is one byte, so every cut is at a
/// character boundary).
fn space_separated(text: &str) -> impl Iterator<Item = &str> {
    let b = text.as_bytes();
    let mut i = 0;
    std::iter::from_fn(move || {
        while i < b.len() && b[i] == b' ' {
            i += 1;
        }
        if i == b.len() {
            return None;
        }
        let start = i;
        while i < b.len() && b[i] != b' ' {
            i += 1;
        }
        Some(&text[start..i])
    })
}

/// `s` split around the first `sep` (an ASCII byte, so both sides are
/// whole characters): `split_once` with a `char`, without its searcher
/// (a third of a trace line's parse on these short fields).
fn split_at_byte(s: &str, sep: u8) -> Option<(&str, &str)> {
    let i = s.bytes().position(|b| b == sep)?;
    Some((&s[..i], &s[i + 1..]))
}

/// Outcome words other than a status.
pub const OUTCOMES: [&str; 7] = [
    "timeout",
    "reset",
    "refused",
    "malformed",
    "broken",
    "unanswered",
    "unscripted",
];

fn parse_label<'l>(label: &'l str, routes: &[String]) -> Result<(&'l str, u32), String> {
    let (name, num) = match split_at_byte(label, b'#') {
        Some((n, a)) => (n, a),
        None => {
            let digits = label.bytes().rev().take_while(u8::is_ascii_digit).count();
            if digits == 0 {
                return Err(format!(
                    "`{label}` has no attempt number: write the route and the attempt, as in `A1`"
                ));
            }
            // Prefer a declared route that the label starts with.
            let mut found = None;
            for r in routes {
                if let Some(rest) = label.strip_prefix(r.as_str()) {
                    if !rest.is_empty() && rest.bytes().all(|b| b.is_ascii_digit()) {
                        found = Some((&label[..r.len()], rest));
                    }
                }
            }
            found.unwrap_or_else(|| label.split_at(label.len() - digits))
        }
    };
    let attempt: u32 = num
        .parse()
        .map_err(|_| format!("`{label}`: `{num}` is not an attempt number"))?;
    if attempt == 0 {
        return Err(format!(
            "`{label}`: attempts count from 1 (the first call is 1)"
        ));
    }
    if !routes.is_empty() && !routes.iter().any(|r| r == name) {
        let hint = crate::base::diag::hint_suffix(name, routes.iter().map(String::as_str));
        return Err(format!(
            "`{label}` names route `{name}`, which is not declared: routes are {}{hint}",
            routes.join(", ")
        ));
    }
    Ok((name, attempt))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn routes() -> Vec<String> {
        vec!["A".into(), "B".into(), "gpt4".into()]
    }

    #[test]
    fn fields_are_what_lies_between_spaces() {
        let f: Vec<&str> = space_separated("A1  503 retry wait=1s").collect();
        assert_eq!(f, ["A1", "503", "retry", "wait=1s"]);
        assert_eq!(space_separated("").count(), 0);
        assert_eq!(space_separated("   ").count(), 0);
        assert_eq!(space_separated(" x ").collect::<Vec<_>>(), ["x"]);
        assert_eq!(split_at_byte("wait=1s=2", b'='), Some(("wait", "1s=2")));
        assert_eq!(split_at_byte("retry", b'='), None);
    }

    #[test]
    fn parses_full_line() {
        let l = parse_line(
            "A2 503 UPSTREAM_UNAVAILABLE retry wait=0s..1s at=1s",
            &routes(),
        )
        .unwrap();
        assert_eq!((l.route(), l.attempt), ("A", 2));
        assert_eq!(l.code(), Some("UPSTREAM_UNAVAILABLE"));
        assert_eq!(l.decision, Decision::Retry);
        assert!(l.wait.is_some() && l.at.is_some());
        let l = parse_line("gpt4#3 200 return", &routes()).unwrap();
        assert_eq!((l.route(), l.attempt, l.code()), ("gpt4", 3, None));
    }

    #[test]
    fn ascii_and_other_lines_split_alike() {
        let one = parse_line("A2 503 UPSTREAM_UNAVAILABLE retry wait=1s", &routes()).unwrap();
        let spaced = parse_line(
            "  A2  503   UPSTREAM_UNAVAILABLE retry  wait=1s ",
            &routes(),
        )
        .unwrap();
        assert_eq!(
            (one.route(), one.attempt, one.code()),
            (spaced.route(), spaced.attempt, spaced.code())
        );
        assert_eq!(spaced.text, "A2  503   UPSTREAM_UNAVAILABLE retry  wait=1s");
        // A line with other characters splits at any Unicode space.
        let routes = vec!["Å".to_string()];
        let l = parse_line("Å1\u{a0}503 retry", &routes).unwrap();
        assert_eq!((l.route(), l.attempt, l.outcome()), ("Å", 1, "503"));
        let e = parse_line("Å1 503\u{7f}retry", &routes).unwrap_err();
        assert!(e.starts_with("control character U+007F after `503`"), "{e}");
        let e = parse_line("A1 503\u{7f}retry", &["A".to_string()]).unwrap_err();
        assert!(e.starts_with("control character U+007F after `503`"), "{e}");
    }

    #[test]
    fn a_tab_or_an_empty_field_is_named() {
        let e = parse_line("A1 503 UPSTREAM_UNAVAILABLE\tretry wait=1s", &routes()).unwrap_err();
        assert!(e.starts_with("a tab after `UPSTREAM_UNAVAILABLE`"), "{e}");
        let e = parse_line("A1 503 retry wait= 1s", &routes()).unwrap_err();
        assert!(e.starts_with("`wait=` has no value"), "{e}");
        let e = parse_line("A1 503 retry at=", &routes()).unwrap_err();
        assert!(e.contains("(`at=1s`)"), "{e}");
    }

    #[test]
    fn explains_bad_lines() {
        let e = parse_line("C1 200 return", &routes()).unwrap_err();
        assert!(e.contains("route `C`"), "{e}");
        let e = parse_line("A1 200 retrun", &routes()).unwrap_err();
        assert!(e.contains("did you mean `return`"), "{e}");
        let e = parse_line("A1 200 return wait=1s", &routes()).unwrap_err();
        assert!(e.contains("only `retry` and `switch`"), "{e}");
        assert!(parse_line("A 200 return", &routes())
            .unwrap_err()
            .contains("attempt"));
        assert!(parse_line("A0 200 return", &routes())
            .unwrap_err()
            .contains("count from 1"));
    }
}
