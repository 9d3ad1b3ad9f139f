//! Every row of `matrices/**/*.yaml` as a named test, run against the
//! built-in reference system: `cargo test --test matrices`.
//!
//! `matrices/explore/reference.yaml` is also explored: one test per
//! invariant, `explore::matrices/explore/reference.yaml::<invariant>`.
//!
//! `FAULTMATRIX_MATRICES=DIR` points the harness at another tree (the
//! benchmark uses it).

#[path = "../src/alloc.rs"]
mod alloc;

#[global_allocator]
static GLOBAL: alloc::MiMalloc = alloc::MiMalloc;

fn main() -> std::process::ExitCode {
    let root = std::env::var("FAULTMATRIX_MATRICES").unwrap_or_else(|_| "matrices".into());
    let mut harness = faultmatrix::harness::Harness::new(&root);
    if root == "matrices" {
        // Explore mode: one test per invariant (docs/explore.md).
        harness = harness.explore("matrices/explore/reference.yaml", 2000);
    }
    harness.run()
}
