//! Redaction: the one list of what is a credential, shared by the fixture
//! server (which never records credential headers), the tape recorder
//! (which scrubs every exchange before it reaches a tape) and every message.
//!
//! Four layers, applied to request summaries, response headers, bodies and
//! stream items alike:
//!
//! 1. **Credential headers** ([`is_credential_header`]): `authorization`,
//!    `proxy-authorization`, `cookie`, `set-cookie`, `x-api-key`, `api-key`,
//!    and any header whose name contains `api-key`, `apikey`, `token`,
//!    `secret`, `session`, `password`, `auth` or `credential` (idempotency
//!    keys excepted), plus the names a matrix adds. The header stays, its value becomes
//!    `[scrubbed]`, so a reviewer sees it was sent.
//! 2. **Secret values**: every credential the recorder itself sent is
//!    replaced wherever it appears (an upstream that echoes a key back).
//! 3. **JSON**: in JSON bodies and stream data, values under credential-like
//!    keys (`api_key`, `password`, `token`, `authorization`...) and under the
//!    configured paths (`error.account_id`, `data.*.user`) are replaced.
//! 4. **Prefixed identifiers** (no regular expressions): a word starting with
//!    a configured prefix (`org-`, `acct_`, `sk-`, `proj_` by default) keeps
//!    its prefix and loses the rest: `org-AbC123` becomes `org-[scrubbed]`.
//!
//! A secret is caught in the forms an upstream echoes it in: as sent, in
//! any letter case, base64-encoded (standard or URL-safe, padded or not),
//! and partially masked (`sk-abc****wxyz`, `****wxyz`: a word whose
//! unmasked ends are the secret's ends).
//!
//! Every message (diagnostics, row failures) also passes through
//! [`url_credentials`]: `http://user:pass@host` is shown as
//! `http://***@host`.

use std::borrow::Cow;

/// `text` with the user information of every URL in it replaced:
/// `http://user:pass@host/x` becomes `http://***@host/x`. Text without
/// `://` is returned as is.
pub fn url_credentials(text: &str) -> Cow<'_, str> {
    if !text.contains("://") {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find("://") {
        let (head, tail) = rest.split_at(i + 3);
        out.push_str(head);
        let end = tail
            .find(|c: char| {
                matches!(
                    c,
                    '/' | '?'
                        | '#'
                        | '`'
                        | '"'
                        | '\''
                        | '<'
                        | '>'
                        | '('
                        | ')'
                        | '['
                        | ']'
                        | ','
                        | ';'
                ) || c.is_whitespace()
            })
            .unwrap_or(tail.len());
        let authority = &tail[..end];
        match authority.rfind('@') {
            Some(at) => {
                out.push_str("***");
                out.push_str(&authority[at..]);
            }
            None => out.push_str(authority),
        }
        rest = &tail[end..];
    }
    out.push_str(rest);
    Cow::Owned(out)
}

/// Base64 of `bytes` (RFC 4648), standard or URL-safe alphabet, padded.
fn base64(bytes: &[u8], url_safe: bool) -> String {
    const STD: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    let sym = |i: u32| {
        let c = STD[(i & 63) as usize];
        char::from(match c {
            b'+' if url_safe => b'-',
            b'/' if url_safe => b'_',
            c => c,
        })
    };
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |acc, (i, b)| acc | (u32::from(*b) << (16 - 8 * i)));
        out.push(sym(n >> 18));
        out.push(sym(n >> 12));
        out.push(if chunk.len() > 1 { sym(n >> 6) } else { '=' });
        out.push(if chunk.len() > 2 { sym(n) } else { '=' });
    }
    out
}

/// Characters that stand for hidden ones in a masked secret.
fn is_mask(c: char) -> bool {
    matches!(c, '*' | '•' | '…' | 'x' | 'X' | '.')
}

/// The forms of `secret` an upstream may echo, besides the secret itself:
/// its base64 (both alphabets, with and without padding), and the part of
/// its base64 that is the same wherever the secret sits inside a longer
/// encoded blob (`base64("user:" + key)`): a blob encodes three bytes per
/// four characters, so for each of the three alignments the secret's
/// whole three-byte groups encode to the same characters, whatever comes
/// before or after them.
fn encoded_forms(secret: &str) -> Vec<String> {
    /// Shorter stable runs could match unrelated base64 by chance.
    const MIN_GROUPS: usize = 3;
    let mut v = Vec::new();
    for url_safe in [false, true] {
        let padded = base64(secret.as_bytes(), url_safe);
        let bare = padded.trim_end_matches('=').to_string();
        // The unpadded form also matches inside a longer blob's prefix.
        if padded != bare {
            v.push(padded);
        }
        v.push(bare);
        for shift in 0..3 {
            let tail = &secret.as_bytes()[shift.min(secret.len())..];
            let whole = tail.len() / 3 * 3;
            if whole / 3 >= MIN_GROUPS {
                v.push(base64(&tail[..whole], url_safe));
            }
        }
    }
    v.sort_by_key(|s| std::cmp::Reverse(s.len()));
    v.dedup();
    v
}

/// What replaces a scrubbed value.
pub const MARK: &str = "[scrubbed]";

/// Header names always scrubbed (lowercase).
pub const CREDENTIAL_HEADERS: [&str; 6] = [
    "authorization",
    "proxy-authorization",
    "cookie",
    "set-cookie",
    "x-api-key",
    "api-key",
];

/// Parts of header names that mark a credential.
const HEADER_PARTS: [&str; 8] = [
    "api-key",
    "apikey",
    "token",
    "secret",
    "session",
    "password",
    "auth",
    "credential",
];

/// Whether a header (by name, any case) carries a credential: never
/// recorded, never asserted, scrubbed from tapes. Idempotency keys are not
/// credentials.
pub fn is_credential_header(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    if n.contains("idempotency") {
        return false;
    }
    CREDENTIAL_HEADERS.contains(&n.as_str()) || HEADER_PARTS.iter().any(|p| n.contains(p))
}

/// JSON keys whose values are always scrubbed (compared lowercase, with `-`
/// read as `_`).
pub const CREDENTIAL_KEYS: [&str; 11] = [
    "api_key",
    "apikey",
    "authorization",
    "password",
    "secret",
    "token",
    "access_token",
    "refresh_token",
    "client_secret",
    "cookie",
    "session",
];

/// Identifier prefixes scrubbed by default.
pub const DEFAULT_PREFIXES: [&str; 4] = ["sk-", "org-", "acct_", "proj_"];

/// A scrubber: the defaults plus a matrix's additions plus the secrets the
/// recorder sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scrubber {
    headers: Vec<String>,
    paths: Vec<Vec<String>>,
    prefixes: Vec<String>,
    secrets: Vec<String>,
}

impl Default for Scrubber {
    fn default() -> Self {
        Self::new(&[], &[], &[])
    }
}

impl Scrubber {
    /// The defaults plus extra header names, JSON paths (`error.account_id`,
    /// `*` for any key or index) and identifier prefixes.
    pub fn new(headers: &[String], paths: &[String], prefixes: &[String]) -> Self {
        let mut p: Vec<String> = DEFAULT_PREFIXES.iter().map(|s| s.to_string()).collect();
        for x in prefixes {
            if !p.contains(x) {
                p.push(x.clone());
            }
        }
        // Longest first, so `sk-ant-` wins over `sk-`.
        p.sort_by_key(|s| std::cmp::Reverse(s.len()));
        Self {
            headers: headers.iter().map(|h| h.to_ascii_lowercase()).collect(),
            paths: paths
                .iter()
                .map(|s| s.split('.').map(str::to_string).collect())
                .collect(),
            prefixes: p,
            secrets: Vec::new(),
        }
    }

    /// Adds a value that must never reach a tape (a key the recorder sent).
    pub fn secret(&mut self, value: &str) {
        if value.len() >= 4 && !self.secrets.iter().any(|s| s == value) {
            self.secrets.push(value.to_string());
            self.secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
        }
    }

    /// Whether a header's value is a credential.
    pub fn is_credential_header(&self, name: &str) -> bool {
        is_credential_header(name) || self.headers.contains(&name.to_ascii_lowercase())
    }

    /// A header value, scrubbed.
    pub fn header(&self, name: &str, value: &str) -> String {
        if self.is_credential_header(name) {
            MARK.to_string()
        } else {
            self.text(value)
        }
    }

    /// Free text: secrets (as sent, in any case, base64-encoded, or
    /// partially masked) and prefixed identifiers replaced.
    pub fn text(&self, s: &str) -> String {
        let mut out = s.to_string();
        for secret in &self.secrets {
            out = replace_ignoring_case(&out, secret);
            for form in encoded_forms(secret) {
                if out.contains(form.as_str()) {
                    out = out.replace(form.as_str(), MARK);
                }
            }
            out = masked(&out, secret);
        }
        self.prefixed(&out)
    }

    /// A body: JSON is walked (keys and paths), then treated as text.
    pub fn body(&self, s: &str) -> String {
        match serde_json::from_str::<serde_json::Value>(s) {
            Ok(mut v) if v.is_object() || v.is_array() => {
                let mut path = Vec::new();
                self.walk(&mut v, &mut path);
                // Re-serialize only when something changed, to keep bytes.
                let before: serde_json::Value =
                    serde_json::from_str(s).expect("parsed a moment ago");
                let text = if before == v {
                    s.to_string()
                } else {
                    v.to_string()
                };
                self.text(&text)
            }
            _ => self.text(s),
        }
    }

    fn walk(&self, v: &mut serde_json::Value, path: &mut Vec<String>) {
        if self.path_hit(path) {
            *v = serde_json::Value::String(MARK.to_string());
            return;
        }
        match v {
            serde_json::Value::Object(map) => {
                for (k, child) in map.iter_mut() {
                    let norm = k.to_ascii_lowercase().replace('-', "_");
                    if CREDENTIAL_KEYS.contains(&norm.as_str()) && !child.is_null() {
                        *child = serde_json::Value::String(MARK.to_string());
                        continue;
                    }
                    path.push(k.clone());
                    self.walk(child, path);
                    path.pop();
                }
            }
            serde_json::Value::Array(items) => {
                for (i, child) in items.iter_mut().enumerate() {
                    path.push(i.to_string());
                    self.walk(child, path);
                    path.pop();
                }
            }
            _ => {}
        }
    }

    fn path_hit(&self, path: &[String]) -> bool {
        self.paths.iter().any(|p| {
            p.len() == path.len()
                && p.iter()
                    .zip(path)
                    .all(|(want, got)| want == "*" || want == got)
        })
    }

    fn prefixed(&self, s: &str) -> String {
        let bytes = s.as_bytes();
        let mut out = String::with_capacity(s.len());
        let mut i = 0;
        let word = |b: u8| b.is_ascii_alphanumeric() || b == b'_' || b == b'-';
        'outer: while i < bytes.len() {
            let boundary = i == 0 || !bytes[i - 1].is_ascii_alphanumeric();
            if boundary {
                for p in &self.prefixes {
                    if s[i..].starts_with(p.as_str()) {
                        let start = i + p.len();
                        let mut end = start;
                        while end < bytes.len() && word(bytes[end]) {
                            end += 1;
                        }
                        if end > start && s[start..end] != *MARK {
                            out.push_str(p);
                            out.push_str(MARK);
                            i = end;
                            continue 'outer;
                        }
                    }
                }
            }
            let ch = s[i..].chars().next().expect("in bounds");
            out.push(ch);
            i += ch.len_utf8();
        }
        out
    }
}

/// `text` with every occurrence of `secret`, in any ASCII letter case,
/// replaced by [`MARK`].
fn replace_ignoring_case(text: &str, secret: &str) -> String {
    let lower_text = text.to_ascii_lowercase();
    let lower_secret = secret.to_ascii_lowercase();
    if !lower_text.contains(&lower_secret) {
        return text.to_string();
    }
    // ASCII lowercasing keeps byte offsets, so matches index `text` too.
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    for (at, m) in lower_text.match_indices(&lower_secret) {
        if at < last {
            continue;
        }
        out.push_str(&text[last..at]);
        out.push_str(MARK);
        last = at + m.len();
    }
    out.push_str(&text[last..]);
    out
}

/// `text` with partially masked forms of `secret` replaced: a word made of
/// a start of the secret, at least three mask characters, and an end of
/// the secret (`sk-ab****wxyz`, `****wxyz`, `sk-ab...`), with at least
/// four of the secret's characters showing.
fn masked(text: &str, secret: &str) -> String {
    if secret.chars().count() < 8 || !text.contains(is_mask) {
        return text.to_string();
    }
    let word = |c: char| c.is_alphanumeric() || matches!(c, '-' | '_' | '*' | '•' | '…' | '.');
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find(word) {
        out.push_str(&rest[..start]);
        let len = rest[start..]
            .find(|c: char| !word(c))
            .unwrap_or(rest.len() - start);
        let w = &rest[start..start + len];
        // A sentence's full stop is not part of the word.
        let bare = w.strip_suffix('.').unwrap_or(w);
        if bare.len() < w.len() && is_masked_form(bare, secret) {
            out.push_str(MARK);
            out.push_str(&w[bare.len()..]);
        } else if is_masked_form(w, secret) {
            out.push_str(MARK);
        } else {
            out.push_str(w);
        }
        rest = &rest[start + len..];
    }
    out.push_str(rest);
    out
}

fn is_masked_form(word: &str, secret: &str) -> bool {
    // The longest run of mask characters splits the word in two ends.
    let chars: Vec<char> = word.chars().collect();
    let mut best = (0, 0);
    let mut i = 0;
    while i < chars.len() {
        if is_mask(chars[i]) {
            let j = chars[i..]
                .iter()
                .position(|c| !is_mask(*c))
                .map_or(chars.len(), |p| i + p);
            if j - i > best.1 - best.0 {
                best = (i, j);
            }
            i = j;
        } else {
            i += 1;
        }
    }
    if best.1 - best.0 < 3 {
        return false;
    }
    let head: String = chars[..best.0].iter().collect();
    let tail: String = chars[best.1..].iter().collect();
    head.chars().count() + tail.chars().count() >= 4
        && head.len() + tail.len() < secret.len()
        && secret.starts_with(head.as_str())
        && secret.ends_with(tail.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_in_urls_are_removed_from_messages() {
        assert_eq!(
            url_credentials(
                "upstream `http://user:pa55@127.0.0.1:8080/v1` refused; see https://a:b@x.test?q"
            ),
            "upstream `http://***@127.0.0.1:8080/v1` refused; see https://***@x.test?q"
        );
        assert_eq!(url_credentials("http://host/a@b"), "http://host/a@b");
        assert_eq!(url_credentials("no url here"), "no url here");
    }

    #[test]
    fn base64_follows_rfc_4648() {
        for (plain, enc) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foobar", "Zm9vYmFy"),
        ] {
            assert_eq!(base64(plain.as_bytes(), false), enc);
        }
        assert_eq!(base64(&[0xfb, 0xff], false), "+/8=");
        assert_eq!(base64(&[0xfb, 0xff], true), "-_8=");
    }

    #[test]
    fn secrets_are_caught_in_any_case_encoded_and_partially_masked() {
        let key = "sk-live-Abc123XyZ789qrs";
        let mut s = Scrubber::default();
        s.secret(key);
        for echoed in [
            key.to_uppercase(),
            key.to_lowercase(),
            base64(key.as_bytes(), false),
            base64(key.as_bytes(), false)
                .trim_end_matches('=')
                .to_string(),
            base64(key.as_bytes(), true),
            "sk-live-Ab**************9qrs".to_string(),
            "****************************9qrs".to_string(),
            "sk-live-Abc1***".to_string(),
            "sk-l•••••••••••••••qrs".to_string(),
        ] {
            let out = s.text(&format!("Incorrect API key provided: {echoed}. See docs."));
            assert_eq!(
                out, "Incorrect API key provided: [scrubbed]. See docs.",
                "{echoed}"
            );
        }
        assert_eq!(
            s.text("key sk-live-Abc1... (truncated)"),
            "key [scrubbed] (truncated)"
        );
        // Masks that are not this secret's ends stay.
        let out = s.text("key ****abcd and sk-live-Zzz*****0000 and 2025-01-01T00:00...");
        assert_eq!(
            out,
            "key ****abcd and sk-[scrubbed]*****0000 and 2025-01-01T00:00..."
        );
    }

    #[test]
    fn a_secret_inside_a_longer_base64_blob_is_caught_at_any_alignment() {
        let key = "sk-live-Abc123XyZ789qrs";
        let mut s = Scrubber::default();
        s.secret(key);
        for prefix in ["", "u", "us", "user:", "Bearer "] {
            for suffix in ["", "!", "#tail"] {
                for url_safe in [false, true] {
                    let blob = base64(format!("{prefix}{key}{suffix}").as_bytes(), url_safe);
                    let out = s.text(&format!("echo {blob} end"));
                    assert!(out.contains(MARK), "{prefix:?}+key+{suffix:?}: {out}");
                    // What is left of the blob encodes the prefix and suffix
                    // (and a few bits of the key's ends), never a run long
                    // enough to hold the key.
                    let longest = out
                        .split(|c: char| !(c.is_ascii_alphanumeric() || "+/-_=".contains(c)))
                        .map(str::len)
                        .max()
                        .unwrap_or(0);
                    assert!(longest <= 12, "{prefix:?}+key+{suffix:?}: {out}");
                }
            }
        }
    }

    #[test]
    fn credential_headers_keep_their_name_and_lose_their_value() {
        let s = Scrubber::new(&["x-account".to_string()], &[], &[]);
        for h in [
            "Authorization",
            "x-api-key",
            "Set-Cookie",
            "cookie",
            "anthropic-api-key",
            "x-session-id",
            "X-Account",
        ] {
            assert_eq!(s.header(h, "secret-value-1"), MARK, "{h}");
        }
        assert_eq!(s.header("retry-after", "1"), "1");
    }

    #[test]
    fn prefixed_identifiers_lose_everything_but_the_prefix() {
        let s = Scrubber::default();
        assert_eq!(
            s.text("limit for org-AbC123 (acct_9f8e) reached; key sk-live-x_y"),
            "limit for org-[scrubbed] (acct_[scrubbed]) reached; key sk-[scrubbed]"
        );
        // Not at a word boundary, or nothing after the prefix.
        assert_eq!(s.text("myorg-x and org- alone"), "myorg-x and org- alone");
        // Idempotent.
        assert_eq!(s.text("org-[scrubbed]"), "org-[scrubbed]");
    }

    #[test]
    fn json_keys_and_paths_are_scrubbed_and_untouched_bodies_keep_their_bytes() {
        let s = Scrubber::new(&[], &["error.account".into(), "data.*.user".into()], &[]);
        let body = r#"{"error":{"code":"rate_limit","account":"12345","api_key":"k-1"},"data":[{"user":"bob","n":1}]}"#;
        let out = s.body(body);
        assert!(
            !out.contains("12345") && !out.contains("k-1") && !out.contains("bob"),
            "{out}"
        );
        assert!(out.contains("rate_limit"), "{out}");
        let plain = r#"{ "ok" : true }"#;
        assert_eq!(s.body(plain), plain);
    }

    #[test]
    fn secrets_sent_are_scrubbed_wherever_they_appear() {
        let mut s = Scrubber::default();
        s.secret("hunter2-key");
        assert_eq!(
            s.body(r#"{"echo":"Bearer hunter2-key"}"#),
            r#"{"echo":"Bearer [scrubbed]"}"#
        );
    }
}
