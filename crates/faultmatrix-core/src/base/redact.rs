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

    /// Free text: secrets and prefixed identifiers replaced.
    pub fn text(&self, s: &str) -> String {
        let mut out = s.to_string();
        for secret in &self.secrets {
            if out.contains(secret.as_str()) {
                out = out.replace(secret.as_str(), MARK);
            }
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

#[cfg(test)]
mod tests {
    use super::*;

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
