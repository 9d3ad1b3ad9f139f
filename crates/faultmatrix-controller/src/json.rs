//! Reading one string out of a JSON error body, without a JSON library.
//!
//! Classification looks at fields such as `error.code` of an upstream's
//! error body. A service using the controller should not need a JSON crate
//! for that, so this is a small validating reader: the whole text must be
//! one JSON value (as RFC 8259 defines it), nested at most
//! [`MAX_DEPTH`] deep; anything else is "no value". Duplicate keys resolve to
//! the last one, as in serde_json.

/// Deepest nesting read; deeper documents are treated as unreadable.
pub const MAX_DEPTH: usize = 128;

/// The string at a dotted path (`error.code`) in a JSON document, if the
/// document is valid JSON and the path leads through objects to a string.
pub fn string_at(text: &str, path: &str) -> Option<String> {
    let mut r = Reader {
        s: text.as_bytes(),
        i: 0,
    };
    r.ws();
    // A path has at least one key, so it leads through an object: any
    // other document (an empty body, text, an array) has nothing at it.
    // Said before anything is read or allocated: most bodies classified
    // are empty.
    if r.peek() != Some(b'{') {
        return None;
    }
    let keys: Vec<&str> = path.split('.').collect();
    let found = r.value(0, Some(&keys)).ok()?;
    r.ws();
    if r.i != r.s.len() {
        return None;
    }
    found
}

struct Reader<'a> {
    s: &'a [u8],
    i: usize,
}

/// Not valid JSON.
struct Invalid;

type Found = Result<Option<String>, Invalid>;

impl Reader<'_> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }

    fn ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.i += 1;
        }
    }

    fn eat(&mut self, b: u8) -> Result<(), Invalid> {
        if self.peek() == Some(b) {
            self.i += 1;
            Ok(())
        } else {
            Err(Invalid)
        }
    }

    fn literal(&mut self, word: &[u8]) -> Result<(), Invalid> {
        if self.s[self.i..].starts_with(word) {
            self.i += word.len();
            Ok(())
        } else {
            Err(Invalid)
        }
    }

    /// Reads one value. `want` is the rest of the path (empty: this value
    /// is the target); `None` when the value is only skipped.
    fn value(&mut self, depth: usize, want: Option<&[&str]>) -> Found {
        if depth > MAX_DEPTH {
            return Err(Invalid);
        }
        match self.peek().ok_or(Invalid)? {
            b'{' => self.object(depth, want),
            b'[' => {
                self.array(depth)?;
                Ok(None)
            }
            b'"' => {
                let s = self.string()?;
                Ok(want.filter(|w| w.is_empty()).map(|_| s))
            }
            b't' => self.literal(b"true").map(|()| None),
            b'f' => self.literal(b"false").map(|()| None),
            b'n' => self.literal(b"null").map(|()| None),
            b'-' | b'0'..=b'9' => self.number().map(|()| None),
            _ => Err(Invalid),
        }
    }

    fn object(&mut self, depth: usize, want: Option<&[&str]>) -> Found {
        self.eat(b'{')?;
        self.ws();
        let mut found = None;
        if self.peek() == Some(b'}') {
            self.i += 1;
            return Ok(None);
        }
        loop {
            self.ws();
            let key = self.string()?;
            self.ws();
            self.eat(b':')?;
            self.ws();
            let next = match want {
                Some([first, rest @ ..]) if *first == key => Some(rest),
                _ => None,
            };
            let is_target = next.is_some();
            let v = self.value(depth + 1, next)?;
            if is_target {
                // The last duplicate key wins, as in serde_json.
                found = v;
            }
            self.ws();
            match self.peek() {
                Some(b',') => self.i += 1,
                Some(b'}') => {
                    self.i += 1;
                    return Ok(found);
                }
                _ => return Err(Invalid),
            }
        }
    }

    fn array(&mut self, depth: usize) -> Result<(), Invalid> {
        self.eat(b'[')?;
        self.ws();
        if self.peek() == Some(b']') {
            self.i += 1;
            return Ok(());
        }
        loop {
            self.ws();
            self.value(depth + 1, None)?;
            self.ws();
            match self.peek() {
                Some(b',') => self.i += 1,
                Some(b']') => {
                    self.i += 1;
                    return Ok(());
                }
                _ => return Err(Invalid),
            }
        }
    }

    fn digits(&mut self) -> usize {
        let start = self.i;
        while matches!(self.peek(), Some(b'0'..=b'9')) {
            self.i += 1;
        }
        self.i - start
    }

    fn number(&mut self) -> Result<(), Invalid> {
        if self.peek() == Some(b'-') {
            self.i += 1;
        }
        match self.peek() {
            Some(b'0') => self.i += 1,
            Some(b'1'..=b'9') => {
                self.digits();
            }
            _ => return Err(Invalid),
        }
        if self.peek() == Some(b'.') {
            self.i += 1;
            if self.digits() == 0 {
                return Err(Invalid);
            }
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            self.i += 1;
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.i += 1;
            }
            if self.digits() == 0 {
                return Err(Invalid);
            }
        }
        Ok(())
    }

    fn hex4(&mut self) -> Result<u32, Invalid> {
        let h = self.s.get(self.i..self.i + 4).ok_or(Invalid)?;
        let text = std::str::from_utf8(h).map_err(|_| Invalid)?;
        if !text.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(Invalid);
        }
        self.i += 4;
        u32::from_str_radix(text, 16).map_err(|_| Invalid)
    }

    fn string(&mut self) -> Result<String, Invalid> {
        self.eat(b'"')?;
        let mut out: Vec<u8> = Vec::new();
        loop {
            let b = self.peek().ok_or(Invalid)?;
            self.i += 1;
            match b {
                b'"' => return String::from_utf8(out).map_err(|_| Invalid),
                b'\\' => {
                    let e = self.peek().ok_or(Invalid)?;
                    self.i += 1;
                    let c = match e {
                        b'"' => '"',
                        b'\\' => '\\',
                        b'/' => '/',
                        b'b' => '\u{8}',
                        b'f' => '\u{c}',
                        b'n' => '\n',
                        b'r' => '\r',
                        b't' => '\t',
                        b'u' => {
                            let hi = self.hex4()?;
                            let code = if (0xD800..0xDC00).contains(&hi) {
                                self.literal(b"\\u")?;
                                let lo = self.hex4()?;
                                if !(0xDC00..0xE000).contains(&lo) {
                                    return Err(Invalid);
                                }
                                0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00)
                            } else if (0xDC00..0xE000).contains(&hi) {
                                return Err(Invalid);
                            } else {
                                hi
                            };
                            char::from_u32(code).ok_or(Invalid)?
                        }
                        _ => return Err(Invalid),
                    };
                    let mut buf = [0u8; 4];
                    out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
                }
                0x00..=0x1F => return Err(Invalid),
                _ => out.push(b),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_nested_strings() {
        let body = r#"{"error": {"code": "rate_limit_exceeded", "message": "slow down"}}"#;
        assert_eq!(
            string_at(body, "error.code").as_deref(),
            Some("rate_limit_exceeded")
        );
        assert_eq!(string_at(body, "error.type"), None);
        assert_eq!(string_at(body, "error"), None, "an object is not a string");
        assert_eq!(
            string_at(
                r#"{"type":"error","error":{"type":"overloaded_error"}}"#,
                "error.type"
            )
            .as_deref(),
            Some("overloaded_error")
        );
    }

    #[test]
    fn only_an_object_has_a_path() {
        for text in ["", "  ", "\"x\"", "[{\"code\": \"X\"}]", "null", "code"] {
            assert_eq!(string_at(text, "code"), None, "{text:?}");
            assert_eq!(string_at(text, ""), None, "{text:?}");
        }
        assert_eq!(
            string_at(" \n{\"code\": \"X\"}", "code").as_deref(),
            Some("X")
        );
        assert_eq!(string_at("{\"\": \"E\"}", "").as_deref(), Some("E"));
    }

    #[test]
    fn the_whole_text_must_be_json() {
        assert_eq!(string_at(r#"{"code":"x"} trailing"#, "code"), None);
        assert_eq!(string_at(r#"{"code":"x""#, "code"), None);
        assert_eq!(string_at("not json", "code"), None);
        assert_eq!(string_at("", "code"), None);
        assert_eq!(string_at(r#"{"code":"x",}"#, "code"), None);
        assert_eq!(string_at(r#"{"a":01,"code":"x"}"#, "code"), None);
        assert_eq!(string_at("{\"code\":\"a\nb\"}", "code"), None);
    }

    #[test]
    fn escapes_numbers_and_duplicates() {
        assert_eq!(
            string_at(r#"{"code":"a\"b\\c\u00e9\ud83d\ude00"}"#, "code").as_deref(),
            Some("a\"b\\cé😀")
        );
        assert_eq!(
            string_at(r#"{"n":[1,-2.5e+3,0.1,true,null,{}],"code":"x"}"#, "code").as_deref(),
            Some("x")
        );
        assert_eq!(
            string_at(r#"{"code":"first","code":"last"}"#, "code").as_deref(),
            Some("last")
        );
        assert_eq!(string_at(r#"{"code":"\ud800"}"#, "code"), None);
    }

    #[test]
    fn deep_nesting_is_bounded() {
        let deep = "[".repeat(100_000);
        assert_eq!(string_at(&deep, "code"), None);
        let ok = format!("{}{}", "[".repeat(100), "]".repeat(100));
        assert_eq!(string_at(&ok, "code"), None);
    }
}
