//! The shipped JSON Schemas (`docs/schema/`) are current, and every shipped
//! matrix, example and registry validates against them.

use std::path::{Path, PathBuf};

use faultmatrix::load::schema::{render, Kind};

fn yaml_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        let name = e.file_name().to_string_lossy().into_owned();
        if p.is_dir() {
            if !["snapshots", "tapes", "target"].contains(&name.as_str()) && !name.starts_with('.')
            {
                yaml_files(&p, out);
            }
        } else if name.ends_with(".yaml") || name.ends_with(".yml") {
            out.push(p);
        }
    }
}

fn to_json(path: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(path).unwrap();
    let v: serde_yaml::Value = serde_yaml::from_str(&text).unwrap();
    serde_json::to_value(v).unwrap()
}

fn validator(kind: Kind) -> jsonschema::Validator {
    let schema: serde_json::Value = serde_json::from_str(&render(kind)).unwrap();
    jsonschema::validator_for(&schema).expect("the generated schema is a valid JSON Schema")
}

fn errors(v: &jsonschema::Validator, doc: &serde_json::Value) -> Vec<String> {
    v.iter_errors(doc)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect()
}

#[test]
fn shipped_schemas_are_current() {
    for (kind, file) in [
        (Kind::Matrix, "docs/schema/matrix.schema.json"),
        (Kind::Registry, "docs/schema/registry.schema.json"),
        (Kind::Invariants, "docs/schema/invariants.schema.json"),
    ] {
        let shipped = std::fs::read_to_string(file).unwrap_or_default();
        assert!(
            shipped == render(kind),
            "{file} is out of date: run `cargo run -- schema {} > {file}`",
            match kind {
                Kind::Matrix => "matrix",
                Kind::Registry => "registry",
                Kind::Invariants => "invariants",
            }
        );
    }
}

#[test]
fn every_shipped_file_validates_and_names_its_schema() {
    let matrix = validator(Kind::Matrix);
    let registry = validator(Kind::Registry);
    let invariants = validator(Kind::Invariants);
    let mut files = Vec::new();
    for dir in ["matrices", "docs/examples", "runner-tests/explore-python"] {
        if Path::new(dir).is_dir() {
            yaml_files(Path::new(dir), &mut files);
        }
    }

    let mut checked = 0;
    let mut problems = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        // Explore mode's invariants files are not matrices (docs/explore.md).
        let (v, schema_file) = if f.to_string_lossy().ends_with(".invariants.yaml") {
            (&invariants, "invariants.schema.json")
        } else if faultmatrix::engine::discover::is_registry(&text) {
            (&registry, "registry.schema.json")
        } else {
            (&matrix, "matrix.schema.json")
        };
        if f.starts_with("docs/examples/bad") {
            continue;
        }
        for e in errors(v, &to_json(f)) {
            problems.push(format!("{}: {e}", f.display()));
        }
        let first = text.lines().next().unwrap_or("");
        if !(first.starts_with("# yaml-language-server: $schema=") && first.ends_with(schema_file))
        {
            let up = "../".repeat(f.components().count() - 1);
            problems.push(format!(
                "{}: the first line should name the schema, for editors: `# yaml-language-server: $schema={up}docs/schema/{schema_file}`",
                f.display()
            ));
        } else {
            let rel = first.split("$schema=").nth(1).unwrap();
            let target = f.parent().unwrap().join(rel);
            if !target.is_file() {
                problems.push(format!("{}: schema path {rel} does not exist", f.display()));
            }
        }
        checked += 1;
    }
    assert!(checked >= 2, "no shipped files found");
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn invariants_schema_rejects_what_the_loader_rejects() {
    let schema = validator(Kind::Invariants);
    let doc = |yaml: &str| -> serde_json::Value {
        serde_json::to_value(serde_yaml::from_str::<serde_yaml::Value>(yaml).unwrap()).unwrap()
    };
    for good in [
        "invariants: all\n",
        "invariants: all\nexcept: [request-id]\ngenerate: { calls: 3, wall: 1, weights: { retry-after: 5 } }\n",
        "invariants:\n  - budget\n  - { name: b-once, meaning: B once, max_calls: 1, route: B }\n  - { name: quick, meaning: ten seconds, max_elapsed: 10s }\n  - { name: quota, meaning: no retry, never_after: QUOTA_EXHAUSTED }\n",
    ] {
        assert_eq!(errors(&schema, &doc(good)), Vec::<String>::new(), "{good}");
        faultmatrix::engine::explore::invariants_from_text("x.invariants.yaml", good)
            .unwrap_or_else(|e| panic!("the loader rejects what the schema accepts: {e}"));
    }
    for bad in [
        "invariants: some\n",
        "invariants:\n  - budgte\n",
        "invariants: all\ngenrate: {}\n",
        "invariants: all\ngenerate: { calls: 0 }\n",
        "invariants: all\ngenerate: { calls: 65 }\n",
        "invariants: all\ngenerate: { deadline: 1.5 }\n",
        "invariants: all\ngenerate: { statuses: [] }\n",
        "invariants: all\ngenerate: { statuses: [99] }\n",
        "invariants: all\ngenerate: { weights: { retry_after: 1 } }\n",
        "invariants:\n  - { name: x, meaning: y }\n",
        "invariants:\n  - { name: x, meaning: y, max_calls: 1, max_elapsed: 1s }\n",
        "invariants:\n  - { name: x, meaning: y, max_elapsed: 10 }\n",
        "except: [budget]\n",
    ] {
        assert!(
            !errors(&schema, &doc(bad)).is_empty(),
            "schema accepted:\n{bad}"
        );
        assert!(
            faultmatrix::engine::explore::invariants_from_text("x.invariants.yaml", bad).is_err(),
            "the loader accepted:\n{bad}"
        );
    }
}

#[test]
fn schema_rejects_what_the_loader_rejects() {
    let matrix = validator(Kind::Matrix);
    let doc = |yaml: &str| -> serde_json::Value {
        serde_json::to_value(serde_yaml::from_str::<serde_yaml::Value>(yaml).unwrap()).unwrap()
    };
    let good = doc("title: t\nrows:\n  - name: a\n    inject: { A: [503, { status: 200, latency: 1s }] }\n    expect: { trace: 'A1 503 X fail', stop: terminal }\n");
    assert_eq!(errors(&matrix, &good), Vec::<String>::new());
    // A custom system's policy is its own business.
    let custom = doc("title: t\nsystem: chat-client\npolicy: { attempts: 2, pause: 1s }\nrows:\n  - name: a\n    expect: { stop: success }\n");
    assert_eq!(errors(&matrix, &custom), Vec::<String>::new());
    for bad in [
        "title: t\nrows:\n  - name: a\n    inejct: {}\n    expect: { stop: success }\n",
        "title: t\nrows:\n  - name: a\n    expect: { stop: success, snapshot: yes please }\n",
        "title: t\nrows:\n  - name: a\n    deadline: 5\n    expect: { stop: success }\n",
        "title: t\nrows:\n  - name: a\n    inject: { A: [{ status: 200, repeat: 0 }] }\n    expect: { stop: success }\n",
        "rows: []\n",
        "title: t\npolicy: { backof: { initial: 1s } }\nrows:\n  - name: a\n    expect: { stop: success }\n",
        "title: t\nsystem: reference\npolicy: { routes: [{ name: A, attempts: two }] }\nrows:\n  - name: a\n    expect: { stop: success }\n",
    ] {
        assert!(!errors(&matrix, &doc(bad)).is_empty(), "schema accepted:\n{bad}");
    }
}
