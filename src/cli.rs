//! The `faultmatrix` command line: `run` and `list`. Exit codes live here:
//! 0 all rows passed, 1 a row failed, 2 bad input (a file that does not
//! load, a bad argument).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicUsize, Ordering};

use clap::{Parser, Subcommand};

use crate::discover::{self, Found, Loaded};
use crate::model::Matrix;
use crate::report::{self, RowResult, Verdict};
use crate::system::Systems;

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
    let systems = Systems::new();
    ExitCode::from(match cli.command {
        Command::Run(a) => cmd_run(&a, &systems),
        Command::List(a) => cmd_list(&a, &systems),
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
}

fn select(a: &SelectArgs, systems: &Systems, threads: usize) -> Result<Selected, String> {
    let files = resolve(&a.paths)?;
    let loaded = discover::load_all(&files, systems, threads);
    let mut matrices = Vec::new();
    let mut errors = Vec::new();
    for (f, l) in files.iter().zip(loaded) {
        match l {
            Loaded::Matrix(m) => matrices.push(m),
            Loaded::Registry => {}
            Loaded::Errors(e) => errors.push(RowResult {
                id: f.display.clone(),
                tags: Vec::new(),
                location: Some(f.display.clone()),
                verdict: Verdict::Failed(e.to_string()),
            }),
        }
    }
    Ok(Selected { matrices, errors })
}

fn wanted(a: &SelectArgs, id: &str) -> bool {
    a.filter.as_deref().is_none_or(|f| id.contains(f))
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
            if wanted(a, &id) {
                let _ = writeln!(out, "{id}");
            }
        }
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

/// Runs the selected rows on `threads` threads; results in file order.
pub fn run_rows(
    matrices: &[Matrix],
    keep: &dyn Fn(&str) -> bool,
    threads: usize,
) -> Vec<RowResult> {
    let jobs: Vec<(usize, usize)> = matrices
        .iter()
        .enumerate()
        .flat_map(|(mi, m)| (0..m.rows.len()).map(move |ri| (mi, ri)))
        .filter(|&(mi, ri)| keep(&matrices[mi].row_id(&matrices[mi].rows[ri])))
        .collect();
    let run_one = |&(mi, ri): &(usize, usize)| {
        let m = &matrices[mi];
        let row = &m.rows[ri];
        let verdict = match &row.ignore {
            Some(reason) => Verdict::Ignored(reason.clone()),
            None => {
                let obs = crate::run::run_row(m, row);
                match crate::compare::check(m, row, &obs) {
                    Ok(()) => Verdict::Passed,
                    Err(msg) => Verdict::Failed(msg),
                }
            }
        };
        let location = matches!(verdict, Verdict::Failed(_)).then(|| m.row_location(row));
        RowResult {
            id: m.row_id(row),
            tags: row.tags.clone(),
            location,
            verdict,
        }
    };
    let threads = threads.clamp(1, jobs.len().max(1));
    if threads == 1 {
        return jobs.iter().map(run_one).collect();
    }
    let next = AtomicUsize::new(0);
    let chunk = 64;
    let mut parts: Vec<Vec<(usize, RowResult)>> = Vec::new();
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| {
                    let mut mine = Vec::new();
                    loop {
                        let start = next.fetch_add(chunk, Ordering::Relaxed);
                        if start >= jobs.len() {
                            break;
                        }
                        for (i, job) in jobs.iter().enumerate().skip(start).take(chunk) {
                            mine.push((i, run_one(job)));
                        }
                    }
                    mine
                })
            })
            .collect();
        for h in handles {
            parts.push(h.join().expect("row workers do not panic"));
        }
    });
    let mut all: Vec<(usize, RowResult)> = parts.into_iter().flatten().collect();
    all.sort_by_key(|(i, _)| *i);
    all.into_iter().map(|(_, r)| r).collect()
}

fn cmd_run(a: &RunArgs, systems: &Systems) -> u8 {
    let threads = a.select.threads.unwrap_or_else(discover::default_threads);
    let sel = match select(&a.select, systems, threads) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: {e}");
            return EXIT_BAD_INPUT;
        }
    };
    let mut results = sel.errors.clone();
    results.extend(run_rows(
        &sel.matrices,
        &|id| wanted(&a.select, id),
        threads,
    ));
    if results.is_empty() {
        eprintln!("error: no matrix rows selected: zero rows is a failure, not a pass");
        return EXIT_BAD_INPUT;
    }
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let _ = report::write_text(&mut out, &results, a.quiet);
    let _ = out.flush();
    if !sel.errors.is_empty() {
        EXIT_BAD_INPUT
    } else if report::Summary::of(&results).failed > 0 {
        EXIT_FAILED
    } else {
        EXIT_OK
    }
}
