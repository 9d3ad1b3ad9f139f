//! Compiler-style diagnostics for matrix and registry files.
//!
//! Every error points at a file, line and column, shows the source line with a
//! caret, says what was expected and, for misspellings, what was probably
//! meant:
//!
//! ```text
//! error: unknown key `inejct` in a row
//!   --> matrices/fallback.yaml:12:5
//!    |
//! 12 |     inejct:
//!    |     ^ expected one of: name, inject, expect
//!    = help: did you mean `inject`?
//! ```

use std::fmt;

use crate::base::yaml::Pos;

/// One error in one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    /// The file, as the user named it.
    pub file: String,
    /// Where in the file.
    pub pos: Pos,
    /// The headline (lowercase, no trailing period).
    pub message: String,
    /// The label under the caret: what was expected.
    pub label: Option<String>,
    /// A hint such as "did you mean `inject`?".
    pub help: Option<String>,
}

impl Diagnostic {
    /// A diagnostic with only a headline.
    pub fn new(file: &str, pos: Pos, message: impl Into<String>) -> Self {
        Self {
            file: file.to_string(),
            pos,
            message: message.into(),
            label: None,
            help: None,
        }
    }

    /// Sets the label under the caret.
    pub fn label(mut self, label: impl Into<String>) -> Self {
        self.label = Some(label.into());
        self
    }

    /// Sets the help line.
    pub fn help(mut self, help: Option<String>) -> Self {
        self.help = help;
        self
    }

    /// Renders with the source line and caret.
    pub fn render(&self, source: Option<&str>) -> String {
        let line = source.and_then(|s| s.lines().nth(self.pos.line.saturating_sub(1)));
        self.render_line(line)
    }

    /// Renders with the line of `lines` it points at: many diagnostics of
    /// one file index its lines once instead of rescanning the text.
    pub fn render_in(&self, lines: Option<&Lines<'_>>) -> String {
        self.render_line(lines.and_then(|l| l.get(self.pos.line)))
    }

    fn render_line(&self, src_line: Option<&str>) -> String {
        let out = self.render_raw(src_line);
        // No message shows a URL's credentials.
        crate::base::redact::url_credentials(&out).into_owned()
    }

    fn render_raw(&self, src_line: Option<&str>) -> String {
        let mut out = format!("error: {}\n", cut(&self.message, MAX_MESSAGE_CHARS));
        let line_no = self.pos.line.to_string();
        let pad = " ".repeat(line_no.len());
        out.push_str(&format!(
            "{pad}--> {}:{}:{}\n",
            self.file, self.pos.line, self.pos.col
        ));
        if let Some(line) = src_line {
            let line = visible(line);
            let (line, col) = window(&line, self.pos.col);
            out.push_str(&format!("{pad} |\n{line_no} | {line}\n"));
            let caret_pad = " ".repeat(col.saturating_sub(1));
            out.push_str(&format!("{pad} | {caret_pad}^"));
            if let Some(label) = &self.label {
                out.push(' ');
                out.push_str(label);
            }
            out.push('\n');
        } else if let Some(label) = &self.label {
            out.push_str(&format!("{pad} = {label}\n"));
        }
        if let Some(help) = &self.help {
            out.push_str(&format!("{pad} = help: {help}\n"));
        }
        out
    }
}

/// Where each line of a text starts, found in one pass, so the n-th line
/// is found at once (as `str::lines` numbers them, 1-based, without `\r`).
#[derive(Debug, Clone)]
pub struct Lines<'a> {
    text: &'a str,
    starts: Vec<usize>,
}

impl<'a> Lines<'a> {
    /// Indexes `text`.
    pub fn new(text: &'a str) -> Self {
        let mut starts = vec![0];
        starts.extend(
            text.bytes()
                .enumerate()
                .filter(|(_, b)| *b == b'\n')
                .map(|(i, _)| i + 1)
                .filter(|i| *i < text.len()),
        );
        if text.is_empty() {
            starts.clear();
        }
        Self { text, starts }
    }

    /// Line `n` (1-based), without its line break.
    pub fn get(&self, n: usize) -> Option<&'a str> {
        let start = *self.starts.get(n.checked_sub(1)?)?;
        let end = self.starts.get(n).map_or(self.text.len(), |e| e - 1);
        let line = &self.text[start..end];
        let line = line.strip_suffix('\n').unwrap_or(line);
        Some(line.strip_suffix('\r').unwrap_or(line))
    }
}

/// The longest message rendered, in characters; the rest is cut with a
/// count (a message quoting a hostile token stays readable).
pub const MAX_MESSAGE_CHARS: usize = 1000;

/// The widest source excerpt shown under a message, in characters: a long
/// line is shown as a window around the caret, never whole.
pub const MAX_EXCERPT_CHARS: usize = 120;

/// `text` cut to `max` characters, with how many were left out.
pub fn cut(text: &str, max: usize) -> std::borrow::Cow<'_, str> {
    match text.char_indices().nth(max) {
        None => std::borrow::Cow::Borrowed(text),
        Some((at, _)) => {
            let left = text[at..].chars().count();
            std::borrow::Cow::Owned(format!("{}… ({left} more characters)", &text[..at]))
        }
    }
}

/// `line` with control characters shown as their Unicode pictures (a tab
/// as `␉`, NUL as `␀`): one character each, so the caret stays aligned,
/// and nothing invisible or terminal-controlling is echoed.
fn visible(line: &str) -> std::borrow::Cow<'_, str> {
    if !line.contains(|c: char| c.is_control()) {
        return std::borrow::Cow::Borrowed(line);
    }
    line.chars()
        .map(|c| match c as u32 {
            u @ 0..=0x1f => char::from_u32(0x2400 + u).unwrap_or('\u{FFFD}'),
            0x7f => '\u{2421}',
            _ if c.is_control() => '\u{FFFD}',
            _ => c,
        })
        .collect::<String>()
        .into()
}

/// A window of at most [`MAX_EXCERPT_CHARS`] characters of `line` around
/// the 1-based column `col`, and the caret's column in the window.
fn window(line: &str, col: usize) -> (std::borrow::Cow<'_, str>, usize) {
    let n = line.chars().count();
    if n <= MAX_EXCERPT_CHARS {
        return (std::borrow::Cow::Borrowed(line), col);
    }
    let at = col.saturating_sub(1).min(n);
    let start = at.saturating_sub(MAX_EXCERPT_CHARS / 2);
    let end = (start + MAX_EXCERPT_CHARS).min(n);
    let mut out = String::new();
    let mut caret = at - start + 1;
    if start > 0 {
        out.push('…');
        caret += 1;
    }
    out.extend(line.chars().skip(start).take(end - start));
    if end < n {
        out.push('…');
    }
    (std::borrow::Cow::Owned(out), caret)
}

/// The load layer's error: all errors found in one file, with its text
/// for rendering, and what kind of failure it is.
#[derive(Debug, Clone)]
pub struct FileErrors {
    /// What kind of failure.
    pub kind: LoadErrorKind,
    /// The file, as the user named it.
    pub file: String,
    /// The file's text, when it could be read.
    pub source: Option<String>,
    /// Every error, in file order.
    pub diagnostics: Vec<Diagnostic>,
}

/// The kinds of [`FileErrors`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoadErrorKind {
    /// The file could not be read.
    Unreadable,
    /// The text is not YAML.
    Syntax,
    /// The YAML does not say what a matrix or registry file must.
    Invalid,
}

/// The most diagnostics one file's error shows: a file of 16 MiB can hold
/// hundreds of thousands of small mistakes (a long list of bad jitter
/// draws, found by the matrix fuzz target: 376 KB of message from a 6 KB
/// file), and the first ones are what the author fixes first.
pub const MAX_SHOWN_DIAGNOSTICS: usize = 50;

impl fmt::Display for FileErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let lines = self.source.as_deref().map(Lines::new);
        for (i, d) in self
            .diagnostics
            .iter()
            .take(MAX_SHOWN_DIAGNOSTICS)
            .enumerate()
        {
            if i > 0 {
                writeln!(f)?;
            }
            f.write_str(&d.render_in(lines.as_ref()))?;
        }
        let more = self.diagnostics.len().saturating_sub(MAX_SHOWN_DIAGNOSTICS);
        if more > 0 {
            write!(
                f,
                "\n… and {more} more errors in {} (the first {MAX_SHOWN_DIAGNOSTICS} are shown)",
                self.file
            )?;
        }
        Ok(())
    }
}

impl std::error::Error for FileErrors {}

/// Edit distance between two words, counting a swap of neighbours as one
/// edit (optimal string alignment), for "did you mean".
pub fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let mut d = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in d[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut v = (d[i - 1][j] + 1)
                .min(d[i][j - 1] + 1)
                .min(d[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                v = v.min(d[i - 2][j - 2] + 1);
            }
            d[i][j] = v;
        }
    }
    d[a.len()][b.len()]
}

/// The closest candidate, if it is close enough to be a likely typo.
pub fn did_you_mean<'a, I>(word: &str, candidates: I) -> Option<String>
where
    I: IntoIterator<Item = &'a str>,
{
    let lower = word.to_ascii_lowercase();
    let candidates: Vec<&str> = candidates.into_iter().collect();
    let close = candidates
        .iter()
        .map(|c| (edit_distance(&lower, &c.to_ascii_lowercase()), *c))
        .filter(|(d, c)| *d <= (c.len().max(word.len()) / 3).max(1))
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| format!("did you mean `{c}`?"));
    if close.is_some() || lower.len() < 3 {
        return close;
    }
    // A part of a longer name: `refused` for `guidance-refused`.
    let parts: Vec<&str> = candidates
        .iter()
        .copied()
        .filter(|c| {
            c.to_ascii_lowercase()
                .split(['-', '_', '.'])
                .any(|p| p == lower)
        })
        .collect();
    match parts.as_slice() {
        [] => None,
        [one] => Some(format!("did you mean `{one}`?")),
        more => Some(format!(
            "did you mean {}?",
            more.iter()
                .map(|c| format!("`{c}`"))
                .collect::<Vec<_>>()
                .join(" or ")
        )),
    }
}

/// ` (did you mean `x`?)` when a candidate is close enough, else nothing:
/// the suffix one-line messages carry (see [`split_hint`]).
pub fn hint_suffix<'a, I>(word: &str, candidates: I) -> String
where
    I: IntoIterator<Item = &'a str>,
{
    did_you_mean(word, candidates)
        .map(|h| format!(" ({h})"))
        .unwrap_or_default()
}

/// Splits a trailing ` (did you mean `x`?)` off a message into a help line.
pub fn split_hint(message: &str) -> (String, Option<String>) {
    match message.rfind(" (did you mean ") {
        Some(i) if message.ends_with("?)") => (
            message[..i].to_string(),
            Some(message[i + 2..message.len() - 1].to_string()),
        ),
        _ => (message.to_string(), None),
    }
}

/// Moves `pos` (the start of a line of source) to the first token of
/// `message` written in backquotes, when that token appears on the line.
pub fn token_pos(source: &str, pos: Pos, message: &str) -> Pos {
    token_pos_in(source.lines().nth(pos.line.saturating_sub(1)), pos, message)
}

/// [`token_pos`] given the line `pos` is on.
pub fn token_pos_in(line: Option<&str>, pos: Pos, message: &str) -> Pos {
    let Some(token) = message.split('`').nth(1).filter(|t| !t.is_empty()) else {
        return pos;
    };
    let Some(line) = line else {
        return pos;
    };
    let from = pos.col.saturating_sub(1).min(line.len());
    let found = line[from..].match_indices(token).find(|(i, _)| {
        let at = from + i;
        let before = line[..at].chars().next_back();
        let after = line[at + token.len()..].chars().next();
        let edge = |c: Option<char>| c.is_none_or(|c| !(c.is_alphanumeric() || c == '_'));
        edge(before) && edge(after)
    });
    match found {
        Some((i, _)) => Pos {
            line: pos.line,
            col: line[..from + i].chars().count() + 1,
        },
        None => pos,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_lines_and_messages_are_cut_around_the_caret() {
        let line = format!("{}X{}", "a".repeat(500), "b".repeat(500));
        let d = Diagnostic::new("m.yaml", Pos { line: 1, col: 501 }, "x".repeat(1500));
        let r = d.render(Some(&line));
        assert!(r.contains("… (500 more characters)"), "{r}");
        let excerpt = r.lines().nth(3).unwrap();
        let caret = r.lines().nth(4).unwrap();
        assert!(excerpt.chars().count() < 140, "{excerpt}");
        let col = caret.chars().position(|c| c == '^').unwrap();
        assert_eq!(excerpt.chars().nth(col), Some('X'), "{excerpt}\n{caret}");
    }

    #[test]
    fn a_file_with_thousands_of_errors_shows_the_first_ones_and_counts_the_rest() {
        let text = "x\n".repeat(3000);
        let errors = FileErrors {
            kind: LoadErrorKind::Invalid,
            file: "m.yaml".into(),
            source: Some(text),
            diagnostics: (1..=3000)
                .map(|line| Diagnostic::new("m.yaml", Pos { line, col: 1 }, "bad"))
                .collect(),
        };
        let r = errors.to_string();
        assert_eq!(
            r.matches("error: bad").count(),
            MAX_SHOWN_DIAGNOSTICS,
            "{r}"
        );
        assert!(r.contains("m.yaml:50:1"), "{r}");
        assert!(!r.contains("m.yaml:51:1"), "{r}");
        assert!(
            r.ends_with("… and 2950 more errors in m.yaml (the first 50 are shown)"),
            "{r}"
        );
        assert!(r.len() < 20_000, "{} bytes", r.len());
    }

    #[test]
    fn lines_are_numbered_as_str_lines_numbers_them() {
        for text in ["", "a", "a\n", "a\r\nb", "a\n\nb\n", "\n", "x\ny\r\n"] {
            let l = Lines::new(text);
            let want: Vec<&str> = text.lines().collect();
            let got: Vec<&str> = (1..=want.len() + 1).map_while(|n| l.get(n)).collect();
            assert_eq!(got, want, "{text:?}");
            assert_eq!(l.get(0), None);
        }
    }

    #[test]
    fn control_characters_in_an_excerpt_are_shown_as_pictures() {
        let d = Diagnostic::new("m.yaml", Pos { line: 1, col: 4 }, "x");
        let r = d.render(Some("a\tb\0c\u{1b}[31m"));
        assert!(r.contains("1 | a␉b␀c␛[31m\n"), "{r}");
        assert!(r.contains("  |    ^"), "{r}");
    }

    #[test]
    fn urls_in_messages_and_excerpts_lose_their_credentials() {
        let d = Diagnostic::new(
            "m.yaml",
            Pos { line: 1, col: 7 },
            "bad `http://u:hunter2@h:1/`",
        );
        let r = d.render(Some("url: http://u:hunter2@h:1/"));
        assert!(!r.contains("hunter2"), "{r}");
        assert!(r.contains("bad `http://***@h:1/`"), "{r}");
    }

    #[test]
    fn renders_like_a_compiler() {
        let d = Diagnostic::new("m.yaml", Pos { line: 2, col: 3 }, "unknown key `inejct`")
            .label("expected one of: name, inject")
            .help(did_you_mean("inejct", ["name", "inject"]));
        assert_eq!(
            d.render(Some("rows:\n  inejct: 1\n")),
            "error: unknown key `inejct`\n --> m.yaml:2:3\n  |\n2 |   inejct: 1\n  |   ^ expected one of: name, inject\n  = help: did you mean `inject`?\n"
        );
    }

    #[test]
    fn suggests_only_close_words() {
        assert_eq!(
            did_you_mean("retyr", ["retry", "switch"]).as_deref(),
            Some("did you mean `retry`?")
        );
        assert_eq!(
            did_you_mean("retyr", ["return", "retry"]).as_deref(),
            Some("did you mean `retry`?")
        );
        assert_eq!(did_you_mean("banana", ["retry", "switch"]), None);
    }
}
