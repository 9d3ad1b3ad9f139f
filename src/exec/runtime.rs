//! The runtimes rows run on, built in one place.

/// The runtime of an in-process row: one thread, time paused, so sleeps
/// and timeouts advance the virtual clock exactly and at once.
pub fn paused_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .expect("building a current-thread runtime does not fail")
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
