//! Every example in the docs is a tested file:
//! - every `yaml` block in `docs/*.md` and the README appears verbatim in a
//!   file under `docs/examples/`, `matrices/` or `runner-tests/wire/`
//!   (which other tests run);
//! - every `rust` block appears verbatim in a test target or example (the
//!   custom-system guide's in `runner-tests/custom_system.rs`, compiled and
//!   run as `cargo test --test custom_system`), every `toml` block in
//!   `Cargo.toml`, or else it is a `faultmatrix = { ... }` dependency of a
//!   user's crate whose features are all faultmatrix's (the builds they
//!   give are `.ci/features.sh`'s);
//! - a block after `<!-- output: faultmatrix ARGS -->` is exactly what the
//!   binary prints for those arguments, and a block after
//!   `<!-- file: PATH -->` is exactly that file;
//! - every row of `docs/examples/*.yaml` passes against the reference system.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Docs whose YAML blocks are fragments of larger files (a registry entry,
/// a tape, a `tapes:` block) rather than files; they are only checked to
/// parse. Every other doc's YAML must come from a tested file.
const FRAGMENTS_ALLOWED: &[&str] = &["docs/registry.md", "docs/tapes.md"];

struct Block {
    doc: String,
    line: usize,
    lang: String,
    marker: Option<String>,
    text: String,
}

fn doc_files() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir("docs")
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    v.push(PathBuf::from("README.md"));
    v.sort();
    v
}

fn blocks(path: &Path) -> Vec<Block> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut out = Vec::new();
    let mut lines = text.lines().enumerate().peekable();
    let mut marker: Option<String> = None;
    while let Some((i, line)) = lines.next() {
        let t = line.trim();
        if let Some(m) = t.strip_prefix("<!-- ").and_then(|m| m.strip_suffix(" -->")) {
            marker = Some(m.to_string());
            continue;
        }
        if let Some(lang) = t.strip_prefix("```") {
            let mut body = String::new();
            for (_, l) in lines.by_ref() {
                if l.trim_start().starts_with("```") {
                    break;
                }
                body.push_str(l);
                body.push('\n');
            }
            out.push(Block {
                doc: path.display().to_string(),
                line: i + 1,
                lang: lang.to_string(),
                marker: marker.take(),
                text: body,
            });
            continue;
        }
        if !t.is_empty() {
            marker = None;
        }
    }
    out
}

fn files_under(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            files_under(&p, out);
        } else {
            out.push(p);
        }
    }
}

/// Whether a toml block is a user's dependency on faultmatrix (under an
/// optional table header) naming only features `Cargo.toml` declares.
fn user_dependency(block: &str, cargo: &str) -> bool {
    let mut lines = block.lines().filter(|l| !l.trim().is_empty());
    let mut line = lines.next().unwrap_or("");
    if line.starts_with('[') {
        line = lines.next().unwrap_or("");
    }
    if lines.next().is_some() || !line.starts_with("faultmatrix = {") {
        return false;
    }
    let Some(list) = line
        .split_once("features = [")
        .and_then(|(_, rest)| rest.split_once(']'))
        .map(|(list, _)| list)
    else {
        return false;
    };
    let declared = cargo
        .split_once("[features]")
        .map(|(_, rest)| rest.split("\n[").next().unwrap_or(""))
        .unwrap_or("");
    list.split(',')
        .map(|f| f.trim().trim_matches('"'))
        .filter(|f| !f.is_empty())
        .all(|f| declared.lines().any(|l| l.starts_with(&format!("{f} = "))))
}

#[test]
fn a_documented_dependency_names_only_real_features() {
    let cargo = std::fs::read_to_string("Cargo.toml").unwrap();
    let dep = |f: &str| {
        format!("[dev-dependencies]\nfaultmatrix = {{ version = \"0.1\", default-features = false, features = [{f}] }}\n")
    };
    assert!(user_dependency(&dep("\"harness\""), &cargo));
    assert!(user_dependency(&dep("\"harness\", \"wire\""), &cargo));
    assert!(!user_dependency(&dep("\"harnes\""), &cargo));
    assert!(!user_dependency(&dep("\"harness\", \"tls\""), &cargo));
    assert!(!user_dependency("serde = { version = \"1\" }", &cargo));
}

#[test]
fn every_documented_example_is_a_tested_file() {
    let mut yaml_sources = Vec::new();
    files_under(Path::new("docs/examples"), &mut yaml_sources);
    files_under(Path::new("matrices"), &mut yaml_sources);
    // Over-the-wire matrices, run by `cargo test --test wire`.
    files_under(Path::new("runner-tests/wire"), &mut yaml_sources);
    // Rust clients in-process, run by `cargo test --test clients`.
    files_under(Path::new("runner-tests/clients"), &mut yaml_sources);
    let yaml_texts: Vec<String> = yaml_sources
        .iter()
        .filter(|p| p.extension().is_some_and(|x| x == "yaml" || x == "yml"))
        .map(|p| std::fs::read_to_string(p).unwrap())
        .collect();
    let mut rust_files = Vec::new();
    files_under(Path::new("runner-tests"), &mut rust_files);
    if Path::new("examples").is_dir() {
        files_under(Path::new("examples"), &mut rust_files);
    }
    let rust: Vec<String> = rust_files
        .iter()
        .filter(|p| p.extension().is_some_and(|x| x == "rs"))
        .map(|p| std::fs::read_to_string(p).unwrap())
        .collect();
    let cargo = std::fs::read_to_string("Cargo.toml").unwrap();
    let mut problems = Vec::new();
    let mut checked = 0;
    for doc in doc_files() {
        for b in blocks(&doc) {
            let where_ = format!("{}:{}", b.doc, b.line);
            if FRAGMENTS_ALLOWED.contains(&b.doc.as_str()) && b.lang == "yaml" {
                // Illustrative fragments (`rows: ...`): they must parse.
                if let Err(e) = serde_yaml::from_str::<serde_yaml::Value>(&b.text) {
                    problems.push(format!("{where_}: this yaml block does not parse: {e}"));
                }
                continue;
            }
            let found = match b.lang.as_str() {
                "yaml" => yaml_texts.iter().any(|t| t.contains(&b.text)),
                "rust" => rust.iter().any(|t| t.contains(&b.text)),
                "toml" => cargo.contains(&b.text) || user_dependency(&b.text, &cargo),
                _ => true,
            };
            if !found {
                problems.push(format!(
                    "{where_}: this {} block is not part of a tested file",
                    b.lang
                ));
            }
            checked += 1;
        }
    }
    assert!(checked > 20, "only {checked} blocks found");
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn documented_outputs_and_files_are_exact() {
    let mut checked = 0;
    let mut problems = Vec::new();
    for doc in doc_files() {
        for b in blocks(&doc) {
            let Some(marker) = &b.marker else { continue };
            let where_ = format!("{}:{}", b.doc, b.line);
            let actual = if let Some(args) = marker.strip_prefix("output: faultmatrix ") {
                let out = Command::new(crate::common::bin())
                    .args(args.split_whitespace())
                    .env("CI", "true")
                    .env_remove("GITHUB_ACTIONS")
                    .output()
                    .unwrap();
                String::from_utf8_lossy(&out.stdout).into_owned()
            } else if let Some(path) = marker.strip_prefix("file: ") {
                std::fs::read_to_string(path).unwrap_or_else(|e| format!("({path}: {e})"))
            } else {
                continue;
            };
            if actual != b.text {
                problems.push(format!(
                    "{where_}: `{marker}` gives\n{actual}\nbut the doc shows\n{}",
                    b.text
                ));
            }
            checked += 1;
        }
    }
    assert!(checked >= 3, "only {checked} marked blocks");
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn example_matrices_pass() {
    let files: Vec<faultmatrix::engine::discover::Found> = std::fs::read_dir("docs/examples")
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        .map(|p| faultmatrix::engine::discover::Found {
            display: p.display().to_string(),
            path: p,
        })
        .collect();
    assert!(files.len() >= 4, "{files:?}");
    let systems = faultmatrix::Systems::new();
    let out = faultmatrix::engine::plan::run_files(
        &files,
        &faultmatrix::load::Loader::new(systems),
        &Default::default(),
        &Default::default(),
        2,
        &|_| {},
        &|_| {},
    );
    let mut ran = 0;
    for r in &out.results {
        match &r.verdict {
            faultmatrix::reports::Verdict::Failed(m) => panic!("{} failed:\n{m}", r.id),
            faultmatrix::reports::Verdict::Passed => ran += 1,
            faultmatrix::reports::Verdict::Ignored(_) => {}
        }
    }
    assert_eq!(out.load_errors, 0);
    assert!(ran >= 12, "only {ran} rows ran");
}

/// The keys serde accepts at `prefix`, from its "expected one of" list.
fn accepted(yaml: &str) -> Vec<String> {
    let e = faultmatrix::policy::from_yaml_str(yaml).unwrap_err();
    let list = e.split_once("expected one of").expect(&e).1;
    list.split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .collect()
}

#[test]
fn docs_describe_every_policy_key() {
    let docs = include_str!("../../docs/configuration.md");
    let start = docs.find("## The `policy:` block").unwrap();
    let end = docs.find("## What happens after each attempt").unwrap();
    let documented: Vec<&str> = docs[start..end]
        .lines()
        .filter_map(|l| l.strip_prefix("| `"))
        .filter_map(|l| l.split_once('`').map(|(k, _)| k))
        .collect();
    let mut keys = Vec::new();
    for k in accepted("zzz: 1") {
        keys.push(k);
    }
    for k in accepted("backoff: {zzz: 1}") {
        keys.push(format!("backoff.{k}"));
    }
    for k in accepted("retry_after: {zzz: 1}") {
        keys.push(format!("retry_after.{k}"));
    }
    for k in accepted("routes: [{name: A, zzz: 1}]") {
        keys.push(format!("routes[].{k}"));
    }
    assert!(keys.len() > 15, "{keys:?}");
    for k in &keys {
        // A nested map is documented through its fields.
        let covered = documented.contains(&k.as_str())
            || documented.iter().any(|d| d.starts_with(&format!("{k}.")));
        assert!(covered, "docs/configuration.md does not describe `{k}`");
    }
    for d in documented.iter().filter(|d| !d.starts_with("request.")) {
        if ["deadline", "jitter", "jitter_seed"].contains(d) || keys.iter().any(|k| k == d) {
            continue;
        }
        panic!("docs/configuration.md describes `{d}`, which the policy does not accept");
    }
}
