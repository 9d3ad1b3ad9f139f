//! The binary's and the harness's global allocator (`src/alloc.rs`),
//! checked on its own: both of its paths return memory aligned as asked.

#[path = "../../src/alloc.rs"]
mod mi;

use mi::MiMalloc;
use std::alloc::{GlobalAlloc, Layout};

/// Every size and alignment gets memory aligned as asked, on both
/// paths, through allocation, zeroed allocation and reallocation.
#[test]
fn every_block_is_aligned_as_asked() {
    let a = MiMalloc;
    for align in [1, 2, 4, 8, 16, 32, 64, 4096] {
        for size in [1usize, 3, 7, 8, 12, 16, 24, 40, 100, 1000, 70_000] {
            let layout = Layout::from_size_align(size, align).unwrap();
            unsafe {
                let mut held = Vec::new();
                // Several at once: a size class's later blocks too.
                for _ in 0..8 {
                    let p = a.alloc(layout);
                    assert!(!p.is_null());
                    assert_eq!(p as usize % align, 0, "size {size} align {align}");
                    p.write_bytes(0xAB, size);
                    let z = a.alloc_zeroed(layout);
                    assert_eq!(z as usize % align, 0, "zeroed {size} {align}");
                    assert!(std::slice::from_raw_parts(z, size).iter().all(|b| *b == 0));
                    let grown = a.realloc(p, layout, size * 3);
                    assert_eq!(grown as usize % align, 0, "grown {size} {align}");
                    assert!(std::slice::from_raw_parts(grown, size)
                        .iter()
                        .all(|b| *b == 0xAB));
                    held.push((grown, Layout::from_size_align(size * 3, align).unwrap()));
                    held.push((z, layout));
                }
                for (p, l) in held {
                    a.dealloc(p, l);
                }
            }
        }
    }
}
