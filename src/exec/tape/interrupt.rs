//! Recording temp files and interrupting signals: every `.NAME.recording-PID-N`
//! file this process has written and not yet moved into place or dropped
//! is listed here, and SIGINT, SIGTERM or SIGHUP removes them all before
//! the process dies of that signal.
//!
//! The list is process-wide because a signal is: rows record on any
//! thread (libtest-mimic runs trials on threads), and the handler has to
//! see every live file. Nothing is installed until the first file is
//! listed, so a run that never records keeps the operating system's
//! handling untouched.
//!
//! How: on the first listing, a dedicated thread runs a current-thread
//! tokio runtime and waits on `tokio::signal::unix::signal` (tokio's
//! handler only writes to a pipe, which is async-signal-safe); the file
//! removal runs on that thread, not inside a signal handler. After
//! removing the files it restores the default action and raises the
//! signal again, so the process ends exactly as it would have (a shell
//! sees 130 for SIGINT, 143 for SIGTERM, 129 for SIGHUP), also when no
//! file is listed. Only a signal whose action is still the default is
//! taken over: one that is ignored (`nohup`, a background job's SIGINT) or
//! has a handler of its own (a program embedding the harness) is left
//! alone, and then a killed recording's file is removed by the next
//! recording of that tape instead (see `record::remove_stale`).

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::base::lock;

/// The files written and not yet renamed or removed.
static LIVE: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// Creates a temp file at `path` with `create` and lists it, in one step
/// with respect to the signal thread: a signal either finds the file
/// listed or finds it not yet created. The handler is installed first.
pub(super) fn create_listed<T>(
    path: &Path,
    create: impl FnOnce(&Path) -> std::io::Result<T>,
) -> std::io::Result<T> {
    install();
    let full = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let mut live = lock(&LIVE);
    let made = create(path)?;
    live.push(full);
    Ok(made)
}

/// Takes a file off the list (it was renamed into place or removed).
pub(super) fn unlist(path: &Path) {
    let full = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    lock(&LIVE).retain(|p| *p != full);
}

/// Removes every listed file. Runs on the signal thread; keeps the list
/// locked so no new file can be created and listed after it.
#[cfg(unix)]
fn remove_all() -> std::sync::MutexGuard<'static, Vec<PathBuf>> {
    let live = lock(&LIVE);
    for p in live.iter() {
        let _ = std::fs::remove_file(p);
    }
    live
}

#[cfg(not(unix))]
fn install() {}

/// Starts the signal thread once and waits until its handlers are in
/// place (so a file listed afterwards is always covered).
#[cfg(unix)]
fn install() {
    static STARTED: std::sync::OnceLock<()> = std::sync::OnceLock::new();
    STARTED.get_or_init(|| {
        let signals: Vec<libc::c_int> = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP]
            .into_iter()
            .filter(|s| is_default(*s))
            .collect();
        if signals.is_empty() {
            return;
        }
        let (ready, wait) = std::sync::mpsc::channel();
        let spawned = std::thread::Builder::new()
            .name("faultmatrix-signals".into())
            .spawn(move || watch(signals, ready));
        if spawned.is_ok() {
            // An error here means the thread could not listen: the next
            // recording's stale-file sweep is the fallback.
            let _ = wait.recv();
        }
    });
}

/// Whether `sig`'s action is the default one (not ignored, no handler).
#[cfg(unix)]
fn is_default(sig: libc::c_int) -> bool {
    // SAFETY: a null new action only reads the current one into `old`,
    // a zeroed `sigaction` that the call fills in.
    unsafe {
        let mut old: libc::sigaction = std::mem::zeroed();
        libc::sigaction(sig, std::ptr::null(), &mut old) == 0 && old.sa_sigaction == libc::SIG_DFL
    }
}

/// The signal thread: listens, and on a signal removes the listed files
/// and dies of that signal.
#[cfg(unix)]
fn watch(signals: Vec<libc::c_int>, ready: std::sync::mpsc::Sender<()>) {
    use tokio::signal::unix::{signal, SignalKind};
    let Ok(rt) = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .build()
    else {
        return;
    };
    let sig = rt.block_on(async move {
        let mut streams = Vec::new();
        for s in signals {
            if let Ok(stream) = signal(SignalKind::from_raw(s)) {
                streams.push((s, stream));
            }
        }
        let _ = ready.send(());
        if streams.is_empty() {
            return None;
        }
        let waits = streams.iter_mut().map(|(s, stream)| {
            let s = *s;
            Box::pin(async move {
                stream.recv().await;
                s
            })
        });
        Some(select_first(waits.collect()).await)
    });
    if let Some(sig) = sig {
        let _held = remove_all();
        // SAFETY: restoring the default action and raising a signal are
        // plain system calls on this (ordinary, non-handler) thread.
        unsafe {
            libc::signal(sig, libc::SIG_DFL);
            libc::raise(sig);
        }
        // Only reached if the signal is blocked on this thread.
        std::process::exit(128 + sig);
    }
}

/// The value of whichever future finishes first.
#[cfg(unix)]
async fn select_first<F: std::future::Future<Output = libc::c_int> + Unpin>(
    mut futures: Vec<F>,
) -> libc::c_int {
    std::future::poll_fn(move |cx| {
        for f in futures.iter_mut() {
            if let std::task::Poll::Ready(s) = std::pin::Pin::new(f).poll(cx) {
                return std::task::Poll::Ready(s);
            }
        }
        std::task::Poll::Pending
    })
    .await
}
