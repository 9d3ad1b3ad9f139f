//! The `faultmatrix` command line: `run`, `list`, `codes` and `check`. Exit codes live here:
//! 0 all rows passed, 1 a row failed, 2 bad input (a file that does not
//! load, a bad argument).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicUsize, Ordering};

pub mod commands;
pub mod wire;

use clap::{Parser, Subcommand};

use crate::engine::discover::{self, Found, Loaded};
use crate::load::systems::Systems;
use crate::model::Matrix;
use crate::reports::text::{self, RowResult, Verdict};

/// Exit status: every row passed.
pub const EXIT_OK: u8 = 0;
/// Exit status: at least one row failed.
pub const EXIT_FAILED: u8 = 1;
/// Exit status: bad input (unloadable file, bad argument, nothing found).
pub const EXIT_BAD_INPUT: u8 = 2;

/// Declarative acceptance matrices for API retry and fallback logic.
#[derive(Debug, Parser)]
#[command(name = "faultmatrix", version, about)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run matrix rows and report (a line per row, diffs for failures).
    Run(RunArgs),
    /// Print the id of every row (`file::row`).
    List(SelectArgs),
    /// Print a reason-code registry as the Markdown review table.
    Codes(CodesArgs),
    /// Validate matrices and registries (schema, guardrails) without running rows.
    Check(CheckArgs),
    /// Run rows as `run` does, recording every row's tape from the live
    /// upstreams (`tapes.upstreams`, or FAULTMATRIX_UPSTREAM_<ROUTE>); a tape
    /// is replaced only when its row passes. See docs/tapes.md.
    Record(RunArgs),
    /// Print the JSON Schema of matrix and registry files.
    Schema(crate::cli::commands::SchemaArgs),
    /// Check snapshot folders: unreferenced or unreviewed snapshots fail.
    Snapshots(crate::cli::commands::SnapshotsArgs),
    /// Serve a matrix's scripts over HTTP on 127.0.0.1 until Ctrl-C.
    Serve(crate::cli::wire::ServeArgs),
    /// Run the reference system over HTTP against FAULTMATRIX_URL_<ROUTE>
    /// (the command `run --over-http` uses).
    Client(crate::cli::wire::ClientArgs),
}

/// `codes` options.
#[derive(Debug, clap::Args)]
pub struct CodesArgs {
    /// The registry file (default: `matrices/codes.yaml`, else the built-in registry).
    pub registry: Option<String>,
}

/// `check` options.
#[derive(Debug, clap::Args)]
pub struct CheckArgs {
    /// Files, directories or glob patterns (default: `matrices`).
    pub paths: Vec<String>,
    /// Worker threads (default: available cores).
    #[arg(long)]
    pub threads: Option<usize>,
}

/// Which rows.
#[derive(Debug, clap::Args)]
pub struct SelectArgs {
    /// Files, directories or glob patterns (default: `matrices`).
    pub paths: Vec<String>,
    /// Only rows whose id contains this text.
    #[arg(long)]
    pub filter: Option<String>,
    /// Worker threads (default: available cores).
    #[arg(long)]
    pub threads: Option<usize>,
    /// Only rows carrying this tag (repeat for any of several tags).
    #[arg(long = "tag", value_name = "TAG")]
    pub tags: Vec<String>,
}

/// `run` options.
#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// Which rows.
    #[command(flatten)]
    pub select: SelectArgs,
    /// Print only failures and the summary line.
    #[arg(long, short)]
    pub quiet: bool,
    /// Report files (JUnit XML, Markdown, HTML).
    #[command(flatten)]
    pub reports: crate::cli::commands::ReportArgs,
    /// Run reference-system matrices over HTTP, with `faultmatrix client`
    /// as the command (real time, tolerances apply).
    #[arg(long)]
    pub over_http: bool,
}

/// Entry point of the binary.
pub fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() {
                EXIT_BAD_INPUT
            } else {
                EXIT_OK
            });
        }
    };
    crate::verdict::snapshot::init_process_env(true);
    let systems = Systems::new();
    ExitCode::from(match cli.command {
        Command::Run(a) => cmd_run(&a, &systems),
        Command::List(a) => cmd_list(&a, &systems),
        Command::Codes(a) => crate::reports::table::cmd_codes(a.registry.as_deref()),
        Command::Check(a) => cmd_check(&a, &systems),
        Command::Record(a) => {
            crate::exec::tape::Mode::set_global(crate::exec::tape::Mode::Record(
                crate::exec::tape::RecordOptions {
                    env: true,
                    ..Default::default()
                },
            ));
            cmd_run(&a, &systems)
        }
        Command::Schema(a) => crate::cli::commands::schema(&a),
        Command::Snapshots(a) => crate::cli::commands::snapshots(&a, &systems),
        Command::Serve(a) => crate::cli::wire::serve(&a, &systems),
        Command::Client(a) => crate::cli::wire::client(&a, &systems),
    })
}

/// Resolves path arguments (files, directories, globs) into files.
pub fn resolve(paths: &[String]) -> Result<Vec<Found>, String> {
    let default = ["matrices".to_string()];
    let paths = if paths.is_empty() {
        &default[..]
    } else {
        paths
    };
    let all = discover::globset(&[discover::DEFAULT_GLOB.to_string()])?;
    let mut out = Vec::new();
    for p in paths {
        let path = Path::new(p);
        if path.exists() {
            out.extend(discover::find(path, &all).map_err(|e| format!("cannot read `{p}`: {e}"))?);
        } else if p.contains(['*', '?', '[', '{']) {
            // A glob: walk from its literal prefix.
            let base: PathBuf = Path::new(p)
                .components()
                .take_while(|c| {
                    !c.as_os_str()
                        .to_string_lossy()
                        .contains(['*', '?', '[', '{'])
                })
                .collect();
            let set = discover::globset(std::slice::from_ref(p))?;
            let root = if base.as_os_str().is_empty() {
                PathBuf::from(".")
            } else {
                base
            };
            let found = discover::find(&root, &all)
                .map_err(|e| format!("cannot read `{}`: {e}", root.display()))?;
            out.extend(
                found
                    .into_iter()
                    .filter(|f| set.is_match(&f.display) || set.is_match(&f.path)),
            );
        } else {
            return Err(format!(
                "`{p}` does not exist (expected a matrix file, a directory or a glob)"
            ));
        }
    }
    out.sort();
    out.dedup();
    Ok(out)
}

struct Selected {
    matrices: Vec<Matrix>,
    errors: Vec<RowResult>,
    /// Ids of registry files' generated tests and guardrails.
    registry_ids: Vec<String>,
}

fn select(a: &SelectArgs, systems: &Systems, threads: usize) -> Result<Selected, String> {
    let files = resolve(&a.paths)?;
    let loaded = discover::load_all(&files, systems, threads);
    let mut matrices = Vec::new();
    let mut errors = Vec::new();
    let mut registry_ids = Vec::new();
    for (f, l) in files.iter().zip(loaded) {
        match l {
            Loaded::Matrix(m) => matrices.push(*m),
            Loaded::Registry => match crate::engine::suite::Suite::load(f) {
                Ok(s) => registry_ids.extend(s.ids()),
                Err(msg) => errors.push(crate::engine::suite::load_failure(f, msg)),
            },
            Loaded::Errors(e) => errors.push(RowResult {
                id: f.display.clone(),
                tags: Vec::new(),
                location: Some(f.display.clone()),
                verdict: Verdict::Failed(e.to_string()),
                observed: None,
            }),
        }
    }
    Ok(Selected {
        matrices,
        errors,
        registry_ids,
    })
}

fn wanted(a: &SelectArgs, id: &str, tags: &[String]) -> bool {
    a.filter.as_deref().is_none_or(|f| id.contains(f))
        && (a.tags.is_empty() || tags.iter().any(|t| a.tags.contains(t)))
}

fn cmd_list(a: &SelectArgs, systems: &Systems) -> u8 {
    let threads = a.threads.unwrap_or_else(discover::default_threads);
    let sel = match select(a, systems, threads) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: {e}");
            return EXIT_BAD_INPUT;
        }
    };
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    for m in &sel.matrices {
        for r in &m.rows {
            let id = m.row_id(r);
            if wanted(a, &id, &r.tags) {
                let _ = writeln!(out, "{id}");
            }
        }
    }
    for id in sel.registry_ids.iter().filter(|id| wanted(a, id, &[])) {
        let _ = writeln!(out, "{id}");
    }
    let _ = out.flush();
    for e in &sel.errors {
        if let Verdict::Failed(msg) = &e.verdict {
            eprintln!("{msg}");
        }
    }
    if sel.errors.is_empty() {
        EXIT_OK
    } else {
        EXIT_BAD_INPUT
    }
}

/// Runs one matrix's selected rows (`keep(id, tags)`), in file order.
pub fn run_matrix(m: &Matrix, keep: &dyn Fn(&str, &[String]) -> bool) -> Vec<RowResult> {
    let mut out = Vec::new();
    for row in &m.rows {
        let id = m.row_id(row);
        if !keep(&id, &row.tags) {
            continue;
        }
        let mut observed = None;
        let verdict = match &row.ignore {
            Some(reason) => Verdict::Ignored(reason.clone()),
            None => {
                let verdict = match crate::exec::run::run_and_check(m, row) {
                    Ok(()) => Verdict::Passed,
                    Err(msg) => Verdict::Failed(msg),
                };
                observed = crate::reports::take_observed(matches!(verdict, Verdict::Failed(_)));
                verdict
            }
        };
        let location = matches!(verdict, Verdict::Failed(_)).then(|| m.row_location(row));
        out.push(RowResult {
            id,
            tags: row.tags.clone(),
            location,
            verdict,
            observed,
        });
    }
    out
}

/// What running files gave: row results in file order, and whether any
/// file failed to load.
pub struct RunOutcome {
    /// Row results (a file that did not load is one failed result).
    pub results: Vec<RowResult>,
    /// Files that did not load.
    pub load_errors: usize,
}

/// Loads and runs files on `threads` threads, one file at a time per
/// thread, so memory holds one matrix per thread plus the results.
pub fn run_files(
    files: &[Found],
    systems: &Systems,
    keep: &(dyn Fn(&str, &[String]) -> bool + Sync),
    threads: usize,
) -> RunOutcome {
    run_files_with(files, systems, keep, threads, &|_| {})
}

/// As [`run_files`], with a hook that may adjust each matrix before it runs
/// (`--over-http` uses it).
pub fn run_files_with(
    files: &[Found],
    systems: &Systems,
    keep: &(dyn Fn(&str, &[String]) -> bool + Sync),
    threads: usize,
    adjust: &(dyn Fn(&mut Matrix) + Sync),
) -> RunOutcome {
    use crate::engine::{guardrails::Coverage, suite};
    // Registries whose coverage guardrail waits for every matrix of the run.
    let pending = std::sync::Mutex::new(Vec::new());
    let coverage = std::sync::Mutex::new(Coverage::new());
    let one = |i: usize, f: &Found| -> (Vec<RowResult>, bool) {
        match discover::load_one(f, systems) {
            Loaded::Matrix(mut m) => {
                adjust(&mut m);
                if m.registry.path.is_some() {
                    let mut c = Coverage::new();
                    c.record(&m);
                    coverage.lock().unwrap_or_else(|e| e.into_inner()).merge(c);
                }
                (run_matrix(&m, keep), false)
            }
            Loaded::Registry => match suite::Suite::load(f) {
                Ok(s) => {
                    let results = s.results(&|id: &str| keep(id, &[]));
                    pending
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .push((i, s.registry));
                    (results, false)
                }
                Err(msg) => (vec![suite::load_failure(f, msg)], true),
            },
            Loaded::Errors(e) => (
                vec![RowResult {
                    id: f.display.clone(),
                    tags: Vec::new(),
                    location: Some(f.display.clone()),
                    verdict: Verdict::Failed(e.to_string()),
                    observed: None,
                }],
                true,
            ),
        }
    };
    let threads = threads.clamp(1, files.len().max(1));
    let next = AtomicUsize::new(0);
    let mut parts: Vec<(usize, Vec<RowResult>, bool)> = Vec::new();
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| {
                    let mut mine = Vec::new();
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        if i >= files.len() {
                            break;
                        }
                        let (r, bad) = one(i, &files[i]);
                        crate::reports::term::FILES_DONE.fetch_add(1, Ordering::Relaxed);
                        mine.push((i, r, bad));
                    }
                    mine
                })
            })
            .collect();
        for h in handles {
            parts.extend(h.join().expect("row workers do not panic"));
        }
    });
    let coverage = coverage.into_inner().unwrap_or_else(|e| e.into_inner());
    for (i, r) in pending.into_inner().unwrap_or_else(|e| e.into_inner()) {
        if let Some(res) = suite::coverage_result(&r, &coverage, &|id: &str| keep(id, &[])) {
            if let Some(p) = parts.iter_mut().find(|p| p.0 == i) {
                p.1.push(res);
            }
        }
    }
    parts.sort_by_key(|(i, _, _)| *i);
    let load_errors = parts.iter().filter(|p| p.2).count();
    RunOutcome {
        results: parts.into_iter().flat_map(|(_, r, _)| r).collect(),
        load_errors,
    }
}

fn cmd_run(a: &RunArgs, systems: &Systems) -> u8 {
    let threads = a.select.threads.unwrap_or_else(discover::default_threads);
    let files = match resolve(&a.select.paths) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("error: {e}");
            return EXIT_BAD_INPUT;
        }
    };
    crate::reports::set_capture(a.reports.html.is_some());
    let progress = crate::reports::term::Progress::start(files.len());
    let exe = std::env::current_exe()
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_else(|_| "faultmatrix".into());
    let over_http = a.over_http;
    let adjust = move |m: &mut Matrix| {
        if over_http {
            crate::cli::wire::over_http(m, &exe);
        }
    };
    let outcome = run_files_with(
        &files,
        systems,
        &|id: &str, tags: &[String]| wanted(&a.select, id, tags),
        threads,
        &adjust,
    );
    progress.finish();
    let results = outcome.results;
    if results.is_empty() {
        eprintln!("error: no matrix rows selected: zero rows is a failure, not a pass");
        return EXIT_BAD_INPUT;
    }
    if let Err(e) = crate::cli::commands::write_reports(&a.reports, &results, a.quiet) {
        eprintln!("error: {e}");
        return EXIT_BAD_INPUT;
    }
    if outcome.load_errors > 0 {
        EXIT_BAD_INPUT
    } else if text::Summary::of(&results).failed > 0 {
        EXIT_FAILED
    } else {
        EXIT_OK
    }
}

fn cmd_check(a: &CheckArgs, systems: &Systems) -> u8 {
    let threads = a.threads.unwrap_or_else(discover::default_threads);
    let files = match resolve(&a.paths) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("error: {e}");
            return EXIT_BAD_INPUT;
        }
    };
    if files.is_empty() {
        eprintln!("error: no matrix or registry files found: nothing to check");
        return EXIT_BAD_INPUT;
    }
    let report = crate::engine::check::check(&files, systems, threads);
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let _ = report.write(&mut out);
    let _ = out.flush();
    if report.problems.is_empty() {
        EXIT_OK
    } else {
        EXIT_BAD_INPUT
    }
}
