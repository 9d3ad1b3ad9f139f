//! A fast YAML front end for the subset matrices are written in.
//!
//! It deserializes straight from the text into serde shapes, without an
//! event queue or a tree, borrowing keys and plain scalars from the text.
//! It knows block mappings and sequences (indentless ones included),
//! one-line flow collections, plain, quoted and literal (`|`, `|-`)
//! scalars, and comments. Anything else — anchors, aliases, tags, folded
//! or multi-line scalars, directives, tabs, several documents, a shape
//! error — makes it give up ([`None`]), and the caller parses the text
//! again with serde_yaml, which then gives the same value or the error with
//! its position. So it only ever has to be right when it succeeds, and it
//! resolves scalars with serde_yaml's own rules (`visit_untagged_scalar` in
//! serde_yaml 0.9's `de.rs`): `~`/`null`, `true`/`false` in three cases,
//! decimal/hex/octal/binary integers, floats and `.inf`/`.nan`, and leading
//! zeros make a string. A test compares it with serde_yaml on every YAML
//! file of the repository and on edge cases.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, DeserializeOwned, DeserializeSeed, IntoDeserializer, Visitor};

/// Deepest nesting the front end follows (serde_yaml allows 128).
const MAX_DEPTH: usize = 64;

/// Parses `text` into `T`, or `None` when the text is outside the subset or
/// does not fit `T` (the caller then asks serde_yaml).
pub(super) fn from_str<T: DeserializeOwned>(text: &str) -> Option<T> {
    from_str_noting_row_names(text).map(|(t, _)| t)
}

/// [`from_str`], and where each item of the root's `rows:` block sequence
/// writes its `name` key (byte offsets, in item order; an item whose
/// mapping is a flow one, or has no `name`, notes nothing), each with
/// where its line starts (the key is at the start of its line or after
/// `- `, so all before it on the line is ASCII). The parse
/// passes over these keys anyway: noting them costs a row a comparison,
/// where reading them again from the text cost it 3,400 instructions.
///
/// Never inlined: called once a file, it names the front end's phase in
/// the benchmark's profile (`bash bench/perf.sh count`) under LTO.
#[inline(never)]
pub(super) fn from_str_noting_row_names<T: DeserializeOwned>(
    text: &str,
) -> Option<(T, Vec<(usize, usize)>)> {
    if !plain_text(text) {
        return None;
    }
    let mut p = Parser {
        s: text.as_bytes(),
        src: text,
        pos: 0,
        line_start: 0,
        fresh: false,
        depth: 0,
        in_rows: false,
        row_names: Vec::new(),
    };
    let col = p.advance().ok()??;
    if col != 0 {
        return None;
    }
    let value = T::deserialize(De::new(&mut p, -1, false, false)).ok()?;
    match p.advance() {
        Ok(None) => Some((value, p.row_names)),
        _ => None,
    }
}

/// Text libyaml reads the same way we do: no tabs, carriage returns,
/// control characters, byte-order marks or non-printable code points.
fn plain_text(text: &str) -> bool {
    // A plain loop: the iterator chain cost a one-test process (debug
    // profile, nextest) 170 instructions a byte.
    let b = text.as_bytes();
    // Thirty-two bytes at a time without an early exit (the compiler
    // vectorizes it; a byte at a time cost a row 2,500 instructions), then
    // a byte at a time from the first block that is not all plain.
    let plain = |c: u8| (0x20..0x7f).contains(&c) | (c == b'\n');
    let mut i = 0;
    for block in b.chunks_exact(32) {
        if !block.iter().fold(true, |ok, &c| ok & plain(c)) {
            break;
        }
        i += 32;
    }
    while i < b.len() && plain(b[i]) {
        i += 1;
    }
    if i == b.len() {
        return true;
    }
    text.chars().all(|c| {
        let u = c as u32;
        matches!(u, 0x0A | 0x20..=0x7E | 0x85 | 0xA0..=0xD7FF | 0xE000..=0xFFFD | 0x10000..=0x10FFFF)
            && u != 0xFEFF
    })
}

/// Why the front end gave up; never shown (serde_yaml's error is).
#[derive(Debug)]
pub(super) struct Bail;

impl fmt::Display for Bail {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("outside the fast YAML subset")
    }
}

impl std::error::Error for Bail {}

impl de::Error for Bail {
    fn custom<T: fmt::Display>(_msg: T) -> Self {
        Bail
    }
}

type Res<T> = Result<T, Bail>;

struct Parser<'a> {
    s: &'a [u8],
    src: &'a str,
    pos: usize,
    line_start: usize,
    /// The cursor is at the first character of a node or key whose column
    /// is known (`pos - line_start`).
    fresh: bool,
    depth: usize,
    /// The root mapping's key being read is `rows`.
    in_rows: bool,
    /// Where the `name` key of each `rows:` item is: the byte offsets of
    /// its line and of the key.
    row_names: Vec<(usize, usize)>,
}

/// How a node begins.
enum Start<'a> {
    /// No value (`key:` with nothing under it): null.
    Empty,
    /// A scalar; `true` when plain (resolved as null, bool, number or string).
    Scalar(Cow<'a, str>, bool),
    /// A block sequence whose dashes are at this column.
    BlockSeq { col: usize, indentless: bool },
    /// A block mapping whose keys are at this column (cursor at the first).
    BlockMap { col: usize },
    /// `[` (cursor after it).
    FlowSeq,
    /// `{` (cursor after it).
    FlowMap,
}

fn is_indicator(b: u8) -> bool {
    matches!(
        b,
        b'-' | b'?'
            | b':'
            | b','
            | b'['
            | b']'
            | b'{'
            | b'}'
            | b'#'
            | b'&'
            | b'*'
            | b'!'
            | b'|'
            | b'>'
            | b'\''
            | b'"'
            | b'%'
            | b'@'
            | b'`'
    )
}

impl<'a> Parser<'a> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.pos).copied()
    }

    fn at(&self, i: usize) -> Option<u8> {
        self.s.get(i).copied()
    }

    fn col(&self) -> usize {
        self.pos - self.line_start
    }

    fn skip_spaces(&mut self) {
        while self.peek() == Some(b' ') {
            self.pos += 1;
        }
    }

    /// Whether the cursor (after spaces) is at the end of what a line says:
    /// a comment after a space, a newline or the end of the text.
    fn at_line_end(&self) -> bool {
        match self.peek() {
            None | Some(b'\n') => true,
            Some(b'#') => self.pos > 0 && self.s[self.pos - 1] == b' ',
            _ => false,
        }
    }

    /// Moves to the first content of the next line that has any, returning
    /// its column (`None` at the end of the text). Mid-line, only spaces and
    /// a comment may remain on the line.
    fn advance(&mut self) -> Res<Option<usize>> {
        if self.fresh {
            return Ok((self.pos < self.s.len()).then(|| self.col()));
        }
        if self.pos != self.line_start {
            self.skip_spaces();
            if !self.at_line_end() {
                return Err(Bail);
            }
            self.skip_line();
        }
        loop {
            // Empty lines (a one-row text's blanked rows: a thousand in a
            // 100-row file) a byte each.
            while self.pos < self.s.len() && self.s[self.pos] == b'\n' {
                self.pos += 1;
            }
            if self.pos >= self.s.len() {
                return Ok(None);
            }
            self.line_start = self.pos;
            self.skip_spaces();
            match self.peek() {
                None => return Ok(None),
                Some(b'\n') | Some(b'#') => self.skip_line(),
                Some(_) => {
                    if self.pos == self.line_start {
                        let rest = &self.s[self.pos..];
                        if rest.starts_with(b"---") || rest.starts_with(b"...") || rest[0] == b'%' {
                            return Err(Bail);
                        }
                    }
                    self.fresh = true;
                    return Ok(Some(self.col()));
                }
            }
        }
    }

    /// Moves past the next newline (or to the end).
    fn skip_line(&mut self) {
        match memchr(b'\n', &self.s[self.pos..]) {
            Some(i) => self.pos += i + 1,
            None => self.pos = self.s.len(),
        }
        self.line_start = self.pos;
    }

    fn line_is_dash(&self) -> bool {
        self.peek() == Some(b'-') && matches!(self.at(self.pos + 1), None | Some(b' ' | b'\n'))
    }

    /// Classifies the node whose first character is at the cursor.
    /// `line_start`: the node begins its line (a key may start a mapping);
    /// `seq_item`: it follows `- ` (a key may start a mapping there too).
    fn classify(&mut self, parent: isize, line_start: bool, seq_item: bool) -> Res<Start<'a>> {
        let col = self.col();
        match self.peek() {
            None => Ok(Start::Empty),
            Some(b'-') if self.line_is_dash() => {
                if line_start {
                    Ok(Start::BlockSeq {
                        col,
                        indentless: false,
                    })
                } else {
                    Err(Bail)
                }
            }
            Some(b'[') => {
                self.pos += 1;
                self.fresh = false;
                Ok(Start::FlowSeq)
            }
            Some(b'{') => {
                self.pos += 1;
                self.fresh = false;
                Ok(Start::FlowMap)
            }
            Some(b'|') if !line_start => self.literal(parent),
            Some(b'"' | b'\'') => {
                let save = self.pos;
                let text = self.quoted()?;
                if self.peek() == Some(b':')
                    && matches!(self.at(self.pos + 1), None | Some(b' ' | b'\n'))
                {
                    return self.map_here(save, col, line_start || seq_item);
                }
                self.fresh = false;
                Ok(Start::Scalar(text, false))
            }
            Some(b) if is_indicator(b) && b != b'-' => Err(Bail),
            Some(b'-') if self.at(self.pos + 1).is_none_or(|c| c == b' ') => Err(Bail),
            Some(_) => {
                let save = self.pos;
                let (end, key) = self.scan_plain_block();
                if key {
                    return self.map_here(save, col, line_start || seq_item);
                }
                let text = &self.src[save..end];
                self.fresh = false;
                Ok(Start::Scalar(Cow::Borrowed(text), true))
            }
        }
    }

    fn map_here(&mut self, key_pos: usize, col: usize, allowed: bool) -> Res<Start<'a>> {
        if !allowed {
            return Err(Bail);
        }
        self.pos = key_pos;
        self.fresh = true;
        Ok(Start::BlockMap { col })
    }

    /// Scans a plain scalar in block context from the cursor, leaving the
    /// cursor after it; returns its end (trailing spaces trimmed) and whether
    /// it is a key (followed by `: `).
    fn scan_plain_block(&mut self) -> (usize, bool) {
        let s = self.s;
        let mut i = self.pos;
        let mut end = i;
        loop {
            match s.get(i) {
                None | Some(b'\n') => break,
                Some(b':') if matches!(s.get(i + 1), None | Some(b' ' | b'\n')) => {
                    self.pos = end;
                    return (end, true);
                }
                Some(b'#') if s[i - 1] == b' ' => break,
                Some(b' ') => i += 1,
                Some(_) => {
                    i += 1;
                    end = i;
                }
            }
        }
        self.pos = end;
        (end, false)
    }

    /// A quoted scalar on one line, cursor at its opening quote.
    fn quoted(&mut self) -> Res<Cow<'a, str>> {
        let q = self.s[self.pos];
        self.pos += 1;
        let start = self.pos;
        // Fast path: no escape before the closing quote.
        let mut i = start;
        while let Some(&b) = self.s.get(i) {
            if b == q {
                if q == b'\'' && self.at(i + 1) == Some(b'\'') {
                    break;
                }
                self.pos = i + 1;
                return Ok(Cow::Borrowed(&self.src[start..i]));
            }
            if b == b'\n' || (q == b'"' && b == b'\\') {
                break;
            }
            i += 1;
        }
        let mut out = String::from(&self.src[start..i]);
        loop {
            let Some(b) = self.at(i) else {
                return Err(Bail);
            };
            match b {
                b'\n' => return Err(Bail),
                b'\'' if q == b'\'' => {
                    if self.at(i + 1) == Some(b'\'') {
                        out.push('\'');
                        i += 2;
                    } else {
                        self.pos = i + 1;
                        return Ok(Cow::Owned(out));
                    }
                }
                b'"' if q == b'"' => {
                    self.pos = i + 1;
                    return Ok(Cow::Owned(out));
                }
                b'\\' if q == b'"' => {
                    let e = self.at(i + 1).ok_or(Bail)?;
                    i += 2;
                    let simple = match e {
                        b'\\' => Some('\\'),
                        b'"' => Some('"'),
                        b'/' => Some('/'),
                        b'n' => Some('\n'),
                        b't' => Some('\t'),
                        b'r' => Some('\r'),
                        b'0' => Some('\0'),
                        b'b' => Some('\u{8}'),
                        b'e' => Some('\u{1b}'),
                        b'a' => Some('\u{7}'),
                        b'f' => Some('\u{c}'),
                        b'v' => Some('\u{b}'),
                        b' ' => Some(' '),
                        _ => None,
                    };
                    if let Some(c) = simple {
                        out.push(c);
                        continue;
                    }
                    let n = match e {
                        b'x' => 2,
                        b'u' => 4,
                        b'U' => 8,
                        _ => return Err(Bail),
                    };
                    let hex = self.src.get(i..i + n).ok_or(Bail)?;
                    if !hex.bytes().all(|h| h.is_ascii_hexdigit()) {
                        return Err(Bail);
                    }
                    let code = u32::from_str_radix(hex, 16).map_err(|_| Bail)?;
                    out.push(char::from_u32(code).ok_or(Bail)?);
                    i += n;
                }
                _ => {
                    // Copy one UTF-8 character.
                    let ch = self.src[i..].chars().next().ok_or(Bail)?;
                    out.push(ch);
                    i += ch.len_utf8();
                }
            }
        }
    }

    /// A literal block scalar (`|` or `|-`), cursor at the `|`.
    fn literal(&mut self, parent: isize) -> Res<Start<'a>> {
        self.pos += 1;
        let strip = match self.peek() {
            Some(b'-') => {
                self.pos += 1;
                true
            }
            Some(b' ' | b'\n') | None => false,
            _ => return Err(Bail),
        };
        self.skip_spaces();
        if !self.at_line_end() {
            return Err(Bail);
        }
        self.skip_line();
        let s = self.s;
        // The first line sets the indentation; it must have content.
        let first = self.pos;
        let mut k = first;
        while s.get(k) == Some(&b' ') {
            k += 1;
        }
        let ind = k - first;
        if matches!(s.get(k), None | Some(b'\n')) || ind as isize <= parent {
            return Err(Bail);
        }
        let mut lines: Vec<&'a str> = Vec::new();
        let mut kept = 0; // lines up to the last one with content
        let mut ls = first;
        loop {
            if ls >= s.len() {
                break;
            }
            let le = memchr(b'\n', &s[ls..]).map(|i| ls + i).ok_or(Bail)?; // no final newline: bail
            let line = &s[ls..le];
            let spaces = line.iter().take_while(|&&b| b == b' ').count();
            if spaces == line.len() {
                if spaces > ind {
                    return Err(Bail);
                }
                lines.push("");
            } else if spaces < ind {
                break;
            } else {
                lines.push(&self.src[ls + ind..le]);
                kept = lines.len();
            }
            ls = le + 1;
        }
        lines.truncate(kept);
        let mut text = lines.join("\n");
        if !strip {
            text.push('\n');
        }
        self.pos = ls;
        self.line_start = ls;
        self.fresh = false;
        Ok(Start::Scalar(Cow::Owned(text), false))
    }

    /// A plain scalar inside a flow collection (one line, no `:` in it).
    fn scan_plain_flow(&mut self) -> Res<&'a str> {
        let start = self.pos;
        if self.peek().is_none_or(|b| is_indicator(b) && b != b'-') {
            return Err(Bail);
        }
        if self.line_is_dash() {
            return Err(Bail);
        }
        let mut end = start;
        let mut i = start;
        loop {
            match self.at(i) {
                None | Some(b'\n') => return Err(Bail),
                Some(b',' | b']' | b'}') => break,
                Some(b':' | b'[' | b'{' | b'#') => return Err(Bail),
                Some(b' ') => i += 1,
                Some(_) => {
                    i += 1;
                    end = i;
                }
            }
        }
        self.pos = end;
        Ok(&self.src[start..end])
    }

    /// Skips spaces inside a flow collection (it must end on its line).
    fn flow_spaces(&mut self) -> Res<()> {
        self.skip_spaces();
        match self.peek() {
            None | Some(b'\n') | Some(b'#') => Err(Bail),
            _ => Ok(()),
        }
    }

    fn enter(&mut self) -> Res<()> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            Err(Bail)
        } else {
            Ok(())
        }
    }
}

fn memchr(needle: u8, hay: &[u8]) -> Option<usize> {
    hay.iter().position(|&b| b == needle)
}

/// A node in block context.
struct De<'p, 'a> {
    p: &'p mut Parser<'a>,
    /// The column of the enclosing collection (-1 at the root).
    parent: isize,
    /// A sequence at the parent's column belongs to this node (a mapping
    /// value).
    indentless_ok: bool,
    /// The node follows `- ` on the same line.
    seq_item: bool,
    started: Option<Start<'a>>,
}

impl<'p, 'a> De<'p, 'a> {
    fn new(p: &'p mut Parser<'a>, parent: isize, indentless_ok: bool, seq_item: bool) -> Self {
        Self {
            p,
            parent,
            indentless_ok,
            seq_item,
            started: None,
        }
    }

    fn start(&mut self) -> Res<Start<'a>> {
        if let Some(s) = self.started.take() {
            return Ok(s);
        }
        let p = &mut *self.p;
        if p.fresh {
            // At the root: the first content of the text.
            return p.classify(self.parent, true, false);
        }
        p.skip_spaces();
        if p.at_line_end() {
            return match p.advance()? {
                Some(col) if col as isize > self.parent => p.classify(self.parent, true, false),
                Some(col)
                    if col as isize == self.parent && self.indentless_ok && p.line_is_dash() =>
                {
                    Ok(Start::BlockSeq {
                        col,
                        indentless: true,
                    })
                }
                _ => Ok(Start::Empty),
            };
        }
        p.fresh = true;
        p.classify(self.parent, false, self.seq_item)
    }

    fn visit<V: Visitor<'a>>(self, start: Start<'a>, visitor: V) -> Res<V::Value> {
        let p = self.p;
        match start {
            Start::Empty => visitor.visit_unit(),
            Start::Scalar(text, plain) => visit_scalar(text, plain, visitor),
            Start::BlockSeq { col, indentless } => {
                p.enter()?;
                let v = visitor.visit_seq(BlockSeq {
                    p: &mut *p,
                    col,
                    indentless,
                })?;
                p.depth -= 1;
                Ok(v)
            }
            Start::BlockMap { col } => {
                p.enter()?;
                let v = visitor.visit_map(BlockMap { p: &mut *p, col })?;
                p.depth -= 1;
                Ok(v)
            }
            Start::FlowSeq => {
                p.enter()?;
                let v = visitor.visit_seq(FlowSeq {
                    p: &mut *p,
                    first: true,
                })?;
                p.depth -= 1;
                Ok(v)
            }
            Start::FlowMap => {
                p.enter()?;
                let v = visitor.visit_map(FlowMap {
                    p: &mut *p,
                    first: true,
                })?;
                p.depth -= 1;
                Ok(v)
            }
        }
    }
}

/// serde_yaml's resolution of an untagged scalar (`visit_untagged_scalar`).
fn visit_scalar<'a, V: Visitor<'a>>(text: Cow<'a, str>, plain: bool, visitor: V) -> Res<V::Value> {
    if plain {
        let v: &str = &text;
        if v.is_empty() || matches!(v, "null" | "Null" | "NULL" | "~") {
            return visitor.visit_unit();
        }
        if let Some(b) = parse_bool(v) {
            return visitor.visit_bool(b);
        }
        if let Some(n) = parse_unsigned(v) {
            return visitor.visit_u64(n);
        }
        if let Some(n) = parse_negative(v) {
            return visitor.visit_i64(n);
        }
        if looks_numeric(v) {
            // Integers beyond 64 bits and other numeric oddities.
            return Err(Bail);
        }
        if !digits_but_not_number(v) {
            if let Some(f) = parse_f64(v) {
                return visitor.visit_f64(f);
            }
        }
    }
    visit_str(text, visitor)
}

fn visit_str<'a, V: Visitor<'a>>(text: Cow<'a, str>, visitor: V) -> Res<V::Value> {
    match text {
        Cow::Borrowed(s) => visitor.visit_borrowed_str(s),
        Cow::Owned(s) => visitor.visit_string(s),
    }
}

fn parse_bool(v: &str) -> Option<bool> {
    match v {
        "true" | "True" | "TRUE" => Some(true),
        "false" | "False" | "FALSE" => Some(false),
        _ => None,
    }
}

fn digits_but_not_number(v: &str) -> bool {
    let v = v.strip_prefix(['-', '+']).unwrap_or(v);
    v.len() > 1 && v.starts_with('0') && v[1..].bytes().all(|b| b.is_ascii_digit())
}

/// Starts like a number serde_yaml might read in a way we do not (a
/// radix prefix, or digits too long for 64 bits): give up rather than guess.
fn looks_numeric(v: &str) -> bool {
    let u = v.strip_prefix(['-', '+']).unwrap_or(v);
    u.starts_with("0x")
        || u.starts_with("0o")
        || u.starts_with("0b")
        || (!u.is_empty() && u.bytes().all(|b| b.is_ascii_digit()) && !digits_but_not_number(v))
}

/// Plain decimal `u64` (`+` allowed), as serde_yaml reads it.
fn parse_unsigned(v: &str) -> Option<u64> {
    let u = v.strip_prefix('+').unwrap_or(v);
    if u.is_empty() || !u.bytes().all(|b| b.is_ascii_digit()) || digits_but_not_number(v) {
        return None;
    }
    u.parse().ok()
}

/// Plain decimal negative `i64`.
fn parse_negative(v: &str) -> Option<i64> {
    let u = v.strip_prefix('-')?;
    if u.is_empty() || !u.bytes().all(|b| b.is_ascii_digit()) || digits_but_not_number(v) {
        return None;
    }
    v.parse().ok()
}

fn parse_f64(v: &str) -> Option<f64> {
    let u = match v.strip_prefix('+') {
        Some(u) if u.starts_with(['+', '-']) => return None,
        Some(u) => u,
        None => v,
    };
    if matches!(u, ".inf" | ".Inf" | ".INF") {
        return Some(f64::INFINITY);
    }
    if matches!(v, "-.inf" | "-.Inf" | "-.INF") {
        return Some(f64::NEG_INFINITY);
    }
    if matches!(v, ".nan" | ".NaN" | ".NAN") {
        return Some(f64::NAN.copysign(1.0));
    }
    match u.parse::<f64>() {
        Ok(f) if f.is_finite() => Some(f),
        _ => None,
    }
}

macro_rules! forward_signed {
    ($($m:ident)*) => {$(
        fn $m<V: Visitor<'a>>(mut self, visitor: V) -> Res<V::Value> {
            match self.start()? {
                Start::Scalar(t, true) => {
                    let n: i64 = if let Some(n) = parse_unsigned(&t) {
                        i64::try_from(n).map_err(|_| Bail)?
                    } else {
                        parse_negative(&t).ok_or(Bail)?
                    };
                    visitor.visit_i64(n)
                }
                _ => Err(Bail),
            }
        }
    )*};
}

macro_rules! forward_unsigned {
    ($($m:ident)*) => {$(
        fn $m<V: Visitor<'a>>(mut self, visitor: V) -> Res<V::Value> {
            match self.start()? {
                Start::Scalar(t, true) => visitor.visit_u64(parse_unsigned(&t).ok_or(Bail)?),
                _ => Err(Bail),
            }
        }
    )*};
}

impl<'a> de::Deserializer<'a> for De<'_, 'a> {
    type Error = Bail;

    fn deserialize_any<V: Visitor<'a>>(mut self, visitor: V) -> Res<V::Value> {
        let s = self.start()?;
        self.visit(s, visitor)
    }

    fn deserialize_bool<V: Visitor<'a>>(mut self, visitor: V) -> Res<V::Value> {
        match self.start()? {
            Start::Scalar(t, true) => visitor.visit_bool(parse_bool(&t).ok_or(Bail)?),
            _ => Err(Bail),
        }
    }

    forward_signed!(deserialize_i8 deserialize_i16 deserialize_i32 deserialize_i64);
    forward_unsigned!(deserialize_u8 deserialize_u16 deserialize_u32 deserialize_u64);

    fn deserialize_f32<V: Visitor<'a>>(self, visitor: V) -> Res<V::Value> {
        self.deserialize_f64(visitor)
    }

    fn deserialize_f64<V: Visitor<'a>>(mut self, visitor: V) -> Res<V::Value> {
        match self.start()? {
            Start::Scalar(t, true) if !digits_but_not_number(&t) => {
                visitor.visit_f64(parse_f64(&t).ok_or(Bail)?)
            }
            _ => Err(Bail),
        }
    }

    fn deserialize_char<V: Visitor<'a>>(self, visitor: V) -> Res<V::Value> {
        self.deserialize_str(visitor)
    }

    fn deserialize_str<V: Visitor<'a>>(mut self, visitor: V) -> Res<V::Value> {
        match self.start()? {
            Start::Scalar(t, _) => visit_str(t, visitor),
            Start::Empty => visitor.visit_borrowed_str(""),
            _ => Err(Bail),
        }
    }

    fn deserialize_string<V: Visitor<'a>>(self, visitor: V) -> Res<V::Value> {
        self.deserialize_str(visitor)
    }

    fn deserialize_identifier<V: Visitor<'a>>(self, visitor: V) -> Res<V::Value> {
        self.deserialize_str(visitor)
    }

    fn deserialize_bytes<V: Visitor<'a>>(self, _visitor: V) -> Res<V::Value> {
        Err(Bail)
    }

    fn deserialize_byte_buf<V: Visitor<'a>>(self, _visitor: V) -> Res<V::Value> {
        Err(Bail)
    }

    fn deserialize_option<V: Visitor<'a>>(mut self, visitor: V) -> Res<V::Value> {
        let s = self.start()?;
        let none = match &s {
            Start::Empty => true,
            Start::Scalar(t, true) => {
                t.is_empty() || matches!(&**t, "null" | "Null" | "NULL" | "~")
            }
            _ => false,
        };
        if none {
            visitor.visit_none()
        } else {
            self.started = Some(s);
            visitor.visit_some(self)
        }
    }

    fn deserialize_unit<V: Visitor<'a>>(mut self, visitor: V) -> Res<V::Value> {
        match self.start()? {
            Start::Empty => visitor.visit_unit(),
            Start::Scalar(t, true)
                if t.is_empty() || matches!(&*t, "null" | "Null" | "NULL" | "~") =>
            {
                visitor.visit_unit()
            }
            _ => Err(Bail),
        }
    }

    fn deserialize_unit_struct<V: Visitor<'a>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Res<V::Value> {
        self.deserialize_unit(visitor)
    }

    fn deserialize_newtype_struct<V: Visitor<'a>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Res<V::Value> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_seq<V: Visitor<'a>>(mut self, visitor: V) -> Res<V::Value> {
        match self.start()? {
            s @ (Start::BlockSeq { .. } | Start::FlowSeq) => self.visit(s, visitor),
            Start::Empty => {
                visitor.visit_seq(de::value::SeqDeserializer::new(std::iter::empty::<()>()))
            }
            Start::Scalar(t, true) if t.is_empty() => {
                visitor.visit_seq(de::value::SeqDeserializer::new(std::iter::empty::<()>()))
            }
            _ => Err(Bail),
        }
    }

    fn deserialize_tuple<V: Visitor<'a>>(self, _len: usize, visitor: V) -> Res<V::Value> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_tuple_struct<V: Visitor<'a>>(
        self,
        _name: &'static str,
        _len: usize,
        visitor: V,
    ) -> Res<V::Value> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_map<V: Visitor<'a>>(mut self, visitor: V) -> Res<V::Value> {
        match self.start()? {
            s @ (Start::BlockMap { .. } | Start::FlowMap) => self.visit(s, visitor),
            Start::Empty => visitor.visit_map(de::value::MapDeserializer::new(
                std::iter::empty::<((), ())>(),
            )),
            _ => Err(Bail),
        }
    }

    fn deserialize_struct<V: Visitor<'a>>(
        self,
        _name: &'static str,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Res<V::Value> {
        self.deserialize_map(visitor)
    }

    fn deserialize_enum<V: Visitor<'a>>(
        mut self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Res<V::Value> {
        match self.start()? {
            Start::Scalar(t, _) if !t.is_empty() => {
                visitor.visit_enum(t.into_owned().into_deserializer())
            }
            _ => Err(Bail),
        }
    }

    fn deserialize_ignored_any<V: Visitor<'a>>(self, visitor: V) -> Res<V::Value> {
        self.deserialize_any(de::IgnoredAny)?;
        visitor.visit_unit()
    }

    fn deserialize_i128<V: Visitor<'a>>(self, _visitor: V) -> Res<V::Value> {
        Err(Bail)
    }

    fn deserialize_u128<V: Visitor<'a>>(self, _visitor: V) -> Res<V::Value> {
        Err(Bail)
    }
}

/// A scalar already read (a mapping key).
struct ScalarDe<'a>(Cow<'a, str>, bool);

impl<'a> de::Deserializer<'a> for ScalarDe<'a> {
    type Error = Bail;

    fn deserialize_any<V: Visitor<'a>>(self, visitor: V) -> Res<V::Value> {
        visit_scalar(self.0, self.1, visitor)
    }

    fn deserialize_str<V: Visitor<'a>>(self, visitor: V) -> Res<V::Value> {
        visit_str(self.0, visitor)
    }

    fn deserialize_string<V: Visitor<'a>>(self, visitor: V) -> Res<V::Value> {
        visit_str(self.0, visitor)
    }

    fn deserialize_identifier<V: Visitor<'a>>(self, visitor: V) -> Res<V::Value> {
        visit_str(self.0, visitor)
    }

    fn deserialize_ignored_any<V: Visitor<'a>>(self, visitor: V) -> Res<V::Value> {
        visitor.visit_unit()
    }

    fn deserialize_option<V: Visitor<'a>>(self, _visitor: V) -> Res<V::Value> {
        Err(Bail)
    }

    serde::forward_to_deserialize_any! {
        <W: Visitor<'a>>
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char bytes
        byte_buf unit unit_struct newtype_struct seq tuple
        tuple_struct map struct enum
    }
}

struct BlockSeq<'p, 'a> {
    p: &'p mut Parser<'a>,
    col: usize,
    indentless: bool,
}

impl<'a> de::SeqAccess<'a> for BlockSeq<'_, 'a> {
    type Error = Bail;

    fn next_element_seed<T: DeserializeSeed<'a>>(&mut self, seed: T) -> Res<Option<T::Value>> {
        match self.p.advance()? {
            None => return Ok(None),
            Some(c) if c < self.col => return Ok(None),
            Some(c) if c == self.col && self.p.line_is_dash() => {}
            Some(c) if c == self.col && self.indentless => return Ok(None),
            Some(_) => return Err(Bail),
        }
        self.p.pos += 1;
        self.p.fresh = false;
        seed.deserialize(De::new(self.p, self.col as isize, false, true))
            .map(Some)
    }
}

struct BlockMap<'p, 'a> {
    p: &'p mut Parser<'a>,
    col: usize,
}

impl<'a> de::MapAccess<'a> for BlockMap<'_, 'a> {
    type Error = Bail;

    fn next_key_seed<K: DeserializeSeed<'a>>(&mut self, seed: K) -> Res<Option<K::Value>> {
        let p = &mut *self.p;
        match p.advance()? {
            None => return Ok(None),
            Some(c) if c < self.col => return Ok(None),
            Some(c) if c == self.col && !p.line_is_dash() => {}
            Some(_) => return Err(Bail),
        }
        p.fresh = false;
        let key_at = p.pos;
        let key = match p.peek() {
            Some(b'"' | b'\'') => ScalarDe(p.quoted()?, false),
            Some(b) if is_indicator(b) => return Err(Bail),
            _ => {
                let start = p.pos;
                let (end, is_key) = p.scan_plain_block();
                if !is_key || end - start > 1024 {
                    return Err(Bail);
                }
                ScalarDe(Cow::Borrowed(&p.src[start..end]), true)
            }
        };
        if p.peek() != Some(b':') {
            return Err(Bail);
        }
        p.pos += 1;
        // The root mapping is at depth 1, `rows:`'s sequence at 2, an
        // item's mapping at 3.
        match p.depth {
            1 => p.in_rows = key.0 == "rows",
            3 if p.in_rows && key.0 == "name" => p.row_names.push((p.line_start, key_at)),
            _ => {}
        }
        seed.deserialize(key).map(Some)
    }

    fn next_value_seed<V: DeserializeSeed<'a>>(&mut self, seed: V) -> Res<V::Value> {
        seed.deserialize(De::new(self.p, self.col as isize, true, false))
    }
}

/// A node inside a flow collection.
struct FlowDe<'p, 'a>(&'p mut Parser<'a>, Option<Start<'a>>);

impl<'a> FlowDe<'_, 'a> {
    fn start(&mut self) -> Res<Start<'a>> {
        if let Some(s) = self.1.take() {
            return Ok(s);
        }
        let p = &mut *self.0;
        p.flow_spaces()?;
        match p.peek() {
            Some(b'[') => {
                p.pos += 1;
                Ok(Start::FlowSeq)
            }
            Some(b'{') => {
                p.pos += 1;
                Ok(Start::FlowMap)
            }
            Some(b'"' | b'\'') => Ok(Start::Scalar(p.quoted()?, false)),
            _ => Ok(Start::Scalar(Cow::Borrowed(p.scan_plain_flow()?), true)),
        }
    }
}

impl<'a> de::Deserializer<'a> for FlowDe<'_, 'a> {
    type Error = Bail;

    fn deserialize_any<V: Visitor<'a>>(mut self, visitor: V) -> Res<V::Value> {
        let s = self.start()?;
        let p = self.0;
        match s {
            Start::Scalar(t, plain) => {
                if plain && t.is_empty() {
                    return Err(Bail);
                }
                visit_scalar(t, plain, visitor)
            }
            s => De::new(p, 0, false, false).visit(s, visitor),
        }
    }

    fn deserialize_str<V: Visitor<'a>>(mut self, visitor: V) -> Res<V::Value> {
        match self.start()? {
            Start::Scalar(t, _) if !t.is_empty() => visit_str(t, visitor),
            _ => Err(Bail),
        }
    }

    fn deserialize_string<V: Visitor<'a>>(self, visitor: V) -> Res<V::Value> {
        self.deserialize_str(visitor)
    }

    fn deserialize_identifier<V: Visitor<'a>>(self, visitor: V) -> Res<V::Value> {
        self.deserialize_str(visitor)
    }

    fn deserialize_option<V: Visitor<'a>>(mut self, visitor: V) -> Res<V::Value> {
        let s = self.start()?;
        if let Start::Scalar(t, true) = &s {
            if matches!(&**t, "null" | "Null" | "NULL" | "~") {
                return visitor.visit_none();
            }
        }
        self.1 = Some(s);
        visitor.visit_some(self)
    }

    fn deserialize_newtype_struct<V: Visitor<'a>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Res<V::Value> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_enum<V: Visitor<'a>>(
        mut self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Res<V::Value> {
        match self.start()? {
            Start::Scalar(t, _) if !t.is_empty() => {
                visitor.visit_enum(t.into_owned().into_deserializer())
            }
            _ => Err(Bail),
        }
    }

    fn deserialize_ignored_any<V: Visitor<'a>>(self, visitor: V) -> Res<V::Value> {
        self.deserialize_any(de::IgnoredAny)?;
        visitor.visit_unit()
    }

    serde::forward_to_deserialize_any! {
        <W: Visitor<'a>>
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char bytes
        byte_buf unit unit_struct seq tuple
        tuple_struct map struct
    }
}

struct FlowSeq<'p, 'a> {
    p: &'p mut Parser<'a>,
    first: bool,
}

impl<'a> de::SeqAccess<'a> for FlowSeq<'_, 'a> {
    type Error = Bail;

    fn next_element_seed<T: DeserializeSeed<'a>>(&mut self, seed: T) -> Res<Option<T::Value>> {
        self.p.flow_spaces()?;
        if !self.first {
            match self.p.peek() {
                Some(b']') => {
                    self.p.pos += 1;
                    return Ok(None);
                }
                Some(b',') => {
                    self.p.pos += 1;
                    self.p.flow_spaces()?;
                    if self.p.peek() == Some(b']') {
                        return Err(Bail); // a trailing comma
                    }
                }
                _ => return Err(Bail),
            }
        } else if self.p.peek() == Some(b']') {
            self.p.pos += 1;
            return Ok(None);
        }
        self.first = false;
        seed.deserialize(FlowDe(self.p, None)).map(Some)
    }
}

struct FlowMap<'p, 'a> {
    p: &'p mut Parser<'a>,
    first: bool,
}

impl<'a> de::MapAccess<'a> for FlowMap<'_, 'a> {
    type Error = Bail;

    fn next_key_seed<K: DeserializeSeed<'a>>(&mut self, seed: K) -> Res<Option<K::Value>> {
        let p = &mut *self.p;
        p.flow_spaces()?;
        if !self.first {
            match p.peek() {
                Some(b'}') => {
                    p.pos += 1;
                    return Ok(None);
                }
                Some(b',') => {
                    p.pos += 1;
                    p.flow_spaces()?;
                    if p.peek() == Some(b'}') {
                        return Err(Bail);
                    }
                }
                _ => return Err(Bail),
            }
        } else if p.peek() == Some(b'}') {
            p.pos += 1;
            return Ok(None);
        }
        self.first = false;
        let key = match p.peek() {
            Some(b'"' | b'\'') => ScalarDe(p.quoted()?, false),
            _ => {
                // A plain key runs to `: `.
                let start = p.pos;
                if p.peek().is_none_or(is_indicator) {
                    return Err(Bail);
                }
                let mut end = start;
                loop {
                    match p.peek() {
                        Some(b':') => break,
                        None | Some(b'\n' | b',' | b'[' | b']' | b'{' | b'}' | b'#') => {
                            return Err(Bail)
                        }
                        Some(b' ') => p.pos += 1,
                        Some(_) => {
                            p.pos += 1;
                            end = p.pos;
                        }
                    }
                }
                if end == start {
                    return Err(Bail);
                }
                ScalarDe(Cow::Borrowed(&p.src[start..end]), true)
            }
        };
        if p.peek() != Some(b':') || p.at(p.pos + 1) != Some(b' ') {
            return Err(Bail);
        }
        p.pos += 2;
        seed.deserialize(key).map(Some)
    }

    fn next_value_seed<V: DeserializeSeed<'a>>(&mut self, seed: V) -> Res<V::Value> {
        seed.deserialize(FlowDe(self.p, None))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_outside_the_plain_set_is_found_wherever_it_is() {
        let base = "a: b\n".repeat(30); // 150 bytes: four blocks and a tail
        assert!(plain_text(&base));
        for at in 0..base.len() {
            for bad in ["\t", "\r", "\u{7f}", "\u{feff}", "\u{1}"] {
                let t = format!("{}{bad}{}", &base[..at], &base[at..]);
                assert!(!plain_text(&t), "{bad:?} at {at}");
            }
            let t = format!("{}\u{e9}{}", &base[..at], &base[at..]);
            assert!(plain_text(&t), "an e-acute at {at} is plain");
        }
    }
    use crate::base::yaml::Value;

    /// Both front ends on `text`: when the fast one succeeds, it must give
    /// serde_yaml's value. Returns whether it succeeded.
    fn agrees(text: &str) -> bool {
        let fast = from_str::<Value>(text);
        let reference = serde_yaml::from_str::<Value>(text);
        if let Some(v) = &fast {
            match &reference {
                Ok(r) => assert_eq!(
                    format!("{v:?}"),
                    format!("{r:?}"),
                    "the fast front end read {text:?} differently"
                ),
                Err(e) => panic!("the fast front end accepted {text:?}, serde_yaml said {e}"),
            }
        }
        fast.is_some()
    }

    #[test]
    fn the_subset_reads_as_serde_yaml_reads_it() {
        let handled = [
            "a: 1\nb: -2\nc: 1.5\nd: true\ne: ~\nf:\ng: null\nh: x y z\n",
            "a: 0\nb: 00\nc: 0123\nd: +5\ne: -0\nf: 1e3\ng: .inf\nh: -.inf\ni: inf\nj: nan\n",
            "a: True\nb: FALSE\nc: yes\nd: on\ne: NULL\nf: Null\n",
            "a: 30s\nb: 10%\nc: http://x:8080/a?b=c\nd: a#b\ne: x # comment\n",
            "# head\n\nrows:\n  - name: a\n    inject:\n      A: [503, 503]\n      B: [200]\n",
            "rows:\n- a: 1\n  b: 2\n- c\n-\n  d: 4\nnext: x\n",
            "p:\n  routes:\n    - { name: A, attempts: 2 }\n    - {name: 'B c', x: \"y\"}\n  e: []\n  f: {}\n",
            "t: |\n  A1 503 retry\n  A2 200 return\n\nu: |-\n    x\n\n    y\n\n\nv: end\n",
            "s: 'it''s'\nd: \"a\\tb\\n\\u00e9\\\"\"\ne: \"\"\nf: ''\n\"k q\": 1\n'k2': 2\n",
            "list:\n  - [1, [2, 3], {a: b}]\n  - - not handled\n",
            "a: [x, y,]\n",
            "a: &x 1\nb: *x\n",
            "--- \na: 1\n",
            "a: >\n  folded\n",
            "a: |+\n  keep\n\n",
            "a: multi\n  line\n",
            "a:\n\tb: 1\n",
            "a: 1\na: 2\n",
            "a: b: c\n",
            "a: [1, 2\n  , 3]\n",
            "a: 99999999999999999999\nb: 0x1F\n",
            "key with spaces: v\n? complex\n",
            "a: \"unterminated\n",
            "- x\n- y: 1\n  z: [a, \"b\"]\n",
            "a: 'x' trailing\n",
            "a: [1] trailing\n",
            "é: ü\n",
            "a:\n  b:\n    c:\n      - 1\n      - 2\n  d: e\n",
            "empty_list:\nempty_map: {}\n",
            "a: -\n",
            "a: [-1, +2, 0.5, '3']\n",
            "a:\n  |\n  x\n",
            "t: |\n    deep\n  \n    x\n      more\n",
            "t: |-\n  a\n  \n\n",
            "l:\n  - |\n    one\n\n    two\n  - x\n",
            "t: |\n  only\nnext: 1\n",
        ];
        let mut ok = 0;
        for text in handled {
            if agrees(text) {
                ok += 1;
            } else {
                eprintln!("left to serde_yaml: {text:?}");
            }
        }
        // Most of the table is inside the subset (and read identically).
        assert!(
            ok >= 14,
            "only {ok} cases were handled by the fast front end"
        );
        assert!(agrees("rows:\n  - name: a\n    expect:\n      trace: |\n        A1 503 X retry wait=1s\n        B1 200 return\n      stop: success\n"));
    }

    #[test]
    fn every_yaml_file_of_the_repository_reads_the_same() {
        let mut stack = vec![super::super::repository_root()];
        let (mut seen, mut handled) = (0, 0);
        while let Some(dir) = stack.pop() {
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            for e in entries.flatten() {
                let path = e.path();
                let name = e.file_name().to_string_lossy().into_owned();
                if path.is_dir() {
                    if !name.starts_with('.') && name != "target" && name != "node_modules" {
                        stack.push(path);
                    }
                } else if name.ends_with(".yaml") || name.ends_with(".yml") {
                    if let Ok(text) = std::fs::read_to_string(&path) {
                        seen += 1;
                        if agrees(&text) {
                            handled += 1;
                        }
                    }
                }
            }
        }
        eprintln!("the fast front end read {handled} of {seen} YAML files");
        assert!(seen > 20, "found only {seen} YAML files");
        assert!(
            handled * 2 > seen,
            "the fast front end read only {handled} of {seen} files"
        );
    }

    #[test]
    fn typed_shapes_read_as_serde_yaml_reads_them() {
        #[derive(Debug, serde::Deserialize, PartialEq)]
        #[serde(deny_unknown_fields)]
        struct Shape {
            name: String,
            #[serde(default)]
            code: Option<u16>,
            #[serde(default)]
            ratio: Option<f64>,
            #[serde(default)]
            list: Vec<u16>,
            #[serde(default)]
            any: Option<Value>,
            #[serde(default)]
            map: Option<serde_yaml::Mapping>,
            #[serde(default)]
            flag: bool,
            #[serde(default)]
            text: Option<String>,
        }
        let cases = [
            "name: 503\ncode: 503\nratio: 2\nlist: [1, 2]\n",
            "name: x\nany: ~\ntext: null\n",
            "name: x\nany: [1, {a: ~}]\nmap: {k: v, 1: 2}\nflag: true\n",
            "name: x\ncode: '503'\n",
            "name: x\ncode: 70000\n",
            "name: x\nunknown: 1\n",
            "name: x\nname: y\n",
            "name: x\ntext: 12\nratio: .5\n",
            "name: x\nmap: {a: null}\ntext: ''\n",
        ];
        for text in cases {
            let fast = from_str::<Shape>(text);
            let reference = serde_yaml::from_str::<Shape>(text);
            if let Some(v) = fast {
                assert_eq!(Some(v), reference.ok(), "{text:?}");
            }
        }
        assert!(from_str::<Shape>(cases[0]).is_some());
        assert!(
            from_str::<Shape>(cases[3]).is_none(),
            "a quoted number is not a u16"
        );
    }
}
