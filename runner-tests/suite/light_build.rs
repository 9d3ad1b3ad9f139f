//! The light build (issue 15, docs/design-notes.md "A light build for
//! library users"): what a crate that only runs matrices compiles, read
//! from `cargo tree`. Whether each documented feature set builds is
//! `.ci/features.sh`'s job (it compiles them); this checks the graph.

use crate::cargo_tree::{normal_dependencies_with, package_dir};

/// The package names, for messages.
fn names(deps: &[(String, Vec<String>)]) -> Vec<&str> {
    let mut n: Vec<&str> = deps.iter().map(|(name, _)| name.as_str()).collect();
    n.sort_unstable();
    n.dedup();
    n
}

/// Crates only the CLI, the schemas, recording or the old glob matcher
/// brought in, and crates only tests use.
const HEAVY: &[&str] = &[
    "schemars",
    "schemars_derive",
    "globset",
    "regex-automata",
    "regex-syntax",
    "aho-corasick",
    "hyper",
    "rustls",
    "ring",
    "mimalloc",
    "libmimalloc-sys",
];

/// Test-only crates (`[dev-dependencies]`), which no build of the library
/// may compile (tokio-rustls is also a dev-dependency, but hyper-rustls
/// needs it for recording, so it is not listed).
const DEV_ONLY: &[&str] = &[
    "insta",
    "jsonschema",
    "tempfile",
    "reqwest",
    "reqwest-middleware",
    "reqwest-retry",
    "backon",
    "rcgen",
    "globset",
];

#[test]
fn the_minimal_build_leaves_out_the_cli_schema_wire_and_recording_crates() {
    let deps = normal_dependencies_with(
        "faultmatrix",
        &package_dir(),
        &["--no-default-features", "--features", "harness"],
    );
    for (name, features) in &deps {
        assert!(
            !HEAVY.contains(&name.as_str()) && !DEV_ONLY.contains(&name.as_str()),
            "`{name}` is in the `harness`-only build: {:?}",
            names(&deps)
        );
        if name == "tokio" {
            // `signal` stays: a recording removes its temp file when a
            // signal ends the process, in every build (exec::tape).
            for f in ["process", "rt-multi-thread"] {
                assert!(
                    !features.iter().any(|x| x == f),
                    "tokio's `{f}` is on in the `harness`-only build: {features:?}"
                );
            }
        }
    }
    for needed in ["libtest-mimic", "faultmatrix-core", "tokio", "serde_yaml"] {
        assert!(
            deps.iter().any(|(n, _)| n == needed),
            "{needed}: {:?}",
            names(&deps)
        );
    }
}

#[test]
fn the_default_build_has_no_test_only_crate_and_no_regex_engine() {
    let deps = normal_dependencies_with("faultmatrix", &package_dir(), &[]);
    for (name, _) in &deps {
        assert!(
            !DEV_ONLY.contains(&name.as_str()) && !name.starts_with("regex"),
            "`{name}` is in the default build's normal graph: {:?}",
            names(&deps)
        );
    }
    // The default build is everything: the CLI's crates are there.
    for needed in ["clap", "schemars", "hyper", "libtest-mimic"] {
        assert!(
            deps.iter().any(|(n, _)| n == needed),
            "{needed}: {:?}",
            names(&deps)
        );
    }
}
