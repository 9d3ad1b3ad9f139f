//! Reading matrix files needs no command line, no test harness, no schema
//! generator and no runtime: this test fails when clap, mimalloc,
//! libtest-mimic, schemars (the `schema` feature's) or any other
//! runner-side crate enters the core's normal dependency graph, or when
//! tokio comes with more than its `time` feature (through the controller).

#[path = "../../test-support/cargo_tree.rs"]
mod cargo_tree;

#[test]
fn no_runner_or_cli_crate_enters_the_core() {
    let deps = cargo_tree::normal_dependencies("faultmatrix-core", &cargo_tree::package_dir());
    let forbidden = [
        "clap",
        "mimalloc",
        "libtest-mimic",
        "globset",
        "insta",
        "similar",
        "reqwest",
        "hyper",
        // Only with the `schema` feature (`faultmatrix schema`).
        "schemars",
    ];
    for (name, features) in &deps {
        assert!(
            !forbidden.contains(&name.as_str()),
            "`{name}` entered faultmatrix-core's dependencies: {deps:?}"
        );
        if name == "tokio" {
            assert_eq!(features, &["time"], "tokio in the core: {features:?}");
        }
    }
    for needed in ["faultmatrix-controller", "serde_yaml", "yaml-rust2"] {
        assert!(
            deps.iter().any(|(n, _)| n == needed),
            "{needed} missing: {deps:?}"
        );
    }
}
