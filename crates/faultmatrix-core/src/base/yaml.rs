//! The one module that touches YAML libraries.
//!
//! serde_yaml (deprecated upstream) turns text into serde shapes; a maintained
//! fork can replace it here in one change. yaml-rust2 is used only to index
//! where every node sits (line and column), which serde_yaml does not expose:
//! the index is built lazily, when a diagnostic or a failing row needs a
//! position, so the fast path parses each file once.
//!
//! In front of serde_yaml sits [`fast`], a hand-written front end for the
//! subset matrices are written in: it deserializes straight from the text
//! and gives up on anything else, so serde_yaml still decides every error
//! (with its position) and every construct outside the subset.

use std::collections::HashMap;

use serde::de::DeserializeOwned;
use yaml_rust2::parser::{Event, MarkedEventReceiver, Parser};
use yaml_rust2::scanner::Marker;

pub use serde_yaml::Value;

/// A 1-based line and column in a source file.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Default,
    PartialOrd,
    Ord,
    serde::Serialize,
    serde::Deserialize,
)]
pub struct Pos {
    /// 1-based line.
    pub line: usize,
    /// 1-based column.
    pub col: usize,
}

/// A YAML error with its position, when the library knows it.
#[derive(Debug, Clone)]
pub struct YamlError {
    /// Where the error is, if known.
    pub pos: Option<Pos>,
    /// Path of the node in error (`rows[2].inject.A`), empty for the root.
    pub path: Vec<Seg>,
    /// What went wrong, without position suffix.
    pub message: String,
}

/// One step of a path into a YAML document.
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum Seg {
    /// A mapping key.
    Key(Key),
    /// A sequence index (0-based).
    Index(usize),
}

/// A mapping key in a [`Seg`]: a schema's own key (`rows`, `expect`) is
/// held as a `&'static str`, any other (a route's name) as one shared
/// allocation, so copying a path allocates nothing. Paths are built for
/// every node a row's validation visits (an error must name its node):
/// with `String` keys, copying them cost a row about 17 allocations.
#[derive(Clone)]
pub struct Key(KeyRepr);

#[derive(Clone)]
enum KeyRepr {
    Static(&'static str),
    Shared(std::sync::Arc<str>),
}

impl Key {
    /// A key known when the program is built (no allocation).
    pub const fn lit(s: &'static str) -> Self {
        Self(KeyRepr::Static(s))
    }

    /// The key's text.
    pub fn as_str(&self) -> &str {
        match &self.0 {
            KeyRepr::Static(s) => s,
            KeyRepr::Shared(s) => s,
        }
    }
}

impl std::ops::Deref for Key {
    type Target = str;
    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl AsRef<str> for Key {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

impl std::borrow::Borrow<str> for Key {
    fn borrow(&self) -> &str {
        self.as_str()
    }
}

impl From<&str> for Key {
    fn from(s: &str) -> Self {
        Self(KeyRepr::Shared(s.into()))
    }
}

impl From<String> for Key {
    fn from(s: String) -> Self {
        Self(KeyRepr::Shared(s.into()))
    }
}

impl From<&String> for Key {
    fn from(s: &String) -> Self {
        Self(KeyRepr::Shared(s.as_str().into()))
    }
}

/// Keys a stored model (`load::stored`) reads back without allocating:
/// the ones every row's paths hold. Any other key is read as shared text.
const STORED_KEYS: [&str; 16] = [
    "rows",
    "name",
    "inject",
    "expect",
    "trace",
    "policy",
    "routes",
    "attempts",
    "codes",
    "max_attempts",
    "requests",
    "settings",
    "defaults",
    "error",
    "stop",
    "tape",
];

impl serde::Serialize for Key {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> serde::Deserialize<'de> for Key {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = Key;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a key")
            }
            fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<Key, E> {
                Ok(match STORED_KEYS.iter().find(|k| **k == s) {
                    Some(k) => Key::lit(k),
                    None => Key::from(s),
                })
            }
        }
        d.deserialize_str(V)
    }
}

impl std::fmt::Debug for Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(self.as_str(), f)
    }
}

impl std::fmt::Display for Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl PartialEq for Key {
    fn eq(&self, other: &Self) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Eq for Key {}

impl std::hash::Hash for Key {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.as_str().hash(state);
    }
}

impl PartialEq<str> for Key {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for Key {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl PartialEq<String> for Key {
    fn eq(&self, other: &String) -> bool {
        self.as_str() == other.as_str()
    }
}

/// Renders a path as `rows[2].inject.A`.
pub fn path_text(path: &[Seg]) -> String {
    let mut out = String::new();
    for seg in path {
        match seg {
            Seg::Key(k) => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(k);
            }
            Seg::Index(i) => out.push_str(&format!("[{i}]")),
        }
    }
    out
}

/// Reads `rows[2].inject.A` back into a path (the inverse of
/// [`path_text`] for keys without `.` or `[`).
pub fn parse_path_text(text: &str) -> Vec<Seg> {
    let mut out = Vec::new();
    for part in text.split('.').filter(|p| !p.is_empty()) {
        let (name, mut rest) = part.split_once('[').map_or((part, ""), |(n, r)| (n, r));
        if !name.is_empty() {
            out.push(Seg::Key(name.into()));
        }
        while let Some((i, after)) = rest.split_once(']') {
            if let Ok(i) = i.parse() {
                out.push(Seg::Index(i));
            }
            rest = after.strip_prefix('[').unwrap_or(after);
        }
    }
    out
}

/// Drops ` at line N column M` (the position is shown separately), wherever
/// the library put it in the message.
fn strip_location(msg: String) -> String {
    let Some(i) = msg.find(" at line ") else {
        return msg;
    };
    if !msg[i + 9..].starts_with(|c: char| c.is_ascii_digit()) {
        return msg;
    }
    let rest = &msg[i + " at line ".len()..];
    let digits = |s: &str| s.len() - s.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    let n = digits(rest);
    let after_line = &rest[n..];
    let tail = match after_line.strip_prefix(" column ") {
        Some(r) => &r[digits(r)..],
        None => after_line,
    };
    let once = format!("{}{}", &msg[..i], tail);
    if once.contains(" at line ") && once.len() < msg.len() {
        strip_location(once)
    } else {
        once
    }
}

fn from_serde_yaml(err: serde_yaml::Error) -> YamlError {
    let pos = err.location().map(|l| Pos {
        line: l.line(),
        col: l.column(),
    });
    YamlError {
        pos,
        path: Vec::new(),
        message: strip_location(err.to_string()),
    }
}

mod fast;
pub mod one_row;
mod precheck;

pub use precheck::MAX_DEPTH;

/// What to write under the caret of a syntax error: the pre-check's own
/// label for its messages, else a hint about indentation and brackets.
pub fn syntax_label(e: &YamlError) -> &'static str {
    precheck::label(&e.message)
        .unwrap_or("the YAML syntax breaks here (check the indentation and brackets)")
}

/// A byte-order mark opening a file (YAML allows one there; libyaml reads
/// it as a second document).
const BOM: char = '\u{FEFF}';

/// `text` without its opening byte-order mark, and whether it had one
/// (positions on line 1 then move right by one column).
fn strip_bom(text: &str) -> (&str, bool) {
    match text.strip_prefix(BOM) {
        Some(rest) => (rest, true),
        None => (text, false),
    }
}

/// Moves a position found in text stripped of its byte-order mark back to
/// where it is in the file.
fn unstrip(pos: Pos, bom: bool) -> Pos {
    if bom && pos.line == 1 {
        Pos {
            line: 1,
            col: pos.col + 1,
        }
    } else {
        pos
    }
}

/// Parses text straight into a serde shape (the fast path): the fast front
/// end first, serde_yaml when the text is outside its subset or does not
/// fit `T` (the error, with its position, is always serde_yaml's, unless
/// the linear pre-check refuses the text first: too deep, or characters
/// YAML does not allow).
pub fn from_str<T: DeserializeOwned>(text: &str) -> Result<T, YamlError> {
    let (body, _) = strip_bom(text);
    match fast::from_str(body) {
        Some(t) => Ok(t),
        None => from_str_reference(text),
    }
}

/// [`from_str`], with where each item of the root's `rows:` block
/// sequence writes its `name` key, in item order, when the fast front end
/// read the text (`None` when serde_yaml did: ask [`Positions`]). An item
/// whose `name` is not a block mapping key notes nothing, so a caller must
/// use the list only when it has one position per item.
pub fn from_str_noting_row_names<T: DeserializeOwned>(
    text: &str,
) -> Result<(T, Option<Vec<Pos>>), YamlError> {
    let (body, bom) = strip_bom(text);
    match fast::from_str_noting_row_names(body) {
        Some((t, offsets)) => Ok((t, Some(positions_of(body, &offsets, bom)))),
        None => from_str_reference(text).map(|t| (t, None)),
    }
}

/// The 1-based line and column of keys noted as increasing byte offsets
/// into `body` (the text after any byte-order mark) of their line and of
/// the key, with only ASCII before the key on its line; the newlines are
/// counted once, in a loop the compiler vectorizes.
fn positions_of(body: &str, noted: &[(usize, usize)], bom: bool) -> Vec<Pos> {
    let b = body.as_bytes();
    let mut out = Vec::with_capacity(noted.len());
    let (mut line, mut at) = (1, 0);
    for &(line_start, key) in noted {
        line += count_newlines(&b[at..line_start]);
        at = line_start;
        let col = key - line_start + 1;
        out.push(unstrip(Pos { line, col }, bom));
    }
    out
}

/// The newlines in `b`. Counted in byte-wide sums over blocks of 255
/// bytes, which the compiler vectorizes 32 bytes at a time; a sum into a
/// `usize` a byte at a time cost a row (240 bytes) about 1,100
/// instructions.
fn count_newlines(b: &[u8]) -> usize {
    b.chunks(255)
        .map(|block| {
            usize::from(
                block
                    .iter()
                    .fold(0u8, |n, &c| n.wrapping_add(u8::from(c == b'\n'))),
            )
        })
        .sum()
}

/// Parses text with serde_yaml alone (after the pre-check): the reference
/// the fast front end is tested and benchmarked against.
pub fn from_str_reference<T: DeserializeOwned>(text: &str) -> Result<T, YamlError> {
    let (body, bom) = strip_bom(text);
    let located = |mut e: YamlError| {
        e.pos = e.pos.map(|p| unstrip(p, bom));
        e
    };
    precheck::check(body).map_err(located)?;
    serde_yaml::from_str(body)
        .map_err(from_serde_yaml)
        .map_err(located)
}

/// Parses text into an untyped value (only syntax errors fail here).
pub fn parse_value(text: &str) -> Result<Value, YamlError> {
    from_str(text)
}

/// Deserializes one node, reporting the path of the first error inside it.
pub fn from_value<T: DeserializeOwned>(value: &Value, base: &[Seg]) -> Result<T, YamlError> {
    // Fast path without path tracking; on error, deserialize again to learn where.
    if let Ok(t) = T::deserialize(value) {
        return Ok(t);
    }
    serde_path_to_error::deserialize(value).map_err(|e| {
        let mut path = base.to_vec();
        for seg in e.path().iter() {
            match seg {
                serde_path_to_error::Segment::Seq { index } => path.push(Seg::Index(*index)),
                serde_path_to_error::Segment::Map { key } => {
                    path.push(Seg::Key(key.as_str().into()))
                }
                serde_path_to_error::Segment::Enum { variant } => {
                    path.push(Seg::Key(variant.as_str().into()))
                }
                serde_path_to_error::Segment::Unknown => {}
            }
        }
        YamlError {
            pos: None,
            path,
            message: strip_location(e.into_inner().to_string()),
        }
    })
}

/// Writes a value as YAML text (tapes are written this way).
pub fn to_string<T: serde::Serialize>(value: &T) -> Result<String, String> {
    serde_yaml::to_string(value).map_err(|e| e.to_string())
}

/// Converts a YAML node to JSON (bodies are JSON on the wire).
pub fn to_json(value: &Value) -> Result<serde_json::Value, String> {
    serde_json::to_value(value).map_err(|e| e.to_string())
}

/// Where every node of a document sits.
#[derive(Debug, Default)]
pub struct Positions {
    values: HashMap<Vec<Seg>, Pos>,
    keys: HashMap<Vec<Seg>, Pos>,
    /// The second occurrence of a key written twice in one mapping.
    duplicates: HashMap<Vec<Seg>, Pos>,
}

impl Positions {
    /// Indexes a document. Text that does not parse gives an empty index.
    pub fn index(text: &str) -> Self {
        let (body, bom) = strip_bom(text);
        let mut rx = Indexer::default();
        if precheck::check(body).is_err() {
            return rx.out;
        }
        let mut parser = Parser::new_from_str(body);
        let _ = parser.load(&mut rx, false);
        if bom {
            for pos in rx.out.values.values_mut().chain(rx.out.keys.values_mut()) {
                *pos = unstrip(*pos, true);
            }
            for pos in rx.out.duplicates.values_mut() {
                *pos = unstrip(*pos, true);
            }
        }
        rx.out
    }

    /// Where the key that names `path` is written a second time in its
    /// mapping, if it is.
    pub fn duplicate(&self, path: &[Seg]) -> Option<Pos> {
        self.duplicates.get(path).copied()
    }

    /// Position of the value at `path`, or of its nearest indexed ancestor.
    pub fn value(&self, path: &[Seg]) -> Pos {
        let mut p = path;
        loop {
            if let Some(pos) = self.values.get(p) {
                return *pos;
            }
            if p.is_empty() {
                return Pos { line: 1, col: 1 };
            }
            p = &p[..p.len() - 1];
        }
    }

    /// Position of the key that names `path` (its last segment), falling
    /// back to the value's position.
    pub fn key(&self, path: &[Seg]) -> Pos {
        self.keys
            .get(path)
            .copied()
            .unwrap_or_else(|| self.value(path))
    }

    /// Keys of the mapping at `path`, with positions, in no particular order.
    pub fn keys_under<'a>(&'a self, path: &'a [Seg]) -> impl Iterator<Item = (&'a str, Pos)> + 'a {
        self.keys.iter().filter_map(move |(k, pos)| {
            if k.len() == path.len() + 1 && k.starts_with(path) {
                match k.last() {
                    Some(Seg::Key(name)) => Some((name.as_str(), *pos)),
                    _ => None,
                }
            } else {
                None
            }
        })
    }
}

enum Frame {
    Map { key: Option<String> },
    Seq { next: usize },
}

#[derive(Default)]
struct Indexer {
    stack: Vec<Frame>,
    path: Vec<Seg>,
    out: Positions,
}

impl Indexer {
    /// Called before a node in value position: returns true when the node is
    /// a mapping key instead.
    fn enter_node(&mut self, pos: Pos, scalar_key: Option<&str>) -> bool {
        match self.stack.last_mut() {
            Some(Frame::Map { key }) if key.is_none() => {
                // This node is a key.
                let name = scalar_key.unwrap_or("?").to_string();
                *key = Some(name.clone());
                let mut p = self.path.clone();
                p.push(Seg::Key(name.into()));
                match self.out.keys.entry(p) {
                    std::collections::hash_map::Entry::Occupied(e) => {
                        self.out.duplicates.entry(e.key().clone()).or_insert(pos);
                    }
                    std::collections::hash_map::Entry::Vacant(e) => {
                        e.insert(pos);
                    }
                }
                true
            }
            Some(Frame::Map { key }) => {
                let name = key.clone().unwrap_or_default();
                self.path.push(Seg::Key(name.into()));
                self.out.values.insert(self.path.clone(), pos);
                false
            }
            Some(Frame::Seq { next }) => {
                let i = *next;
                *next += 1;
                self.path.push(Seg::Index(i));
                self.out.values.insert(self.path.clone(), pos);
                false
            }
            None => {
                self.out.values.insert(Vec::new(), pos);
                false
            }
        }
    }

    /// Called after a complete value node.
    fn leave_value(&mut self) {
        match self.stack.last_mut() {
            Some(Frame::Map { key }) => {
                *key = None;
                self.path.pop();
            }
            Some(Frame::Seq { .. }) => {
                self.path.pop();
            }
            None => {}
        }
    }
}

impl MarkedEventReceiver for Indexer {
    fn on_event(&mut self, ev: Event, mark: Marker) {
        let pos = Pos {
            line: mark.line().max(1),
            col: mark.col() + 1,
        };
        match ev {
            Event::Scalar(s, ..) if !self.enter_node(pos, Some(&s)) => self.leave_value(),
            Event::Alias(_) if !self.enter_node(pos, None) => self.leave_value(),
            Event::MappingStart(..) => {
                // Complex keys are not used by our formats; treat as value.
                self.enter_node(pos, None);
                self.stack.push(Frame::Map { key: None });
            }
            Event::SequenceStart(..) => {
                self.enter_node(pos, None);
                self.stack.push(Frame::Seq { next: 0 });
            }
            Event::MappingEnd | Event::SequenceEnd => {
                self.stack.pop();
                self.leave_value();
            }
            _ => {}
        }
    }
}

/// The repository's root: tests run in their package's directory, and the
/// root is the nearest ancestor holding `matrices/`.
#[cfg(test)]
pub(crate) fn repository_root() -> std::path::PathBuf {
    let cwd = std::env::current_dir().expect("the working directory");
    cwd.ancestors()
        .find(|d| d.join("matrices").is_dir())
        .expect("the repository root above the test's directory")
        .to_path_buf()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Newlines counted in blocks agree with a count a byte at a time,
    /// across block edges and past a byte-wide sum's 255.
    #[test]
    fn newlines_are_counted_across_blocks() {
        for len in [0, 1, 254, 255, 256, 510, 600, 2000] {
            for every in [1, 2, 7, 255] {
                let b: Vec<u8> = (0..len)
                    .map(|i| if i % every == 0 { b'\n' } else { b'x' })
                    .collect();
                let slow = b.iter().filter(|&&c| c == b'\n').count();
                assert_eq!(count_newlines(&b), slow, "len {len}, every {every}");
            }
        }
    }

    /// The `name` positions the fast parse notes, checked against the
    /// position index: `Some(n)` when it noted one per item (n items).
    fn noted_names_agree(text: &str) -> Option<usize> {
        let (v, noted) = from_str_noting_row_names::<Value>(text).expect("the text parses");
        let noted = noted?;
        let items = v
            .get("rows")
            .and_then(Value::as_sequence)
            .map_or(0, Vec::len);
        if noted.len() != items {
            return None;
        }
        let index = Positions::index(text);
        for (i, at) in noted.iter().enumerate() {
            let path = [
                Seg::Key(Key::lit("rows")),
                Seg::Index(i),
                Seg::Key(Key::lit("name")),
            ];
            assert_eq!(*at, index.key(&path), "row {i} of:\n{text}");
        }
        Some(items)
    }

    #[test]
    fn the_fast_parse_notes_where_each_row_names_itself() {
        let text = "title: t # \u{e9}t\u{e9}\npolicy:\n  routes:\n    - name: A\ntapes:\n  - name: not a row\nrows:\n  - name: a\n    inject: { A: [503] }\n  - inject:\n      A: [200]\n    \"name\": \"b\" # \u{e9}\n  -   name: c\n";
        assert_eq!(noted_names_agree(text), Some(3));
        let noted = from_str_noting_row_names::<Value>(text).unwrap().1.unwrap();
        assert_eq!(noted[0], Pos { line: 8, col: 5 });
        assert_eq!(noted[1], Pos { line: 12, col: 5 });
        assert_eq!(noted[2], Pos { line: 13, col: 7 });
        // A byte-order mark moves no later line.
        assert_eq!(noted_names_agree(&format!("\u{feff}{text}")), Some(3));
        // An item in flow style notes nothing: the list is short, unused.
        assert_eq!(
            noted_names_agree("rows:\n  - name: a\n  - { name: b }\n"),
            None
        );
        // Text only serde_yaml reads notes nothing.
        let (_, none) = from_str_noting_row_names::<Value>("rows:\n  - name: &x a\n").unwrap();
        assert!(none.is_none());
    }

    #[test]
    fn noted_row_names_agree_with_the_index_in_every_repository_matrix() {
        let root = repository_root();
        let mut checked = 0;
        for dir in ["matrices", "docs/examples"] {
            let mut stack = vec![root.join(dir)];
            while let Some(d) = stack.pop() {
                for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
                    let path = e.path();
                    if path.is_dir() {
                        stack.push(path);
                    } else if path.extension().is_some_and(|x| x == "yaml") {
                        let text = std::fs::read_to_string(&path).unwrap();
                        if let Ok((_, Some(_))) = from_str_noting_row_names::<Value>(&text) {
                            checked += usize::from(noted_names_agree(&text).is_some());
                        }
                    }
                }
            }
        }
        assert!(
            checked > 10,
            "only {checked} matrices had their names noted"
        );
    }

    #[test]
    fn a_literal_key_and_a_shared_key_of_the_same_text_are_one_key() {
        use std::collections::HashSet;
        let lit = Key::lit("inject");
        let shared = Key::from(String::from("inject"));
        assert_eq!(lit, shared);
        assert_eq!(format!("{lit:?}"), format!("{shared:?}"));
        let set: HashSet<Key> = [shared].into_iter().collect();
        assert!(set.contains(&lit));
        assert!(set.contains("inject"));
        assert_ne!(lit, Key::lit("expect"));
        // A path built from schema literals finds a node indexed from the
        // file (whose keys are shared).
        let p = Positions::index("rows:\n  - name: a\n    inject:\n      A: [503]\n");
        let path = vec![
            Seg::Key(Key::lit("rows")),
            Seg::Index(0),
            Seg::Key(Key::lit("inject")),
            Seg::Key(Key::from("A")),
        ];
        assert_eq!(p.value(&path).line, 4);
    }

    #[test]
    fn indexes_nested_positions() {
        let text = "title: x\nrows:\n  - name: a\n    inject:\n      A: [503, 200]\n";
        let p = Positions::index(text);
        let row = vec![Seg::Key("rows".into()), Seg::Index(0)];
        assert_eq!(p.value(&row).line, 3);
        let mut a1 = row.clone();
        a1.extend([
            Seg::Key("inject".into()),
            Seg::Key("A".into()),
            Seg::Index(1),
        ]);
        assert_eq!(p.value(&a1), Pos { line: 5, col: 16 });
        let mut name = row.clone();
        name.push(Seg::Key("name".into()));
        assert_eq!(p.key(&name), Pos { line: 3, col: 5 });
        assert_eq!(p.value(&name), Pos { line: 3, col: 11 });
    }

    #[test]
    fn block_scalars_start_at_their_first_content_line() {
        let t = "a:\n  trace: |\n    x1\n    x2\n  b: \"q\"\n";
        let p = Positions::index(t);
        let a = |k: &str| vec![Seg::Key("a".into()), Seg::Key(k.into())];
        assert_eq!(p.value(&a("trace")), Pos { line: 3, col: 5 });
        assert_eq!(p.value(&a("b")), Pos { line: 5, col: 6 });
    }

    #[test]
    fn serde_errors_carry_positions() {
        let err = from_str::<Vec<u32>>("- 1\n- x\n").unwrap_err();
        assert_eq!(err.pos.map(|p| p.line), Some(2));
        assert!(!err.message.contains(" at line "));
        assert_eq!(
            strip_location("did not find x at line 4 column 4, while parsing".into()),
            "did not find x, while parsing"
        );
    }
}
