//! A linear scan run before the YAML library sees a file it was handed
//! (the fast front end bounds itself; serde_yaml and yaml-rust2 do not):
//!
//! - **nesting depth** ([`MAX_DEPTH`] levels): libyaml's scanner is
//!   quadratic in flow nesting (32,000 `[` in a 160 KB file took 10 s
//!   before serde_yaml's own recursion limit spoke), so the depth is
//!   counted here first and a deeper file is refused at the bracket that
//!   crosses the limit;
//! - **characters YAML does not allow** (control characters such as NUL,
//!   U+FFFE/U+FFFF) and a **byte-order mark** after the first character,
//!   each reported at its own line and column instead of wherever the
//!   library gives up.
//!
//! The depth counted is an upper bound of the real one: flow brackets
//! outside quotes, comments and block scalars, plus the block indentation
//! levels and the compact `- ` entries of the line. It never undercounts,
//! so nothing deeper than the limit reaches the library.

use super::{Pos, YamlError};

/// The deepest nesting a file may have (matrix, registry, tape): 64 levels
/// of mappings and sequences. Matrices need about ten.
pub const MAX_DEPTH: usize = 64;

/// Checks `text` (without a leading byte-order mark) in one pass.
pub(super) fn check(text: &str) -> Result<(), YamlError> {
    let b = text.as_bytes();
    let mut line = 1usize;
    let mut line_start = 0usize;
    let mut flow = 0usize;
    // Indentation of the open block levels.
    let mut indents: Vec<usize> = Vec::new();
    // Compact `- ` entries on the current line (each one a level).
    let mut compact = 0usize;
    // Inside a block scalar whose parent line is indented this much.
    let mut block_scalar: Option<usize> = None;
    let mut quote: Option<u8> = None;
    let mut i = 0usize;
    let mut at_line_start = true;
    let err = |at: usize, line: usize, line_start: usize, message: String| {
        let col = text[line_start..at].chars().count() + 1;
        Err(YamlError {
            pos: Some(Pos { line, col }),
            path: Vec::new(),
            message,
        })
    };
    while i < b.len() {
        if at_line_start {
            at_line_start = false;
            let indent = b[i..].iter().take_while(|c| **c == b' ').count();
            let rest = &b[i + indent..];
            let blank = matches!(rest.first(), None | Some(b'\n') | Some(b'\r') | Some(b'#'));
            if let Some(parent) = block_scalar {
                let empty = matches!(rest.first(), None | Some(b'\n') | Some(b'\r'));
                if empty || indent > parent {
                    // Block scalar content: checked for characters only.
                    let end = memchr_nl(b, i);
                    if let Some(e) = bad_char(text, i, end) {
                        return err(e.0, line, line_start, e.1);
                    }
                    i = end;
                    continue;
                }
                block_scalar = None;
            }
            if quote.is_none() && flow == 0 && !blank {
                while indents.last().is_some_and(|x| *x >= indent) {
                    indents.pop();
                }
                indents.push(indent);
                compact = 0;
            }
            i += indent;
            continue;
        }
        let c = b[i];
        if c >= 0x80 || (c < 0x20 && c != b'\n' && c != b'\t' && c != b'\r') || c == 0x7f {
            let ch = text[i..].chars().next().unwrap_or('\u{FFFD}');
            if let Some(msg) = refused(ch) {
                return err(i, line, line_start, msg);
            }
            i += ch.len_utf8();
            continue;
        }
        if c == b'\n' {
            line += 1;
            i += 1;
            line_start = i;
            at_line_start = true;
            continue;
        }
        if let Some(q) = quote {
            match c {
                // An escape skips the next byte only when it is ASCII and
                // not a line break: a multi-byte character is stepped over
                // whole by the loop (never sliced mid-character), and a
                // line break still counts as one.
                b'\\' if q == b'"' && b.get(i + 1).is_some_and(|n| n.is_ascii() && *n != b'\n') => {
                    i += 1
                }
                b'\'' if q == b'\'' && b.get(i + 1) == Some(&b'\'') => i += 1,
                _ if c == q => quote = None,
                _ => {}
            }
            i += 1;
            continue;
        }
        let prev = if i == line_start { b' ' } else { b[i - 1] };
        // Where a flow collection may open in block context (inside one,
        // every bracket counts). A bracket counted that the library reads
        // as text only overcounts.
        let boundary = matches!(prev, b' ' | b'\t');
        // Where a quoted or block scalar may open: at the start of a node
        // only. Strict: a quote taken for an opening one would hide the
        // brackets after it.
        let quote_start = node_start(b, line_start, i);
        match c {
            b'#' if matches!(prev, b' ' | b'\t') || i == line_start => {
                i = memchr_nl(b, i);
                continue;
            }
            b'"' | b'\'' if quote_start => quote = Some(c),
            b'[' | b'{' if flow > 0 || boundary => {
                flow += 1;
                if flow + indents.len() + compact > MAX_DEPTH {
                    return err(i, line, line_start, too_deep());
                }
            }
            b']' | b'}' if flow > 0 => flow -= 1,
            b'-' | b'?'
                if flow == 0
                    && matches!(prev, b' ')
                    && matches!(b.get(i + 1), None | Some(b' ') | Some(b'\n')) =>
            {
                compact += 1;
                if indents.len() + compact > MAX_DEPTH {
                    return err(i, line, line_start, too_deep());
                }
            }
            b'|' | b'>' if flow == 0 && quote_start => {
                // A block scalar header: indicators, then only a comment.
                let header_end = memchr_nl(b, i);
                let header = &text[i + 1..header_end];
                let indicators = header
                    .bytes()
                    .take_while(|x| matches!(x, b'+' | b'-' | b'0'..=b'9'))
                    .count();
                let tail = header[indicators..].trim_start();
                if tail.is_empty() || tail.starts_with('#') {
                    let indent = b[line_start..].iter().take_while(|c| **c == b' ').count();
                    block_scalar = Some(indent);
                    i = header_end;
                    continue;
                }
            }
            _ => {}
        }
        i += 1;
    }
    Ok(())
}

/// The label under the caret for a message of this scan, `None` for any
/// other message (the library's).
pub(crate) fn label(message: &str) -> Option<&'static str> {
    if message.starts_with("the file nests deeper") {
        Some("this level crosses the limit")
    } else if message.starts_with("character U+") || message.starts_with("a byte-order mark") {
        Some("this character")
    } else {
        None
    }
}

/// Whether `b[i]` begins a node: only spaces since the line's start, or
/// after `:`, `-`, `?`, `[`, `{` or `,` and spaces.
fn node_start(b: &[u8], line_start: usize, i: usize) -> bool {
    let before = &b[line_start..i];
    match before.iter().rposition(|c| !matches!(c, b' ' | b'\t')) {
        None => true,
        Some(p) => {
            matches!(before[p], b'[' | b'{' | b',')
                || (matches!(before[p], b':' | b'-' | b'?') && p + 1 < before.len())
        }
    }
}

fn too_deep() -> String {
    format!(
        "the file nests deeper than {MAX_DEPTH} levels of mappings and sequences (the limit; see Limits in docs/format.md)"
    )
}

/// The end of the line that holds `i` (the index of its `\n`, or the end).
fn memchr_nl(b: &[u8], i: usize) -> usize {
    b[i..]
        .iter()
        .position(|c| *c == b'\n')
        .map_or(b.len(), |p| i + p)
}

/// The first character YAML refuses in `text[from..to]`, with its message.
fn bad_char(text: &str, from: usize, to: usize) -> Option<(usize, String)> {
    text[from..to]
        .char_indices()
        .find_map(|(at, ch)| refused(ch).map(|m| (from + at, m)))
}

/// Why YAML refuses `ch`, if it does (YAML 1.2 §5.1: printable characters
/// only; a byte-order mark only at the very start).
fn refused(ch: char) -> Option<String> {
    let u = ch as u32;
    let printable = matches!(u, 0x09 | 0x0A | 0x0D | 0x20..=0x7E | 0x85 | 0xA0..=0xD7FF | 0xE000..=0xFFFD | 0x10000..=0x10FFFF);
    if u == 0xFEFF {
        return Some(
            "a byte-order mark (U+FEFF) inside the file: it is invisible in most editors; delete it (only the very first character of a file may be one)".into(),
        );
    }
    (!printable).then(|| {
        format!("character U+{u:04X} is not allowed in YAML: a file holds printable text only (no control characters)")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pos(text: &str) -> Option<(usize, usize)> {
        check(text)
            .err()
            .map(|e| e.pos.map(|p| (p.line, p.col)).unwrap())
    }

    #[test]
    fn flow_nesting_past_the_limit_is_refused_at_its_bracket() {
        let ok = format!("a: {}{}\n", "[".repeat(60), "]".repeat(60));
        assert_eq!(pos(&ok), None);
        let deep = format!("a:\n  b: {}{}\n", "[".repeat(40_000), "]".repeat(40_000));
        // Two block levels (`a`, `b`), so the 63rd bracket is the 65th level.
        assert_eq!(pos(&deep), Some((2, 6 + 62)));
        assert!(check(&deep).unwrap_err().message.contains("64 levels"));
    }

    #[test]
    fn an_escaped_multi_byte_character_is_stepped_over_whole() {
        // Found by the registry and tape fuzz targets: the escape skipped
        // one byte into `é` and the next slice panicked.
        assert_eq!(pos("a: \"\\é [[\"\nb: 1\n"), None);
        assert_eq!(pos("a: \"\\\u{0386}\"\n"), None);
        // An escaped line break still counts as a line.
        assert_eq!(pos("a: \"x\\\n y\"\nb: \u{1}\n"), Some((3, 4)));
    }

    #[test]
    fn brackets_in_quotes_comments_block_scalars_and_words_do_not_count() {
        let many = "[".repeat(200);
        for text in [
            format!("a: \"{many}\"\n"),
            format!("a: '{many}'\n"),
            format!("a: 1 # {many}\n"),
            format!("a: |\n  {many}\n\n  x\nb: 1\n"),
            format!("a: x{many}\n"),
            format!("a: \"x\\\"{many}\"\n"),
        ] {
            assert_eq!(pos(&text), None, "{text}");
        }
        // A quote or bar inside a plain scalar opens nothing: the brackets
        // after it are still counted.
        for text in [
            format!("a: x '\nb: {many}\n"),
            format!("a: x |\nb: {many}\n"),
            format!("a: x\"\nb: {many}\n"),
        ] {
            assert_eq!(pos(&text).map(|p| p.0), Some(2), "{text}");
        }
    }

    #[test]
    fn compact_dashes_count_as_levels() {
        assert_eq!(pos(&format!("a:\n  {}x\n", "- ".repeat(30))), None);
        assert!(pos(&format!("a:\n  {}x\n", "- ".repeat(100))).is_some());
    }

    #[test]
    fn control_characters_and_inner_byte_order_marks_are_found_where_they_are() {
        assert_eq!(pos("a: 1\nb: x\0y\n"), Some((2, 5)));
        assert_eq!(pos("a: 1\n\u{FEFF}b: 2\n"), Some((2, 1)));
        assert_eq!(pos("a: é\u{7}\n"), Some((1, 5)));
        assert_eq!(pos("a: |\n  x\u{1}\n"), Some((2, 4)));
        assert_eq!(pos("a: \"tab\there\"\nb: é\n"), None);
    }
}
