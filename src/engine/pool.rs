//! The one worker pool: items handed out to threads one at a time, results
//! kept in item order. Loading files, running files and `check` all go
//! through it.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// Threads to use by default: the available cores.
pub fn default_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// `f(i, item)` for every item on up to `threads` threads, results in item
/// order. One thread runs inline, without spawning.
pub fn map<T, R, F>(items: &[T], threads: usize, f: F) -> Vec<R>
where
    T: Sync,
    R: Send,
    F: Fn(usize, &T) -> R + Sync,
{
    let threads = threads.clamp(1, items.len().max(1));
    if threads == 1 {
        return items.iter().enumerate().map(|(i, t)| f(i, t)).collect();
    }
    let next = AtomicUsize::new(0);
    let slots: Mutex<Vec<Option<R>>> = Mutex::new((0..items.len()).map(|_| None).collect());
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= items.len() {
                    break;
                }
                let r = f(i, &items[i]);
                crate::base::lock(&slots)[i] = Some(r);
            });
        }
    });
    slots
        .into_inner()
        .unwrap_or_else(|e| e.into_inner())
        .into_iter()
        .map(|s| s.expect("every item is done once the scope ends"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_item_order_on_any_thread_count() {
        let items: Vec<u32> = (0..100).collect();
        for threads in [1, 2, 8] {
            let out = map(&items, threads, |i, x| (i as u32) * 10 + x);
            let want: Vec<u32> = (0..100).map(|x| x * 11).collect();
            assert_eq!(out, want, "{threads} threads");
        }
        assert!(map(&Vec::<u32>::new(), 4, |_, x| *x).is_empty());
    }
}
