//! Names derived from route names: the call label of a trace line (`A1`,
//! `gpt4#1`) and the environment variable that carries a route's URL.

pub use faultmatrix_controller::outcome::call_label;

/// A status as text, `503` (a script entry's label, a trace line's
/// outcome): three digits written directly (`to_string`
/// went through the formatter, about 200 instructions each).
pub fn status_label(status: u16) -> String {
    if !(100..=999).contains(&status) {
        return status.to_string();
    }
    let mut s = String::with_capacity(3);
    for d in [status / 100, status / 10 % 10, status % 10] {
        s.push(char::from(b'0' + d as u8));
    }
    s
}

/// The environment variable `prefix + ROUTE`: the route name upper-cased,
/// every other character than an ASCII letter or digit written as `_`
/// (`FAULTMATRIX_URL_OPENAI_PRIMARY` for `openai-primary`).
pub fn route_var(prefix: &str, route: &str) -> String {
    let mut s = String::from(prefix);
    for c in route.chars() {
        s.push(if c.is_ascii_alphanumeric() {
            c.to_ascii_uppercase()
        } else {
            '_'
        });
    }
    s
}

/// A name as it may be shown in a terminal, a report or a test name: control
/// characters (newlines, tabs, ANSI escapes), bidirectional overrides and
/// other invisible format characters are written as escapes (`\n`, `\t`,
/// `\u{202e}`), and a backslash as `\\`, so one name is one line that
/// reads as what it is. Text without such characters is returned as is.
pub fn escape(name: &str) -> std::borrow::Cow<'_, str> {
    // Printable ASCII needs nothing: checked in one pass without an early
    // exit (vectorized), not decoded.
    if name
        .bytes()
        .fold(true, |ok, b| ok & (0x20..0x7f).contains(&b))
        || !name.chars().any(needs_escape)
    {
        return std::borrow::Cow::Borrowed(name);
    }
    let mut out = String::with_capacity(name.len() + 8);
    for c in name.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if needs_escape(c) => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
            c => out.push(c),
        }
    }
    std::borrow::Cow::Owned(out)
}

/// Whether [`escape`] rewrites a character. A backslash alone does not make
/// a name need escaping; it is doubled only when something else is escaped.
fn needs_escape(c: char) -> bool {
    c.is_control()
        || matches!(c,
            '\u{200b}'..='\u{200f}' // zero-width, LRM, RLM
            | '\u{202a}'..='\u{202e}' // embeddings and overrides
            | '\u{2060}'..='\u{2069}' // word joiner, isolates
            | '\u{061c}' // Arabic letter mark
            | '\u{feff}' // BOM / zero-width no-break space
            | '\u{2028}' | '\u{2029}' // line and paragraph separators
        )
}

/// Lowercase words joined by `_`: `503 twice on A` → `503_twice_on_a`.
pub fn slug(text: &str) -> String {
    let mut out = String::new();
    for c in text.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.ends_with('_') && !out.is_empty() {
            out.push('_');
        }
    }
    while out.ends_with('_') {
        out.pop();
    }
    if out.is_empty() {
        out.push_str("row");
    }
    out
}

/// The snapshot name of a row: `<file stem>__<row slug>`.
pub fn snapshot_name(matrix_file: &str, row_name: &str) -> String {
    let stem = std::path::Path::new(matrix_file)
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    format!("{}__{}", slug(&stem), slug(row_name))
}

#[cfg(test)]
mod tests {
    /// A status's text is its number as `to_string` writes it, for
    /// every status a script can hold and beyond.
    #[test]
    fn status_labels_are_the_numbers_written_out() {
        for s in (0..=1200u16).chain([u16::MAX]) {
            assert_eq!(super::status_label(s), s.to_string());
        }
    }

    use super::*;

    #[test]
    fn labels_and_variables() {
        assert_eq!(call_label("A", 1), "A1");
        assert_eq!(call_label("gpt4", 2), "gpt4#2");
        assert_eq!(
            route_var("FAULTMATRIX_URL_", "openai-primary"),
            "FAULTMATRIX_URL_OPENAI_PRIMARY"
        );
    }

    #[test]
    fn names_are_escaped_for_display() {
        assert!(matches!(escape("503 twice"), std::borrow::Cow::Borrowed(_)));
        assert_eq!(escape("a\nb"), "a\\nb");
        assert_eq!(escape("x\u{1b}[31mred"), "x\\u{1b}[31mred");
        assert_eq!(escape("abc\u{202e}fed"), "abc\\u{202e}fed");
        assert_eq!(escape("tab\there\\"), "tab\\there\\\\");
        assert_eq!(escape("back\\slash"), "back\\slash");
        assert_eq!(escape("café ✓"), "café ✓");
    }
}
