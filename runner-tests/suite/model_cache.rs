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
fn an_empty_cache_argument_is_refused() {
    let t = tempfile::tempdir().unwrap();
    write(t.path(), "m/m.yaml", MATRIX);
    let (code, out, err) = cli(t.path(), &["run", "--cache", "", "m"]);
    assert_eq!(code, 2, "{out}{err}");
    assert!(err.contains("--cache"), "{err}");
    assert_eq!(
        files(t.path()),
        [PathBuf::from("m/m.yaml")],
        "nothing written"
    );
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

// The cache as a library part: what a load reads back, and when not.

const REGISTRY: &str = "version: 1\ncodes:\n  BUSY:\n    retryable: true\n    max_attempts: 3\n    escalate_to: oncall\n    match: { status: [503] }\n  BAD:\n    retryable: false\n    escalate_to: oncall\n    match: { status: [400] }\n";

/// A matrix touching most of the model: a registry, `codes` for the
/// file and a row, a row's own policy, requests with a JSON body, a
/// stream, a relative date, tags, an ignored row, clock and tolerance.
const SHAPES: &str = r#"title: many shapes
registry: codes.yaml
codes: { BUSY: { max_attempts: 2 } }
policy:
  routes:
    - { name: A, attempts: 2 }
    - { name: B, attempts: 2 }
  backoff: { initial: 1s, factor: 2, cap: 30s }
defaults:
  jitter: [0.5, 0.25]
clock: { wall: "2026-01-02T03:04:05Z" }
rows:
  - name: busy then backup
    tags: [smoke, busy]
    inject:
      A: [503, 503]
      B: [200]
    expect:
      trace: |
        A1 503 BUSY retry wait=1s
        A2 503 BUSY switch
        B1 200 return
      stop: success
      requests:
        "*": { headers: { x-retry-count: $retries }, body: { "$.model": { "a": [1, 2.5, null] } } }
  - name: own policy
    policy:
      routes:
        - { name: A, attempts: 3 }
    codes: { BUSY: { max_attempts: 3 } }
    inject:
      A: [503, 503, 200]
    expect:
      trace: |
        A1 503 BUSY retry wait=1s
        A2 503 BUSY retry wait=2s
        A3 200 return
      stop: success
  - name: terminal
    ignore: kept for later
    inject:
      A: [400]
    expect:
      trace: |
        A1 400 BAD fail
      stop: terminal
"#;

fn tree(matrix: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("codes.yaml"), REGISTRY).unwrap();
    let path = dir.path().join("m.yaml");
    std::fs::write(&path, matrix).unwrap();
    (dir, path)
}

fn cached_loader(dir: &Path, cache: &Arc<ModelCache>) -> Loader {
    Loader::in_dir(Systems::new(), dir.to_path_buf())
        .with_roots([dir.to_path_buf()])
        .with_cache(cache.clone())
}

fn cache_in(dir: &Path, stamp: &str) -> Arc<ModelCache> {
    Arc::new(ModelCache::with_stamp(dir.join("cache"), stamp.into()))
}

/// Everything a run reads from a loaded matrix, as text.
fn cold(dir: &Path, path: &Path) -> String {
    let l = Loader::in_dir(Systems::new(), dir.to_path_buf()).with_roots([dir.to_path_buf()]);
    shown(&l.load_file(path, "m.yaml").unwrap())
}

#[test]
fn a_stored_matrix_reads_back_as_it_was_loaded() {
    let (dir, path) = tree(SHAPES);
    let c = cache_in(dir.path(), "one");
    let first = cached_loader(dir.path(), &c)
        .load_file(&path, "m.yaml")
        .unwrap();
    assert_eq!(c.counts(), (0, 1), "the first load stores");
    let again = cached_loader(dir.path(), &c)
        .load_file(&path, "m.yaml")
        .unwrap();
    assert_eq!(c.counts(), (1, 1), "the second reads back");
    assert_eq!(shown(&again), shown(&first));
    assert_eq!(shown(&again), cold(dir.path(), &path));
    assert!(
        again.rows[1].settings.system.is_some(),
        "the row's own system is rebuilt"
    );
    assert!(!Arc::ptr_eq(
        &again.rows[0].settings.attempts,
        &again.rows[1].settings.attempts
    ));
    assert!(Arc::ptr_eq(
        &again.rows[0].settings.attempts,
        &again.rows[2].settings.attempts
    ));
}

#[test]
fn any_change_to_what_the_load_read_is_a_miss() {
    let (dir, path) = tree(SHAPES);
    let c = cache_in(dir.path(), "one");
    let load = |c: &Arc<ModelCache>, display: &str| {
        cached_loader(dir.path(), c)
            .load_file(&path, display)
            .map(|m| shown(&m))
    };
    load(&c, "m.yaml").unwrap();
    // The file's text.
    let edited = SHAPES.replace("many shapes", "many shapes, edited");
    std::fs::write(&path, &edited).unwrap();
    let m = load(&c, "m.yaml").unwrap();
    assert!(m.contains("many shapes, edited"));
    assert_eq!(c.counts(), (0, 2));
    // The registry's text: the file now fails (`BAD` is gone).
    let reg = dir.path().join("codes.yaml");
    std::fs::write(&reg, REGISTRY.replace("BAD:", "WORSE:")).unwrap();
    let e = load(&c, "m.yaml").unwrap_err();
    assert!(e.to_string().contains("BAD"), "{e}");
    std::fs::write(&reg, REGISTRY).unwrap();
    load(&c, "m.yaml").unwrap();
    assert_eq!(c.counts(), (1, 2), "the original registry text reads back");
    // The name it is shown under, and another build.
    load(&c, "other.yaml").unwrap();
    assert_eq!(c.counts(), (1, 3));
    let other = cache_in(dir.path(), "two");
    load(&other, "other.yaml").unwrap();
    assert_eq!(
        other.counts(),
        (0, 1),
        "an entry of another build is not read"
    );
    // Blessing.
    let mut blessing = cached_loader(dir.path(), &other);
    blessing.bless = true;
    blessing.load_file(&path, "other.yaml").unwrap();
    assert_eq!(other.counts(), (0, 2));
}

#[test]
fn a_registry_moved_out_of_the_tree_is_refused_again() {
    let (dir, path) = tree(SHAPES);
    let c = cache_in(dir.path(), "one");
    cached_loader(dir.path(), &c)
        .load_file(&path, "m.yaml")
        .unwrap();
    let outside = tempfile::tempdir().unwrap();
    let moved = outside.path().join("codes.yaml");
    std::fs::write(&moved, REGISTRY).unwrap();
    let reg = dir.path().join("codes.yaml");
    std::fs::remove_file(&reg).unwrap();
    #[cfg(unix)]
    std::os::unix::fs::symlink(&moved, &reg).unwrap();
    #[cfg(not(unix))]
    return;
    let Err(e) = cached_loader(dir.path(), &c).load_file(&path, "m.yaml") else {
        panic!("a registry out of the tree was used");
    };
    assert!(e.to_string().contains("outside"), "{e}");
    assert_eq!(c.counts(), (0, 1));
}

#[test]
fn files_that_cannot_be_rebuilt_are_not_stored() {
    let c = {
        let (dir, _) = tree(SHAPES);
        cache_in(dir.path(), "one")
    };
    for text in [
        // Errors.
        SHAPES.replace("stop: success", "stop: succeeded"),
        // A command system.
        "title: t\nsystem: { command: [\"true\"], routes: [A] }\nrows:\n  - name: r\n    inject: { A: [200] }\n    expect: { trace: \"A1 200 return\" }\n".into(),
        // A tape row.
        "title: t\npolicy: { routes: [{ name: A }] }\nrows:\n  - name: r\n    tape: r.tape.yaml\n    expect: { trace: \"A1 200 return\" }\n".into(),
    ] {
        let (dir, path) = tree(&text);
        let _ = cached_loader(dir.path(), &c).load_file(&path, "m.yaml");
    }
    assert_eq!(c.counts(), (0, 0));
}

#[test]
fn a_damaged_entry_is_a_miss_never_a_panic() {
    let (dir, path) = tree(SHAPES);
    let c = cache_in(dir.path(), "one");
    let want = shown(
        &cached_loader(dir.path(), &c)
            .load_file(&path, "m.yaml")
            .unwrap(),
    );
    let entry = std::fs::read_dir(dir.path().join("cache"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let good = std::fs::read(&entry).unwrap();
    let fresh = || cache_in(dir.path(), "one");
    let l = |c: &Arc<ModelCache>| cached_loader(dir.path(), c);
    // Every byte flipped, one at a time: read back the same, or a miss.
    for i in 0..good.len() {
        let mut bad = good.clone();
        bad[i] ^= 0x5a;
        std::fs::write(&entry, &bad).unwrap();
        let c = fresh();
        let back = l(&c).load_text_at("m.yaml", SHAPES, &path).unwrap();
        assert_eq!(shown(&back), want, "byte {i}");
        assert_eq!(c.counts().0, 0, "byte {i} flipped was read back");
    }
    // Truncated at every length, and foreign files.
    for n in (0..good.len()).step_by(7) {
        std::fs::write(&entry, &good[..n]).unwrap();
        let c = fresh();
        l(&c).load_text_at("m.yaml", SHAPES, &path).unwrap();
        assert_eq!(c.counts().0, 0, "truncated to {n}");
    }
    std::fs::write(&entry, b"not an entry").unwrap();
    let c = fresh();
    l(&c).load_text_at("m.yaml", SHAPES, &path).unwrap();
    assert_eq!(c.counts(), (0, 1), "replaced by a good entry");
    assert_eq!(std::fs::read(&entry).unwrap(), good);
}

#[test]
fn a_cache_that_cannot_be_written_leaves_the_load_as_it_is() {
    let (dir, path) = tree(SHAPES);
    std::fs::write(dir.path().join("cache"), "a file, not a folder").unwrap();
    let c = cache_in(dir.path(), "one");
    let m = cached_loader(dir.path(), &c)
        .load_file(&path, "m.yaml")
        .unwrap();
    assert_eq!(shown(&m), cold(dir.path(), &path));
    assert_eq!(c.counts(), (0, 0));
    assert!(c.write_error().is_some());
}
