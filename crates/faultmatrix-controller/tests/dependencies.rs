//! A service that depends on this crate compiles serde, tokio with the
//! `time` feature, and their own dependencies: nothing a test harness
//! needs. This test fails when anything else enters the normal dependency
//! graph, or when tokio's `test-util` (which pauses time) is switched on.

use std::process::Command;

#[test]
fn only_serde_and_tokio_time_enter_the_build() {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args([
            "tree",
            "--offline",
            "--package",
            "faultmatrix-controller",
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
    // serde's derive stack and tokio's own dependencies.
    let allowed = [
        "faultmatrix-controller",
        "serde",
        "serde_core",
        "serde_derive",
        "proc-macro2",
        "quote",
        "syn",
        "unicode-ident",
        "tokio",
        "pin-project-lite",
    ];
    let mut seen = Vec::new();
    for line in tree.lines().filter(|l| !l.trim().is_empty()) {
        let (pkg, features) = line.split_once('|').unwrap_or((line, ""));
        let name = pkg.split_whitespace().next().unwrap_or("");
        assert!(
            allowed.contains(&name),
            "`{name}` entered the controller's dependencies:\n{tree}"
        );
        if name == "tokio" {
            let features: Vec<&str> = features.split(',').collect();
            assert!(
                !features.contains(&"test-util"),
                "tokio's test-util is on in the controller's build: {features:?}"
            );
            assert!(features.contains(&"time"), "{features:?}");
        }
        seen.push(name.to_string());
    }
    for needed in ["serde", "tokio"] {
        assert!(seen.iter().any(|s| s == needed), "{tree}");
    }
}
