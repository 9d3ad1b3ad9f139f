//! A service that depends on this crate compiles serde, tokio with the
//! `time` feature, and their own dependencies: nothing a test harness
//! needs. This test fails when anything else enters the normal dependency
//! graph, or when tokio's `test-util` (which pauses time) is switched on.

#[path = "../../test-support/cargo_tree.rs"]
mod cargo_tree;

#[test]
fn only_serde_and_tokio_time_enter_the_build() {
    let deps =
        cargo_tree::normal_dependencies("faultmatrix-controller", &cargo_tree::package_dir());
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
    for (name, features) in &deps {
        assert!(
            allowed.contains(&name.as_str()),
            "`{name}` entered the controller's dependencies: {deps:?}"
        );
        if name == "tokio" {
            assert!(
                !features.iter().any(|f| f == "test-util"),
                "tokio's test-util is on in the controller's build: {features:?}"
            );
            assert!(features.iter().any(|f| f == "time"), "{features:?}");
        }
    }
    for needed in ["serde", "tokio"] {
        assert!(deps.iter().any(|(n, _)| n == needed), "{deps:?}");
    }
}
