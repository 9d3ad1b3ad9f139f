//! The `cargo test` harness: every row of every matrix file becomes a
//! libtest-mimic [`Trial`] named `path/of/file.yaml::row name`.
//!
//! `--list`, `--exact`, `--skip`, `--ignored`, `--include-ignored`, filters
//! and `--test-threads` behave as libtest's. Under `--exact NAME` only the
//! file named in NAME is parsed, so nextest (one process per test) stays
//! linear. Zero rows found is a failure. A file that does not load becomes
//! one failing trial named after the file, carrying its diagnostics.
//!
//! A registry file found among the matrices (`codes:` and no `rows:`) gives
//! its generated tests and guardrails as trials
//! ([`crate::engine::suite`]).
//!
//! Rows can also be selected by tag and file glob, which libtest's own
//! arguments cannot say: a filter `tag:NAME` (or `FAULTMATRIX_TAGS=a,b`)
//! keeps rows carrying one of the tags, `FAULTMATRIX_FILES=glob` replaces
//! the file patterns (see [`crate::engine::select`]).
//!
//! ```no_run
//! // runner-tests/matrices.rs, a `harness = false` test target:
//! fn main() -> std::process::ExitCode {
//!     faultmatrix::harness::Harness::new("matrices").run()
//! }
//! ```

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use libtest_mimic::{Arguments, Failed, Trial};

use crate::base::env::Env;
use crate::engine::discover::{self, Found, Loaded};
use crate::engine::error::EngineError;
use crate::engine::run::RunOptions;
use crate::load::systems::{Factory, Systems};
use crate::load::Loader;
use crate::model::Matrix;

/// Builds trials from matrix files and runs them.
pub struct Harness {
    root: PathBuf,
    globs: Vec<String>,
    systems: Systems,
    tags: Vec<String>,
    options: Option<RunOptions>,
    /// Matrix files explored as one test per invariant, and their case counts.
    explore: Vec<(PathBuf, u64)>,
}

impl Harness {
    /// A harness over the matrix files below `root`.
    pub fn new(root: impl AsRef<Path>) -> Self {
        Self {
            root: root.as_ref().to_path_buf(),
            globs: vec![discover::DEFAULT_GLOB.to_string()],
            systems: Systems::new(),
            tags: Vec::new(),
            options: None,
            explore: Vec::new(),
        }
    }

    /// Explores a matrix file (explore mode, docs/explore.md): one test per
    /// invariant, `explore::<file>::<invariant>`, over `cases` generated
    /// cases of seed 1; a test fails with its invariant's first violation,
    /// shrunk to a row. The cases run once, shared by the tests.
    pub fn explore(mut self, file: impl AsRef<Path>, cases: u64) -> Self {
        self.explore.push((file.as_ref().to_path_buf(), cases));
        self
    }

    /// Keeps only rows carrying one of these tags (empty: every row).
    pub fn tags(mut self, tags: &[&str]) -> Self {
        self.tags = tags.iter().map(|t| t.to_string()).collect();
        self
    }

    /// Replaces the file patterns (relative to the root).
    pub fn globs(mut self, patterns: &[&str]) -> Self {
        self.globs = patterns.iter().map(|p| p.to_string()).collect();
        self
    }

    /// Registers a system under the name matrices use in `system:`.
    pub fn system(mut self, name: &str, factory: Factory) -> Self {
        self.systems.register(name, factory);
        self
    }

    /// How rows run and are judged (default: read from the process's
    /// environment when the trials are built).
    pub fn options(mut self, options: RunOptions) -> Self {
        self.options = Some(options);
        self
    }

    /// Builds the trials for these arguments.
    pub fn trials(&self, args: &Arguments) -> Result<Vec<Trial>, EngineError> {
        let opts = self
            .options
            .clone()
            .unwrap_or_else(|| RunOptions::from_env(Env::capture()));
        let cwd = opts.exec.env.cwd.clone();
        let set = discover::globset(&self.globs)?;
        let files = match (args.exact, args.filter.as_deref()) {
            (true, Some(name)) => self.exact_file(name, &set, &cwd)?,
            _ => discover::find(&self.root, &set, &cwd).map_err(|e| {
                crate::engine::plan::unreadable(&self.root.display().to_string(), &e)
            })?,
        };
        let threads = args.test_threads.unwrap_or_else(discover::default_threads);
        let loader = Loader::in_dir(self.systems.clone(), cwd.clone());
        let loaded = discover::load_all(&files, &loader, threads);
        let mut trials = Vec::new();
        let mut registries = Vec::new();
        let mut coverage = crate::engine::guardrails::Coverage::new();
        for (found, l) in files.iter().zip(loaded) {
            match l {
                Loaded::Registry => registries.push(found.clone()),
                Loaded::Errors(e) => {
                    let msg = e.to_string();
                    trials.push(Trial::test(found.display.clone(), move || {
                        Err(Failed::from(msg))
                    }));
                }
                Loaded::Matrix(m) => {
                    coverage.record(&m);
                    let m: Arc<Matrix> = Arc::from(m);
                    for i in 0..m.rows.len() {
                        let row = &m.rows[i];
                        if !crate::engine::select::has_tag(&self.tags, &row.tags) {
                            continue;
                        }
                        let name = m.row_id(row);
                        let ignored = row.ignore.is_some();
                        let m = m.clone();
                        let opts = opts.clone();
                        trials.push(
                            Trial::test(name, move || run_trial(&m, i, &opts))
                                .with_ignored_flag(ignored),
                        );
                    }
                }
            }
        }
        if !registries.is_empty() && self.tags.is_empty() {
            if let (true, Some(name)) = (args.exact, args.filter.as_deref()) {
                if crate::engine::suite::needs_all_matrices(name) {
                    let all = discover::find(&self.root, &set, &cwd).map_err(|e| {
                        crate::engine::plan::unreadable(&self.root.display().to_string(), &e)
                    })?;
                    coverage = crate::engine::suite::coverage_of(&all, &loader, threads);
                }
            }
            for found in &registries {
                trials.extend(registry_trials(found, &loader, &coverage, &opts));
            }
        }
        let wanted = |id: &str| match (args.exact, args.filter.as_deref()) {
            (true, Some(name)) => name == id || name.starts_with(&format!("{id}::")),
            _ => true,
        };
        for (file, cases) in &self.explore {
            let display = discover::display_name(file, &cwd);
            if wanted(&format!("explore::{display}")) {
                trials.extend(explore_trials(file, &display, *cases, &self.systems, &opts));
            }
        }
        Ok(trials)
    }

    fn exact_file(
        &self,
        name: &str,
        set: &globset::GlobSet,
        cwd: &Path,
    ) -> Result<Vec<Found>, EngineError> {
        let file = name.split("::").next().unwrap_or(name);
        let path = Path::new(file);
        let rel_to_root = path
            .strip_prefix(discover::display_name(&self.root, cwd))
            .ok()
            .map(Path::to_path_buf);
        let matches = path.is_file() && rel_to_root.as_deref().is_some_and(|r| set.is_match(r));
        Ok(if matches {
            vec![Found {
                path: path.to_path_buf(),
                display: discover::display_name(path, cwd),
            }]
        } else {
            Vec::new()
        })
    }

    /// Parses the process arguments, runs the trials and returns the exit
    /// code for `main` to return (the harness's entry point: it reads the
    /// process's environment once, here).
    #[must_use = "return it from main, or the run's failures are lost"]
    pub fn run(self) -> ExitCode {
        let mut args = Arguments::from_args();
        let env = Env::capture();
        let mut this = self;
        select_from_env(&mut args, &mut this.tags, &mut this.globs, &env);
        if this.options.is_none() {
            this.options = Some(RunOptions::from_env(env));
        }
        let trials = match this.trials(&args) {
            Ok(t) => t,
            Err(e) => {
                eprintln!("error: {e}");
                return ExitCode::from(101);
            }
        };
        if trials.is_empty() && !(args.exact && args.filter.is_some()) {
            eprintln!(
                "error: no matrix rows found under {} (patterns: {}): zero rows is a failure, not a pass",
                this.root.display(),
                this.globs.join(", ")
            );
            return ExitCode::from(101);
        }
        libtest_mimic::run(&args, trials).exit_code()
    }
}

/// The trials of an explored file: one per invariant, sharing one scan of
/// the cases. A file that does not open is one failing trial.
fn explore_trials(
    file: &Path,
    display: &str,
    cases: u64,
    systems: &Systems,
    opts: &RunOptions,
) -> Vec<Trial> {
    use crate::engine::explore::{Explorer, Options};
    let ex = match Explorer::open(file, display, None, systems, opts.exec.clone()) {
        Ok(e) => Arc::new(e),
        Err(msg) => {
            return vec![Trial::test(format!("explore::{display}"), move || {
                Err(Failed::from(msg))
            })]
        }
    };
    let options = Options {
        cases,
        ..Options::default()
    };
    type Scan = std::collections::BTreeMap<String, (u64, crate::engine::explore::Violation)>;
    let scan: Arc<std::sync::OnceLock<(Scan, u64)>> = Arc::new(std::sync::OnceLock::new());
    let mut out = Vec::new();
    for inv in ex.set.invariants.clone() {
        let id = format!("explore::{display}::{}", inv.name);
        if let Some(why) = ex.declared.unchecked(&inv) {
            let why = why.to_string();
            out.push(
                Trial::test(id, move || Err(Failed::from(format!("not checked: {why}"))))
                    .with_ignored_flag(true),
            );
            continue;
        }
        let (ex, scan, options) = (ex.clone(), scan.clone(), options.clone());
        out.push(Trial::test(id, move || {
            let (first, _) = scan.get_or_init(|| ex.scan(&options, true));
            match first.get(&inv.name) {
                None => Ok(()),
                Some((index, _)) => {
                    let f = ex.shrink_found(&inv, options.seed, *index, options.shrink_runs);
                    Err(Failed::from(format!(
                        "invariant `{}` broken by case {} (seed {}): {}\n\n{}",
                        inv.name, f.index, f.seed, f.violation.message, f.row
                    )))
                }
            }
        }));
    }
    out
}

/// The trials of a registry file: generated rows, then guardrails. A
/// registry that does not load is one failing trial named after the file.
fn registry_trials(
    found: &Found,
    loader: &Loader,
    coverage: &crate::engine::guardrails::Coverage,
    opts: &RunOptions,
) -> Vec<Trial> {
    let suite = match crate::engine::suite::Suite::load(found, &loader.registries) {
        Ok(s) => s,
        Err(msg) => {
            return vec![Trial::test(found.display.clone(), move || {
                Err(Failed::from(msg))
            })]
        }
    };
    let mut out = Vec::new();
    for (m, i, id) in suite.generated_rows() {
        let m = m.clone();
        let opts = opts.clone();
        out.push(Trial::test(id, move || {
            crate::engine::suite::run_generated(&m, i, &opts).map_err(|f| Failed::from(f.render()))
        }));
    }
    for g in crate::engine::guardrails::Guardrail::ALL {
        let r = suite.registry.clone();
        let c = if g.needs_coverage() {
            coverage.clone()
        } else {
            crate::engine::guardrails::Coverage::new()
        };
        out.push(Trial::test(g.test_id(&r), move || {
            g.check(&r, &c).map_err(Failed::from)
        }));
    }
    out
}

// ---------------------------------------------------------------- selection
//
// The harness's arguments are libtest's (fixed): a filter `tag:NAME[,NAME]`
// becomes a tag selection, `FAULTMATRIX_TAGS=a,b` adds tags, and
// `FAULTMATRIX_FILES` (comma-separated globs, relative to the matrix root)
// replaces the file patterns. The CLI has `--tag` and path globs for the
// same.

fn split(list: &str) -> impl Iterator<Item = String> + '_ {
    list.split(',')
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(str::to_string)
}

/// Applies a `tag:` filter and the `FAULTMATRIX_TAGS` / `FAULTMATRIX_FILES`
/// variables to harness settings.
fn select_from_env(
    args: &mut Arguments,
    tags: &mut Vec<String>,
    globs: &mut Vec<String>,
    env: &Env,
) {
    apply_selection(
        args,
        tags,
        globs,
        env.var("FAULTMATRIX_TAGS"),
        env.var("FAULTMATRIX_FILES"),
    );
}

/// [`select_from_env`] with explicit values.
fn apply_selection(
    args: &mut Arguments,
    tags: &mut Vec<String>,
    globs: &mut Vec<String>,
    env_tags: Option<&str>,
    env_files: Option<&str>,
) {
    if let Some(list) = args.filter.as_deref().and_then(|f| f.strip_prefix("tag:")) {
        tags.extend(split(list));
        args.filter = None;
        args.exact = false;
    }
    if let Some(list) = env_tags {
        tags.extend(split(list));
    }
    if let Some(list) = env_files {
        let files: Vec<String> = split(list).collect();
        if !files.is_empty() {
            *globs = files;
        }
    }
}

fn run_trial(m: &Matrix, i: usize, opts: &RunOptions) -> Result<(), Failed> {
    let (verdict, _) = crate::engine::run::run_row(m, &m.rows[i], opts);
    verdict.map_err(|f| Failed::from(f.render()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tag_filter_becomes_a_tag_selection() {
        let mut args = Arguments {
            filter: Some("tag:retry, fallback".into()),
            ..Arguments::default()
        };
        let (mut tags, mut globs) = (Vec::new(), vec!["**/*.yaml".to_string()]);
        apply_selection(
            &mut args,
            &mut tags,
            &mut globs,
            Some("slow"),
            Some("sub/*.yaml"),
        );
        assert_eq!(args.filter, None);
        assert_eq!(tags, ["retry", "fallback", "slow"]);
        assert_eq!(globs, ["sub/*.yaml"]);
        assert!(crate::engine::select::has_tag(&tags, &["slow".to_string()]));
        assert!(!crate::engine::select::has_tag(
            &tags,
            &["other".to_string()]
        ));
        assert!(crate::engine::select::has_tag(&[], &[]));
    }
}
