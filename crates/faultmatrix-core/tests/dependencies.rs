//! Reading matrix files needs no command line, no test harness and no
//! runtime: this test fails when clap, mimalloc, libtest-mimic (or any
//! other runner-side crate) enters the core's normal dependency graph, or
//! when tokio comes with more than its `time` feature (through the
//! controller).

use std::process::Command;

#[test]
fn no_runner_or_cli_crate_enters_the_core() {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args([
            "tree",
            "--offline",
            "--package",
            "faultmatrix-core",
            "--edges",
            "normal",
            "--prefix",
            "none",
            "--format",
            "{p}|{f}",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo tree runs");
    assert!(
        out.status.success(),
        "cargo tree failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let tree = String::from_utf8_lossy(&out.stdout);
    let forbidden = [
        "clap",
        "mimalloc",
        "libtest-mimic",
        "globset",
        "insta",
        "similar",
        "reqwest",
        "hyper",
    ];
    let mut names = Vec::new();
    for line in tree.lines().filter(|l| !l.trim().is_empty()) {
        let (pkg, features) = line.split_once('|').unwrap_or((line, ""));
        let name = pkg.split_whitespace().next().unwrap_or("");
        assert!(
            !forbidden.contains(&name),
            "`{name}` entered faultmatrix-core's dependencies:\n{tree}"
        );
        if name == "tokio" {
            let features: Vec<&str> = features.split(',').collect();
            assert_eq!(features, ["time"], "tokio in the core: {features:?}");
        }
        names.push(name.to_string());
    }
    for needed in ["faultmatrix-controller", "serde_yaml", "yaml-rust2"] {
        assert!(
            names.iter().any(|n| n == needed),
            "{needed} missing:\n{tree}"
        );
    }
}
