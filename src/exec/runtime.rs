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
}
