//! What a registry file contributes to a run: its generated tests and its
//! guardrails, as named checks that the cargo harness turns into trials and
//! the CLI into report lines.
//!
//! Ids: `<registry>::generated::<CODE>::<case>` and
//! `<registry>::guardrail::<name>`. The guardrail `every code is injected by
//! a row or a generated test` counts the rows of every matrix in the same
//! run that names the registry (`registry: codes.yaml`).

use std::sync::Arc;

use crate::engine::discover::{self, Found, Loaded};
use crate::engine::generate;
use crate::engine::guardrails::{Coverage, Guardrail};
use crate::engine::results::{RowResult, Verdict};
use crate::engine::run::RunOptions;
use crate::load::cache::{RegistryCache, RegistryErrorKind};
use crate::load::Loader;
use crate::model::registry::Registry;
use crate::model::Matrix;
use crate::verdict::{Failure, Location, ProblemKind};

/// A registry's generated tests and guardrails.
pub struct Suite {
    /// The registry.
    pub registry: Arc<Registry>,
    /// Generated matrices, one per code that has generated rows.
    pub generated: Vec<Arc<Matrix>>,
}

impl Suite {
    /// Builds the generated tests of a registry.
    pub fn new(registry: Arc<Registry>) -> Self {
        let generated = generate::generate(&registry)
            .into_iter()
            .map(Arc::new)
            .collect();
        Self {
            registry,
            generated,
        }
    }

    /// Loads a registry file (through the cache) and builds its suite.
    pub fn load(found: &Found, cache: &RegistryCache) -> Result<Self, String> {
        match cache.load(&found.path) {
            Ok(r) => Ok(Self::new(r)),
            Err(e) => match e.kind {
                RegistryErrorKind::Read(why) => Err(format!(
                    "error: cannot read registry `{}`: {why}\n",
                    found.display
                )),
                RegistryErrorKind::Invalid(e) => Err(e.to_string()),
            },
        }
    }

    /// Generated rows as `(matrix, row index, id)`, in registry order.
    pub fn generated_rows(&self) -> impl Iterator<Item = (&Arc<Matrix>, usize, String)> {
        self.generated
            .iter()
            .flat_map(|m| (0..m.rows.len()).map(move |i| (m, i, m.row_id(&m.rows[i]))))
    }

    /// Every test id of the suite.
    pub fn ids(&self) -> Vec<String> {
        let mut out: Vec<String> = self.generated_rows().map(|(_, _, id)| id).collect();
        out.extend(Guardrail::ALL.iter().map(|g| g.test_id(&self.registry)));
        out
    }

    /// Results for the CLI: generated rows and every guardrail except the
    /// coverage one (see [`coverage_result`]), filtered by `keep`.
    pub fn results(&self, keep: &dyn Fn(&str) -> bool, opts: &RunOptions) -> Vec<RowResult> {
        let mut out = Vec::new();
        for (m, i, id) in self.generated_rows() {
            if !keep(&id) {
                continue;
            }
            let verdict = match run_generated(m, i, opts) {
                Ok(()) => Verdict::Passed,
                Err(e) => Verdict::Failed(e),
            };
            out.push(RowResult {
                id,
                tags: m.rows[i].tags.clone(),
                verdict,
                observed: None,
                meta: crate::engine::results::RowMeta {
                    kind: crate::engine::results::RowKind::Generated,
                    ..Default::default()
                },
            });
        }
        for g in Guardrail::ALL.iter().filter(|g| !g.needs_coverage()) {
            if let Some(r) = guardrail_result(&self.registry, *g, &Coverage::new(), keep) {
                out.push(r);
            }
        }
        out
    }
}

/// Runs one generated row through the ordinary run and compare path. A
/// failure points at the code's name in the registry file.
pub fn run_generated(m: &Matrix, i: usize, opts: &RunOptions) -> Result<(), Failure> {
    let (verdict, _) = crate::engine::run::run_row(m, &m.rows[i], opts);
    verdict.map_err(|mut f| {
        f.at = Some(location(m, i));
        f
    })
}

/// Where the code a generated row tests is written (its key in `codes:`).
pub fn location(m: &Matrix, i: usize) -> Location {
    let p = m.positions().key(&m.rows[i].path);
    Location::at(&m.file, p.line, p.col)
}

/// A guardrail as a report line, when `keep` selects it.
pub fn guardrail_result(
    r: &Registry,
    g: Guardrail,
    coverage: &Coverage,
    keep: &dyn Fn(&str) -> bool,
) -> Option<RowResult> {
    let id = g.test_id(r);
    if !keep(&id) {
        return None;
    }
    let verdict = match g.check(r, coverage) {
        Ok(()) => Verdict::Passed,
        Err(e) => Verdict::Failed(Failure::whole(
            Location::file(&r.origin),
            ProblemKind::Guardrail,
            e,
        )),
    };
    Some(RowResult {
        id,
        tags: vec!["guardrail".into()],
        verdict,
        observed: None,
        meta: crate::engine::results::RowMeta {
            kind: crate::engine::results::RowKind::Guardrail,
            ..Default::default()
        },
    })
}

/// The coverage guardrail's line, once every matrix of the run is recorded.
pub fn coverage_result(
    r: &Registry,
    coverage: &Coverage,
    keep: &dyn Fn(&str) -> bool,
) -> Option<RowResult> {
    guardrail_result(r, Guardrail::Injected, coverage, keep)
}

/// Coverage over every matrix file in `files` (registries are skipped).
pub fn coverage_of(files: &[Found], loader: &Loader, threads: usize) -> Coverage {
    let mut c = Coverage::new();
    for l in discover::load_all(files, loader, threads) {
        if let Loaded::Matrix(m) = l {
            c.record(&m);
        }
    }
    c
}

/// Whether a test selected by `--exact` needs every matrix loaded (the
/// coverage guardrail counts their rows).
pub fn needs_all_matrices(name: &str) -> bool {
    name.ends_with(&format!("::guardrail::{}", Guardrail::Injected.name()))
}

/// A registry file that does not load, as one failed report line.
pub fn load_failure(found: &Found, message: String) -> RowResult {
    crate::engine::results::load_failure(found, message)
}
