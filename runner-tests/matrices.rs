//! Every row of `matrices/**/*.yaml` as a named test, run against the
//! built-in reference system: `cargo test --test matrices`.
//!
//! `FAULTMATRIX_MATRICES=DIR` points the harness at another tree (the
//! benchmark uses it).

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    let root = std::env::var("FAULTMATRIX_MATRICES").unwrap_or_else(|_| "matrices".into());
    faultmatrix::harness::Harness::new(root).run()
}
