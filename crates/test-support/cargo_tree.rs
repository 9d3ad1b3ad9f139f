//! Shared by the crates' dependency tests: the normal dependency graph of
//! a package as `(name, features)` pairs, read from `cargo tree`.

use std::process::Command;

/// `(package name, enabled features)` of every crate in `package`'s
/// normal (non-dev, non-build) dependency graph, the package included.
/// The test's package directory, found at run time (cargo and nextest set
/// `CARGO_MANIFEST_DIR` when they start a test, nextest remaps it for an
/// archived build; both start it there), never baked in at compile time.
pub fn package_dir() -> String {
    std::env::var("CARGO_MANIFEST_DIR")
        .ok()
        .filter(|d| !d.is_empty())
        .or_else(|| Some(std::env::current_dir().ok()?.display().to_string()))
        .expect("the test's package directory: set CARGO_MANIFEST_DIR")
}

#[allow(dead_code)]
pub fn normal_dependencies(package: &str, dir: &str) -> Vec<(String, Vec<String>)> {
    normal_dependencies_with(package, dir, &[])
}

/// [`normal_dependencies`] with more arguments for `cargo tree`
/// (`--no-default-features`, `--features harness`).
#[allow(dead_code)]
pub fn normal_dependencies_with(
    package: &str,
    dir: &str,
    extra: &[&str],
) -> Vec<(String, Vec<String>)> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args([
            "tree",
            "--offline",
            "--package",
            package,
            "--edges",
            "normal",
            "--prefix",
            "none",
            "--format",
            "{p}|{f}",
        ])
        .args(extra)
        .current_dir(dir)
        .output()
        .expect("cargo tree runs");
    assert!(
        out.status.success(),
        "cargo tree failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|line| {
            let (pkg, features) = line.split_once('|').unwrap_or((line, ""));
            let name = pkg.split_whitespace().next().unwrap_or("").to_string();
            let features = features
                .split(',')
                .filter(|f| !f.is_empty())
                .map(str::to_string)
                .collect();
            (name, features)
        })
        .collect()
}
