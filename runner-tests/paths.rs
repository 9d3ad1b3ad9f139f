//! Where a runner test finds the workspace (matrices, fixtures) and the
//! built `faultmatrix` binary: at run time, never through a path baked in
//! at compile time, so an archived build (`cargo nextest archive`) runs on
//! another checkout with `--workspace-remap`, and partitions run anywhere.
//!
//! The workspace: `FAULTMATRIX_WORKSPACE`, else nextest's
//! `NEXTEST_WORKSPACE_ROOT`, else `CARGO_MANIFEST_DIR` as cargo and nextest
//! set it when they start a test (remapped by nextest), else the current
//! directory or a parent holding `runner-tests/` (both start a test in its
//! package's root). The binary: `FAULTMATRIX_TEST_BIN`, else nextest's
//! `NEXTEST_BIN_EXE_faultmatrix`, else `CARGO_BIN_EXE_faultmatrix` when set
//! at run time, else `faultmatrix` beside the test binary's `deps/` folder.

use std::path::{Path, PathBuf};

fn is_workspace(dir: &Path) -> bool {
    dir.join("Cargo.toml").is_file() && dir.join("runner-tests").is_dir()
}

/// The faultmatrix workspace's root.
pub fn workspace() -> PathBuf {
    for var in [
        "FAULTMATRIX_WORKSPACE",
        "NEXTEST_WORKSPACE_ROOT",
        "CARGO_MANIFEST_DIR",
    ] {
        if let Some(v) = std::env::var_os(var).filter(|v| !v.is_empty()) {
            let p = PathBuf::from(v);
            if is_workspace(&p) {
                return p;
            }
        }
    }
    let cwd = std::env::current_dir().unwrap_or_default();
    if let Some(dir) = cwd.ancestors().find(|d| is_workspace(d)) {
        return dir.to_path_buf();
    }
    panic!(
        "cannot find the faultmatrix workspace from {}: run the tests with cargo test or \
         cargo nextest run, or set FAULTMATRIX_WORKSPACE=DIR (a checkout holding Cargo.toml \
         and runner-tests/)",
        cwd.display()
    )
}

/// The built `faultmatrix` binary.
pub fn bin() -> PathBuf {
    for var in [
        "FAULTMATRIX_TEST_BIN",
        "NEXTEST_BIN_EXE_faultmatrix",
        "CARGO_BIN_EXE_faultmatrix",
    ] {
        if let Some(v) = std::env::var_os(var).filter(|v| !v.is_empty()) {
            return PathBuf::from(v);
        }
    }
    let exe = std::env::current_exe().unwrap_or_default();
    // target/<profile>/deps/<test>-<hash> -> target/<profile>/faultmatrix
    let beside = exe
        .parent()
        .and_then(Path::parent)
        .map(|d| d.join("faultmatrix"));
    match beside {
        Some(p) if p.is_file() => p,
        _ => panic!(
            "cannot find the faultmatrix binary from the test binary {}: build it \
             (cargo build) or set FAULTMATRIX_TEST_BIN=PATH",
            exe.display()
        ),
    }
}
