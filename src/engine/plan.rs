//! The plan of a run: which files, which rows, and running them on the
//! pool. The CLI's `run`, `list` and `record` and the cargo harness select
//! rows through here; results come back as values, file by file, in file
//! order.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::engine::chunked;
use crate::engine::discover::{self, Found, Loaded};
use crate::engine::error::{EngineError, EngineErrorKind};
use crate::engine::guardrails::Coverage;
use crate::engine::results::{RowResult, Summary, Verdict};
use crate::engine::run::{row_result, RunOptions};
use crate::engine::suite;
use crate::load::Loader;
use crate::model::{Matrix, Row};

/// Resolves path arguments (files, directories, globs) into matrix and
/// registry files, sorted; the default is `matrices`.
pub fn resolve(paths: &[String], cwd: &Path) -> Result<Vec<Found>, EngineError> {
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
            out.extend(discover::find(path, &all, cwd).map_err(|e| unreadable(p, &e))?);
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
            let found = discover::find(&root, &all, cwd)
                .map_err(|e| unreadable(&root.display().to_string(), &e))?;
            out.extend(
                found
                    .into_iter()
                    .filter(|f| set.is_match(&f.display) || set.is_match(&f.path)),
            );
        } else {
            return Err(EngineErrorKind::NoSuchPath(p.clone()).into());
        }
    }
    out.sort();
    out.dedup();
    Ok(out)
}

/// The roots a run's matrices stay inside (see `base::confine`): each
/// directory argument (a file argument's folder, a glob's literal prefix;
/// default `matrices`), or only `configured` (`FAULTMATRIX_ROOT`) when set.
/// Relative roots are taken from `cwd`.
pub fn roots(paths: &[String], cwd: &Path, configured: Option<&str>) -> Vec<PathBuf> {
    let at = |p: &Path| {
        if p.is_absolute() || cwd.as_os_str().is_empty() {
            p.to_path_buf()
        } else {
            cwd.join(p)
        }
    };
    if let Some(root) = configured {
        return vec![at(Path::new(root))];
    }
    let default = ["matrices".to_string()];
    let paths = if paths.is_empty() {
        &default[..]
    } else {
        paths
    };
    paths
        .iter()
        .map(|p| {
            let literal: PathBuf = Path::new(p)
                .components()
                .take_while(|c| {
                    !c.as_os_str()
                        .to_string_lossy()
                        .contains(['*', '?', '[', '{'])
                })
                .collect();
            let full = at(&literal);
            if full.is_dir() {
                full
            } else {
                full.parent().map(Path::to_path_buf).unwrap_or(full)
            }
        })
        .collect()
}

/// A path that cannot be read, as an engine error.
pub fn unreadable(path: &str, e: &std::io::Error) -> EngineError {
    EngineErrorKind::Unreadable {
        path: path.to_string(),
        reason: e.to_string(),
    }
    .into()
}

/// Which rows of the files run: ids containing a text, rows carrying a tag.
#[derive(Debug, Clone, Default)]
pub struct Selection {
    /// Only ids containing this text.
    pub filter: Option<String>,
    /// Only rows carrying one of these tags (empty: every row).
    pub tags: Vec<String>,
}

impl Selection {
    /// Whether a row (or generated test) with this id and tags is selected.
    pub fn keeps(&self, id: &str, tags: &[String]) -> bool {
        self.filter.as_deref().is_none_or(|f| id.contains(f)) && self.keeps_tags(tags)
    }

    fn keeps_tags(&self, tags: &[String]) -> bool {
        self.tags.is_empty() || tags.iter().any(|t| self.tags.contains(t))
    }

    /// Whether a matrix's row is selected. Its id is built only when a
    /// filter reads it (about 500 instructions a row otherwise spent).
    pub fn keeps_row(&self, m: &Matrix, row: &Row) -> bool {
        self.keeps_tags(&row.tags)
            && self
                .filter
                .as_deref()
                .is_none_or(|f| m.row_id(row).contains(f))
    }
}

pub use crate::engine::results::load_failure;

/// One matrix's selected rows, in file order.
pub fn run_matrix(m: &Matrix, selection: &Selection, opts: &RunOptions) -> Vec<RowResult> {
    run_matrix_live(m, selection, opts, &|_| {})
}

/// [`run_matrix`], telling `on_row` of each result as the row finishes.
pub fn run_matrix_live(
    m: &Matrix,
    selection: &Selection,
    opts: &RunOptions,
    on_row: &dyn Fn(&RowResult),
) -> Vec<RowResult> {
    m.rows
        .iter()
        .filter(|row| selection.keeps_row(m, row))
        .map(|row| {
            let r = row_result(m, row, opts);
            on_row(&r);
            r
        })
        .collect()
}

/// What running files gave: row results in file order, the counts of
/// every row, and how many files did not load.
pub struct RunOutcome {
    /// Row results (a file that did not load is one failed result); passed
    /// rows only when they were kept (see [`Keep`]).
    pub results: Vec<RowResult>,
    /// The counts of every row run, kept or not.
    pub summary: Summary,
    /// Files that did not load.
    pub load_errors: usize,
}

/// Which results a run keeps once they have been told to `on_row`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Keep {
    /// Every result (a report that lists every row: JUnit, HTML).
    All,
    /// Failed and ignored rows only: passed rows are counted and dropped,
    /// so memory does not grow with the number of passing rows.
    NotPassed,
}

impl Keep {
    fn keeps(self, r: &RowResult) -> bool {
        self == Keep::All || !matches!(r.verdict, Verdict::Passed)
    }
}

/// Loads and runs files on `threads` threads, one file at a time per
/// thread, so memory holds one matrix per thread plus the results.
/// `adjust` may change each matrix before it runs (`--over-http`);
/// `done` is told when each file is finished.
pub fn run_files(
    files: &[Found],
    loader: &Loader,
    selection: &Selection,
    opts: &RunOptions,
    threads: usize,
    adjust: &(dyn Fn(&mut Matrix) + Sync),
    done: &(dyn Fn(usize) + Sync),
) -> RunOutcome {
    run_files_live(
        files,
        loader,
        selection,
        opts,
        threads,
        adjust,
        &|_, _| {},
        done,
        Keep::All,
    )
}

/// [`run_files`], telling `on_row` of each result as soon as it is known,
/// with the index of its file: a file's rows come in file order (rows of
/// different files interleave as the threads finish them). The registry
/// coverage guardrail, which waits for every matrix, is told last. Only
/// the results `keep` says are kept; the summary counts them all.
#[allow(clippy::too_many_arguments)]
pub fn run_files_live(
    files: &[Found],
    loader: &Loader,
    selection: &Selection,
    opts: &RunOptions,
    threads: usize,
    adjust: &(dyn Fn(&mut Matrix) + Sync),
    on_row: &(dyn Fn(usize, &RowResult) + Sync),
    done: &(dyn Fn(usize) + Sync),
    keep: Keep,
) -> RunOutcome {
    // Registries whose coverage guardrail waits for every matrix of the run.
    let pending = Mutex::new(Vec::new());
    let coverage = Mutex::new(Coverage::new());
    let keep_id = |id: &str| selection.keeps(id, &[]);
    let mut parts = crate::engine::pool::map(files, threads, |i, f| {
        // Each result is told, counted, and kept only if `keep` says so.
        let mut kept = Vec::new();
        let mut summary = Summary::default();
        let mut take = |r: RowResult| {
            on_row(i, &r);
            summary.count(&r.verdict);
            if keep.keeps(&r) {
                kept.push(r);
            }
        };
        let mut load_error = false;
        let run = |mut m: Box<Matrix>, take: &mut dyn FnMut(RowResult)| {
            adjust(&mut m);
            if m.registry.path.is_some() {
                let mut c = Coverage::new();
                c.record(&m);
                crate::base::lock(&coverage).merge(c);
            }
            for row in m.rows.iter() {
                if selection.keeps_row(&m, row) {
                    take(row_result(&m, row, opts));
                }
            }
        };
        // A large file: checked a chunk at a time, then run a chunk at a time.
        let loaded = match chunked::open(f, loader, opts.chunks) {
            chunked::Opened::Whole => Some(discover::load_one(f, loader)),
            chunked::Opened::Refused(e) => Some(Loaded::Errors(e)),
            chunked::Opened::Chunks(c) => match c.check(|_| {}) {
                chunked::Checked::Whole(l) => Some(l),
                chunked::Checked::Errors(e) => Some(Loaded::Errors(e)),
                chunked::Checked::Valid => {
                    for k in 0..c.len() {
                        match c.load(k) {
                            Ok(m) => run(Box::new(m), &mut take),
                            Err(e) => {
                                // It loaded a moment ago: something it
                                // names (a registry, a tape) changed.
                                load_error = true;
                                take(load_failure(f, e.to_string()));
                                break;
                            }
                        }
                    }
                    None // every chunk has run
                }
            },
        };
        match loaded {
            None => {}
            Some(Loaded::Matrix(m)) => run(m, &mut take),
            Some(Loaded::Registry) => match suite::Suite::load(f, &loader.registries) {
                Ok(s) => {
                    s.results(&keep_id, opts).into_iter().for_each(&mut take);
                    crate::base::lock(&pending).push((i, s.registry));
                }
                Err(msg) => {
                    load_error = true;
                    take(load_failure(f, msg));
                }
            },
            Some(Loaded::Errors(e)) => {
                load_error = true;
                take(load_failure(f, e.to_string()));
            }
        }
        done(i);
        (kept, load_error, summary)
    });
    let coverage = coverage.into_inner().unwrap_or_else(|e| e.into_inner());
    for (i, r) in pending.into_inner().unwrap_or_else(|e| e.into_inner()) {
        if let Some(res) = suite::coverage_result(&r, &coverage, &keep_id) {
            on_row(i, &res);
            parts[i].2.count(&res.verdict);
            if keep.keeps(&res) {
                parts[i].0.push(res);
            }
        }
    }
    let load_errors = parts.iter().filter(|p| p.1).count();
    let mut summary = Summary::default();
    parts.iter().for_each(|p| summary.add(&p.2));
    RunOutcome {
        results: parts.into_iter().flat_map(|(r, _, _)| r).collect(),
        summary,
        load_errors,
    }
}
