//! The `faultmatrix` command line: `run`, `list`, `codes` and `check`. Exit codes live here:
//! 0 all rows passed, 1 a row failed, 2 bad input (a file that does not
//! load, a bad argument).

use std::io::Write;
use std::process::ExitCode;
use std::sync::Arc;

pub mod commands;
pub mod exit;
pub mod explore;
pub mod wire;

use clap::{Parser, Subcommand};

use crate::base::env::Env;
use crate::engine::discover::{self, Found, Loaded};
use crate::engine::plan::{self, Selection};
use crate::engine::run::{Capture, RunOptions};
use crate::exec::run::ExecOptions;
use crate::exec::tape::{Mode, RecordOptions};
use crate::load::systems::Systems;
use crate::load::Loader;
use crate::model::Matrix;

pub use exit::{EXIT_BAD_INPUT, EXIT_FAILED, EXIT_OK};

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
    /// Run the reference system over HTTP against FAULTMATRIX_URL_<ROUTE>,
    /// as a command system (`system: { command: [faultmatrix, client] }`).
    Client(crate::cli::wire::ClientArgs),
    /// Run generated failure sequences against FILE's system, check its
    /// invariants, and print the first violation shrunk to a row. See
    /// docs/explore.md.
    Explore(crate::cli::explore::ExploreArgs),
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
    /// Run reference-system matrices over real HTTP: the reference
    /// controller in this process against each row's fixture server on
    /// 127.0.0.1 (real time, tolerances apply).
    #[arg(long)]
    pub over_http: bool,
    /// Write each failing or new row's observed trace, stop and failing
    /// asserted values into its YAML file, in place (also
    /// `FAULTMATRIX_BLESS=1`; refused under CI).
    #[arg(long)]
    pub bless: bool,
    /// Keep each validated matrix file in DIR and read it back from there
    /// while the file, the registry it names and this build of faultmatrix
    /// are unchanged (also `FAULTMATRIX_CACHE=DIR`). See docs/running.md,
    /// "The model cache".
    #[arg(long, value_name = "DIR", value_parser = clap::builder::NonEmptyStringValueParser::new())]
    pub cache: Option<String>,
}

/// Entry point of the binary: the only place (with the cargo harness) that
/// reads the process's environment, once, into an [`Env`].
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
    let env = Env::capture();
    let paths: &[String] = match &cli.command {
        Command::Run(a) | Command::Record(a) => &a.select.paths,
        Command::List(a) => &a.paths,
        Command::Check(a) => &a.paths,
        Command::Snapshots(a) => &a.paths,
        _ => &[],
    };
    let roots = plan::roots(paths, &env.cwd, env.non_empty("FAULTMATRIX_ROOT"));
    let mut loader = Loader::in_dir(Systems::new(), env.cwd.clone()).with_roots(roots);
    if let Command::Run(a) = &cli.command {
        loader.bless = blessing(a, &env);
    }
    let mut quiet = false;
    if let Command::Run(a) | Command::Record(a) = &cli.command {
        quiet = a.quiet;
        let dir = (a.cache.as_deref()).or_else(|| env.non_empty("FAULTMATRIX_CACHE"));
        if let Some(dir) = dir {
            match crate::load::stored::ModelCache::new(env.cwd.join(dir)) {
                Some(cache) => loader = loader.with_cache(std::sync::Arc::new(cache)),
                None => eprintln!(
                    "warning: the model cache is off: this build of faultmatrix cannot identify its own executable, and a cache is never trusted across builds"
                ),
            }
        }
    }
    let code = match cli.command {
        Command::Run(a) => cmd_run(&a, &loader, env, Mode::from_env),
        Command::List(a) => cmd_list(&a, &loader),
        Command::Codes(a) => crate::cli::commands::codes(a.registry.as_deref()),
        Command::Check(a) => cmd_check(&a, &loader),
        Command::Record(a) => cmd_run(&a, &loader, env, |_| {
            Mode::Record(RecordOptions {
                env: true,
                ..Default::default()
            })
        }),
        Command::Schema(a) => crate::cli::commands::schema(&a),
        Command::Snapshots(a) => crate::cli::commands::snapshots(&a, &loader),
        Command::Serve(a) => crate::cli::wire::serve(&a, &loader.systems),
        Command::Client(a) => crate::cli::wire::client(&a, &loader.systems, &env),
        Command::Explore(a) => crate::cli::explore::explore(&a, &loader.systems, env),
    };
    if let Some(cache) = &loader.cache {
        if let Some(why) = cache.write_error() {
            eprintln!("warning: the model cache was not written (the run is unaffected): {why}");
        }
        if !quiet {
            let (read, stored) = cache.counts();
            eprintln!("model cache: {read} file(s) read back, {stored} stored");
        }
    }
    ExitCode::from(code)
}

/// Resolves path arguments (files, directories, globs) into files.
pub fn resolve(
    paths: &[String],
    cwd: &std::path::Path,
) -> Result<Vec<Found>, crate::engine::error::EngineError> {
    plan::resolve(paths, cwd)
}

fn selection(a: &SelectArgs) -> Selection {
    Selection {
        filter: a.filter.clone(),
        tags: a.tags.clone(),
    }
}

fn cmd_list(a: &SelectArgs, loader: &Loader) -> u8 {
    let threads = a.threads.unwrap_or_else(discover::default_threads);
    let files = match resolve(&a.paths, &loader.cwd) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("error: {e}");
            return exit::for_engine_error(&e);
        }
    };
    let sel = selection(a);
    // Each file gives its selected ids, not its matrix: a large file is
    // read a chunk at a time (`engine::chunked`), so memory holds ids.
    let listed = crate::engine::pool::map(&files, threads, |_, f| list_file(f, loader, &sel));
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let mut errors = Vec::new();
    let mut registry_ids = Vec::new();
    for (f, l) in files.iter().zip(listed) {
        match l {
            Some(Ok(ids)) => {
                for id in ids {
                    let _ = writeln!(out, "{id}");
                }
            }
            None => match crate::engine::suite::Suite::load(f, &loader.registries) {
                Ok(s) => registry_ids.extend(s.ids()),
                Err(msg) => errors.push(msg),
            },
            Some(Err(e)) => errors.push(e),
        }
    }
    for id in registry_ids.iter().filter(|id| sel.keeps(id, &[])) {
        let _ = writeln!(out, "{id}");
    }
    let _ = out.flush();
    for msg in &errors {
        eprintln!("{msg}");
    }
    if errors.is_empty() {
        EXIT_OK
    } else {
        EXIT_BAD_INPUT
    }
}

/// A matrix file's selected row ids, or its errors; `None` for a registry.
fn list_file(f: &Found, loader: &Loader, sel: &Selection) -> Option<Result<Vec<String>, String>> {
    use crate::engine::chunked::{self, Checked, Opened};
    let mut ids = Vec::new();
    let keep = |m: &Matrix, ids: &mut Vec<String>| {
        for r in &m.rows {
            let id = m.row_id(r);
            if sel.keeps(&id, &r.tags) {
                ids.push(id);
            }
        }
    };
    let loaded = match chunked::open(f, loader, chunked::Sizes::default()) {
        Opened::Whole => discover::load_one(f, loader),
        Opened::Refused(e) => Loaded::Errors(e),
        Opened::Chunks(c) => match c.check(|m| keep(m, &mut ids)) {
            Checked::Valid => return Some(Ok(ids)),
            Checked::Errors(e) => Loaded::Errors(e),
            Checked::Whole(l) => {
                ids.clear();
                l
            }
        },
    };
    match loaded {
        Loaded::Matrix(m) => {
            keep(&m, &mut ids);
            Some(Ok(ids))
        }
        Loaded::Registry => None,
        Loaded::Errors(e) => Some(Err(e.to_string())),
    }
}

/// Whether a run blesses: `--bless` or `FAULTMATRIX_BLESS=1`.
fn blessing(a: &RunArgs, env: &Env) -> bool {
    a.bless || matches!(env.var("FAULTMATRIX_BLESS"), Some("1") | Some("true"))
}

fn cmd_run(a: &RunArgs, loader: &Loader, env: Env, mode: fn(&Env) -> Mode) -> u8 {
    let bless = blessing(a, &env);
    if bless {
        if let Some(why) = crate::verdict::bless::refused_under_ci(&env) {
            eprintln!("error: {why}");
            return EXIT_BAD_INPUT;
        }
    }
    let session = bless.then(|| Arc::new(crate::verdict::bless::Session::new()));
    let threads = a.select.threads.unwrap_or_else(discover::default_threads);
    let files = match resolve(&a.select.paths, &loader.cwd) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("error: {e}");
            return exit::for_engine_error(&e);
        }
    };
    let opts = RunOptions {
        exec: ExecOptions {
            mode: mode(&env),
            env: Arc::new(env.clone()),
        },
        verdict: crate::verdict::Options {
            snapshots: crate::verdict::snapshot::Options::from_env(&env),
        },
        capture: if a.reports.html.is_some() {
            Capture::on()
        } else {
            Capture::Off
        },
        bless: session.clone(),
        chunks: Default::default(),
    };
    // Live: a line per row as it finishes (unless --quiet), a progress
    // line on a terminal once the run lasts a second (FAULTMATRIX_PROGRESS).
    let mode = if a.quiet {
        crate::reports::term::ProgressMode::Never
    } else {
        crate::reports::term::ProgressMode::from_env(&env)
    };
    let colour = crate::cli::commands::colour(&a.reports, &env);
    let progress = crate::reports::term::Progress::live(files.len(), mode, !a.quiet, colour);
    // Passed rows are counted and dropped unless a report lists every row:
    // memory stays flat in the number of passing rows.
    let keep = if a.reports.junit.is_some() || a.reports.html.is_some() {
        plan::Keep::All
    } else {
        plan::Keep::NotPassed
    };
    let over_http = a.over_http;
    let adjust = move |m: &mut Matrix| {
        if over_http {
            crate::cli::wire::over_http(m);
        }
    };
    let outcome = plan::run_files_live(
        &files,
        loader,
        &selection(&a.select),
        &opts,
        threads,
        &adjust,
        &|_, r| progress.row_done(r),
        &|_| progress.file_done(),
        keep,
    );
    progress.finish();
    let (results, summary) = (outcome.results, outcome.summary);
    if summary.passed + summary.failed + summary.ignored == 0 {
        eprintln!("error: no matrix rows selected: zero rows is a failure, not a pass");
        return EXIT_BAD_INPUT;
    }
    // The row lines were written live: the report adds failures and the
    // summary, last.
    if let Err(e) = crate::cli::commands::write_reports(&a.reports, &results, &summary, true, &env)
    {
        eprintln!("error: {e}");
        return EXIT_BAD_INPUT;
    }
    if let Some(summary) = session.as_ref().and_then(|s| s.summary()) {
        print!("{summary}");
    }
    exit::for_run(outcome.load_errors, &summary)
}

fn cmd_check(a: &CheckArgs, loader: &Loader) -> u8 {
    let threads = a.threads.unwrap_or_else(discover::default_threads);
    let files = match resolve(&a.paths, &loader.cwd) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("error: {e}");
            return exit::for_engine_error(&e);
        }
    };
    if files.is_empty() {
        eprintln!("error: no matrix or registry files found: nothing to check");
        return EXIT_BAD_INPUT;
    }
    let report = crate::engine::check::check(&files, loader, threads);
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
