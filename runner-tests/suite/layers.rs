//! The layering is checked: every `crate::`, `super::` and `self::` path in
//! the sources of faultmatrix, faultmatrix-core and faultmatrix-controller
//! (outside `#[cfg(test)]` modules) is resolved to the file it names, and
//! the test fails on any import that goes upward or closes a cycle, naming
//! the file, the line and the rule broken:
//!
//! ```text
//! src/model/matrix.rs:32: model may not import exec (layers import only downward)
//! ```
//!
//! Layers, bottom to top: base → contracts → model → load (the core crate)
//! → exec → verdict → engine → reports → cli and harness (the faultmatrix
//! crate). The controller crate sits below them all and is checked for
//! cycles only. Crate boundaries are enforced by cargo itself.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The layers of a crate: top-level module name to rank.
type Layers = &'static [(&'static str, usize)];

const CORE: Layers = &[("base", 1), ("contracts", 2), ("model", 3), ("load", 4)];
const ROOT: Layers = &[
    // Re-exported from faultmatrix-core.
    ("base", 1),
    ("contracts", 2),
    ("model", 3),
    ("load", 4),
    ("exec", 5),
    ("verdict", 6),
    ("engine", 7),
    ("reports", 8),
    ("cli", 9),
    ("harness", 9),
    ("policy", 9),
    ("system", 9),
    ("transport", 9),
    // The binary's global allocator (`mod alloc` of src/main.rs and of
    // runner-tests/matrices.rs; not a module of the library).
    ("alloc", 9),
];

/// One crate's sources.
struct Tree {
    /// Files by path relative to `src/`, with their text.
    files: BTreeMap<String, String>,
}

impl Tree {
    fn read(src: &Path) -> Tree {
        let mut files = BTreeMap::new();
        let mut stack = vec![src.to_path_buf()];
        while let Some(dir) = stack.pop() {
            for e in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
                let p = e.unwrap().path();
                if p.is_dir() {
                    stack.push(p);
                } else if p.extension().is_some_and(|x| x == "rs") {
                    let rel = p
                        .strip_prefix(src)
                        .unwrap()
                        .to_string_lossy()
                        .replace('\\', "/");
                    files.insert(rel, std::fs::read_to_string(&p).unwrap());
                }
            }
        }
        Tree { files }
    }
}

/// `model/matrix.rs` → `["model", "matrix"]`; `model/mod.rs` → `["model"]`.
fn module_of(rel: &str) -> Vec<String> {
    let mut parts: Vec<String> = rel
        .trim_end_matches(".rs")
        .split('/')
        .map(String::from)
        .collect();
    if parts.last().is_some_and(|p| p == "mod") {
        parts.pop();
    }
    if parts == ["lib"] || parts == ["main"] {
        parts.clear();
    }
    parts
}

/// The text outside comments and string literals, same length (blanked),
/// and cut at the first `#[cfg(test)]`.
fn code_of(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = vec![b' '; b.len()];
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'\n' => {
                out[i] = b'\n';
                i += 1;
            }
            b'/' if b.get(i + 1) == Some(&b'/') => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                i += 2;
                while i < b.len() && !(b[i] == b'*' && b.get(i + 1) == Some(&b'/')) {
                    if b[i] == b'\n' {
                        out[i] = b'\n';
                    }
                    i += 1;
                }
                i += 2;
            }
            b'"' => {
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    if b[i] == b'\\' {
                        i += 1;
                    }
                    if i < b.len() && b[i] == b'\n' {
                        out[i] = b'\n';
                    }
                    i += 1;
                }
                i += 1;
            }
            b'\'' if b.get(i + 2) == Some(&b'\'') || (b.get(i + 1) == Some(&b'\\')) => {
                // A char literal ('x', '\n'); lifetimes have no closing quote.
                let end = b[i + 1..]
                    .iter()
                    .position(|&c| c == b'\'')
                    .map_or(b.len(), |p| i + 2 + p);
                i = end;
            }
            c => {
                out[i] = c;
                i += 1;
            }
        }
    }
    let s = String::from_utf8_lossy(&out).into_owned();
    match s.find("#[cfg(test)]") {
        Some(cut) => s[..cut].to_string(),
        None => s,
    }
}

fn ident_at(b: &[u8], i: usize) -> Option<(String, usize)> {
    let start = i;
    let mut j = i;
    while j < b.len() && (b[j].is_ascii_alphanumeric() || b[j] == b'_') {
        j += 1;
    }
    (j > start).then(|| (String::from_utf8_lossy(&b[start..j]).into_owned(), j))
}

fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && b[i].is_ascii_whitespace() {
        i += 1;
    }
    i
}

/// Reads a use-tree at `i` (after `prefix::`): every full path it names.
fn use_tree(b: &[u8], mut i: usize, prefix: Vec<String>, out: &mut Vec<Vec<String>>) -> usize {
    i = skip_ws(b, i);
    if b.get(i) == Some(&b'{') {
        i += 1;
        loop {
            i = skip_ws(b, i);
            match b.get(i) {
                Some(b'}') => return i + 1,
                Some(b',') => i += 1,
                None => return i,
                _ => i = use_tree(b, i, prefix.clone(), out),
            }
        }
    }
    if b.get(i) == Some(&b'*') {
        out.push(prefix);
        return i + 1;
    }
    let Some((id, j)) = ident_at(b, i) else {
        out.push(prefix);
        return i + 1;
    };
    let mut path = prefix;
    if id != "self" {
        path.push(id);
    }
    let k = skip_ws(b, j);
    if b[k..].starts_with(b"::") {
        use_tree(b, k + 2, path, out)
    } else {
        out.push(path);
        j
    }
}

/// Every `crate::`/`super::`/`self::` path in `code`, with its line.
fn paths_in(code: &str) -> Vec<(usize, Vec<String>)> {
    let b = code.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let boundary =
            i == 0 || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_' || b[i - 1] == b':');
        if boundary {
            if let Some((id, j)) = ident_at(b, i) {
                if matches!(id.as_str(), "crate" | "super" | "self") && b[j..].starts_with(b"::") {
                    let line = code[..i].matches('\n').count() + 1;
                    let mut found = Vec::new();
                    let end = use_tree(b, j + 2, vec![id], &mut found);
                    for p in found {
                        out.push((line, p));
                    }
                    i = end.max(j);
                    continue;
                }
                i = j;
                continue;
            }
        }
        i += 1;
    }
    out
}

/// An import of one file from another.
struct Edge {
    from: String,
    to: String,
    line: usize,
}

/// The file a path names, and the top-level module it starts in.
fn resolve(
    tree: &Tree,
    modules: &BTreeMap<Vec<String>, String>,
    from: &[String],
    path: &[String],
) -> (Option<String>, Option<String>) {
    let mut full: Vec<String> = Vec::new();
    let mut rest = path;
    match rest.first().map(String::as_str) {
        Some("crate") => rest = &rest[1..],
        Some("super") | Some("self") => {
            // Relative to the file's own module (a mod.rs is its module).
            full = from.to_vec();
            while let Some(s) = rest.first() {
                match s.as_str() {
                    "super" => {
                        full.pop();
                    }
                    "self" => {}
                    _ => break,
                }
                rest = &rest[1..];
            }
        }
        _ => {}
    }
    full.extend(rest.iter().cloned());
    let top = full.first().cloned();
    let _ = tree;
    for k in (1..=full.len()).rev() {
        if let Some(f) = modules.get(&full[..k]) {
            return (Some(f.clone()), top);
        }
    }
    (None, top)
}

/// Every problem of one crate: upward imports and cycles.
fn check_tree(name: &str, tree: &Tree, layers: Layers) -> Vec<String> {
    let rank = |m: &str| layers.iter().find(|(l, _)| *l == m).map(|(_, r)| *r);
    let modules: BTreeMap<Vec<String>, String> = tree
        .files
        .keys()
        .filter(|f| *f != "main.rs")
        .map(|f| (module_of(f), f.clone()))
        .collect();
    let mut problems = Vec::new();
    let mut edges: Vec<Edge> = Vec::new();
    for (file, text) in &tree.files {
        if file == "lib.rs" || file == "main.rs" {
            continue;
        }
        let me = module_of(file);
        let my_layer = me.first().cloned().unwrap_or_default();
        let code = code_of(text);
        let mut seen = BTreeSet::new();
        for (line, path) in paths_in(&code) {
            let (target, top) = resolve(tree, &modules, &me, &path);
            if let (Some(top), false) = (&top, layers.is_empty()) {
                if let (Some(a), Some(b)) = (rank(&my_layer), rank(top)) {
                    if b > a && seen.insert((line, top.clone())) {
                        problems.push(format!(
                            "{name}/{file}:{line}: {my_layer} may not import {top} (layers import only downward: {})",
                            layers.iter().filter(|(l, _)| !matches!(*l, "policy" | "system" | "transport")).map(|(l, _)| *l).collect::<Vec<_>>().join(" → ")
                        ));
                    }
                }
            }
            if let Some(t) = target {
                if t != *file && t != "lib.rs" {
                    edges.push(Edge {
                        from: file.clone(),
                        to: t,
                        line,
                    });
                }
            }
        }
    }
    problems.extend(cycles(name, &edges));
    problems
}

/// Cycles among files (strongly connected components of two or more).
fn cycles(name: &str, edges: &[Edge]) -> Vec<String> {
    let mut graph: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for e in edges {
        graph.entry(&e.from).or_default().insert(&e.to);
        graph.entry(&e.to).or_default();
    }
    // Tarjan's algorithm, iteratively deep enough for any crate here.
    struct State<'a> {
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on: BTreeSet<&'a str>,
        next: usize,
        out: Vec<Vec<&'a str>>,
    }
    fn visit<'a>(v: &'a str, g: &BTreeMap<&'a str, BTreeSet<&'a str>>, s: &mut State<'a>) {
        s.index.insert(v, s.next);
        s.low.insert(v, s.next);
        s.next += 1;
        s.stack.push(v);
        s.on.insert(v);
        for &w in &g[v] {
            if !s.index.contains_key(w) {
                visit(w, g, s);
                let lw = s.low[w];
                let lv = s.low.get_mut(v).unwrap();
                *lv = (*lv).min(lw);
            } else if s.on.contains(w) {
                let iw = s.index[w];
                let lv = s.low.get_mut(v).unwrap();
                *lv = (*lv).min(iw);
            }
        }
        if s.low[v] == s.index[v] {
            let mut comp = Vec::new();
            loop {
                let w = s.stack.pop().unwrap();
                s.on.remove(w);
                comp.push(w);
                if w == v {
                    break;
                }
            }
            if comp.len() > 1 {
                comp.sort();
                s.out.push(comp);
            }
        }
    }
    let mut s = State {
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on: BTreeSet::new(),
        next: 0,
        out: Vec::new(),
    };
    for &v in graph.keys() {
        if !s.index.contains_key(v) {
            visit(v, &graph, &mut s);
        }
    }
    s.out
        .into_iter()
        .map(|comp| {
            let within: Vec<String> = edges
                .iter()
                .filter(|e| comp.contains(&e.from.as_str()) && comp.contains(&e.to.as_str()))
                .map(|e| format!("{name}/{}:{} imports {}", e.from, e.line, e.to))
                .collect::<BTreeSet<_>>()
                .into_iter()
                .collect();
            format!(
                "import cycle among {} files ({}): {}",
                comp.len(),
                comp.join(", "),
                within.join("; ")
            )
        })
        .collect()
}

fn root() -> PathBuf {
    crate::common::workspace()
}

#[test]
fn layers_import_only_downward_and_no_file_closes_a_cycle() {
    let crates: [(&str, PathBuf, Layers); 3] = [
        ("src", root().join("src"), ROOT),
        (
            "crates/faultmatrix-core/src",
            root().join("crates/faultmatrix-core/src"),
            CORE,
        ),
        (
            "crates/faultmatrix-controller/src",
            root().join("crates/faultmatrix-controller/src"),
            &[],
        ),
    ];
    let mut problems = Vec::new();
    let mut files = 0;
    for (name, dir, layers) in crates {
        let tree = Tree::read(&dir);
        files += tree.files.len();
        problems.extend(check_tree(name, &tree, layers));
        if !layers.is_empty() {
            for f in tree.files.keys() {
                let top = module_of(f).first().cloned().unwrap_or_default();
                if !top.is_empty() && !layers.iter().any(|(l, _)| *l == top) {
                    problems.push(format!(
                        "{name}/{f}: module `{top}` is in no layer (add it to the layer table in runner-tests/suite/layers.rs)"
                    ));
                }
            }
        }
    }
    assert!(files > 80, "read only {files} files");
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_checker_names_an_upward_import_and_a_cycle() {
    let mut files = BTreeMap::new();
    files.insert(
        "model/matrix.rs".to_string(),
        "//! doc crate::exec::run is a comment\nuse crate::base::yaml;\n\nuse crate::exec::run::{Observation, self};\n".to_string(),
    );
    files.insert(
        "base/yaml.rs".to_string(),
        "use super::diag::X;\n".to_string(),
    );
    files.insert(
        "base/diag.rs".to_string(),
        "pub fn f() { crate::base::yaml::g(); let s = \"crate::exec\"; }\n#[cfg(test)]\nmod tests { use crate::exec::x; }\n".to_string(),
    );
    files.insert("exec/run.rs".to_string(), String::new());
    let tree = Tree { files };
    let problems = check_tree("src", &tree, ROOT);
    assert_eq!(problems.len(), 2, "{problems:#?}");
    assert!(
        problems[0].starts_with("src/model/matrix.rs:4: model may not import exec"),
        "{}",
        problems[0]
    );
    assert!(
        problems[1].starts_with("import cycle among 2 files (base/diag.rs, base/yaml.rs)"),
        "{}",
        problems[1]
    );
    assert!(
        problems[1].contains("src/base/yaml.rs:1 imports base/diag.rs"),
        "{}",
        problems[1]
    );
}
