//! Reports for people and CI beyond the plain text of [`crate::reports::text`]:
//! JUnit XML ([`junit`]), a Markdown summary for a pull-request comment
//! ([`markdown`]), a self-contained HTML page with a timeline picture of
//! every row's trace ([`html`]), GitHub Actions annotations ([`github`]),
//! and terminal colour and progress ([`term`]).
//!
//! Every report is built from [`RowResult`]s; the observed trace of a row
//! ([`ObservedRun`]) is captured when the row runs so reports never re-run
//! anything.

pub mod github;
pub mod html;
pub mod junit;
pub mod markdown;
pub mod table;
pub mod term;
pub mod text;

mod observed;

use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

static CAPTURE: AtomicBool = AtomicBool::new(false);
static PASSED_KEPT: AtomicUsize = AtomicUsize::new(0);

/// The last observed run checked on a thread, and the policy deadline of
/// its file (cached per file).
#[derive(Default)]
struct Last {
    run: Option<ObservedRun>,
    deadline_of: Option<(String, Option<Duration>)>,
}

thread_local! {
    static LAST: RefCell<Last> = RefCell::new(Last::default());
}

/// Most passed rows whose observed run is kept for the HTML report; every
/// failed row's is kept. A 100,000-row page would help nobody and cost
/// hundreds of megabytes.
pub const MAX_PASSED_DRAWN: usize = 1000;

/// Asks runners to keep observed runs (the HTML report draws them). Off by
/// default: capturing costs time and memory on very large runs.
pub fn set_capture(on: bool) {
    CAPTURE.store(on, Ordering::Relaxed);
    PASSED_KEPT.store(0, Ordering::Relaxed);
}

/// Whether observed runs are kept at all.
pub fn capturing() -> bool {
    CAPTURE.load(Ordering::Relaxed)
}

/// Keeps a row's observed run for [`take_observed`] (when capturing).
/// Called by [`crate::verdict::compare::check`], which every runner goes through.
pub fn stash_observed(
    matrix: &crate::model::Matrix,
    row: &crate::model::Row,
    obs: &crate::exec::run::Observation,
) {
    if !capturing() {
        return;
    }
    LAST.with(|l| {
        let mut l = l.borrow_mut();
        let deadline = match &l.deadline_of {
            Some((file, d)) if *file == matrix.file => *d,
            _ => {
                let d = policy_deadline(matrix);
                l.deadline_of = Some((matrix.file.clone(), d));
                d
            }
        };
        l.run = Some(observed_run(row, obs, deadline));
    });
}

/// The observed run of the row just checked on this thread, if captured:
/// always for a failed row, for the first [`MAX_PASSED_DRAWN`] passed rows.
pub fn take_observed(failed: bool) -> Option<Box<ObservedRun>> {
    let run = LAST.with(|l| l.borrow_mut().run.take())?;
    (failed || PASSED_KEPT.fetch_add(1, Ordering::Relaxed) < MAX_PASSED_DRAWN)
        .then(|| Box::new(run))
}

pub use crate::reports::text::{RowResult, Summary, Verdict};
pub use observed::{observed_run, policy_deadline, CallView, ObservedRun};
