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

use std::path::PathBuf;
use std::sync::Arc;

use crate::model::Entry;

pub use faultmatrix_controller::codes::{
    Classified, CodeDef, Codes, Observed, StatusMatch, DEFAULT_BODY_PATHS,
};

/// One code of a registry file: its rules ([`CodeDef`], shared with the
/// controller through [`Registry::table`]) and what the file says beyond
/// them. Derefs to its [`CodeDef`].
#[derive(Debug, Clone)]
pub struct Code {
    /// The rules: retryable, budget, escalation target, matches.
    pub def: CodeDef,
    /// Whether the registry says `retryable:` at all (a guardrail checks it).
    pub retryable_declared: bool,
    /// 1-based line of the code's name in the registry file (0: unknown).
    pub line: usize,
    /// What the upstream returns for this code.
    pub fixture: Option<Fixture>,
}

impl std::ops::Deref for Code {
    type Target = CodeDef;
    fn deref(&self) -> &CodeDef {
        &self.def
    }
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

/// One code's `max_attempts` set in a matrix (`codes:` of the file or of
/// a row) instead of in the registry file.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CodeLimit {
    /// The registry code.
    pub code: String,
    /// Calls a route gets for this code's answers, the first included.
    pub max_attempts: u32,
    /// Where it is written in the matrix (`codes.X.max_attempts` or
    /// `rows[i].codes.X.max_attempts`).
    pub path: Vec<crate::base::yaml::Seg>,
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

/// A registry: the code table a system classifies with, and per code what
/// the file says of it (fixture, lines).
#[derive(Debug, Clone, Default)]
pub struct Registry {
    /// Codes in file order.
    pub codes: Vec<Code>,
    /// The same codes as the controller's lookup table.
    pub table: Arc<Codes>,
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
}

impl Registry {
    /// Builds the registry and its lookup table from codes.
    pub fn new(codes: Vec<Code>, origin: impl Into<String>) -> Self {
        let origin = origin.into();
        let table = Arc::new(Codes::new(
            codes.iter().map(|c| c.def.clone()).collect(),
            origin.clone(),
        ));
        Self {
            codes,
            table,
            origin,
            ..Self::default()
        }
    }

    /// A code by name.
    pub fn get(&self, name: &str) -> Option<&Code> {
        self.table.index(name).map(|i| &self.codes[i])
    }

    /// All code names, in file order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.codes.iter().map(|c| c.name.as_str())
    }

    /// [`Self::with_limits`] shared: the same `Arc` when there are none.
    pub fn limited(self: &Arc<Self>, limits: &[CodeLimit]) -> Arc<Registry> {
        if limits.is_empty() {
            self.clone()
        } else {
            Arc::new(self.with_limits(limits))
        }
    }

    /// The same registry with some codes' `max_attempts` replaced (a
    /// matrix's or row's `codes:`); later limits win over earlier ones.
    pub fn with_limits(&self, limits: &[CodeLimit]) -> Registry {
        let mut r = self.clone();
        for l in limits {
            if let Some(c) = r.codes.iter_mut().find(|c| c.def.name == l.code) {
                c.def.max_attempts = Some(l.max_attempts);
            }
        }
        r.table = Arc::new(Codes::new(
            r.codes.iter().map(|c| c.def.clone()).collect(),
            r.origin.clone(),
        ));
        r
    }

    /// Classifies an answer. `None` means success.
    pub fn classify(&self, obs: Observed<'_>, body_paths: &[String]) -> Option<Classified> {
        self.table.classify(obs, body_paths)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_builtin_code_has_a_fixture() {
        let r = crate::load::registry::builtin();
        assert_eq!(r.codes.len(), Codes::builtin().codes.len());
        let missing: Vec<&str> = r
            .codes
            .iter()
            .filter(|c| c.fixture.is_none())
            .map(|c| c.name.as_str())
            .collect();
        assert!(missing.is_empty(), "no fixture for {missing:?}");
    }

    #[test]
    fn classification_is_the_tables() {
        let r = crate::load::registry::builtin();
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
        assert_eq!(r.get("RATE_LIMITED").unwrap().max_attempts, Some(5));
    }
}
