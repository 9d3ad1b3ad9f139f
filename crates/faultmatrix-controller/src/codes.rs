//! Reason codes: every normalized code, whether it is retried, its budget
//! and escalation target, and how upstream answers (status, error body,
//! transport outcome) map to it. Classifying an answer into a code lives
//! here, so a controller and the harness that tests it speak one language.

use std::collections::HashMap as StdHashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::{Arc, OnceLock};

/// FNV-1a, a word at a time: the tables are looked up several times per call with short
/// keys (code names, statuses) that come from the team's own files, so
/// SipHash's resistance to chosen keys buys nothing here and cost about
/// 1,700 instructions a three-call row (issue 15, item 1).
struct Fnv(u64);

impl Default for Fnv {
    fn default() -> Self {
        Self(0xcbf2_9ce4_8422_2325)
    }
}

impl Hasher for Fnv {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        // Eight bytes a step, then the rest a byte a step: a code name
        // (`UPSTREAM_UNAVAILABLE`) is three steps, not twenty.
        let mut h = self.0;
        let mut words = bytes.chunks_exact(8);
        for w in &mut words {
            let mut b = [0u8; 8];
            b.copy_from_slice(w);
            h ^= u64::from_le_bytes(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
            h ^= h >> 29;
        }
        for &b in words.remainder() {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
        self.0 = h;
    }
}

type HashMap<K, V> = StdHashMap<K, V, BuildHasherDefault<Fnv>>;

/// Body fields consulted for a code, in order, when nothing else is said.
pub const DEFAULT_BODY_PATHS: [&str; 3] = ["error.code", "error.type", "code"];

/// One reason code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodeDef {
    /// The code (`RATE_LIMITED`).
    pub name: String,
    /// Whether a failure with this code may be retried.
    pub retryable: bool,
    /// Whether a failure moves straight to the next route.
    pub switch: bool,
    /// Most calls per route for this code.
    pub max_attempts: Option<u32>,
    /// Who is told when a run fails with this code.
    pub escalate_to: Option<String>,
    /// Statuses mapped to this code.
    pub statuses: Vec<StatusMatch>,
    /// Error-body values mapped to this code.
    pub body: Vec<String>,
    /// Transport outcome mapped to this code (`timeout`, `reset`, `malformed`, `broken`).
    pub outcome: Option<String>,
}

impl CodeDef {
    /// A code that maps nothing yet: not retryable, no budget, no target.
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            retryable: false,
            switch: false,
            max_attempts: None,
            escalate_to: None,
            statuses: Vec::new(),
            body: Vec::new(),
            outcome: None,
        }
    }
}

/// A status pattern.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StatusMatch {
    /// Exactly this status.
    Exact(u16),
    /// A class: `4` for `4xx`.
    Class(u16),
}

/// The classification of one observed answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Classified {
    /// The normalized code.
    pub code: String,
    /// Whether the table knows it (unknown codes are terminal).
    pub known: bool,
}

/// What the classifier looks at.
#[derive(Debug, Clone, Copy)]
pub enum Observed<'a> {
    /// A complete HTTP response.
    Response {
        /// Status.
        status: u16,
        /// Body, if any.
        body: Option<&'a str>,
    },
    /// No answer before the client gave up.
    Timeout,
    /// Connection reset.
    Reset,
    /// Connection refused (nothing was sent).
    Refused,
    /// Unparseable response.
    Malformed,
    /// A stream that broke part-way.
    Broken,
}

/// The table of reason codes, with lookups by name, status, class, body
/// value and outcome (the first code declaring a pattern wins).
#[derive(Debug, Clone, Default)]
pub struct Codes {
    /// Codes in declaration order.
    pub codes: Vec<CodeDef>,
    /// Where it came from (`built-in`, a file's name).
    pub origin: String,
    by_name: HashMap<String, usize>,
    by_status: HashMap<u16, usize>,
    by_class: HashMap<u16, usize>,
    by_body: HashMap<String, usize>,
    by_outcome: HashMap<String, usize>,
}

impl Codes {
    /// Builds the lookup tables.
    pub fn new(codes: Vec<CodeDef>, origin: impl Into<String>) -> Self {
        let mut r = Self {
            codes,
            origin: origin.into(),
            ..Self::default()
        };
        for (i, c) in r.codes.iter().enumerate() {
            r.by_name.entry(c.name.clone()).or_insert(i);
            for s in &c.statuses {
                match s {
                    StatusMatch::Exact(n) => {
                        r.by_status.entry(*n).or_insert(i);
                    }
                    StatusMatch::Class(k) => {
                        r.by_class.entry(*k).or_insert(i);
                    }
                }
            }
            for b in &c.body {
                r.by_body.entry(b.clone()).or_insert(i);
            }
            if let Some(o) = &c.outcome {
                r.by_outcome.entry(o.clone()).or_insert(i);
            }
        }
        r
    }

    /// The built-in codes of common LLM and HTTP APIs (the table in
    /// `docs/registry.md`).
    pub fn builtin() -> Arc<Codes> {
        static BUILTIN: OnceLock<Arc<Codes>> = OnceLock::new();
        BUILTIN
            .get_or_init(|| Arc::new(Codes::new(builtin_codes(), "built-in registry")))
            .clone()
    }

    /// A code by name.
    pub fn get(&self, name: &str) -> Option<&CodeDef> {
        self.by_name.get(name).map(|&i| &self.codes[i])
    }

    /// Index of a code by name.
    pub fn index(&self, name: &str) -> Option<usize> {
        self.by_name.get(name).copied()
    }

    /// All code names, in declaration order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.codes.iter().map(|c| c.name.as_str())
    }

    /// Classifies an answer. `None` means success.
    pub fn classify(&self, obs: Observed<'_>, body_paths: &[String]) -> Option<Classified> {
        let known = |i: usize| Classified {
            code: self.codes[i].name.clone(),
            known: true,
        };
        let by_outcome = |o: &str, fallback: &str| {
            Some(match self.by_outcome.get(o) {
                Some(&i) => known(i),
                None => Classified {
                    code: fallback.to_string(),
                    known: false,
                },
            })
        };
        match obs {
            Observed::Timeout => by_outcome("timeout", "TIMEOUT"),
            Observed::Reset => by_outcome("reset", "CONNECTION_RESET"),
            Observed::Refused => by_outcome("refused", "CONNECTION_REFUSED"),
            Observed::Malformed => by_outcome("malformed", "MALFORMED_RESPONSE"),
            Observed::Broken => by_outcome("broken", "STREAM_BROKEN"),
            Observed::Response { status, body } => {
                if (200..300).contains(&status) {
                    return None;
                }
                // An empty body (a bare status) names no code: its JSON
                // paths are not looked for.
                if let Some(body) = body.filter(|b| !b.is_empty()) {
                    if let Some(i) = self.match_body(body, body_paths) {
                        return Some(known(i));
                    }
                }
                if let Some(&i) = self.by_status.get(&status) {
                    return Some(known(i));
                }
                if let Some(&i) = self.by_class.get(&(status / 100)) {
                    return Some(known(i));
                }
                Some(Classified {
                    code: format!("HTTP_{status}"),
                    known: false,
                })
            }
        }
    }

    fn match_body(&self, body: &str, paths: &[String]) -> Option<usize> {
        let try_path = |p: &str| {
            let value = crate::json::string_at(body, p)?;
            self.by_body
                .get(&value)
                .or_else(|| self.by_name.get(&value))
                .copied()
        };
        if paths.is_empty() {
            DEFAULT_BODY_PATHS.iter().find_map(|p| try_path(p))
        } else {
            paths.iter().find_map(|p| try_path(p))
        }
    }
}

fn code(
    name: &str,
    retryable: bool,
    max_attempts: Option<u32>,
    escalate_to: &str,
    statuses: &[StatusMatch],
    body: &[&str],
    outcome: Option<&str>,
) -> CodeDef {
    CodeDef {
        name: name.into(),
        retryable,
        switch: false,
        max_attempts,
        escalate_to: Some(escalate_to.into()),
        statuses: statuses.to_vec(),
        body: body.iter().map(|b| b.to_string()).collect(),
        outcome: outcome.map(str::to_string),
    }
}

/// The built-in table. Its fixtures (what a real upstream returns for each
/// code) belong to the faultmatrix harness, not to the controller.
fn builtin_codes() -> Vec<CodeDef> {
    use StatusMatch::{Class, Exact};
    let retry = |name, max, to, statuses: &[StatusMatch], body: &[&str]| {
        code(name, true, Some(max), to, statuses, body, None)
    };
    let outcome = |name, max, o| code(name, true, Some(max), "platform-oncall", &[], &[], Some(o));
    let terminal = |name, to, statuses: &[StatusMatch], body: &[&str]| {
        code(name, false, None, to, statuses, body, None)
    };
    let mut model_unavailable = terminal(
        "MODEL_UNAVAILABLE",
        "model-owners",
        &[],
        &["model_not_found", "model_unavailable"],
    );
    model_unavailable.switch = true;
    vec![
        retry(
            "RATE_LIMITED",
            5,
            "capacity-oncall",
            &[Exact(429)],
            &["rate_limit_exceeded", "rate_limit_error", "rate_limited"],
        ),
        retry(
            "OVERLOADED",
            4,
            "capacity-oncall",
            &[Exact(529)],
            &["overloaded_error", "overloaded"],
        ),
        retry(
            "UPSTREAM_UNAVAILABLE",
            3,
            "platform-oncall",
            &[Exact(503)],
            &["service_unavailable"],
        ),
        retry("GATEWAY_TIMEOUT", 3, "platform-oncall", &[Exact(504)], &[]),
        retry("BAD_GATEWAY", 3, "platform-oncall", &[Exact(502)], &[]),
        retry(
            "SERVER_ERROR",
            3,
            "platform-oncall",
            &[Exact(500), Class(5)],
            &["api_error", "server_error", "internal_error"],
        ),
        retry("REQUEST_TIMEOUT", 3, "platform-oncall", &[Exact(408)], &[]),
        outcome("TIMEOUT", 3, "timeout"),
        outcome("CONNECTION_RESET", 3, "reset"),
        outcome("CONNECTION_REFUSED", 3, "refused"),
        outcome("MALFORMED_RESPONSE", 2, "malformed"),
        outcome("STREAM_BROKEN", 2, "broken"),
        model_unavailable,
        terminal(
            "INVALID_REQUEST",
            "client-team",
            &[Exact(400)],
            &["invalid_request", "invalid_request_error"],
        ),
        terminal(
            "INVALID_INPUT",
            "client-team",
            &[Exact(422)],
            &["invalid_input", "unprocessable_entity"],
        ),
        terminal(
            "CONTEXT_LENGTH_EXCEEDED",
            "client-team",
            &[],
            &["context_length_exceeded"],
        ),
        terminal(
            "CONTENT_FILTERED",
            "trust-and-safety",
            &[],
            &["content_filter", "content_policy_violation"],
        ),
        terminal(
            "AUTH_FAILED",
            "security-oncall",
            &[Exact(401)],
            &["invalid_api_key", "authentication_error"],
        ),
        terminal(
            "PERMISSION_DENIED",
            "security-oncall",
            &[Exact(403)],
            &["permission_denied", "permission_error"],
        ),
        terminal(
            "QUOTA_EXHAUSTED",
            "billing-owners",
            &[],
            &["insufficient_quota", "quota_exceeded"],
        ),
        terminal(
            "NOT_FOUND",
            "client-team",
            &[Exact(404)],
            &["not_found", "not_found_error"],
        ),
        terminal("CONFLICT", "client-team", &[Exact(409)], &[]),
        terminal("CLIENT_ERROR", "client-team", &[Class(4)], &[]),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn body_overrides_status() {
        let r = Codes::builtin();
        let c = r
            .classify(
                Observed::Response {
                    status: 500,
                    body: Some(r#"{"error":{"code":"invalid_request"}}"#),
                },
                &[],
            )
            .unwrap();
        assert_eq!(c.code, "INVALID_REQUEST");
        let c = r
            .classify(
                Observed::Response {
                    status: 500,
                    body: None,
                },
                &[],
            )
            .unwrap();
        assert_eq!(c.code, "SERVER_ERROR");
        let c = r
            .classify(
                Observed::Response {
                    status: 599,
                    body: Some("not json"),
                },
                &[],
            )
            .unwrap();
        assert_eq!(c.code, "SERVER_ERROR");
        assert!(r
            .classify(
                Observed::Response {
                    status: 204,
                    body: None
                },
                &[]
            )
            .is_none());
        assert_eq!(r.classify(Observed::Timeout, &[]).unwrap().code, "TIMEOUT");
    }

    #[test]
    fn custom_body_paths_and_unknown_statuses() {
        let r = Codes::builtin();
        let c = r
            .classify(
                Observed::Response {
                    status: 418,
                    body: Some(r#"{"detail":{"reason":"overloaded"}}"#),
                },
                &["detail.reason".to_string()],
            )
            .unwrap();
        assert_eq!(c.code, "OVERLOADED");
        let empty = Codes::new(Vec::new(), "empty");
        let c = empty
            .classify(
                Observed::Response {
                    status: 503,
                    body: None,
                },
                &[],
            )
            .unwrap();
        assert_eq!((c.code.as_str(), c.known), ("HTTP_503", false));
    }
}
