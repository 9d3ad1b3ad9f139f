//! Guardrails: checks over a registry that turn an omission into a failing
//! test. Each is its own named test (`<registry>::guardrail::<name>`) whose
//! failure lists exactly the offending codes, one per line with where to
//! fix it.
//!
//! | guardrail | fails for |
//! |---|---|
//! | every code has a fixture | a code with neither `fixture:` nor an entry under `fixtures:` |
//! | every fixture names a code | a `fixtures:` key that is no code (left behind after a rename) |
//! | every code declares retryable | a code without `retryable: true/false` |
//! | every retryable code declares max_attempts and escalate_to | a retryable code missing either |
//! | every terminal code declares escalate_to | a terminal code without a target |
//! | every fixture is classified as its own code | a fixture whose answer the registry maps to another code (or to success) |
//! | every transient code recovers within max_attempts | `recovers_after` not below `max_attempts` |
//! | every code is injected by a row or a generated test | a code no row's script and no generated test produces |

use std::collections::{BTreeMap, BTreeSet};

use crate::engine::generate;
use crate::model::registry::{Observed, Registry};
use crate::model::{Answer, Entry, Matrix};

/// One guardrail.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Guardrail {
    /// Every code has a fixture.
    HasFixture,
    /// Every fixture names a code that exists.
    FixtureNamesCode,
    /// Every code declares `retryable`.
    DeclaresRetryable,
    /// Every retryable code declares `max_attempts` and `escalate_to`.
    RetryableDeclaresBudget,
    /// Every terminal code declares `escalate_to`.
    TerminalDeclaresEscalation,
    /// Every fixture's answer is classified as its own code.
    FixtureClassifiedAsCode,
    /// Every transient fixture recovers before the budget is spent.
    RecoversWithinBudget,
    /// Every code is injected by a row or a generated test.
    Injected,
}

impl Guardrail {
    /// All guardrails, in the order they are reported.
    pub const ALL: [Guardrail; 8] = [
        Guardrail::HasFixture,
        Guardrail::FixtureNamesCode,
        Guardrail::DeclaresRetryable,
        Guardrail::RetryableDeclaresBudget,
        Guardrail::TerminalDeclaresEscalation,
        Guardrail::FixtureClassifiedAsCode,
        Guardrail::RecoversWithinBudget,
        Guardrail::Injected,
    ];

    /// The guardrail's name, the last part of its test id.
    pub fn name(self) -> &'static str {
        match self {
            Guardrail::HasFixture => "every code has a fixture",
            Guardrail::FixtureNamesCode => "every fixture names a code",
            Guardrail::DeclaresRetryable => "every code declares retryable",
            Guardrail::RetryableDeclaresBudget => {
                "every retryable code declares max_attempts and escalate_to"
            }
            Guardrail::TerminalDeclaresEscalation => "every terminal code declares escalate_to",
            Guardrail::FixtureClassifiedAsCode => "every fixture is classified as its own code",
            Guardrail::RecoversWithinBudget => "every transient code recovers within max_attempts",
            Guardrail::Injected => "every code is injected by a row or a generated test",
        }
    }

    /// Whether checking needs the matrices that use the registry.
    pub fn needs_coverage(self) -> bool {
        self == Guardrail::Injected
    }

    /// The test id: `<registry>::guardrail::<name>`.
    pub fn test_id(self, registry: &Registry) -> String {
        format!("{}::guardrail::{}", registry.origin, self.name())
    }

    /// Checks the registry. `coverage` is needed by [`Guardrail::Injected`]
    /// only. The error lists exactly the offending codes.
    pub fn check(self, r: &Registry, coverage: &Coverage) -> Result<(), String> {
        let at = |line: usize| format!("{}:{line}", r.origin);
        let mut bad: Vec<(String, String)> = Vec::new();
        match self {
            Guardrail::HasFixture => {
                for c in r.codes.iter().filter(|c| c.fixture.is_none()) {
                    let stray = r
                        .stray_fixtures
                        .iter()
                        .map(|s| s.name.as_str())
                        .filter(|s| crate::base::diag::did_you_mean(&c.name, [*s]).is_some())
                        .map(|s| {
                            format!(" (the fixture `{s}` looks like it; was the code renamed?)")
                        })
                        .next()
                        .unwrap_or_default();
                    bad.push((
                        c.name.clone(),
                        format!("{}: no fixture: add `fixture:` under the code, or an entry under `fixtures:`{stray}", at(c.line)),
                    ));
                }
            }
            Guardrail::FixtureNamesCode => {
                for s in &r.stray_fixtures {
                    let hint = crate::base::diag::did_you_mean(&s.name, r.names())
                        .map(|h| format!("; {h}"))
                        .unwrap_or_default();
                    bad.push((
                        s.name.clone(),
                        format!(
                            "{}: `fixtures.{}` names no code (left behind after a rename?){hint}",
                            at(s.line),
                            s.name
                        ),
                    ));
                }
            }
            Guardrail::DeclaresRetryable => {
                for c in r.codes.iter().filter(|c| !c.retryable_declared) {
                    bad.push((
                        c.name.clone(),
                        format!(
                            "{}: add `retryable: true` or `retryable: false`",
                            at(c.line)
                        ),
                    ));
                }
            }
            Guardrail::RetryableDeclaresBudget => {
                for c in r.codes.iter().filter(|c| c.retryable) {
                    let missing: Vec<&str> = [
                        ("max_attempts", c.max_attempts.is_none()),
                        ("escalate_to", c.escalate_to.is_none()),
                    ]
                    .iter()
                    .filter(|(_, m)| *m)
                    .map(|(k, _)| *k)
                    .collect();
                    if !missing.is_empty() {
                        bad.push((
                            c.name.clone(),
                            format!("{}: missing {}", at(c.line), missing.join(" and ")),
                        ));
                    }
                }
            }
            Guardrail::TerminalDeclaresEscalation => {
                for c in r
                    .codes
                    .iter()
                    .filter(|c| c.retryable_declared && !c.retryable && c.escalate_to.is_none())
                {
                    bad.push((
                        c.name.clone(),
                        format!(
                            "{}: missing escalate_to (who is told when a run fails with it?)",
                            at(c.line)
                        ),
                    ));
                }
            }
            Guardrail::FixtureClassifiedAsCode => {
                for c in &r.codes {
                    let Some(f) = &c.fixture else { continue };
                    let got = classify(r, &f.entry, &[]);
                    if got.as_deref() != Some(c.name.as_str()) {
                        let seen =
                            got.map_or("success (no code)".to_string(), |g| format!("`{g}`"));
                        bad.push((
                            c.name.clone(),
                            format!("{}: the fixture ({}) is classified as {seen}: fix the fixture or the code's `match`", at(f.line), generate::outcome(&f.entry)),
                        ));
                    }
                }
            }
            Guardrail::RecoversWithinBudget => {
                for c in r.codes.iter().filter(|c| c.retryable) {
                    let (Some(f), Some(n)) = (&c.fixture, c.max_attempts) else {
                        continue;
                    };
                    if let Some(k) = f.recovers_after.filter(|k| *k >= n) {
                        bad.push((
                            c.name.clone(),
                            format!("{}: recovers after {k} failing calls, but max_attempts is {n}: it could never recover", at(f.line)),
                        ));
                    }
                }
            }
            Guardrail::Injected => {
                let injected = coverage.injected(r);
                for c in &r.codes {
                    if !injected.contains(c.name.as_str()) {
                        bad.push((
                            c.name.clone(),
                            format!("{}: no row injects it and it has no generated test (give it a fixture, or inject it in a matrix that says `registry: {}`)", at(c.line), file_name(&r.origin)),
                        ));
                    }
                }
            }
        }
        if bad.is_empty() {
            return Ok(());
        }
        let names: Vec<&str> = bad.iter().map(|(n, _)| n.as_str()).collect();
        let what = if self == Guardrail::FixtureNamesCode {
            "fixture"
        } else {
            "code"
        };
        let mut msg = format!(
            "guardrail `{}` failed for {} {what}{}: {}\n",
            self.name(),
            bad.len(),
            if bad.len() == 1 { "" } else { "s" },
            names.join(", ")
        );
        for (_, detail) in &bad {
            msg.push_str("  ");
            msg.push_str(detail);
            msg.push('\n');
        }
        Err(msg)
    }
}

fn file_name(origin: &str) -> &str {
    origin.rsplit('/').next().unwrap_or(origin)
}

/// The code an entry's answer is classified as (`None`: success).
pub fn classify(r: &Registry, e: &Entry, body_paths: &[String]) -> Option<String> {
    let obs = match &e.answer {
        Answer::Timeout => Observed::Timeout,
        Answer::Reset => Observed::Reset,
        Answer::Refused => Observed::Refused,
        Answer::Malformed | Answer::Truncated => Observed::Malformed,
        Answer::Response(resp) => match &resp.stream {
            Some(s) if (200..300).contains(&resp.status) => {
                if s.breaks {
                    Observed::Broken
                } else {
                    return None;
                }
            }
            Some(_) => Observed::Response {
                status: resp.status,
                body: None,
            },
            None => Observed::Response {
                status: resp.status,
                body: resp.body.as_deref(),
            },
        },
    };
    r.classify(obs, body_paths).map(|c| c.code)
}

/// Which codes the rows of matrices inject, per registry file.
#[derive(Debug, Default, Clone)]
pub struct Coverage {
    by_registry: BTreeMap<std::path::PathBuf, BTreeSet<String>>,
}

impl Coverage {
    /// Empty coverage (only generated tests count).
    pub fn new() -> Self {
        Self::default()
    }

    /// Records the codes a matrix's scripts inject (by name or by an answer
    /// the registry classifies as the code). Matrices on the built-in
    /// registry are not recorded.
    pub fn record(&mut self, m: &Matrix) {
        let Some(path) = &m.registry.path else { return };
        let set = self.by_registry.entry(path.clone()).or_default();
        for row in &m.rows {
            for s in row.inject() {
                for e in &s.entries {
                    if let Some(code) = classify(&m.registry, e, m.body_paths()) {
                        set.insert(code);
                    }
                }
            }
        }
    }

    /// Adds another collector's records.
    pub fn merge(&mut self, other: Coverage) {
        for (k, v) in other.by_registry {
            self.by_registry.entry(k).or_default().extend(v);
        }
    }

    /// Codes injected by recorded rows or by the registry's generated tests.
    pub fn injected(&self, r: &Registry) -> BTreeSet<String> {
        let mut out: BTreeSet<String> = r
            .path
            .as_ref()
            .and_then(|p| self.by_registry.get(p))
            .cloned()
            .unwrap_or_default();
        for c in &r.codes {
            let Some(f) = &c.fixture else { continue };
            if !generate::cases(c).is_empty() {
                if let Some(code) = classify(r, &f.entry, &[]) {
                    out.insert(code);
                }
            }
        }
        out
    }
}

/// Runs every guardrail; the failures, in order.
pub fn failures(r: &Registry, coverage: &Coverage) -> Vec<(Guardrail, String)> {
    Guardrail::ALL
        .iter()
        .filter_map(|g| g.check(r, coverage).err().map(|e| (*g, e)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_builtin_registry_passes_every_guardrail() {
        let r = crate::load::registry::builtin();
        let f = failures(&r, &Coverage::new());
        // The built-in registry has no file, so coverage counts only the
        // generated tests, which inject every code.
        assert!(f.is_empty(), "{f:?}");
    }
}
