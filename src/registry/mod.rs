//! The reason-code registry: every normalized code, whether it is retried,
//! its budget and escalation target, how upstream answers map to it, and the
//! fixture that imitates it. Classification of an observed answer into a
//! code lives here, so the harness and the reference system speak the same
//! language.
//!
//! | module | what it owns |
//! |---|---|
//! | [`cache`] | registry files parsed once per process per text |
//! | [`generate`] | the generated rows of every code |
//! | [`guardrails`] | the guardrails and the coverage of codes by rows |
//! | [`suite`] | a registry file's generated tests and guardrails as named checks |
//! | [`table`] | the Markdown review table (`faultmatrix codes`) |
//!
//! The format, the guardrails and the generated cases are described in
//! `docs/registry.md`.

pub mod cache;
pub mod generate;
pub mod guardrails;
pub mod suite;
pub mod table;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use crate::model::Entry;

/// Body fields consulted for a code, in order, when nothing else is said.
pub const DEFAULT_BODY_PATHS: [&str; 3] = ["error.code", "error.type", "code"];

/// One reason code.
#[derive(Debug, Clone)]
pub struct CodeDef {
    /// The code (`RATE_LIMITED`).
    pub name: String,
    /// Whether a failure with this code may be retried (`false` when the
    /// registry does not say: see `retryable_declared`).
    pub retryable: bool,
    /// Whether the registry says `retryable:` at all (a guardrail checks it).
    pub retryable_declared: bool,
    /// 1-based line of the code's name in the registry file (0: unknown).
    pub line: usize,
    /// Whether a failure moves straight to the next route.
    pub switch: bool,
    /// Most calls per route for this code.
    pub max_attempts: Option<u32>,
    /// Who is told when a run fails with this code.
    pub escalate_to: Option<String>,
    /// Statuses mapped to this code: exact (`429`) or a class (`5xx` as 500..599 with `class` set).
    pub statuses: Vec<StatusMatch>,
    /// Error-body values mapped to this code.
    pub body: Vec<String>,
    /// Transport outcome mapped to this code (`timeout`, `reset`, `malformed`, `broken`).
    pub outcome: Option<String>,
    /// What the upstream returns for this code.
    pub fixture: Option<Fixture>,
}

/// A status pattern.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StatusMatch {
    /// Exactly this status.
    Exact(u16),
    /// A class: `4` for `4xx`.
    Class(u16),
}

/// A code's fixture: the failing answer and when it recovers.
#[derive(Debug, Clone)]
pub struct Fixture {
    /// The failing answer.
    pub entry: Entry,
    /// Failing calls before the code recovers (transient codes only).
    pub recovers_after: Option<u32>,
    /// 1-based line where the fixture is written (0: unknown).
    pub line: usize,
    /// Whether it is written under the code (`fixture:`) rather than in the
    /// top-level `fixtures:` section.
    pub inline: bool,
}

/// An entry of the top-level `fixtures:` section whose key names no code
/// (left behind after a rename, or misspelt). The registry still loads; the
/// guardrail `every fixture names a code` reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StrayFixture {
    /// The key as written.
    pub name: String,
    /// 1-based line of the key.
    pub line: usize,
}

/// The registry.
#[derive(Debug, Clone, Default)]
pub struct Registry {
    /// Codes in file order.
    pub codes: Vec<CodeDef>,
    /// Where it came from (`built-in` or a path).
    pub origin: String,
    /// Title line, if the file gives one.
    pub title: Option<String>,
    /// Canonical path of the file (`None` for the built-in registry): two
    /// matrices use the same registry when these are equal.
    pub path: Option<PathBuf>,
    /// The file's text (for positions in messages of generated tests).
    pub source: Option<Arc<str>>,
    /// Fixtures that name no code.
    pub stray_fixtures: Vec<StrayFixture>,
    by_name: HashMap<String, usize>,
    by_status: HashMap<u16, usize>,
    by_class: HashMap<u16, usize>,
    by_body: HashMap<String, usize>,
    by_outcome: HashMap<String, usize>,
}

/// The classification of one observed answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Classified {
    /// The normalized code.
    pub code: String,
    /// Whether the registry knows it (unknown codes are terminal).
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
    /// Unparseable response.
    Malformed,
    /// A stream that broke part-way.
    Broken,
}

impl Registry {
    /// Builds the lookup tables from codes.
    pub fn new(codes: Vec<CodeDef>, origin: impl Into<String>) -> Self {
        let mut r = Self {
            codes,
            origin: origin.into(),
            ..Self::default()
        };
        for (i, c) in r.codes.iter().enumerate() {
            r.by_name.insert(c.name.clone(), i);
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

    /// The built-in registry (`src/registry/builtin.yaml`).
    pub fn builtin() -> Arc<Registry> {
        static BUILTIN: OnceLock<Arc<Registry>> = OnceLock::new();
        BUILTIN
            .get_or_init(|| {
                let text = include_str!("builtin.yaml");
                match crate::load::registry_from_text("built-in registry", text) {
                    Ok(r) => Arc::new(r),
                    Err(e) => panic!("the built-in registry is invalid:\n{e}"),
                }
            })
            .clone()
    }

    /// A code by name.
    pub fn get(&self, name: &str) -> Option<&CodeDef> {
        self.by_name.get(name).map(|&i| &self.codes[i])
    }

    /// All code names, in file order.
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
            Observed::Malformed => by_outcome("malformed", "MALFORMED_RESPONSE"),
            Observed::Broken => by_outcome("broken", "STREAM_BROKEN"),
            Observed::Response { status, body } => {
                if (200..300).contains(&status) {
                    return None;
                }
                if let Some(body) = body {
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
        let json: serde_json::Value = serde_json::from_str(body).ok()?;
        let lookup = |path: &str| {
            let mut v = &json;
            for part in path.split('.') {
                v = v.get(part)?;
            }
            v.as_str().map(str::to_string)
        };
        let try_path = |p: &str| {
            let value = lookup(p)?;
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn body_overrides_status() {
        let r = Registry::builtin();
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
}
