//! The global allocator of the `faultmatrix` binary and of the repository's
//! test harness (`runner-tests/matrices.rs` includes this file): mimalloc,
//! called as the system allocator is called.
//!
//! The `mimalloc` crate sends every allocation through `mi_malloc_aligned`,
//! whatever its alignment; mimalloc's aligned path checks the block it
//! pops and costs about twice its plain one. Here an alignment that every
//! mimalloc block has anyway (a machine word, and no more than the size)
//! goes to `mi_malloc`, and only a larger one to the aligned functions:
//! the rule std's `System` follows for glibc, with mimalloc's guarantee
//! (its size classes are multiples of a word) in place of glibc's 16
//! bytes (`cargo test --test suite alloc::` checks the alignments). Measured with `bash bench/perf.sh count`: 87,223 -> 84,097
//! instructions a row.

use std::alloc::{GlobalAlloc, Layout};
use std::ffi::c_void;

/// mimalloc, with word-aligned allocations on its plain path.
pub struct MiMalloc;

/// The alignment every mimalloc block has: a machine word.
const WORD: usize = std::mem::size_of::<usize>();

/// Whether `mi_malloc(size)` already returns memory aligned to `align`.
#[inline]
fn plain(align: usize, size: usize) -> bool {
    align <= WORD && align <= size
}

// SAFETY: every function forwards to mimalloc, which returns null on
// failure and memory aligned as asked: `mi_malloc`/`mi_zalloc`/`mi_realloc`
// only where `plain` holds, the `_aligned` functions otherwise; `mi_free`
// takes either.
unsafe impl GlobalAlloc for MiMalloc {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if plain(layout.align(), layout.size()) {
            libmimalloc_sys::mi_malloc(layout.size()).cast()
        } else {
            libmimalloc_sys::mi_malloc_aligned(layout.size(), layout.align()).cast()
        }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if plain(layout.align(), layout.size()) {
            libmimalloc_sys::mi_zalloc(layout.size()).cast()
        } else {
            libmimalloc_sys::mi_zalloc_aligned(layout.size(), layout.align()).cast()
        }
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, _layout: Layout) {
        libmimalloc_sys::mi_free(ptr.cast::<c_void>())
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if plain(layout.align(), new_size) {
            libmimalloc_sys::mi_realloc(ptr.cast::<c_void>(), new_size).cast()
        } else {
            libmimalloc_sys::mi_realloc_aligned(ptr.cast::<c_void>(), new_size, layout.align())
                .cast()
        }
    }
}
