//! This package's test binaries are linked position-dependent on Linux
//! (glibc): under nextest every matrix row is a process of its own, and a
//! position-independent debug test binary began each one with 64,000
//! relative relocations that the dynamic loader wrote into some 190
//! copy-on-write pages (`.got`, `.data.rel.ro`): a third of the process's
//! page faults, 0.7 ms of a one-test process's 5.5 ms here. Linked
//! `-no-pie`, the linker resolves them once. Only the test targets: not
//! the library a user links, not the `faultmatrix` binary, not a
//! dependent's tests.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let var = |k: &str| std::env::var(k).unwrap_or_default();
    if var("CARGO_CFG_TARGET_OS") == "linux" && var("CARGO_CFG_TARGET_ENV") == "gnu" {
        println!("cargo:rustc-link-arg-tests=-no-pie");
    }
}
