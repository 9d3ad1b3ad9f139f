//! One row of a matrix file, without parsing the others: the text with
//! every other item of the top-level `rows:` block sequence blanked (its
//! lines emptied, so every line and column of what is kept stays where it
//! was, and diagnostics point into the real file). For a runner that needs
//! one row (`--exact` under nextest): it then parses and validates one row,
//! not all of them.
//!
//! It reads lines, not YAML: it answers only for the plain shape matrices
//! are written in (a `rows:` line at column 0, items at one indentation
//! starting `- `, a `name:` key written plainly or in simple quotes) and
//! gives `None` for anything else. A caller must check that what it loads
//! from the result is the row it asked for, and load the whole file when
//! not. The same reading gives where each row's `name` is written
//! ([`row_names`]) without indexing the file.

use super::Pos;

/// The text with every `rows:` item blanked but those whose `name` reads
/// `name`; `None` when the text is not in the shape this reads, or no item
/// is named so.
///
/// One pass over the lines, reading items and their names as it goes: what
/// a one-test process under nextest pays for finding its row in the file
/// (the item-by-item reading, [`row_items`] then each item's name, cost it
/// four times as much in the debug profile). It reads exactly as that
/// reading does, which a test checks on every row of the repository's
/// matrices.
pub fn only_rows_named(text: &str, name: &str) -> Option<String> {
    let lines = lines_of(text);
    let (first, indent) = rows_start(&lines)?;
    let key_col = indent + 2;
    let mut out = String::with_capacity(text.len());
    for l in &lines[..first] {
        out.push_str(l);
    }
    // The item being read: its first line, whether its name was read, and
    // whether it is kept.
    let mut item: Option<(usize, bool, bool)> = None;
    let mut kept_any = false;
    let mut end = lines.len();
    for (i, l) in lines[first..].iter().enumerate() {
        let i = first + i;
        let sp = spaces(l);
        let b = l.as_bytes();
        if sp < b.len() && b[sp] == b'\t' {
            return None;
        }
        // Lines deeper than the items' keys say nothing this reads.
        if sp > key_col || !significant(l, sp) {
            continue;
        }
        if sp == indent && is_item_at(l, indent) {
            if let Some((a, _, keep)) = item {
                emit(&mut out, &lines[a..i], keep);
            }
            // The name may be on the item's first line (`- name: x`).
            let (named, keep) = match l.get(key_col..) {
                None => (true, false),
                Some(rest) => match rest.strip_prefix("name:") {
                    Some(v) => (true, names(v, name)),
                    None => (false, false),
                },
            };
            kept_any |= keep;
            item = Some((i, named, keep));
        } else if sp <= indent {
            end = i;
            break;
        } else if sp == key_col {
            if let Some((_, named @ false, keep)) = item.as_mut() {
                if let Some(v) = l[key_col..].strip_prefix("name:") {
                    *named = true;
                    *keep = names(v, name);
                    kept_any |= *keep;
                }
            }
        }
    }
    let Some((a, _, keep)) = item else {
        return None; // `rows:` holds no item
    };
    if !kept_any {
        return None;
    }
    emit(&mut out, &lines[a..end], keep);
    for l in &lines[end..] {
        out.push_str(l);
    }
    Some(out)
}

/// The first significant line after the file's one top-level `rows:` (the
/// first item's, in the plain shape) and its indentation; `None` when
/// there is no `rows:` line, more than one, or nothing after it.
fn rows_start(lines: &[&str]) -> Option<(usize, usize)> {
    let mut rows_at = None;
    for (i, l) in lines.iter().enumerate() {
        if l.as_bytes().first() == Some(&b'r') && l.starts_with("rows:") && l.trim_end() == "rows:"
        {
            if rows_at.is_some() {
                return None;
            }
            rows_at = Some(i);
        }
    }
    let mut first = rows_at? + 1;
    loop {
        let l = *lines.get(first)?;
        let sp = spaces(l);
        if significant(l, sp) {
            return Some((first, sp));
        }
        first += 1;
    }
}

/// Whether a `name:` key's value `v` (what follows the colon) reads `name`
/// ([`scalar`]), most values answered by their first bytes: a value that
/// reads `name` starts with it after its spaces (plain) or after its
/// opening quote.
fn names(v: &str, name: &str) -> bool {
    let b = v.as_bytes();
    let k = spaces(v);
    let plain_start = match b.get(k) {
        Some(&c) if c.is_ascii_graphic() => k + usize::from(c == b'"' || c == b'\''),
        _ => return scalar(v.trim()) == Some(name), // other spaces or no value
    };
    b[plain_start..].starts_with(name.as_bytes()) && scalar(v.trim()) == Some(name)
}

/// An item's lines: as they are, or blanked (each emptied, its newline kept).
fn emit(out: &mut String, lines: &[&str], keep: bool) {
    if keep {
        for l in lines {
            out.push_str(l);
        }
    } else {
        let mut n = lines.len();
        if lines.last().is_some_and(|l| !l.ends_with('\n')) {
            n -= 1;
        }
        newlines(out, n);
    }
}

/// Whether a line says something (not blank, not a comment) once its `sp`
/// leading spaces are skipped.
fn significant(l: &str, sp: usize) -> bool {
    let t = &l[sp..];
    match t.as_bytes().first() {
        // Most lines: a visible ASCII character first.
        Some(b) if b.is_ascii_graphic() => *b != b'#',
        _ => !(t.trim().is_empty() || t.starts_with('#')),
    }
}

/// Whether a line indented `indent` starts a sequence item (`- ` or a
/// lone `-`).
fn is_item_at(l: &str, indent: usize) -> bool {
    let t = &l[indent..];
    t.starts_with("- ") || t.trim_end() == "-"
}

/// [`only_rows_named`] item by item ([`row_items`], then each item's name):
/// the reading the one-pass version must equal.
#[cfg(test)]
fn only_rows_named_by_items(text: &str, name: &str) -> Option<String> {
    let lines = lines_of(text);
    let (indent, items) = row_items(&lines)?;
    let keep: Vec<bool> = items
        .iter()
        .map(|&(a, b)| item_name(&lines[a..b], indent).map(|(_, n)| n) == Some(name))
        .collect();
    if !keep.contains(&true) {
        return None;
    }
    let mut out = String::with_capacity(text.len());
    let mut next = 0;
    for (&(a, b), &k) in items.iter().zip(&keep) {
        out.extend(lines[next..a].iter().copied());
        for l in &lines[a..b] {
            if k {
                out.push_str(l);
            } else if l.ends_with('\n') {
                out.push('\n');
            }
        }
        next = b;
    }
    out.extend(lines[next..].iter().copied());
    Some(out)
}

/// The text with every `rows:` item blanked (lines emptied, positions
/// kept): what a caller that needs only a file's other keys parses, in
/// time that does not grow with the rows. `None` when the text is not in
/// the shape this reads.
pub fn without_rows(text: &str) -> Option<String> {
    let lines = lines_of(text);
    let (_, items) = row_items(&lines)?;
    let (first, end) = (items.first()?.0, items.last()?.1);
    let mut out = String::with_capacity(text.len());
    for l in &lines[..first] {
        out.push_str(l);
    }
    emit(&mut out, &lines[first..end], false);
    for l in &lines[end..] {
        out.push_str(l);
    }
    Some(out)
}

/// Where each `rows:` item's `name` key is written, with the name as it
/// reads, in item order: what a report needs of a row's position without
/// indexing the whole file (a second parse). `None` when the text is not in
/// the plain shape, or an item's name is not written plainly or in simple
/// quotes; a caller must check the names against the rows it loaded.
pub fn row_names(text: &str) -> Option<Vec<(Pos, &str)>> {
    // One pass, as `only_rows_named` reads: the item-by-item reading
    // (`row_names_by_items`, the tests' reference) cost a row 3,700
    // instructions of its 76,500 in process.
    let lines = lines_of(text);
    let (first, indent) = rows_start(&lines)?;
    let key_col = indent + 2;
    let mut out = Vec::new();
    // Whether the open item's name was read (true before the first item).
    let mut named = true;
    for (i, l) in lines.iter().enumerate().skip(first) {
        let sp = spaces(l);
        let b = l.as_bytes();
        if sp < b.len() && b[sp] == b'\t' {
            return None;
        }
        if sp > key_col || !significant(l, sp) {
            continue;
        }
        let rest = if sp == indent && is_item_at(l, indent) {
            if !named {
                return None; // the item before has no name
            }
            named = false;
            // The name may be on the item's first line (`- name: x`).
            l.get(key_col..)?
        } else if sp <= indent {
            break;
        } else if sp == key_col && !named {
            &l[key_col..]
        } else {
            continue;
        };
        if let Some(v) = rest.strip_prefix("name:") {
            let pos = Pos {
                line: i + 1,
                col: indent + 3,
            };
            out.push((pos, scalar(v.trim())?));
            named = true;
        }
    }
    (named && !out.is_empty()).then_some(out)
}

/// [`row_names`] item by item ([`row_items`], then each item's name): the
/// reading the one-pass version must equal.
#[cfg(test)]
fn row_names_by_items(text: &str) -> Option<Vec<(Pos, &str)>> {
    let lines = lines_of(text);
    let (indent, items) = row_items(&lines)?;
    items
        .iter()
        .map(|&(a, b)| {
            let (n, name) = item_name(&lines[a..b], indent)?;
            let pos = Pos {
                line: a + n + 1,
                col: indent + 3,
            };
            Some((pos, name))
        })
        .collect()
}

/// The text's lines, each with its `\n` (as `split_inclusive('\n')`
/// gives them), found with a plain byte loop: `split_inclusive`'s
/// character searcher was a third of a one-test process's reading of its
/// row in the debug profile (10 instructions a byte). In release the loop
/// costs what the searcher did (a row in process: 76,398 instructions
/// against 76,524; eight bytes at a time, 77,062).
fn lines_of(text: &str) -> Vec<&str> {
    let b = text.as_bytes();
    let mut out = Vec::with_capacity(b.len() / 24 + 1);
    let mut start = 0;
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\n' {
            // A `\n` is one byte and never inside a UTF-8 sequence, so
            // both ends are character boundaries.
            out.push(&text[start..=i]);
            start = i + 1;
        }
        i += 1;
    }
    if start < b.len() {
        out.push(&text[start..]);
    }
    out
}

/// How many spaces a line starts with (bytes: a space is one byte).
fn spaces(l: &str) -> usize {
    // A plain loop: the iterator chain cost a one-test process (debug
    // profile, nextest) more than a million instructions on a 100-row file.
    let b = l.as_bytes();
    let mut n = 0;
    while n < b.len() && b[n] == b' ' {
        n += 1;
    }
    n
}

/// A file's `rows:` items grouped into chunks of about `chunk_bytes` of
/// text each (at least one item a chunk), for a runner that loads a large
/// file a chunk at a time ([`chunk_text`]). `None` when the text is not in
/// the plain shape, or an item's name is not written plainly (every row
/// must be named where a line reader sees it).
pub fn chunks(text: &str, chunk_bytes: usize) -> Option<Chunks> {
    let lines = lines_of(text);
    let (indent, items) = row_items(&lines)?;
    let mut starts = Vec::with_capacity(lines.len() + 1);
    let mut at = 0;
    for l in &lines {
        starts.push(at);
        at += l.len();
    }
    starts.push(at);
    let mut out: Vec<(usize, usize)> = Vec::new();
    let mut size = 0;
    for &(a, b) in &items {
        item_name(&lines[a..b], indent)?;
        let bytes = starts[b] - starts[a];
        match out.last_mut() {
            Some(last) if size + bytes <= chunk_bytes => {
                last.1 = b;
                size += bytes;
            }
            _ => {
                out.push((a, b));
                size = bytes;
            }
        }
    }
    let spans = out.iter().map(|&(a, b)| (starts[a], starts[b])).collect();
    let (first, end) = (items.first()?.0, items.last()?.1);
    Some(Chunks {
        spans,
        // Lines of other rows before and after each chunk: emptied.
        blank: out.iter().map(|&(a, b)| (a - first, end - b)).collect(),
        first: starts[first],
        end: starts[end],
    })
}

/// Where a file's chunks of rows are, as byte offsets into its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chunks {
    /// Each chunk's `[start, end)` bytes: whole lines, whole items.
    spans: Vec<(usize, usize)>,
    /// How many lines of other rows come before and after each chunk.
    blank: Vec<(usize, usize)>,
    /// Where the first item starts and the last one ends.
    first: usize,
    end: usize,
}

impl Chunks {
    /// How many chunks.
    pub fn len(&self) -> usize {
        self.spans.len()
    }

    /// Whether there are none (never, for what [`chunks`] gives).
    pub fn is_empty(&self) -> bool {
        self.spans.is_empty()
    }

    /// The byte ranges of the text that chunk `k`'s text keeps: the header
    /// (before the first row), the chunk's rows, and what follows the last
    /// row (to the end of the text, `len` bytes long).
    pub fn pieces(&self, k: usize, len: usize) -> [std::ops::Range<usize>; 3] {
        let (a, b) = self.spans[k];
        [0..self.first, a..b, self.end..len]
    }
}

/// The text with only chunk `k`'s rows kept: every other row's lines are
/// emptied (one newline each), so every line of what is kept, header and
/// rows, stays where it was, and positions point into the real file.
pub fn chunk_text(text: &str, chunks: &Chunks, k: usize) -> String {
    let (a, b) = chunks.spans[k];
    chunk_text_of(
        chunks,
        k,
        &text[..chunks.first],
        &text[a..b],
        &text[chunks.end..],
    )
}

/// [`chunk_text`] from the three pieces of the file it keeps, read on
/// their own ([`Chunks::pieces`]): the header, chunk `k`'s rows and what
/// follows the rows.
pub fn chunk_text_of(chunks: &Chunks, k: usize, header: &str, rows: &str, tail: &str) -> String {
    let (before, after) = chunks.blank[k];
    let mut out = String::with_capacity(header.len() + before + rows.len() + after + tail.len());
    out.push_str(header);
    newlines(&mut out, before);
    out.push_str(rows);
    newlines(&mut out, after);
    out.push_str(tail);
    out
}

/// Appends `n` newlines, a block at a time.
fn newlines(out: &mut String, mut n: usize) {
    const BLOCK: &str = match std::str::from_utf8(&[b'\n'; 1024]) {
        Ok(s) => s,
        Err(_) => panic!("newlines are UTF-8"),
    };
    while n > 0 {
        let k = n.min(BLOCK.len());
        out.push_str(&BLOCK[..k]);
        n -= k;
    }
}

/// The items of the top-level `rows:` block sequence as line ranges
/// (`[start, end)`), and the column (0-based) of their `- `.
fn row_items(lines: &[&str]) -> Option<(usize, Vec<(usize, usize)>)> {
    let (first, indent) = rows_start(lines)?;
    // A line's leading spaces are counted once (`sp`); what follows them
    // decides the rest, byte by byte on the common ASCII lines.
    let is_item = |l: &str, sp: usize, indent: usize| sp == indent && is_item_at(l, indent);
    if !is_item(lines[first], indent, indent) {
        return None;
    }
    // Items as line ranges; the section ends at a line less indented, or
    // as indented and not an item.
    let mut items: Vec<(usize, usize)> = Vec::new();
    let mut end = lines.len();
    for (i, l) in lines.iter().enumerate().skip(first) {
        let sp = spaces(l);
        if l.as_bytes().get(sp) == Some(&b'\t') {
            return None;
        }
        if !significant(l, sp) {
            continue;
        }
        if is_item(l, sp, indent) {
            if let Some(last) = items.last_mut() {
                last.1 = i;
            }
            items.push((i, lines.len()));
        } else if sp <= indent {
            end = i;
            break;
        }
    }
    if let Some(last) = items.last_mut() {
        last.1 = end;
    }
    Some((indent, items))
}

/// The `name` of an item (its lines; `indent`: where its `- ` is), when
/// written plainly or in quotes without escapes, and the line of the item
/// it is on (0-based).
fn item_name<'a>(lines: &[&'a str], indent: usize) -> Option<(usize, &'a str)> {
    let key_col = indent + 2;
    for (n, l) in lines.iter().enumerate() {
        let rest = if n == 0 {
            l.get(key_col..)?
        } else if l.len() > key_col
            && l.as_bytes()[..key_col].iter().all(|b| *b == b' ')
            && !l[key_col..].starts_with(' ')
        {
            &l[key_col..]
        } else {
            continue;
        };
        if let Some(v) = rest.strip_prefix("name:") {
            return scalar(v.trim()).map(|name| (n, name));
        }
    }
    None
}

/// A one-line scalar: plain (a ` #` starts a comment), or quoted with no
/// escapes; `None` for anything else.
fn scalar(v: &str) -> Option<&str> {
    let quoted = |q: char| {
        let inner = v.strip_prefix(q)?;
        let (body, after) = inner.split_once(q)?;
        let after = after.trim();
        (!body.contains('\\') && (after.is_empty() || after.starts_with('#'))).then_some(body)
    };
    match v.chars().next()? {
        '"' => quoted('"'),
        '\'' => quoted('\''),
        '|' | '>' | '&' | '*' | '!' | '{' | '[' | '%' | '@' | '`' => None,
        _ => {
            let v = v.split_once(" #").map_or(v, |(a, _)| a).trim_end();
            (!v.is_empty()).then_some(v)
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn lines_are_split_inclusive_s() {
        let long = "ab\ncdefghijklmn\nopqrstuvwxyz0123456789\n\n\u{10a}\u{a0}é\n\x0b\x09".repeat(3);
        let mut texts = vec![
            "",
            "\n",
            "a",
            "a\n",
            "a\nb",
            "a\n\nb\n",
            "é\nü x\r\n\n",
            "\n\nz",
        ];
        // A newline at every offset, beside bytes just above and below a
        // newline's (0x0b, 0x09; U+010A ends in 0x8a).
        texts.extend((0..long.len()).filter_map(|i| long.get(i..)));
        for text in texts {
            let want: Vec<&str> = text.split_inclusive('\n').collect();
            assert_eq!(lines_of(text), want, "{text:?}");
        }
    }

    use super::*;

    const TEXT: &str = "title: t\npolicy:\n  routes: [{ name: A }]\nrows:\n  - name: a\n    inject: { A: [200] }\n    expect: { trace: A1 200 return }\n\n  # a comment\n  - name: 'b c'\n    inject:\n      A: [200]\n    expect:\n      trace: |\n        A1 200 return\n  - inject: { A: [500] }\n    name: \"d\" # why\n    expect: { trace: A1 500 return }\ntail: 1\n";

    /// The one-pass reading equals the item-by-item one: on every row of
    /// every YAML file of the repository (and a name no row has), and on
    /// texts in the shapes either reading refuses or reads specially.
    #[test]
    fn one_pass_reads_as_item_by_item() {
        // The workspace at run time (cargo and nextest set the package's
        // directory, remapped for an archive; else the current one).
        let here = std::env::var_os("CARGO_MANIFEST_DIR")
            .map(std::path::PathBuf::from)
            .unwrap_or_else(|| std::env::current_dir().unwrap_or_default());
        let root = here
            .ancestors()
            .find(|d| d.join("runner-tests").is_dir())
            .unwrap_or_else(|| panic!("no workspace above {}", here.display()))
            .to_path_buf();
        let mut files = Vec::new();
        let mut dirs: Vec<std::path::PathBuf> = ["matrices", "runner-tests", "examples", "docs"]
            .iter()
            .map(|d| root.join(d))
            .collect();
        while let Some(d) = dirs.pop() {
            let Ok(rd) = std::fs::read_dir(&d) else {
                continue;
            };
            for e in rd.flatten() {
                let p = e.path();
                if p.is_dir() {
                    dirs.push(p);
                } else if p.extension().is_some_and(|x| x == "yaml" || x == "yml") {
                    files.push(p);
                }
            }
        }
        let mut texts: Vec<(String, String)> = files
            .iter()
            .filter_map(|p| Some((p.display().to_string(), std::fs::read_to_string(p).ok()?)))
            .collect();
        assert!(texts.len() > 50, "only {} files", texts.len());
        for (i, t) in [
            TEXT,
            "rows:\n  - name: a\n\t  x: 1\n",
            "rows:\n  -\n    name: a\n  - name: b\n",
            "rows:\n  -",
            "rows:\n  - name: a\n  - name: a\n",
            "rows:\n  - x: 1\n    name: a\n    name: b\n",
            "rows:\n  - name: \"a\\n\"\n  - name: a # c\n",
            "rows:\n\n# c\n  - name: a\nrows:\n",
            "rows:\n# c\n\n",
            "rows:\n  x: 1\n",
            "rows:\n  - name: a\n    inject: {}\n x: 1\n  - name: b\n",
            "rows:\n  - name: a\n      name: b\n    name: c\n",
            "rows:\n  - name: é\n  - name: a",
            "rows:\n  - name:\ta\n  - name:  'a'\n  - name: row 50\n  - name: row 5\n  - name:\n  - name: |\n      a\n",
            "rows:\n  - name: \u{a0}a\n  - name: \"b\" # c\n  - name: 'c' d\n",
            "rows:\n  - x: 1\n  - name: b\n",
            "rows:\n  - name: a\n  - x: 1\n",
            "rows:\n  - x: 1\n      name: deep\n    name: b\n",
            "rows:\n  - name: a\n  -\n",
            "rows:\n  - name: a\n  -",
            "rows:\n  - name: |\n      a\n  - name: b\n",
            "a: 1\nrows:\n  - name: a\n    inject: {}\ntail: 2\n",
        ]
        .iter()
        .enumerate()
        {
            texts.push((format!("case {i}"), t.to_string()));
        }
        let mut compared = 0;
        for (file, text) in &texts {
            assert_eq!(row_names(text), row_names_by_items(text), "{file}");
            let mut names: Vec<&str> = row_names(text)
                .map(|v| v.into_iter().map(|(_, n)| n).collect())
                .unwrap_or_default();
            names.extend(["a", "b", "c", "é", "row 5", "|", "no such row"]);
            for name in names {
                assert_eq!(
                    only_rows_named(text, name),
                    only_rows_named_by_items(text, name),
                    "{file}: row `{name}`"
                );
                compared += 1;
            }
        }
        assert!(compared > 500, "only {compared} rows compared");
    }

    #[test]
    fn without_rows_keeps_every_other_key_where_it_was() {
        let t = without_rows(TEXT).unwrap();
        assert_eq!(t.lines().count(), TEXT.lines().count());
        let kept: Vec<&str> = t.lines().filter(|l| !l.is_empty()).collect();
        assert_eq!(
            kept,
            [
                "title: t",
                "policy:",
                "  routes: [{ name: A }]",
                "rows:",
                "tail: 1"
            ]
        );
        assert!(without_rows("rows: []\n").is_none());
        assert!(without_rows("title: t\n").is_none());
    }

    #[test]
    fn keeps_the_named_row_where_it_was_and_blanks_the_others() {
        let b = only_rows_named(TEXT, "b c").unwrap();
        assert_eq!(b.lines().count(), TEXT.lines().count());
        let kept: Vec<&str> = b.lines().filter(|l| !l.is_empty()).collect();
        assert_eq!(
            kept,
            [
                "title: t",
                "policy:",
                "  routes: [{ name: A }]",
                "rows:",
                "  - name: 'b c'",
                "    inject:",
                "      A: [200]",
                "    expect:",
                "      trace: |",
                "        A1 200 return",
                "tail: 1"
            ]
        );
        assert_eq!(b.lines().nth(9), Some("  - name: 'b c'"));
        let a = only_rows_named(TEXT, "a").unwrap();
        assert!(a.contains("  - name: a\n") && !a.contains("b c") && !a.contains("\"d\""));
        let d = only_rows_named(TEXT, "d").unwrap();
        assert!(d.contains("    name: \"d\" # why\n") && !d.contains("name: a"));
    }

    #[test]
    fn gives_up_on_what_it_does_not_read() {
        assert!(only_rows_named(TEXT, "e").is_none(), "no such row");
        assert!(only_rows_named("rows: [{ name: a }]\n", "a").is_none());
        assert!(only_rows_named("rows:\n  - name: \"a\\tb\"\n", "a\tb").is_none());
        assert!(only_rows_named("rows:\n  - name: &x a\n", "a").is_none());
        assert!(only_rows_named("rows:\n  - name: a\nrows:\n  - name: a\n", "a").is_none());
        assert!(only_rows_named("rows:\n\t- name: a\n", "a").is_none());
        // Items at column 0 are read too.
        let t = "rows:\n- name: a\n  inject: {}\n- name: b\n  inject: {}\n";
        assert_eq!(
            only_rows_named(t, "b").unwrap(),
            "rows:\n\n\n- name: b\n  inject: {}\n"
        );
    }

    /// The name positions read from lines are the index's, key for key.
    fn agrees_with_the_index(text: &str) -> usize {
        let Some(read) = row_names(text) else {
            return 0;
        };
        let index = crate::base::yaml::Positions::index(text);
        for (i, (pos, _)) in read.iter().enumerate() {
            let path = [
                crate::base::yaml::Seg::Key("rows".into()),
                crate::base::yaml::Seg::Index(i),
                crate::base::yaml::Seg::Key("name".into()),
            ];
            assert_eq!(*pos, index.key(&path), "row {i} of:\n{text}");
        }
        read.len()
    }

    #[test]
    fn row_names_are_where_the_index_puts_them() {
        let read = row_names(TEXT).unwrap();
        let names: Vec<&str> = read.iter().map(|(_, n)| *n).collect();
        assert_eq!(names, ["a", "b c", "d"]);
        assert_eq!(read[2].0, Pos { line: 17, col: 5 });
        assert_eq!(agrees_with_the_index(TEXT), 3);
        let t = "rows:\n- name: a\n  inject: {}\n- inject: {}\n  name: b\n";
        assert_eq!(agrees_with_the_index(t), 2);
        // A multibyte character where a key would be is no key (nor a panic).
        let t = "rows:\n  - inject: {}\n  #\u{e9}\n    name: a\n";
        assert_eq!(agrees_with_the_index(t), 1);
        // Names it does not read give no table at all.
        assert!(row_names("rows:\n  - name: a\n  - name: &x b\n").is_none());
        assert!(row_names("rows:\n  - inject: {}\n").is_none());
        assert!(row_names("rows: [{ name: a }]\n").is_none());
    }

    #[test]
    fn chunks_group_rows_by_size_and_keep_every_line_where_it_was() {
        let all = chunks(TEXT, 1).unwrap();
        assert_eq!(all.len(), 3, "one row a chunk");
        let lines = TEXT.lines().count();
        let texts: Vec<String> = (0..3).map(|k| chunk_text(TEXT, &all, k)).collect();
        for t in &texts {
            assert_eq!(t.lines().count(), lines);
            assert!(t.starts_with("title: t\npolicy:\n  routes: [{ name: A }]\nrows:\n"));
            assert!(t.ends_with("tail: 1\n"));
        }
        // Chunk 1 is the row `b c` alone, in place.
        assert_eq!(texts[1], only_rows_named(TEXT, "b c").unwrap());
        assert_eq!(texts[2].lines().nth(16), Some("    name: \"d\" # why"));
        assert!(!texts[0].contains("b c") && texts[0].contains("  - name: a\n"));
        // Everything in one chunk: the text itself.
        let one = chunks(TEXT, TEXT.len()).unwrap();
        assert_eq!(one.len(), 1);
        assert_eq!(chunk_text(TEXT, &one, 0), TEXT);
        // Two chunks: the first two rows, then the last.
        let a_and_b = TEXT.find("  - inject").unwrap() - TEXT.find("  - name: a").unwrap();
        assert_eq!(chunks(TEXT, a_and_b).unwrap().len(), 2);
        // Not the plain shape, or a row without a readable name: no chunks.
        assert!(chunks("rows: [{ name: a }]\n", 1).is_none());
        assert!(chunks("rows:\n  - name: a\n  - inject: {}\n", 1).is_none());
    }
}
