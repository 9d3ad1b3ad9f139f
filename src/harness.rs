//! The `cargo test` harness: every row of every matrix file becomes a
//! libtest-mimic [`Trial`] named `path/of/file.yaml::row name`.
//!
//! `--list`, `--exact`, `--skip`, `--ignored`, `--include-ignored`, filters
//! and `--test-threads` behave as libtest's. Under `--exact NAME` only the
//! file named in NAME is parsed, so nextest (one process per test) stays
//! linear. Zero rows found is a failure. A file that does not load becomes
//! one failing trial named after the file, carrying its diagnostics.
//!
//! Listing keeps each row's trial name and index, not the matrix: a file
//! is loaded again when its first trial runs, into a cache of a few files
//! per test thread (`lazy`), so memory does not grow with the number of
//! files. Under `--exact` the one listed matrix is kept for its trial.
//!
//! A registry file found among the matrices (`codes:` and no `rows:`) gives
//! its generated tests and guardrails as trials
//! ([`crate::engine::suite`]).
//!
//! Whether a row can run is decided when the trials are built, so `--list`
//! (and with it nextest), `--ignored` and a plain run agree: a row marked
//! `ignore:` is an ignored trial; a row that cannot run here (a command
//! system whose program is not found, or a [`Requirement`] that fails) is
//! an ignored trial whose run fails with the install command, and under
//! `CI` (set and not `false`/`0`) it is not ignored at all, so it fails.
//! A row that did not run never reads as passed.
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
use crate::engine::discover::{self, Found};
use crate::engine::error::EngineError;
use crate::engine::run::RunOptions;
use crate::load::systems::{Factory, Systems};
use crate::load::Loader;
use crate::model::Matrix;

mod args;
mod lazy;

/// Builds trials from matrix files and runs them.
pub struct Harness {
    root: PathBuf,
    globs: Vec<String>,
    systems: Systems,
    tags: Vec<String>,
    options: Option<RunOptions>,
    requirements: Vec<Requirement>,
    /// Matrix files explored as one test per invariant, and their case counts.
    explore: Vec<(PathBuf, u64)>,
}

/// Something rows below a path need before they can run (an interpreter
/// with a package, a tool), checked once, when the trials are built.
#[derive(Debug, Clone)]
pub struct Requirement {
    /// Rows whose id starts with this text (a file or folder, as shown).
    pub rows: String,
    /// A command that exits 0 when the need is met (`python -c "import x"`).
    pub probe: Vec<String>,
    /// What is missing, for the message (`the openai Python SDK`).
    pub what: String,
    /// The command that installs it.
    pub install: String,
}

impl Requirement {
    /// Runs the probe: `Ok` when met, else why not.
    fn check(&self) -> Result<(), String> {
        let Some((prog, args)) = self.probe.split_first() else {
            return Ok(());
        };
        let out = std::process::Command::new(prog)
            .args(args)
            .stdin(std::process::Stdio::null())
            .output();
        match out {
            Ok(o) if o.status.success() => Ok(()),
            Ok(_) => Err(format!(
                "{} is not installed (`{}` failed); install it with: {}",
                self.what,
                self.probe.join(" "),
                self.install
            )),
            Err(e) => Err(format!(
                "{} is not installed (cannot run `{prog}`: {e}); install it with: {}",
                self.what, self.install
            )),
        }
    }
}

/// Why a row cannot run here, decided before any row runs.
#[derive(Debug, Clone, PartialEq, Eq)]
enum CanRun {
    Yes,
    /// Marked `ignore:` (an ordinary ignored test: `--ignored` runs it).
    Ignored,
    /// Cannot run here: the message says what to install.
    Missing(String),
}

/// Whether `CI` says this is a CI run (set, not empty, not `false`/`0`).
fn in_ci(env: &Env) -> bool {
    env.non_empty("CI")
        .is_some_and(|v| !matches!(v.to_ascii_lowercase().as_str(), "false" | "0"))
}

/// Whether a command matrix's program can be found: a bare name on `PATH`,
/// an absolute path that exists. Programs named through a variable that is
/// not set, or by a relative path, are not judged here (the run says why).
fn program_missing(m: &Matrix, env: &Env) -> Option<String> {
    let spec = m.command()?;
    if let Some(why) = crate::exec::wire::UNAVAILABLE {
        return Some(why.to_string());
    }
    let prog = crate::exec::wire::program(spec, env)?;
    if prog.is_empty() {
        return None;
    }
    let path = Path::new(&prog);
    if path.is_absolute() {
        return (!path.exists())
            .then(|| format!("the program `{prog}` does not exist; build or install it"));
    }
    if prog.contains('/') {
        return None;
    }
    let on_path = env
        .var("PATH")
        .unwrap_or("")
        .split(':')
        .filter(|d| !d.is_empty())
        .any(|d| Path::new(d).join(&prog).is_file());
    (!on_path).then(|| {
        format!(
            "the program `{prog}` is not on PATH; install it (or put it on PATH) to run these rows"
        )
    })
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
            requirements: Vec::new(),
            explore: Vec::new(),
        }
    }

    /// Declares something the rows whose id starts with `req.rows` need.
    /// Checked once when the trials are built (only when such a row is
    /// selected); when it fails those rows are ignored locally, with the
    /// install command as their failure if run anyway, and fail under `CI`.
    pub fn requires(mut self, req: Requirement) -> Self {
        self.requirements.push(req);
        self
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
        let ci = in_ci(&opts.exec.env);
        let mut probed: Vec<Option<Result<(), String>>> = vec![None; self.requirements.len()];
        let root = opts
            .exec
            .env
            .non_empty("FAULTMATRIX_ROOT")
            .map_or_else(|| self.root.clone(), PathBuf::from);
        let root = if root.is_relative() && !cwd.as_os_str().is_empty() {
            cwd.join(root)
        } else {
            root
        };
        let mut loader = Loader::in_dir(self.systems.clone(), cwd.clone()).with_roots([root]);
        loader.bless = opts.bless.is_some();
        let loader = Arc::new(loader);
        // Listing keeps each row's name and index, not the matrix: a file
        // is loaded again when its first trial runs ([`lazy::LazyFile`]).
        // Under `--exact NAME` one file is listed: its matrix is kept for
        // the trial (nextest runs one trial a process).
        let exact = args
            .filter
            .as_deref()
            .filter(|_| args.exact && files.len() == 1);
        let listed = crate::engine::pool::map(&files, threads, |_, f| {
            lazy::list(f, &loader, &self.tags, &opts.exec.env, exact, opts.chunks)
        });
        let opts = Arc::new(opts);
        let cache = lazy::Cache::new(threads);
        // Exactly as many trials as listed rows (and one per file that did
        // not load): a growing vector would hold its old and new buffers at
        // once, 110 MB of the 1M-row run's peak.
        let rows: usize = listed
            .iter()
            .map(|l| match l {
                lazy::Listed::Matrix(listing) => listing.rows.len(),
                _ => 1,
            })
            .sum();
        let mut trials = Vec::with_capacity(rows);
        let mut registries = Vec::new();
        let mut coverage = crate::engine::guardrails::Coverage::new();
        for (found, l) in files.iter().zip(listed) {
            match l {
                lazy::Listed::Registry => registries.push(found.clone()),
                lazy::Listed::Errors(msg) => {
                    trials.push(Trial::test(found.display.clone(), move || {
                        Err(Failed::from(msg))
                    }));
                }
                lazy::Listed::Matrix(mut listing) => {
                    coverage.merge(std::mem::take(&mut listing.coverage));
                    let chunks = listing.chunks.take().map(|c| {
                        let (ends, plan) = *c;
                        (ends, opts.chunks, plan)
                    });
                    let file = lazy::LazyFile::with_chunks(
                        found.clone(),
                        loader.clone(),
                        cache.clone(),
                        chunks,
                    );
                    if let Some(m) = listing.matrix.take() {
                        file.keep(m);
                    }
                    let file = Arc::new(FileRun {
                        file,
                        opts: opts.clone(),
                    });
                    for (id, row) in listing.rows() {
                        let can = if row.ignored {
                            CanRun::Ignored
                        } else {
                            let why = self
                                .unmet(&id, &mut probed)
                                .or_else(|| listing.program_missing.clone());
                            match why {
                                Some(why) => CanRun::Missing(why),
                                None => CanRun::Yes,
                            }
                        };
                        trials.push(row_trial(&file, id, row.index, can, ci));
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

    /// The first unmet requirement covering the row `id`, probing each
    /// requirement at most once per build of the trials.
    fn unmet(&self, id: &str, probed: &mut [Option<Result<(), String>>]) -> Option<String> {
        for (req, seen) in self.requirements.iter().zip(probed.iter_mut()) {
            if !id.starts_with(&req.rows) {
                continue;
            }
            if let Err(why) = seen.get_or_insert_with(|| req.check()) {
                return Some(why.clone());
            }
        }
        None
    }

    fn exact_file(
        &self,
        name: &str,
        set: &crate::engine::glob::GlobSet,
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
        // libtest takes several name filters (`cargo test --test m a b`);
        // libtest-mimic's arguments hold one, so the others are kept here.
        let (argv, extra) = split_filters(std::env::args().collect());
        // The common command lines without building clap's parser (a
        // one-test process's largest fixed cost under nextest).
        let mut args = args::parse(&argv).unwrap_or_else(|| Arguments::from_iter(argv));
        let filters = all_filters(&mut args, extra);
        let env = Env::capture();
        let mut this = self;
        select_from_env(&mut args, &mut this.tags, &mut this.globs, &env);
        if matches!(env.var("FAULTMATRIX_BLESS"), Some("1") | Some("true")) {
            if let Some(why) = crate::verdict::bless::refused_under_ci(&env) {
                eprintln!("error: {why}");
                return ExitCode::from(101);
            }
            let opts = this
                .options
                .get_or_insert_with(|| RunOptions::from_env(env.clone()));
            opts.bless = Some(Arc::new(crate::verdict::bless::Session::new()));
        }
        if this.options.is_none() {
            this.options = Some(RunOptions::from_env(env));
        }
        let session = this.options.as_ref().and_then(|o| o.bless.clone());
        let trials = match this.trials(&args) {
            Ok(t) => keep_filtered(t, &filters, args.exact),
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
        args.test_threads = test_threads(&args, trials.len());
        let code = libtest_mimic::run(&args, trials).exit_code();
        if let Some(summary) = session.and_then(|s| s.summary()) {
            eprint!("{summary}");
        }
        code
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
                Some((index, seen)) => {
                    let f = ex.shrink_found(
                        &inv,
                        options.seed,
                        *index,
                        options.shrink_runs,
                        Some(seen),
                    );
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

/// Options of libtest's that take a value (`--skip X`, not `--skip=X`).
const VALUE_OPTIONS: [&str; 6] = [
    "--test-threads",
    "--logfile",
    "--skip",
    "--color",
    "--format",
    "-Z",
];

/// Splits the process's arguments into those for libtest-mimic (with at
/// most one name filter) and the further name filters.
fn split_filters(argv: Vec<String>) -> (Vec<String>, Vec<String>) {
    let mut keep = Vec::with_capacity(argv.len());
    let mut extra = Vec::new();
    let mut seen_filter = false;
    let mut it = argv.into_iter();
    if let Some(program) = it.next() {
        keep.push(program);
    }
    let mut after_dashes = false;
    while let Some(a) = it.next() {
        if !after_dashes && a == "--" {
            after_dashes = true;
            continue;
        }
        if !after_dashes && a.starts_with('-') {
            let takes_value = VALUE_OPTIONS.contains(&a.as_str());
            keep.push(a);
            if takes_value {
                keep.extend(it.next());
            }
        } else if seen_filter {
            extra.push(a);
        } else {
            seen_filter = true;
            keep.push(a);
        }
    }
    (keep, extra)
}

/// The test threads libtest-mimic runs `trials` trials on: as asked, or
/// this thread alone for one trial. Unasked, it starts a worker per core
/// even for one trial, and under nextest (a process per test) those
/// workers (their stacks, the allocator's heaps for them, their page
/// faults) were 1.2 ms of a one-test process's 8-9 ms.
fn test_threads(args: &Arguments, trials: usize) -> Option<usize> {
    args.test_threads.or((trials == 1).then_some(1))
}

/// All the name filters. With more than one, libtest-mimic is given none
/// and [`keep_filtered`] applies them (a trial matching any is kept).
fn all_filters(args: &mut Arguments, extra: Vec<String>) -> Vec<String> {
    if extra.is_empty() {
        return Vec::new();
    }
    let mut all: Vec<String> = args.filter.take().into_iter().collect();
    all.extend(extra);
    all
}

/// The trials whose names match one of `filters` (all, when empty):
/// equal to one with `exact`, containing one otherwise, as libtest does.
fn keep_filtered(trials: Vec<Trial>, filters: &[String], exact: bool) -> Vec<Trial> {
    if filters.is_empty() {
        return trials;
    }
    trials
        .into_iter()
        .filter(|t| {
            filters.iter().any(|f| {
                if exact {
                    t.name() == f
                } else {
                    t.name().contains(f.as_str())
                }
            })
        })
        .collect()
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

/// What a file's trials share: the file, loaded when they run, and how
/// rows run. A trial's closure holds this and two `u32`s (16 bytes).
struct FileRun {
    file: Arc<lazy::LazyFile>,
    opts: Arc<RunOptions>,
}

/// One row's trial, ignored or failing as [`CanRun`] says.
/// Its name is allocated while trials are built one after the other
/// ([`lazy::Listing::rows`]), so the million names of a large run sit
/// together in memory.
fn row_trial(file: &Arc<FileRun>, id: String, index: u32, can: CanRun, ci: bool) -> Trial {
    let check = lazy::name_check(&id);
    match can {
        CanRun::Yes | CanRun::Ignored => {
            let file = file.clone();
            Trial::test(id, move || run_trial(&file, index, check))
                .with_ignored_flag(matches!(can, CanRun::Ignored))
        }
        CanRun::Missing(why) => {
            let msg = if ci {
                format!("this row cannot run here, and CI is set, so it fails: {why}")
            } else {
                format!("this row cannot run here (it is ignored unless asked for): {why}")
            };
            Trial::test(id, move || Err(Failed::from(msg))).with_ignored_flag(!ci)
        }
    }
}

fn run_trial(run: &FileRun, index: u32, check: u32) -> Result<(), Failed> {
    let (m, at) = run.file.matrix_of(index).map_err(Failed::from)?;
    let row = run.file.row(&m, at, index, check).map_err(Failed::from)?;
    let (verdict, _) = crate::engine::run::run_row(&m, row, &run.opts);
    verdict.map_err(|f| Failed::from(f.render()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::discover::Loaded;

    const IN_PROCESS: &str = "title: t\nsystem: reference\npolicy:\n  routes: [{ name: A, attempts: 2 }]\n  backoff: { initial: 1s, factor: 2, cap: 30s, jitter: none }\n\nrows:\n  - name: passes\n    inject: { A: [200] }\n    expect: { trace: \"A1 200 return\" }\n  - name: marked ignore\n    ignore: not today\n    inject: { A: [200] }\n    expect: { trace: \"A1 200 return\" }\n";

    const COMMAND: &str = "title: c\nsystem:\n  command: [faultmatrix-test-no-such-program]\n\nrows:\n  - name: needs a missing program\n    inject: { api: [200] }\n    expect: { trace: \"api1 200 return\" }\n";

    const NEEDS: &str = "title: n\nsystem:\n  command: [\"true\"]\n\nrows:\n  - name: needs a package\n    inject: { api: [200] }\n    expect: { trace: \"api1 200 return\" }\n";

    /// A tree with a passing row, an `ignore:` row, a row whose program
    /// is missing and a row whose requirement is unmet.
    fn tree() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.yaml"), IN_PROCESS).unwrap();
        std::fs::write(dir.path().join("b.yaml"), COMMAND).unwrap();
        std::fs::create_dir(dir.path().join("pkg")).unwrap();
        std::fs::write(dir.path().join("pkg/n.yaml"), NEEDS).unwrap();
        dir
    }

    fn harness(dir: &Path, ci: Option<&str>) -> Harness {
        let mut pairs = vec![(
            "PATH".to_string(),
            std::env::var("PATH").unwrap_or_default(),
        )];
        if let Some(v) = ci {
            pairs.push(("CI".to_string(), v.to_string()));
        }
        let mut env = Env::from_pairs(pairs);
        env.cwd = dir.to_path_buf();
        Harness::new(dir)
            .options(RunOptions::from_env(env))
            .requires(Requirement {
                rows: "pkg/".into(),
                probe: vec!["false".into()],
                what: "the test package".into(),
                install: "pip install the-test-package".into(),
            })
    }

    fn listed(h: &Harness) -> Vec<(String, bool)> {
        let mut v: Vec<(String, bool)> = h
            .trials(&Arguments::default())
            .unwrap()
            .iter()
            .map(|t| (t.name().to_string(), t.has_ignored_flag()))
            .collect();
        v.sort();
        v
    }

    #[test]
    fn one_trial_runs_on_this_thread_and_asked_threads_are_kept() {
        let unasked = Arguments::default();
        assert_eq!(test_threads(&unasked, 1), Some(1));
        assert_eq!(test_threads(&unasked, 0), None);
        assert_eq!(test_threads(&unasked, 2), None);
        let asked = Arguments {
            test_threads: Some(4),
            ..Arguments::default()
        };
        assert_eq!(test_threads(&asked, 1), Some(4));
        assert_eq!(test_threads(&asked, 9), Some(4));
    }

    #[test]
    fn whether_a_row_can_run_is_known_when_listing() {
        let dir = tree();
        let want = |missing_ignored: bool| {
            vec![
                ("a.yaml::marked ignore".to_string(), true),
                ("a.yaml::passes".to_string(), false),
                (
                    "b.yaml::needs a missing program".to_string(),
                    missing_ignored,
                ),
                ("pkg/n.yaml::needs a package".to_string(), missing_ignored),
            ]
        };
        assert_eq!(listed(&harness(dir.path(), None)), want(true));
        assert_eq!(listed(&harness(dir.path(), Some("false"))), want(true));
        assert_eq!(listed(&harness(dir.path(), Some("true"))), want(false));
    }

    #[test]
    fn a_row_that_cannot_run_never_passes() {
        let dir = tree();
        let run = |ci: Option<&str>, include_ignored: bool| {
            // A nested run writes its report to a file, not the test's stdout.
            let args = Arguments {
                include_ignored,
                quiet: true,
                logfile: Some(dir.path().join("log").display().to_string()),
                ..Arguments::default()
            };
            let h = harness(dir.path(), ci);
            let c = libtest_mimic::run(&args, h.trials(&args).unwrap());
            (c.num_passed, c.num_failed, c.num_ignored)
        };
        // Locally: one passes, three are ignored (none reads as passed).
        assert_eq!(run(None, false), (1, 0, 3));
        // Asked for anyway: the two that cannot run fail, the `ignore:` row runs.
        assert_eq!(run(None, true), (2, 2, 0));
        // Under CI: they fail, the `ignore:` row stays ignored.
        assert_eq!(run(Some("true"), false), (1, 2, 1));
    }

    #[test]
    fn the_failure_names_the_install_command() {
        let dir = tree();
        let h = harness(dir.path(), Some("1"));
        let mut probed = vec![None];
        let why = h.unmet("pkg/n.yaml::needs a package", &mut probed).unwrap();
        assert!(
            why.contains("install it with: pip install the-test-package"),
            "{why}"
        );
        assert!(h.unmet("a.yaml::passes", &mut probed).is_none());
        let m = match discover::load_one(
            &Found {
                path: dir.path().join("b.yaml"),
                display: "b.yaml".into(),
            },
            &Loader::default(),
        ) {
            Loaded::Matrix(m) => m,
            _ => panic!("b.yaml loads"),
        };
        let env = Env::from_pairs([("PATH", "/nonexistent")]);
        let why = program_missing(&m, &env).unwrap();
        assert!(
            why.contains("`faultmatrix-test-no-such-program` is not on PATH"),
            "{why}"
        );
    }

    #[test]
    fn several_name_filters_are_taken_as_libtest_takes_them() {
        let argv = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let (keep, extra) = split_filters(argv(&[
            "m",
            "--test-threads",
            "2",
            "a.yaml",
            "--skip",
            "x",
            "b.yaml::r",
            "--exact",
            "--",
            "--odd",
        ]));
        assert_eq!(
            keep,
            argv(&[
                "m",
                "--test-threads",
                "2",
                "a.yaml",
                "--skip",
                "x",
                "--exact"
            ])
        );
        assert_eq!(extra, argv(&["b.yaml::r", "--odd"]));
        let mut args = Arguments::from_iter(keep);
        let filters = all_filters(&mut args, extra);
        assert_eq!(args.filter, None);
        assert_eq!(filters, ["a.yaml", "b.yaml::r", "--odd"]);
        let trial = |n: &str| Trial::test(n, || Ok(()));
        let names = |t: Vec<Trial>| t.iter().map(|t| t.name().to_string()).collect::<Vec<_>>();
        let all = || vec![trial("a.yaml::r"), trial("b.yaml::r"), trial("c.yaml::r")];
        assert_eq!(
            names(keep_filtered(all(), &filters, false)),
            ["a.yaml::r", "b.yaml::r"]
        );
        assert_eq!(names(keep_filtered(all(), &filters, true)), ["b.yaml::r"]);
        // One filter stays libtest-mimic's.
        let (keep, extra) = split_filters(argv(&["m", "a.yaml"]));
        let mut args = Arguments::from_iter(keep);
        assert!(all_filters(&mut args, extra).is_empty());
        assert_eq!(args.filter.as_deref(), Some("a.yaml"));
    }

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

    /// Listing keeps no matrix: each file is read again when its trials
    /// run, so a change after listing is seen, and a row that is no longer
    /// where it was listed fails instead of running another row.
    #[test]
    fn files_are_loaded_when_their_trials_run() {
        let dir = tempfile::tempdir().unwrap();
        let matrix = |row: &str| {
            format!("title: t\npolicy:\n  routes: [{{ name: A, attempts: 2 }}]\nrows:\n  - name: {row}\n    inject: {{ A: [200] }}\n    expect: {{ trace: \"A1 200 return\" }}\n")
        };
        for i in 0..5 {
            std::fs::write(
                dir.path().join(format!("f{i}.yaml")),
                matrix(&format!("r{i}")),
            )
            .unwrap();
        }
        let trials = harness(dir.path(), None)
            .trials(&Arguments::default())
            .unwrap();
        assert_eq!(trials.len(), 5);
        std::fs::write(dir.path().join("f0.yaml"), matrix("renamed")).unwrap();
        std::fs::write(dir.path().join("f1.yaml"), "title: t\nrows: [").unwrap();
        // A nested run writes its report to a file, not the test's stdout.
        let log = dir.path().join("log");
        let args = Arguments {
            test_threads: Some(1),
            quiet: true,
            logfile: Some(log.display().to_string()),
            ..Arguments::default()
        };
        let c = libtest_mimic::run(&args, trials);
        assert_eq!((c.num_passed, c.num_failed), (3, 2));
    }

    /// A large file is listed and run a chunk at a time: every row is a
    /// trial that runs its own row, and a file changed after listing fails
    /// its trials instead of running other rows.
    #[test]
    fn a_large_file_runs_a_chunk_at_a_time() {
        let dir = tempfile::tempdir().unwrap();
        let row = |n: &str, trace: &str| {
            format!(
                "  - name: {n}\n    inject: {{ A: [200] }}\n    expect: {{ trace: \"{trace}\" }}\n"
            )
        };
        let head = "title: t\npolicy:\n  routes: [{ name: A, attempts: 2 }]\nrows:\n";
        let mut text = head.to_string();
        for i in 0..7 {
            let trace = if i == 4 {
                "A1 500 return"
            } else {
                "A1 200 return"
            };
            text.push_str(&row(&format!("r{i}"), trace));
        }
        let path = dir.path().join("big.yaml");
        std::fs::write(&path, &text).unwrap();
        let mut env = Env::from_pairs([("PATH", "/nonexistent")]);
        env.cwd = dir.path().to_path_buf();
        let opts = RunOptions {
            chunks: crate::engine::chunked::Sizes {
                above: 0,
                chunk: row("r0", "A1 200 return").len() * 3,
                whole: crate::base::confine::MAX_FILE_BYTES,
            },
            ..RunOptions::from_env(env)
        };
        let h = Harness::new(dir.path()).options(opts);
        let args = Arguments {
            test_threads: Some(1),
            quiet: true,
            logfile: Some(dir.path().join("log").display().to_string()),
            ..Arguments::default()
        };
        // Every nested run writes its report to the logfile.
        let run = |trials| libtest_mimic::run(&args, trials);
        let trials = h.trials(&args).unwrap();
        let names: Vec<String> = trials.iter().map(|t| t.name().to_string()).collect();
        let want: Vec<String> = (0..7).map(|i| format!("big.yaml::r{i}")).collect();
        assert_eq!(names, want);
        let c = run(trials);
        assert_eq!(
            (c.num_passed, c.num_failed),
            (6, 1),
            "r4 fails, in the second chunk"
        );
        // A row renamed after listing: its trial fails, the others run.
        let trials = h.trials(&args).unwrap();
        std::fs::write(&path, text.replace("name: r1\n", "name: x1\n")).unwrap();
        let c = run(trials);
        assert_eq!(
            (c.num_passed, c.num_failed),
            (5, 2),
            "r1 is gone and r4 fails"
        );
        let log = std::fs::read_to_string(dir.path().join("log")).unwrap();
        assert!(
            log.contains("---- big.yaml::r1 ----\nbig.yaml: the row listed as number 2 is not there any more"),
            "{log}"
        );
        assert!(
            log.contains("  --> big.yaml:17:5"),
            "r4 where it is written: {log}"
        );
        // Rows that moved to other chunks: no trial runs another row.
        let trials = h.trials(&args).unwrap();
        std::fs::write(&path, text.replace("name: r1\n", "name: r1b\n")).unwrap();
        let c = run(trials);
        assert_eq!(
            (c.num_passed, c.num_failed),
            (1, 6),
            "only r0 is where it was"
        );
    }
}
