//! File globs: which files below a root are matrices (`**/*.{yaml,yml}`),
//! `Harness::globs`, `FAULTMATRIX_FILES`, and glob arguments to `run`.
//!
//! The syntax and meaning are globset's with its default options (which
//! faultmatrix used before), so patterns match the same paths, with the
//! two exceptions below; a differential test against globset
//! (`runner-tests/suite/globs.rs`) checks it. It is a small matcher of its
//! own so that a crate running matrices does not compile a regex engine.
//!
//! | syntax | matches |
//! |---|---|
//! | `?` | any one character, `/` included |
//! | `*` | any run of characters, `/` included |
//! | `**/x` | `x` at any depth (also at the top) |
//! | `a/**` | anything below `a` |
//! | `a/**/b` | `b` at any depth below `a`, `a/b` included |
//! | `[abc]`, `[a-z]`, `[!a-z]`, `[^a-z]` | one character in (or, negated, not in) the class; a first `]` or `-` is literal |
//! | `{yaml,yml}` | any one of the alternatives (they may nest) |
//! | `\*` | the character after the backslash, literally |
//!
//! `**` elsewhere (`a**`) is `*`; an empty alternative (`{a,}`) is left
//! out. Matching is case-sensitive. Unlike globset, POSIX classes
//! (`[[:alpha:]]`) are not supported (`[[:` is an ordinary class), and `?`
//! and classes match a character rather than a byte of a non-ASCII name.
//! Matching takes one pass over the path (a set of states, no
//! backtracking), so no pattern makes it slow.

use std::path::Path;

/// How deep `{...}` groups may nest (globset's bound).
const MAX_NESTING: usize = 100;

/// A pattern parsed (globset's tokens).
#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    Literal(char),
    Any,
    ZeroOrMore,
    /// `**/` at the start: `(/?|.*/)`.
    RecursivePrefix,
    /// `/**` at the end: `/.*`.
    RecursiveSuffix,
    /// `/**/` inside: `(/|/.*/)`.
    RecursiveZeroOrMore,
    Class {
        negated: bool,
        ranges: Vec<(char, char)>,
    },
    Alternates(Vec<Vec<Token>>),
}

/// One step of a compiled pattern. Every jump goes forward.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Op {
    /// This character.
    Char(char),
    /// Any one character.
    Any,
    /// Any run of characters.
    Star,
    /// One character in (or not in) these inclusive ranges.
    Class {
        negated: bool,
        ranges: Vec<(char, char)>,
    },
    /// Go on with the next step, or jump this many steps ahead.
    Skip(usize),
    /// Go on at any of these steps (the branches of a group).
    Fork(Vec<usize>),
    /// Go on at this step (the end of a group's branch).
    Jump(usize),
}

/// A pattern that could not be compiled, and why (globset's wording).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GlobError {
    /// What is wrong with the pattern.
    pub reason: String,
}

/// One or more patterns; a path matches when any of them does.
#[derive(Debug, Clone, Default)]
pub struct GlobSet {
    /// Every pattern, compiled.
    patterns: Vec<Vec<Op>>,
}

impl GlobSet {
    /// Compiles patterns; an error names the pattern.
    pub fn new(patterns: &[String]) -> Result<Self, (String, GlobError)> {
        let compiled = patterns
            .iter()
            .map(|p| compile(p).map_err(|e| (p.clone(), e)))
            .collect::<Result<_, _>>()?;
        Ok(Self { patterns: compiled })
    }

    /// Whether a path matches one of the patterns (its text, lossily
    /// decoded, with `/` separators as given).
    pub fn is_match(&self, path: impl AsRef<Path>) -> bool {
        let text = path.as_ref().to_string_lossy();
        let chars: Vec<char> = text.chars().collect();
        self.patterns.iter().any(|ops| matches(ops, &chars))
    }
}

fn error(reason: impl Into<String>) -> GlobError {
    GlobError {
        reason: reason.into(),
    }
}

/// Parses and compiles one pattern.
fn compile(pattern: &str) -> Result<Vec<Op>, GlobError> {
    let tokens = Parser::new(pattern).parse()?;
    let mut ops = Vec::new();
    // `**` alone matches everything.
    if tokens == [Token::RecursivePrefix] {
        ops.push(Op::Star);
    } else {
        emit(&tokens, &mut ops);
    }
    Ok(ops)
}

/// The parser: globset's rules, token for token.
struct Parser {
    chars: Vec<char>,
    /// The next character to read.
    at: usize,
    /// Where each open group's first branch is in `branches`.
    groups: Vec<usize>,
    /// The branches being parsed; tokens go to the last one.
    branches: Vec<Vec<Token>>,
}

impl Parser {
    fn new(pattern: &str) -> Self {
        Self {
            chars: pattern.chars().collect(),
            at: 0,
            groups: Vec::new(),
            branches: vec![Vec::new()],
        }
    }

    fn parse(mut self) -> Result<Vec<Token>, GlobError> {
        while let Some(c) = self.bump() {
            match c {
                '?' => self.push(Token::Any),
                '*' => self.star(),
                '[' => self.class()?,
                '{' => {
                    if self.groups.len() >= MAX_NESTING {
                        return Err(error("alternate groups nested too deeply"));
                    }
                    self.groups.push(self.branches.len());
                    self.branches.push(Vec::new());
                }
                '}' => {
                    let Some(start) = self.groups.pop() else {
                        return Err(error(
                            "unopened alternate group; missing '{' (maybe escape '}' with '[}]'?)",
                        ));
                    };
                    let group = self.branches.drain(start..).collect();
                    self.push(Token::Alternates(group));
                }
                ',' if !self.groups.is_empty() => self.branches.push(Vec::new()),
                '\\' => match self.bump() {
                    Some(c) => self.push(Token::Literal(c)),
                    None => return Err(error("dangling '\\'")),
                },
                c => self.push(Token::Literal(c)),
            }
        }
        if self.branches.len() > 1 {
            return Err(error(
                "unclosed alternate group; missing '}' (maybe escape '{' with '[{]'?)",
            ));
        }
        Ok(self.branches.pop().unwrap_or_default())
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.chars.get(self.at).copied();
        self.at += usize::from(c.is_some());
        c
    }

    fn peek(&self) -> Option<char> {
        self.chars.get(self.at).copied()
    }

    /// The character before the one just read.
    fn prev(&self) -> Option<char> {
        self.at.checked_sub(2).map(|k| self.chars[k])
    }

    fn branch(&mut self) -> &mut Vec<Token> {
        self.branches.last_mut().expect("there is always a branch")
    }

    fn push(&mut self, t: Token) {
        self.branch().push(t);
    }

    /// After a `*`: a `*`, or one of the three `**` forms.
    fn star(&mut self) {
        let prev = self.prev();
        if self.peek() != Some('*') {
            return self.push(Token::ZeroOrMore);
        }
        self.bump();
        let stars = |p: &mut Self| {
            p.push(Token::ZeroOrMore);
            p.push(Token::ZeroOrMore);
        };
        if self.branch().is_empty() {
            if self.peek().is_some_and(|c| c != '/') {
                return stars(self);
            }
            self.push(Token::RecursivePrefix);
            self.bump();
            return;
        }
        let in_group = self.branches.len() > 1;
        if prev != Some('/') && (!in_group || !matches!(prev, Some(',' | '{'))) {
            return stars(self);
        }
        let is_suffix = match self.peek() {
            None => true,
            Some(',' | '}') if in_group => true,
            Some('/') => {
                self.bump();
                false
            }
            Some(_) => return stars(self),
        };
        let last = self.branch().pop();
        let kept = match last {
            Some(t @ (Token::RecursivePrefix | Token::RecursiveSuffix)) => t,
            _ if is_suffix => Token::RecursiveSuffix,
            _ => Token::RecursiveZeroOrMore,
        };
        self.push(kept);
    }

    /// After a `[`: the class up to its `]` (a first `]` or `-` is a member).
    fn class(&mut self) -> Result<(), GlobError> {
        let negated = matches!(self.peek(), Some('!' | '^'));
        if negated {
            self.bump();
        }
        let mut ranges: Vec<(char, char)> = Vec::new();
        let mut first = true;
        let mut in_range = false;
        loop {
            let Some(c) = self.bump() else {
                return Err(error("unclosed character class; missing ']'"));
            };
            match c {
                ']' if !first => break,
                '-' if !first && !in_range => in_range = true,
                c if in_range => {
                    let r = ranges.last_mut().expect("a range has a start");
                    if c < r.0 {
                        return Err(error(format!("invalid range; '{}' > '{c}'", r.0)));
                    }
                    r.1 = c;
                    in_range = false;
                }
                c => ranges.push((c, c)),
            }
            first = false;
        }
        if in_range {
            ranges.push(('-', '-'));
        }
        self.push(Token::Class { negated, ranges });
        Ok(())
    }
}

/// Appends the steps of tokens.
fn emit(tokens: &[Token], ops: &mut Vec<Op>) {
    for t in tokens {
        match t {
            Token::Literal(c) => ops.push(Op::Char(*c)),
            Token::Any => ops.push(Op::Any),
            Token::ZeroOrMore => ops.push(Op::Star),
            Token::RecursivePrefix => ops.extend([Op::Skip(3), Op::Star, Op::Char('/')]),
            Token::RecursiveSuffix => ops.extend([Op::Char('/'), Op::Star]),
            Token::RecursiveZeroOrMore => {
                ops.extend([Op::Char('/'), Op::Skip(3), Op::Star, Op::Char('/')]);
            }
            Token::Class { negated, ranges } => ops.push(Op::Class {
                negated: *negated,
                ranges: ranges.clone(),
            }),
            Token::Alternates(branches) => {
                // Each branch, then a jump past the others. A branch that
                // adds no step (it matches only the empty text) is left
                // out, as globset does; a group of only those is nothing.
                let fork = ops.len();
                ops.push(Op::Fork(Vec::new()));
                let mut starts = Vec::new();
                let mut jumps = Vec::new();
                for b in branches {
                    let start = ops.len();
                    emit(b, ops);
                    if ops.len() == start {
                        continue;
                    }
                    starts.push(start);
                    jumps.push(ops.len());
                    ops.push(Op::Jump(0));
                }
                if starts.is_empty() {
                    ops.truncate(fork);
                    continue;
                }
                let end = ops.len();
                ops[fork] = Op::Fork(starts);
                for j in jumps {
                    ops[j] = Op::Jump(end);
                }
            }
        }
    }
}

/// Whether the whole text matches the steps: the set of steps reachable
/// after each character, in one pass (no backtracking).
fn matches(ops: &[Op], text: &[char]) -> bool {
    let n = ops.len();
    let mut now = vec![false; n + 1];
    let mut next = vec![false; n + 1];
    now[0] = true;
    close(ops, &mut now);
    for &c in text {
        next.iter_mut().for_each(|s| *s = false);
        for (i, op) in ops.iter().enumerate() {
            if !now[i] {
                continue;
            }
            match op {
                Op::Char(x) if *x == c => next[i + 1] = true,
                Op::Any => next[i + 1] = true,
                Op::Star => next[i] = true,
                Op::Class { negated, ranges } => {
                    let inside = ranges.iter().any(|&(a, b)| a <= c && c <= b);
                    if inside != *negated {
                        next[i + 1] = true;
                    }
                }
                _ => {}
            }
        }
        close(ops, &mut next);
        if !next.iter().any(|&s| s) {
            return false;
        }
        std::mem::swap(&mut now, &mut next);
    }
    now[n]
}

/// Adds the steps reachable without reading a character. Jumps only go
/// forward, so one pass in order reaches them all.
fn close(ops: &[Op], states: &mut [bool]) {
    for i in 0..ops.len() {
        if !states[i] {
            continue;
        }
        match &ops[i] {
            Op::Star => states[i + 1] = true,
            Op::Skip(k) => {
                states[i + 1] = true;
                states[i + k] = true;
            }
            Op::Fork(starts) => starts.iter().for_each(|&s| states[s] = true),
            Op::Jump(to) => states[*to] = true,
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(p: &str) -> GlobSet {
        GlobSet::new(&[p.to_string()]).unwrap()
    }

    #[test]
    fn the_default_pattern_finds_yaml_at_any_depth() {
        let s = set("**/*.{yaml,yml}");
        for yes in ["x.yaml", "a/x.yml", "a/b/c/x.yaml"] {
            assert!(s.is_match(yes), "{yes}");
        }
        for no in ["x.json", "a/x.yaml.bak", "yaml"] {
            assert!(!s.is_match(no), "{no}");
        }
    }

    #[test]
    fn recursive_forms_follow_globset() {
        assert!(set("a/**/b").is_match("a/b"));
        assert!(set("a/**/b").is_match("a/x/y/b"));
        assert!(!set("a/**/b").is_match("ab"));
        assert!(set("a/**").is_match("a/x/y"));
        assert!(!set("a/**").is_match("a"));
        assert!(set("**").is_match("anything/at/all"));
        assert!(set("a**").is_match("a/b"));
    }

    #[test]
    fn classes_escapes_and_errors() {
        assert!(set("[!a-c]x").is_match("dx"));
        assert!(!set("[!a-c]x").is_match("bx"));
        assert!(set("[]]").is_match("]"));
        assert!(set("[a-]").is_match("-"));
        assert!(set("\\*").is_match("*"));
        assert!(!set("\\*").is_match("x"));
        for (bad, why) in [
            ("[ab", "unclosed character class"),
            ("{a,b", "unclosed alternate group"),
            ("a}", "unopened alternate group"),
            ("{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{", "nested too deeply"),
            ("a\\", "dangling"),
            ("[z-a]", "invalid range"),
        ] {
            let e = GlobSet::new(&[bad.to_string()]).unwrap_err();
            assert!(e.1.reason.contains(why), "{bad}: {e:?}");
        }
    }

    #[test]
    fn nested_groups_keep_their_places() {
        let s = set("{a,{b,x}}**{a/,**}");
        assert!(s.is_match("x.yaml"));
        assert!(s.is_match("ba/"));
        assert!(!s.is_match("y"));
        assert!(set("{a,{b,}}c").is_match("bc"));
        assert!(!set("{a,{b,}}c").is_match("c"));
    }

    #[test]
    fn many_stars_stay_linear() {
        let s = set("*a*a*a*a*a*a*a*a*b");
        let long = "a".repeat(5_000);
        assert!(!s.is_match(&long));
    }
}
