//! Collecting the diagnostics of one file: every error with its position
//! (indexed only when an error needs it), rendered like a compiler's.

use crate::base::diag::{did_you_mean, Diagnostic, FileErrors, Lines, LoadErrorKind};
use crate::base::yaml::{self, Pos, Positions, Seg, YamlError};

/// Collects diagnostics for one file; indexes positions only when needed.
pub(crate) struct Ctx<'a> {
    pub(crate) file: &'a str,
    pub(crate) source: &'a str,
    positions: Option<Positions>,
    /// The source's line starts, indexed on the first need.
    lines: Option<Lines<'a>>,
    pub(crate) diags: Vec<Diagnostic>,
    /// Whether the YAML itself did not parse.
    syntax: bool,
    /// Whether a row that asserts nothing loads as pending (bless writes
    /// its expectations) instead of being an error.
    pub(crate) pending_ok: bool,
    /// Each row's name, when it has one: messages say ``row `NAME` ``
    /// rather than `rows[3]`.
    pub(crate) row_names: Vec<Option<String>>,
}

/// A schema key's path step (no allocation: see [`crate::base::yaml::Key`]).
pub(crate) fn key(s: &'static str) -> Seg {
    Seg::Key(crate::base::yaml::Key::lit(s))
}

/// A path step for a key read from the file (a route's name).
pub(crate) fn dyn_key(s: &str) -> Seg {
    Seg::Key(s.into())
}

pub(crate) fn child(path: &[Seg], seg: Seg) -> Vec<Seg> {
    // Sized once: `to_vec` then `push` grew every path (2,000 instructions
    // a row).
    let mut p = Vec::with_capacity(path.len() + 1);
    p.extend_from_slice(path);
    p.push(seg);
    p
}

impl<'a> Ctx<'a> {
    pub(crate) fn new(file: &'a str, source: &'a str) -> Self {
        Self {
            file,
            source,
            positions: None,
            lines: None,
            diags: Vec::new(),
            syntax: false,
            pending_ok: false,
            row_names: Vec::new(),
        }
    }

    /// The loaded value when no error was found; otherwise every error of
    /// the file, in file order.
    pub(crate) fn finish<T>(self, value: Option<T>) -> Result<T, FileErrors> {
        match value {
            Some(v) if self.diags.is_empty() => Ok(v),
            _ => {
                let mut diagnostics = self.diags;
                diagnostics.sort_by_key(|d| d.pos);
                diagnostics.dedup();
                Err(FileErrors {
                    kind: if self.syntax {
                        LoadErrorKind::Syntax
                    } else {
                        LoadErrorKind::Invalid
                    },
                    file: self.file.to_string(),
                    source: Some(self.source.to_string()),
                    diagnostics,
                })
            }
        }
    }

    pub(crate) fn positions(&mut self) -> &Positions {
        let source = self.source;
        self.positions
            .get_or_insert_with(|| Positions::index(source))
    }

    /// Line `n` (1-based) of the source, from an index built once.
    pub(crate) fn line(&mut self, n: usize) -> Option<&'a str> {
        let source = self.source;
        self.lines.get_or_insert_with(|| Lines::new(source)).get(n)
    }

    /// The source's positions and lines, each indexed once.
    pub(crate) fn indexed(&mut self) -> (&Positions, &Lines<'a>) {
        let source = self.source;
        let positions = self
            .positions
            .get_or_insert_with(|| Positions::index(source));
        let lines = self.lines.get_or_insert_with(|| Lines::new(source));
        (positions, lines)
    }

    pub(crate) fn pos(&mut self, path: &[Seg]) -> Pos {
        self.positions().value(path)
    }

    pub(crate) fn key_pos(&mut self, path: &[Seg]) -> Pos {
        self.positions().key(path)
    }

    pub(crate) fn error(&mut self, path: &[Seg], message: impl Into<String>) {
        let pos = self.pos(path);
        self.diags.push(Diagnostic::new(self.file, pos, message));
    }

    pub(crate) fn error_at(
        &mut self,
        pos: Pos,
        message: impl Into<String>,
        label: Option<String>,
        help: Option<String>,
    ) {
        let mut d = Diagnostic::new(self.file, pos, message).help(help);
        d.label = label;
        self.diags.push(d);
    }

    /// Turns a serde / semantic error into a diagnostic.
    pub(crate) fn yaml_error(&mut self, e: YamlError) {
        // "unknown field `x`, expected one of `a`, `b`" / "unknown variant ..."
        for kind in ["unknown field", "unknown variant"] {
            if let Some(rest) = e.message.strip_prefix(kind) {
                let word = rest.split('`').nth(1).unwrap_or("").to_string();
                let expected: Vec<String> = rest
                    .split_once("expected")
                    .map(|(_, list)| {
                        list.split('`')
                            .skip(1)
                            .step_by(2)
                            .map(str::to_string)
                            .collect()
                    })
                    .unwrap_or_default();
                let mut parent = e.path.clone();
                if kind == "unknown field" && parent.last() == Some(&dyn_key(&word)) {
                    parent.pop();
                }
                let pos = match e.pos {
                    Some(p) => p,
                    None if kind == "unknown field" => {
                        self.key_pos(&child(&parent, dyn_key(&word)))
                    }
                    None => self.pos(&e.path),
                };
                let what = if kind == "unknown field" {
                    "key"
                } else {
                    "value"
                };
                let place = self.describe(&parent);
                let label = (!expected.is_empty())
                    .then(|| format!("expected one of: {}", expected.join(", ")));
                let help = did_you_mean(&word, expected.iter().map(String::as_str));
                self.error_at(pos, format!("unknown {what} `{word}`{place}"), label, help);
                return;
            }
        }
        if let Some(field) = e
            .message
            .strip_prefix("missing field `")
            .and_then(|r| r.split('`').next())
        {
            let pos = if e.path.is_empty() {
                Pos { line: 1, col: 1 }
            } else {
                self.pos(&e.path)
            };
            let place = if e.path.is_empty() {
                "the file".to_string()
            } else {
                self.place(&e.path)
            };
            self.error_at(
                pos,
                format!("missing key `{field}` in {place}"),
                Some(format!("add `{field}:` here")),
                None,
            );
            return;
        }
        let pos = match e.pos {
            Some(p) => p,
            None => self.pos(&e.path),
        };
        let msg = if e.path.is_empty() {
            e.message
        } else {
            format!("{}: {}", self.place(&e.path), e.message)
        };
        self.error_at(pos, msg, None, None);
    }
}

/// A YAML syntax error: what the parser said, at its position.
pub(crate) fn syntax_error(cx: &mut Ctx<'_>, e: YamlError) {
    cx.syntax = true;
    if let Some((mut path, name)) = duplicate_key(&e.message) {
        path.push(dyn_key(&name));
        if let Some(second) = cx.positions().duplicate(&path) {
            let first = cx.key_pos(&path).line;
            path.pop();
            let place = if path.is_empty() {
                "the file".to_string()
            } else {
                format!("`{}`", yaml::path_text(&path))
            };
            cx.error_at(
                second,
                format!("duplicate key `{name}` in {place}: a key is written once per mapping (first on line {first})"),
                Some("written a second time here".into()),
                None,
            );
            return;
        }
    }
    let pos = e.pos.unwrap_or(Pos { line: 1, col: 1 });
    let label = yaml::syntax_label(&e).to_string();
    cx.error_at(
        pos,
        format!("invalid YAML: {}", e.message),
        Some(label),
        None,
    );
}

/// The path and key of serde_yaml's `rows[0]: duplicate entry with key
/// "inject"`.
fn duplicate_key(message: &str) -> Option<(Vec<Seg>, String)> {
    const MARK: &str = "duplicate entry with key \"";
    let at = message.find(MARK)?;
    let path = message[..at].strip_suffix(": ").unwrap_or("");
    let name = message[at + MARK.len()..].strip_suffix('"')?;
    Some((yaml::parse_path_text(path), name.to_string()))
}

impl Ctx<'_> {
    /// ` in <place>` (see [`Ctx::place`]), or nothing for the file itself.
    pub(crate) fn describe(&self, path: &[Seg]) -> String {
        if path.is_empty() {
            String::new()
        } else {
            format!(" in {}", self.place(path))
        }
    }

    /// A path as a message names it: ``row `NAME` `` for a named row,
    /// ``` `expect.trace` of row `NAME` ``` below it, else `` `rows[3]` ``
    /// and `` `policy.routes` ``.
    pub(crate) fn place(&self, path: &[Seg]) -> String {
        if let [Seg::Key(k), Seg::Index(i), rest @ ..] = path {
            if k == "rows" {
                if let Some(Some(name)) = self.row_names.get(*i) {
                    let row = format!("row `{}`", crate::base::label::escape(name));
                    return if rest.is_empty() {
                        row
                    } else {
                        format!("`{}` of {row}", yaml::path_text(rest))
                    };
                }
            }
        }
        format!("`{}`", yaml::path_text(path))
    }
}
