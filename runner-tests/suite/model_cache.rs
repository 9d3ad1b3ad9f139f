//! `faultmatrix run --cache DIR` (issue 15): a run that reads validated
//! files back from the model cache reports what a cold run reports, writes
//! only inside DIR, and never serves a file that changed.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use faultmatrix::load::stored::ModelCache;
use faultmatrix::load::Loader;
use faultmatrix::model::Matrix;
use faultmatrix::Systems;

use crate::common::{cli, cli_env, workspace, write};

/// Every file below `dir`, relative, sorted.
fn files(dir: &Path) -> Vec<PathBuf> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(root, &p, out);
            } else {
                out.push(p.strip_prefix(root).unwrap().to_path_buf());
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out);
    out.sort();
    out
}

fn copy_tree(from: &Path, to: &Path) {
    for rel in files(from) {
        let dest = to.join(&rel);
        std::fs::create_dir_all(dest.parent().unwrap()).unwrap();
        std::fs::copy(from.join(&rel), dest).unwrap();
    }
}

/// A run's lines, sorted (workers finish rows in any order).
fn lines(out: &str) -> Vec<&str> {
    let mut l: Vec<&str> = out.lines().collect();
    l.sort_unstable();
    l
}

#[test]
fn a_cached_run_reports_what_a_cold_run_reports() {
    let t = tempfile::tempdir().unwrap();
    copy_tree(&workspace().join("matrices"), &t.path().join("matrices"));
    let before = files(t.path());
    let (code, cold, err) = cli(t.path(), &["run", "matrices"]);
    assert_eq!(code, 0, "{err}");
    let (code, storing, err) = cli(t.path(), &["run", "--cache", "out/cache", "matrices"]);
    assert_eq!(code, 0, "{err}");
    let stored = files(&t.path().join("out/cache"));
    assert!(stored.len() >= 15, "most files are stored: {stored:?}");
    assert_eq!(
        err.trim(),
        format!("model cache: 0 file(s) read back, {} stored", stored.len())
    );
    let (code, reading, err) = cli(t.path(), &["run", "--cache", "out/cache", "matrices"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        err.trim(),
        format!("model cache: {} file(s) read back, 0 stored", stored.len())
    );
    let (_, _, err) = cli(t.path(), &["run", "-q", "--cache", "out/cache", "matrices"]);
    assert!(err.is_empty(), "--quiet: {err}");
    assert_eq!(lines(&storing), lines(&cold));
    assert_eq!(lines(&reading), lines(&cold));
    // Nothing was written but the cache's entries.
    let mut after = files(t.path());
    after.retain(|p| !p.starts_with("out"));
    assert_eq!(after, before);
    assert_eq!(files(&t.path().join("out/cache")), stored);
}

const MATRIX: &str = "title: own policy
policy:
  routes:
    - { name: A, attempts: 2 }
  backoff: { initial: 1s, factor: 2, cap: 30s }
rows:
  - name: three attempts by the row's own policy
    policy:
      routes:
        - { name: A, attempts: 3 }
    inject:
      A: [503, 503, 200]
    expect:
      trace: |
        A1 503 UPSTREAM_UNAVAILABLE retry wait=1s
        A2 503 UPSTREAM_UNAVAILABLE retry wait=2s
        A3 200 return
      stop: success
  - name: two by the file's
    inject:
      A: [503, 503]
    expect:
      trace: |
        A1 503 UPSTREAM_UNAVAILABLE retry wait=1s
        A2 503 UPSTREAM_UNAVAILABLE fail
      stop: exhausted
";

#[test]
fn a_cached_file_runs_its_rows_own_systems_and_an_edit_is_never_served_stale() {
    let t = tempfile::tempdir().unwrap();
    let m = write(t.path(), "m/m.yaml", MATRIX);
    let env = [("FAULTMATRIX_CACHE", "c")];
    for counts in [
        "0 file(s) read back, 1 stored",
        "1 file(s) read back, 0 stored",
    ] {
        let (code, out, err) = cli_env(t.path(), &["run", "m"], &env);
        assert_eq!(code, 0, "{out}{err}");
        assert!(out.contains("2 passed, 0 failed"), "{out}");
        assert!(err.contains(counts), "{err}");
    }
    assert_eq!(
        files(&t.path().join("c")).len(),
        1,
        "FAULTMATRIX_CACHE names the cache"
    );
    // The row's own policy now allows two attempts: its trace no longer
    // holds, and the run says so from the edited file.
    std::fs::write(&m, MATRIX.replacen("attempts: 3", "attempts: 2", 1)).unwrap();
    let (code, out, err) = cli_env(t.path(), &["run", "m"], &env);
    assert_ne!(code, 0, "{out}");
    assert!(out.contains("1 passed, 1 failed"), "{out}");
    assert!(err.contains("0 file(s) read back, 1 stored"), "{err}");
    // An empty FAULTMATRIX_CACHE keeps nothing.
    std::fs::remove_dir_all(t.path().join("c")).unwrap();
    let (_, out, err) = cli_env(t.path(), &["run", "m"], &[("FAULTMATRIX_CACHE", "")]);
    assert!(out.contains("1 passed, 1 failed"), "{out}");
    assert!(!err.contains("model cache"), "{err}");
    assert!(!t.path().join("c").exists());
}

#[test]
fn a_cache_that_cannot_be_written_is_a_warning_and_the_run_goes_on() {
    let t = tempfile::tempdir().unwrap();
    write(t.path(), "m/m.yaml", MATRIX);
    write(
        t.path(),
        "taken",
        "a file where the cache's folder would be",
    );
    let (code, out, err) = cli(t.path(), &["run", "--cache", "taken", "m"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("2 passed, 0 failed"), "{out}");
    assert!(
        err.contains("warning: the model cache was not written"),
        "{err}"
    );
}

/// Everything a run reads from a loaded matrix, as text (a system is code:
/// its deadline is shown, and the CLI tests above run its rows).
fn shown(m: &Matrix) -> String {
    let rows: Vec<String> = (m.rows.iter())
        .map(|r| {
            let system = (r.settings.system.as_ref()).map(|s| s.deadline);
            format!(
                "{r:?} attempts={:?} system={system:?} pos={:?} id={}",
                r.settings.attempts,
                m.row_pos(r),
                m.row_id(r)
            )
        })
        .collect();
    let registry: Vec<&str> = m.registry.names().collect();
    format!(
        "{} | {} | {} | {:?} | {:?} | {:?} | {:?}\n{}",
        m.file,
        m.title,
        m.system_name(),
        m.body_paths(),
        m.deadline,
        registry,
        m.registry.path,
        rows.join("\n")
    )
}

#[test]
fn every_shipped_matrix_reads_back_from_the_cache_as_it_was_loaded() {
    let root = workspace().join("matrices");
    let scratch = tempfile::tempdir().unwrap();
    let cache = Arc::new(ModelCache::with_stamp(
        scratch.path().join("c"),
        "a build".into(),
    ));
    let loader = || Loader::in_dir(Systems::new(), root.clone()).with_roots([root.clone()]);
    let mut read = 0;
    for entry in std::fs::read_dir(&root).unwrap() {
        let path = entry.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        // Matrices, not the registry.
        if path.extension().is_none_or(|e| e != "yaml")
            || text.contains("\ncodes:\n") && !text.contains("\nrows:")
        {
            continue;
        }
        let display = path.file_name().unwrap().to_str().unwrap();
        let load = |l: &Loader| match l.load_file(&path, display) {
            Ok(m) => shown(&m),
            Err(e) => panic!("{e}"),
        };
        let cold = load(&loader());
        let cached = loader().with_cache(cache.clone());
        assert_eq!(load(&cached), cold, "{display}, stored");
        let before = cache.counts().0;
        assert_eq!(load(&cached), cold, "{display}, read back");
        read += cache.counts().0 - before;
    }
    assert!(read >= 15, "most shipped matrices are cached: {read}");
}
