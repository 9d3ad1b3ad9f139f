//! Editing YAML text in place: one value at a path replaced or one key
//! added, every other byte of the file kept (comments, key order, anchors,
//! quoting and blank lines elsewhere). Bless writes observed values back
//! into matrix files this way instead of re-serialising them.
//!
//! Positions come from [`Positions`] (the loader's index); a value's end is
//! found by reading the text from its start (quoted, block scalar, flow
//! collection, nested block or plain). Every edit is verified: the edited
//! text must parse to the original document with exactly that one value
//! changed, or the edit is refused.

use crate::base::yaml::{parse_value, path_text, Pos, Positions, Seg, Value};

/// A value to write.
#[derive(Debug, Clone, PartialEq)]
pub enum NewValue {
    /// A string (written plain when that reads back as the same string,
    /// double-quoted otherwise).
    Str(String),
    /// A number or other plain token written as is (`3`, `1.5`).
    Raw(String),
    /// Lines of text: a block literal (`|`) in block context, a list of
    /// strings in a flow mapping.
    Lines(Vec<String>),
    /// A mapping of keys to values.
    Map(Vec<(String, NewValue)>),
}

impl NewValue {
    /// The YAML value this writes, to verify an edit.
    fn to_value(&self) -> Value {
        match self {
            Self::Str(s) => Value::String(s.clone()),
            Self::Raw(s) => serde_yaml::from_str(s).unwrap_or(Value::String(s.clone())),
            Self::Lines(ls) => {
                let mut s = ls.join("\n");
                s.push('\n');
                Value::String(s)
            }
            Self::Map(entries) => Value::Mapping(
                entries
                    .iter()
                    .map(|(k, v)| (Value::String(k.to_string()), v.to_value()))
                    .collect(),
            ),
        }
    }
}

impl NewValue {
    /// Whether `v` reads as this value (lines may be written as a block
    /// string or as a list of strings).
    fn matches(&self, v: &Value) -> bool {
        match (self, v) {
            (Self::Lines(ls), Value::Sequence(items)) => {
                items.len() == ls.len() && items.iter().zip(ls).all(|(i, l)| i.as_str() == Some(l))
            }
            (Self::Lines(ls), Value::String(s)) => s.trim_end_matches('\n') == ls.join("\n"),
            (Self::Map(entries), Value::Mapping(m)) => {
                m.len() == entries.len()
                    && entries.iter().all(|(k, e)| {
                        m.get(Value::String(k.to_string()))
                            .is_some_and(|v| e.matches(v))
                    })
            }
            (me, v) => &me.to_value() == v,
        }
    }
}

/// Sets the value at `path` (a mapping key) to `value`, adding the key to
/// its parent mapping when absent. The parent must exist.
pub fn set(text: &str, path: &[Seg], value: &NewValue) -> Result<String, String> {
    let Some(Seg::Key(name)) = path.last() else {
        return Err(format!("`{}` is not a mapping key", path_text(path)));
    };
    let before = parse_value(text).map_err(|e| e.message)?;
    let parent_path = &path[..path.len() - 1];
    let parent = lookup(&before, parent_path)
        .ok_or_else(|| format!("`{}` does not exist", path_text(parent_path)))?;
    let Value::Mapping(parent_map) = parent else {
        return Err(format!("`{}` is not a mapping", path_text(parent_path)));
    };
    let positions = Positions::index(text);
    let edited = if parent_map.contains_key(Value::String(name.to_string())) {
        replace(text, &positions, path, value)?
    } else {
        insert(text, &positions, parent_path, name, value)?
    };
    // Verify: the same document with exactly this value changed.
    let mut want = before;
    if let Some(Value::Mapping(m)) = lookup_mut(&mut want, parent_path) {
        m.insert(Value::String(name.to_string()), value.to_value());
    }
    let mut got = parse_value(&edited).map_err(|e| {
        format!(
            "editing `{}` would break the file ({}): edit it by hand",
            path_text(path),
            e.message
        )
    })?;
    let written = lookup_mut(&mut got, path);
    if let Some(w) = written.filter(|w| value.matches(w)) {
        *w = value.to_value();
    }
    if got != want {
        return Err(format!(
            "`{}` cannot be edited in place safely (an alias, a merge key or an unusual layout): edit it by hand",
            path_text(path)
        ));
    }
    Ok(edited)
}

fn lookup<'a>(v: &'a Value, path: &[Seg]) -> Option<&'a Value> {
    let mut cur = v;
    for seg in path {
        cur = match (seg, cur) {
            (Seg::Key(k), Value::Mapping(m)) => m.get(Value::String(k.to_string()))?,
            (Seg::Index(i), Value::Sequence(s)) => s.get(*i)?,
            _ => return None,
        };
    }
    Some(cur)
}

fn lookup_mut<'a>(v: &'a mut Value, path: &[Seg]) -> Option<&'a mut Value> {
    let mut cur = v;
    for seg in path {
        cur = match (seg, cur) {
            (Seg::Key(k), Value::Mapping(m)) => m.get_mut(Value::String(k.to_string()))?,
            (Seg::Index(i), Value::Sequence(s)) => s.get_mut(*i)?,
            _ => return None,
        };
    }
    Some(cur)
}

/// Byte offset of a 1-based line and (character) column.
fn offset(text: &str, pos: Pos) -> usize {
    let mut line_start = 0;
    for _ in 1..pos.line {
        match text[line_start..].find('\n') {
            Some(i) => line_start += i + 1,
            None => return text.len(),
        }
    }
    let line = &text[line_start..];
    let col: usize = line
        .char_indices()
        .nth(pos.col.saturating_sub(1))
        .map_or(line.len(), |(i, _)| i);
    line_start + col
}

fn line_start(text: &str, at: usize) -> usize {
    text[..at].rfind('\n').map_or(0, |i| i + 1)
}

fn line_end(text: &str, at: usize) -> usize {
    text[at..].find('\n').map_or(text.len(), |i| at + i)
}

fn indent_of(line: &str) -> usize {
    line.len() - line.trim_start_matches(' ').len()
}

/// Whether a line is blank or only a comment.
fn is_filler(line: &str) -> bool {
    let t = line.trim();
    t.is_empty() || t.starts_with('#')
}

/// The end of the last line after `from` (a line end) that belongs to a
/// block indented deeper than `indent`; `from` when none does.
fn block_end(text: &str, from: usize, indent: usize) -> usize {
    let mut end = from;
    let mut at = from;
    while at < text.len() {
        let start = at + 1;
        if start > text.len() {
            break;
        }
        let stop = line_end(text, start);
        let line = &text[start..stop];
        if !is_filler(line) {
            if indent_of(line) <= indent {
                break;
            }
            end = stop;
        }
        at = stop;
        if stop == text.len() {
            break;
        }
    }
    end
}

/// Whether the node at `path` sits inside a flow collection.
fn in_flow(text: &str, positions: &Positions, path: &[Seg]) -> bool {
    (1..path.len()).any(|n| {
        let at = value_start(text, positions, &path[..n]);
        matches!(text[at..].chars().next(), Some('{') | Some('['))
    })
}

/// Where the value at `path` starts in the text: after its key's colon
/// for a mapping value, at its indexed position for a sequence item.
fn value_start(text: &str, positions: &Positions, path: &[Seg]) -> usize {
    if let Some(Seg::Key(_)) = path.last() {
        let key_at = offset(text, positions.key(path));
        if let Ok(mut at) = after_colon(text, key_at) {
            while text[at..].starts_with(' ') {
                at += 1;
            }
            return at;
        }
    }
    offset(text, positions.value(path))
}

/// Where a key's value starts: just after `key:` and any spaces.
fn after_colon(text: &str, key_at: usize) -> Result<usize, String> {
    let bytes = text.as_bytes();
    let mut i = key_at;
    // Skip a quoted key.
    if matches!(bytes.get(i), Some(b'"') | Some(b'\'')) {
        let q = bytes[i];
        i += 1;
        while i < bytes.len() && bytes[i] != q {
            i += 1;
        }
        i += 1;
    }
    while i < bytes.len() && bytes[i] != b':' && bytes[i] != b'\n' {
        i += 1;
    }
    if bytes.get(i) != Some(&b':') {
        return Err("a key without `:`".into());
    }
    Ok(i + 1)
}

/// The byte range of the value at `path` (whose key exists), and how it is
/// written.
fn value_span(
    text: &str,
    positions: &Positions,
    path: &[Seg],
) -> Result<(usize, usize, Form), String> {
    let key_at = offset(text, positions.key(path));
    // A key's own column (a key after `- ` sits past the dash).
    let key_indent = key_at - line_start(text, key_at);
    let colon = after_colon(text, key_at)?;
    let mut start = colon;
    while text[start..].starts_with(' ') {
        start += 1;
    }
    let flow = in_flow(text, positions, path);
    let rest = &text[start..];
    let first = rest.chars().next();
    let eol = line_end(text, start);
    let comment_only = text[start..eol].trim().is_empty() || text[start..eol].starts_with('#');
    if comment_only && !flow {
        // A nested block on the following lines.
        let end = block_end(text, eol, key_indent);
        return Ok((colon, end, Form::Nested));
    }
    match first {
        Some('|') | Some('>') => {
            let header_end = eol;
            let end = block_end(text, header_end, key_indent);
            let content_indent = text[header_end..end]
                .lines()
                .find(|l| !l.trim().is_empty())
                .map(indent_of)
                .unwrap_or(key_indent + 2);
            Ok((
                start,
                end,
                Form::Block {
                    header: text[start..header_end].to_string(),
                    indent: content_indent,
                },
            ))
        }
        Some('"') => {
            let b = text.as_bytes();
            let mut i = start + 1;
            while i < b.len() && b[i] != b'"' {
                if b[i] == b'\\' {
                    i += 1;
                }
                i += 1;
            }
            Ok((start, (i + 1).min(text.len()), Form::Inline { flow }))
        }
        Some('\'') => {
            let b = text.as_bytes();
            let mut i = start + 1;
            loop {
                if i >= b.len() {
                    break;
                }
                if b[i] == b'\'' {
                    if b.get(i + 1) == Some(&b'\'') {
                        i += 2;
                        continue;
                    }
                    break;
                }
                i += 1;
            }
            Ok((start, (i + 1).min(text.len()), Form::Inline { flow }))
        }
        Some('{') | Some('[') => {
            let b = text.as_bytes();
            let mut depth = 0i32;
            let mut i = start;
            let mut quote: Option<u8> = None;
            while i < b.len() {
                let c = b[i];
                match quote {
                    Some(q) if c == q => quote = None,
                    Some(b'"') if c == b'\\' => i += 1,
                    Some(_) => {}
                    None => match c {
                        b'"' | b'\'' => quote = Some(c),
                        b'{' | b'[' => depth += 1,
                        b'}' | b']' => {
                            depth -= 1;
                            if depth == 0 {
                                return Ok((start, i + 1, Form::Inline { flow }));
                            }
                        }
                        _ => {}
                    },
                }
                i += 1;
            }
            Err("an unclosed flow collection".into())
        }
        Some('&') | Some('*') => Err(format!(
            "`{}` is an anchor or an alias (shared with other nodes): edit it by hand",
            path_text(path)
        )),
        _ => {
            // A plain scalar: to the end of the line, a comment, or (in a
            // flow collection) the next separator.
            let mut end = eol;
            if let Some(i) = text[start..eol].find(" #") {
                end = start + i;
            }
            if flow {
                if let Some(i) = text[start..end].find([',', '}', ']']) {
                    end = start + i;
                }
            }
            while end > start && text.as_bytes()[end - 1] == b' ' {
                end -= 1;
            }
            Ok((start, end, Form::Inline { flow }))
        }
    }
}

/// How an existing value is written.
#[derive(Debug, Clone, PartialEq)]
enum Form {
    /// On the key's line (plain, quoted or a flow collection).
    Inline { flow: bool },
    /// A block scalar: its header (`|`, `|-`, `>`) and content indentation.
    Block { header: String, indent: usize },
    /// A nested block mapping or sequence on the following lines.
    Nested,
}

fn replace(
    text: &str,
    positions: &Positions,
    path: &[Seg],
    value: &NewValue,
) -> Result<String, String> {
    let (start, end, form) = value_span(text, positions, path)?;
    let key_at = offset(text, positions.key(path));
    let key_col = key_at - line_start(text, key_at);
    let (from, written) = match (&form, value) {
        (Form::Inline { flow: true }, v) => (start, flow_text(v)),
        (Form::Block { header, indent }, NewValue::Lines(ls)) => {
            (start, block_lines(header, *indent, ls))
        }
        (_, v) => {
            let b = block_text(v, key_col);
            match b.strip_prefix(' ') {
                Some(inline) if form != Form::Nested => (start, inline.to_string()),
                // A nested value (or one becoming nested) starts after the colon.
                _ => (after_colon(text, key_at)?, b),
            }
        }
    };
    let mut out = String::with_capacity(text.len() + written.len());
    out.push_str(&text[..from]);
    out.push_str(&written);
    out.push_str(&text[end..]);
    Ok(out)
}

fn insert(
    text: &str,
    positions: &Positions,
    parent: &[Seg],
    name: &str,
    value: &NewValue,
) -> Result<String, String> {
    let at = value_start(text, positions, parent);
    if text[at..].starts_with('{') {
        // A flow mapping: before its closing brace.
        let (_, end, _) = if parent.is_empty() {
            return Err("the document is a flow mapping".into());
        } else {
            value_span(text, positions, parent)?
        };
        let close = end - 1;
        let inner = text[at + 1..close].trim();
        let entry = format!("{name}: {}", flow_text(value));
        let mut out = String::new();
        if inner.is_empty() {
            out.push_str(&text[..at]);
            out.push_str(&format!("{{ {entry} }}"));
        } else {
            let mut body_end = close;
            while body_end > at + 1 && text.as_bytes()[body_end - 1] == b' ' {
                body_end -= 1;
            }
            out.push_str(&text[..body_end]);
            out.push_str(&format!(", {entry}"));
            out.push_str(&text[body_end..close]);
            out.push('}');
        }
        out.push_str(&text[close + 1..]);
        return Ok(out);
    }
    // A block mapping: after its last line, at its keys' column.
    let at = positions
        .keys_under(parent)
        .map(|(_, p)| p)
        .min()
        .map(|p| offset(text, p))
        .ok_or_else(|| format!("`{}` has no keys to align with", path_text(parent)))?;
    let col = at - line_start(text, at);
    let first_end = line_end(text, at);
    let end = block_end(text, first_end, col.saturating_sub(1)).max(first_end);
    let entry = format!("{}{name}:{}", " ".repeat(col), block_text(value, col));
    let mut out = String::with_capacity(text.len() + entry.len() + 1);
    out.push_str(&text[..end]);
    out.push('\n');
    out.push_str(&entry);
    out.push_str(&text[end..]);
    Ok(out)
}

/// A value after `key:` in block context, for a key at column `col`:
/// starts with a space (inline) or a newline (nested).
fn block_text(value: &NewValue, col: usize) -> String {
    match value {
        NewValue::Str(_) | NewValue::Raw(_) => format!(" {}", flow_text(value)),
        NewValue::Lines(ls) => format!(" {}", block_lines("|", col + 2, ls)),
        NewValue::Map(entries) => {
            let mut s = String::new();
            for (k, v) in entries {
                s.push('\n');
                s.push_str(&" ".repeat(col + 2));
                s.push_str(k);
                s.push(':');
                s.push_str(&block_text(v, col + 2));
            }
            s
        }
    }
}

fn block_lines(header: &str, indent: usize, lines: &[String]) -> String {
    let mut s = header.to_string();
    for l in lines {
        s.push('\n');
        s.push_str(&" ".repeat(indent));
        s.push_str(l);
    }
    s
}

/// A value in flow context.
fn flow_text(value: &NewValue) -> String {
    match value {
        NewValue::Str(s) if plain_ok(s) => s.clone(),
        NewValue::Str(s) => quoted(s),
        NewValue::Raw(s) => s.clone(),
        NewValue::Lines(ls) => {
            let items: Vec<String> = ls.iter().map(|l| quoted(l)).collect();
            format!("[{}]", items.join(", "))
        }
        NewValue::Map(entries) => {
            let items: Vec<String> = entries
                .iter()
                .map(|(k, v)| format!("{k}: {}", flow_text(v)))
                .collect();
            format!("{{ {} }}", items.join(", "))
        }
    }
}

/// Whether `s` written plain (in any context) reads back as the same string.
fn plain_ok(s: &str) -> bool {
    !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | ' ' | '/'))
        && !s.starts_with([' ', '-', '.'])
        && !s.ends_with(' ')
        && matches!(serde_yaml::from_str::<Value>(s), Ok(Value::String(ref r)) if r == s)
}

fn quoted(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| format!("{s:?}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(segs: &[&str]) -> Vec<Seg> {
        segs.iter()
            .map(|s| match s.parse::<usize>() {
                Ok(i) => Seg::Index(i),
                Err(_) => Seg::Key((*s).into()),
            })
            .collect()
    }

    const DOC: &str = "# top\ntitle: t # why\nrows:\n  - name: a\n    inject: { A: [200] } # kept\n    expect:\n      trace: |\n        A1 200 return\n      stop: success\n\n  # next row\n  - name: b\n    expect: { stop: success }\n";

    #[test]
    fn replaces_a_block_trace_keeping_everything_else() {
        let t = set(
            DOC,
            &p(&["rows", "0", "expect", "trace"]),
            &NewValue::Lines(vec!["A1 503 X retry".into(), "A2 200 return".into()]),
        )
        .unwrap();
        assert_eq!(
            t,
            DOC.replace(
                "        A1 200 return\n",
                "        A1 503 X retry\n        A2 200 return\n"
            )
        );
        let back = set(
            &t,
            &p(&["rows", "0", "expect", "trace"]),
            &NewValue::Lines(vec!["A1 200 return".into()]),
        )
        .unwrap();
        assert_eq!(back, DOC);
    }

    #[test]
    fn replaces_and_inserts_plain_and_flow_values() {
        let t = set(
            DOC,
            &p(&["rows", "0", "expect", "stop"]),
            &NewValue::Str("exhausted".into()),
        )
        .unwrap();
        assert_eq!(t, DOC.replace("stop: success\n\n", "stop: exhausted\n\n"));
        let t = set(
            DOC,
            &p(&["rows", "1", "expect", "stop"]),
            &NewValue::Str("terminal".into()),
        )
        .unwrap();
        assert!(t.ends_with("expect: { stop: terminal }\n"), "{t}");
        let t = set(
            DOC,
            &p(&["rows", "1", "expect", "trace"]),
            &NewValue::Lines(vec!["A1 200 return".into()]),
        )
        .unwrap();
        assert!(
            t.ends_with("expect: { stop: success, trace: [\"A1 200 return\"] }\n"),
            "{t}"
        );
        let t = set(
            DOC,
            &p(&["rows", "0", "expect", "elapsed"]),
            &NewValue::Str("0s".into()),
        )
        .unwrap();
        assert!(
            t.contains("      stop: success\n      elapsed: 0s\n\n  # next row"),
            "{t}"
        );
    }

    #[test]
    fn an_empty_expect_becomes_a_block() {
        let doc = "rows:\n  - name: a\n    inject: { A: [200] }\n    expect: {}\n  - name: b\n";
        let t = set(
            doc,
            &p(&["rows", "0", "expect"]),
            &NewValue::Map(vec![
                (
                    "trace".into(),
                    NewValue::Lines(vec!["A1 200 return".into()]),
                ),
                ("stop".into(), NewValue::Str("success".into())),
            ]),
        )
        .unwrap();
        assert_eq!(t, "rows:\n  - name: a\n    inject: { A: [200] }\n    expect:\n      trace: |\n        A1 200 return\n      stop: success\n  - name: b\n");
        let doc = "rows:\n  - name: a\n    inject: { A: [200] }\n\n  - name: b\n";
        let t = set(
            doc,
            &p(&["rows", "0", "expect"]),
            &NewValue::Map(vec![("stop".into(), NewValue::Str("success".into()))]),
        )
        .unwrap();
        assert_eq!(t, "rows:\n  - name: a\n    inject: { A: [200] }\n    expect:\n      stop: success\n\n  - name: b\n");
    }

    #[test]
    fn refuses_aliases() {
        let doc = "x: &e { stop: success }\nrows:\n  - name: a\n    expect: *e\n";
        assert!(set(
            doc,
            &p(&["rows", "0", "expect", "stop"]),
            &NewValue::Str("terminal".into())
        )
        .is_err());
    }
}
