//! Running one row: execute it, judge it, and keep what reports need.
//! Everything a run depends on beyond the row is in [`RunOptions`], built
//! by the entry point (no process-wide state).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use crate::base::env::Env;
use crate::engine::results::{RowResult, Verdict};
use crate::exec::run::ExecOptions;
use crate::model::{Matrix, Row};
use crate::verdict::{self, Failure, ObservedRun};

/// Most passed rows whose observed run is kept for the HTML report; every
/// failed row's is kept. A 100,000-row page would help nobody and cost
/// hundreds of megabytes.
pub const MAX_PASSED_DRAWN: usize = 1000;

/// Which observed runs a run keeps (the HTML report draws them).
#[derive(Debug, Clone, Default)]
pub enum Capture {
    /// None (the default: capturing costs time and memory on large runs).
    #[default]
    Off,
    /// Every failed row's, and the first passed ones up to a budget shared
    /// by the run's threads.
    On(Arc<AtomicUsize>),
}

impl Capture {
    /// Keeps failed rows and the first [`MAX_PASSED_DRAWN`] passed ones.
    pub fn on() -> Self {
        Self::On(Arc::new(AtomicUsize::new(MAX_PASSED_DRAWN)))
    }

    fn keep(&self, failed: bool) -> bool {
        match self {
            Self::Off => false,
            Self::On(left) => {
                failed
                    || left
                        .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1))
                        .is_ok()
            }
        }
    }
}

/// How rows run and are judged.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// Execution: tapes replayed or recorded, the environment.
    pub exec: ExecOptions,
    /// Verdicts: snapshot rows.
    pub verdict: verdict::Options,
    /// Which observed runs to keep.
    pub capture: Capture,
    /// Blessing: failing rows' observed values are written into their
    /// files (`faultmatrix run --bless`, `FAULTMATRIX_BLESS=1`).
    pub bless: Option<Arc<verdict::bless::Session>>,
    /// Which files load a chunk of rows at a time, in what chunks.
    pub chunks: crate::engine::chunked::Sizes,
}

impl RunOptions {
    /// The options an entry point reads from its environment: tapes
    /// recorded when `FAULTMATRIX_RECORD` says so, snapshots as insta's
    /// variables say, nothing captured.
    pub fn from_env(env: Env) -> Self {
        Self {
            verdict: verdict::Options {
                snapshots: verdict::snapshot::Options::from_env(&env),
            },
            exec: ExecOptions::from_env(env),
            capture: Capture::Off,
            bless: None,
            chunks: Default::default(),
        }
    }
}

/// Runs and judges one row.
pub fn run_row(
    matrix: &Matrix,
    row: &Row,
    opts: &RunOptions,
) -> (Result<(), Failure>, Option<ObservedRun>) {
    let obs = crate::exec::run::run_row_with(matrix, row, &opts.exec);
    let (verdict, obs) = verdict::judge(matrix, row, obs, &opts.verdict);
    let verdict = match (&opts.bless, verdict) {
        (Some(session), Err(failure)) => session.bless(matrix, row, &obs, failure, |blessed| {
            verdict::judge(matrix, blessed, obs.clone(), &opts.verdict).0
        }),
        (_, v) => v,
    };
    let observed = opts.capture.keep(verdict.is_err()).then(|| match verdict {
        Ok(()) => verdict::observed_run(matrix, row, &obs),
        Err(_) => verdict::observed::failed_run(matrix, row, &obs),
    });
    (verdict, observed)
}

/// A row's result (ignored rows are not run). Never inlined: it names the
/// row's phase in the benchmark's profile under LTO (a call, a few
/// instructions).
#[inline(never)]
pub fn row_result(matrix: &Matrix, row: &Row, opts: &RunOptions) -> RowResult {
    let started = std::time::Instant::now();
    let ran = row.ignore.is_none();
    let (verdict, observed) = match &row.ignore {
        Some(reason) => (Verdict::Ignored(reason.clone()), None),
        None => {
            let (v, o) = run_row(matrix, row, opts);
            (
                match v {
                    Ok(()) => Verdict::Passed,
                    Err(f) => Verdict::Failed(f),
                },
                o,
            )
        }
    };
    RowResult {
        id: matrix.row_id(row),
        tags: row.tags.clone(),
        verdict,
        observed: observed.map(Box::new),
        meta: crate::engine::results::RowMeta {
            time: ran.then(|| started.elapsed()),
            line: Some(matrix.row_pos(row).line).filter(|l| *l > 0),
            kind: crate::engine::results::RowKind::Row,
        },
    }
}
