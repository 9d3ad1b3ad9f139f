//! The runtimes rows run on, built in one place.
//!
//! In-process rows run on [`block_on_paused`]: one paused runtime per
//! thread, reused from row to row while nothing of a row survives it. A
//! row that leaves a task behind (spawned and never finished) gets its
//! runtime dropped with it, which cancels the task, so the next row starts
//! on a fresh runtime: a row never sees its predecessor's tasks or timers.
//! What a reused runtime keeps is only its clock's position, and rows
//! measure time from their own start.

use std::cell::RefCell;
use std::future::Future;

/// The runtime of an in-process row: one thread, time paused, so sleeps
/// and timeouts advance the virtual clock exactly and at once.
pub fn paused_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .expect("building a current-thread runtime does not fail")
}

thread_local! {
    /// This thread's idle paused runtime, when the last row left it clean.
    static IDLE_PAUSED: RefCell<Option<tokio::runtime::Runtime>> = const { RefCell::new(None) };
}

/// Runs `fut` to completion on this thread's paused runtime (built on first
/// use). The runtime is kept for the next row only when no task is left
/// alive on it; otherwise it is dropped here, cancelling what is left.
pub fn block_on_paused<F: Future>(fut: F) -> F::Output {
    let rt = IDLE_PAUSED
        .with(|idle| idle.borrow_mut().take())
        .unwrap_or_else(paused_runtime);
    let out = rt.block_on(fut);
    if rt.metrics().num_alive_tasks() == 0 {
        IDLE_PAUSED.with(|idle| *idle.borrow_mut() = Some(rt));
    }
    out
}

/// The runtime of an in-process row whose system talks over sockets (the
/// HTTP seam): as [`paused_runtime`], with tokio's I/O driver. Time still
/// auto-advances only when every task is idle, and since tokio 1.53.3 an
/// I/O wake-up counts as work, so an answer already written is read before
/// the clock jumps to the client's timeout.
pub fn paused_io_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .enable_time()
        .start_paused(true)
        .build()
        .expect("building a current-thread runtime does not fail")
}

thread_local! {
    /// This thread's idle paused runtime with the I/O driver.
    static IDLE_PAUSED_IO: RefCell<Option<tokio::runtime::Runtime>> = const { RefCell::new(None) };
    /// Tasks the running row's seam spawned ([`spawn_row_task`]), aborted
    /// when the row ends; `None` outside [`block_on_paused_io`] (nothing is
    /// kept for a runtime that is not this one).
    static ROW_TASKS: RefCell<Option<Vec<tokio::task::AbortHandle>>> = const { RefCell::new(None) };
}

/// How many times the end of a row yields for aborted and closing tasks to
/// finish before its runtime is given up (a task still alive then is
/// waiting on something else: the runtime is dropped, cancelling it).
const SETTLE_YIELDS: usize = 8;

/// Spawns a task that belongs to the running row (the HTTP seam's listeners
/// and connections): [`block_on_paused_io`] aborts it when the row ends.
/// Elsewhere it is a plain spawn, and the task ends with its runtime.
pub fn spawn_row_task<F>(fut: F)
where
    F: Future<Output = ()> + Send + 'static,
{
    // Boxed: tokio moves a task's future by value when it spawns and
    // finishes it, and a connection's future is kilobytes.
    let handle = tokio::spawn(Box::pin(fut)).abort_handle();
    ROW_TASKS.with(|tasks| {
        if let Some(tasks) = tasks.borrow_mut().as_mut() {
            tasks.push(handle);
        }
    });
}

/// Runs `fut` on this thread's paused runtime with the I/O driver (built on
/// first use), for rows whose system talks over sockets. When the row is
/// over, the tasks it spawned with [`spawn_row_task`] are aborted and the
/// runtime polls what is left a few times without advancing the clock
/// (aborted tasks end, a dropped client's connections close); it is kept
/// for the next row only if no task is left alive, as [`block_on_paused`].
pub fn block_on_paused_io<F: Future>(fut: F) -> F::Output {
    let rt = IDLE_PAUSED_IO
        .with(|idle| idle.borrow_mut().take())
        .unwrap_or_else(paused_io_runtime);
    ROW_TASKS.with(|tasks| *tasks.borrow_mut() = Some(Vec::new()));
    let out = rt.block_on(fut);
    for task in ROW_TASKS.with(|tasks| tasks.borrow_mut().take().unwrap_or_default()) {
        task.abort();
    }
    if rt.metrics().num_alive_tasks() > 0 {
        rt.block_on(async {
            for _ in 0..SETTLE_YIELDS {
                tokio::task::yield_now().await;
                if tokio::runtime::Handle::current()
                    .metrics()
                    .num_alive_tasks()
                    == 0
                {
                    break;
                }
            }
        });
    }
    if rt.metrics().num_alive_tasks() == 0 {
        IDLE_PAUSED_IO.with(|idle| *idle.borrow_mut() = Some(rt));
    }
    out
}

/// The runtime of a real-time row (over the wire): one thread, I/O and
/// time on the real clock.
pub fn real_time_runtime() -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    use std::time::Duration;
    use tokio::time::{sleep, Instant};

    #[test]
    fn a_task_that_outlives_its_row_cannot_touch_the_next() {
        std::thread::spawn(|| {
            let ticks = Arc::new(AtomicUsize::new(0));
            // Row 1 spawns a task that would tick every millisecond forever.
            let t = ticks.clone();
            let row1_end = block_on_paused(async move {
                tokio::spawn(async move {
                    loop {
                        sleep(Duration::from_millis(1)).await;
                        t.fetch_add(1, Ordering::SeqCst);
                    }
                });
                sleep(Duration::from_millis(5)).await;
                Instant::now()
            });
            let after_row1 = ticks.load(Ordering::SeqCst);
            assert!(after_row1 >= 4, "the task ran during its own row");
            // Row 2 waits ten virtual seconds: the task must not run again,
            // and the row runs on a fresh runtime (its clock starts anew).
            let row2_start = block_on_paused(async {
                let start = Instant::now();
                sleep(Duration::from_secs(10)).await;
                start
            });
            assert_eq!(
                ticks.load(Ordering::SeqCst),
                after_row1,
                "a leftover task ran in the next row"
            );
            assert!(
                row2_start < row1_end,
                "the next row reused the runtime its predecessor dirtied"
            );
        })
        .join()
        .expect("the test thread");
    }

    #[test]
    fn a_clean_row_leaves_its_runtime_to_the_next() {
        std::thread::spawn(|| {
            let row1_end = block_on_paused(async {
                let h = tokio::spawn(async { sleep(Duration::from_secs(1)).await });
                h.await.expect("the task finishes");
                sleep(Duration::from_secs(10)).await;
                Instant::now()
            });
            // The clock kept its place: the runtime was reused.
            let row2_start = block_on_paused(async { Instant::now() });
            assert!(row2_start >= row1_end);
        })
        .join()
        .expect("the test thread");
    }

    #[test]
    fn a_row_task_ends_with_its_row_and_the_io_runtime_is_reused() {
        std::thread::spawn(|| {
            let ticks = Arc::new(AtomicUsize::new(0));
            // Row 1 spawns a row task that would tick forever.
            let t = ticks.clone();
            let row1_end = block_on_paused_io(async move {
                spawn_row_task(async move {
                    loop {
                        sleep(Duration::from_millis(1)).await;
                        t.fetch_add(1, Ordering::SeqCst);
                    }
                });
                sleep(Duration::from_millis(5)).await;
                Instant::now()
            });
            let after_row1 = ticks.load(Ordering::SeqCst);
            assert!(after_row1 >= 4, "the task ran during its own row");
            let row2_start = block_on_paused_io(async {
                let start = Instant::now();
                sleep(Duration::from_secs(10)).await;
                start
            });
            assert_eq!(
                ticks.load(Ordering::SeqCst),
                after_row1,
                "a row task ran in the next row"
            );
            // The clock kept its place: the aborted task left the runtime
            // clean, so it was reused.
            assert!(row2_start >= row1_end, "the I/O runtime was not reused");
        })
        .join()
        .expect("the test thread");
    }

    #[test]
    fn any_other_task_left_alive_drops_the_io_runtime() {
        std::thread::spawn(|| {
            let ticks = Arc::new(AtomicUsize::new(0));
            let t = ticks.clone();
            let row1_end = block_on_paused_io(async move {
                // Not a row task: the seam does not know it.
                tokio::spawn(async move {
                    loop {
                        sleep(Duration::from_millis(1)).await;
                        t.fetch_add(1, Ordering::SeqCst);
                    }
                });
                sleep(Duration::from_millis(5)).await;
                Instant::now()
            });
            let after_row1 = ticks.load(Ordering::SeqCst);
            let row2_start = block_on_paused_io(async {
                let start = Instant::now();
                sleep(Duration::from_secs(10)).await;
                start
            });
            assert_eq!(
                ticks.load(Ordering::SeqCst),
                after_row1,
                "a leftover task ran in the next row"
            );
            assert!(
                row2_start < row1_end,
                "the next row reused the runtime its predecessor dirtied"
            );
        })
        .join()
        .expect("the test thread");
    }

    #[test]
    fn settling_a_row_never_advances_the_clock() {
        std::thread::spawn(|| {
            let fired = Arc::new(AtomicUsize::new(0));
            let f = fired.clone();
            let row1_end = block_on_paused_io(async move {
                // A row task that closes only after a timer: the settling
                // yields must not jump the clock to fire it.
                spawn_row_task(async move {
                    sleep(Duration::from_secs(1)).await;
                    f.fetch_add(1, Ordering::SeqCst);
                });
                Instant::now()
            });
            let row2_start = block_on_paused_io(async { Instant::now() });
            assert_eq!(fired.load(Ordering::SeqCst), 0, "the timer fired");
            assert_eq!(row2_start, row1_end, "settling moved the clock");
        })
        .join()
        .expect("the test thread");
    }
}
