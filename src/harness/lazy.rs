//! Matrices loaded when their trials run, not kept from listing: listing
//! keeps each row's trial name and index, and a file is loaded again when
//! its first trial runs. Loaded files sit in a small cache (a few per
//! test thread, least recently used out first), so the harness's memory
//! does not grow with the number of files; trials run in file order, so a
//! file is normally loaded once more, not once per row.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use crate::base::env::Env;
use crate::engine::discover::{self, Found, Loaded};
use crate::engine::guardrails::Coverage;
use crate::load::Loader;
use crate::model::{Matrix, Row};

/// What listing a file gave.
pub(super) enum Listed {
    /// A valid matrix: its selected rows.
    Matrix(Listing),
    /// A registry file.
    Registry,
    /// The file's diagnostics.
    Errors(String),
}

/// What a valid matrix's trials need, without the matrix.
pub(super) struct Listing {
    /// The rows carrying one of the tags (every row without tags).
    pub rows: Vec<ListedRow>,
    /// Why a command system's program cannot run here.
    pub program_missing: Option<String>,
    /// The codes the file's rows use (the registry coverage guardrail).
    pub coverage: Coverage,
    /// The matrix itself, when listing was asked to keep it (`--exact`:
    /// one file, whose trial then does not load it a second time).
    pub matrix: Option<Arc<Matrix>>,
}

/// One row, as listed.
pub(super) struct ListedRow {
    /// The trial name (`file::row`).
    pub id: String,
    /// Where the row is in its file.
    pub index: usize,
    /// Marked `ignore:`.
    pub ignored: bool,
}

/// Loads `found` and keeps what its trials need (`tags`: rows carrying one
/// of them; empty: every row). `exact`: the one trial asked for by
/// `--exact`, whose matrix is kept, and whose row alone is read when the
/// file's text allows ([`one_row`]).
pub(super) fn list(
    found: &Found,
    loader: &Loader,
    tags: &[String],
    env: &Env,
    exact: Option<&str>,
) -> Listed {
    let keep = exact.is_some();
    let loaded = match exact.and_then(|id| one_row(found, loader, id)) {
        Some(m) => Loaded::Matrix(m),
        None => discover::load_one(found, loader),
    };
    match loaded {
        Loaded::Registry => Listed::Registry,
        Loaded::Errors(e) => Listed::Errors(e.to_string()),
        Loaded::Matrix(m) => {
            let mut coverage = Coverage::new();
            coverage.record(&m);
            let rows = m
                .rows
                .iter()
                .enumerate()
                .filter(|(_, r)| crate::engine::select::has_tag(tags, &r.tags))
                .map(|(index, r)| ListedRow {
                    id: m.row_id(r),
                    index,
                    ignored: r.ignore.is_some(),
                })
                .collect();
            Listed::Matrix(Listing {
                rows,
                program_missing: super::program_missing(&m, env),
                coverage,
                matrix: keep.then(|| Arc::from(m)),
            })
        }
    }
}

/// The matrix of `found` with only the row whose trial name is `id`, read
/// without parsing the file's other rows; `None` (load the whole file)
/// when the text is not in the plain shape that allows it, when blessing
/// (which writes the file back), or when what loads is not exactly that
/// row.
fn one_row(found: &Found, loader: &Loader, id: &str) -> Option<Box<Matrix>> {
    if loader.bless {
        return None;
    }
    let name = id.strip_prefix(&format!("{}::", found.display))?;
    if name.contains('\\') {
        return None; // escaped in the trial name
    }
    let text =
        crate::base::confine::read_text(&found.path, crate::base::confine::MAX_FILE_BYTES).ok()?;
    let only = crate::base::yaml::one_row::only_rows_named(&text, name)?;
    let m = loader
        .load_text_at(&found.display, &only, &found.path)
        .ok()?;
    (m.rows.len() == 1 && m.row_id(&m.rows[0]) == id).then(|| Box::new(m))
}

/// A check that the row found at a listed index is the listed row (a
/// hash of its trial name, so a trial does not keep its name twice).
pub(super) fn name_check(id: &str) -> u64 {
    let mut h = DefaultHasher::new();
    id.hash(&mut h);
    h.finish()
}

/// Loaded files by key, most recently used last.
type Entries = Vec<(usize, Arc<Matrix>)>;

/// The files loaded for running, most recently used last.
#[derive(Clone)]
pub(super) struct Cache {
    inner: Arc<Mutex<Entries>>,
    capacity: usize,
    next_key: Arc<AtomicUsize>,
}

impl Cache {
    /// A cache for `threads` test threads (each may be between two files).
    pub fn new(threads: usize) -> Self {
        Self {
            inner: Arc::default(),
            capacity: threads.max(1) * 2,
            next_key: Arc::default(),
        }
    }
}

/// A matrix file whose trials load it when they run.
pub(super) struct LazyFile {
    found: Found,
    loader: Arc<Loader>,
    cache: Cache,
    /// The file's key in the cache.
    key: usize,
}

impl LazyFile {
    pub fn new(found: Found, loader: Arc<Loader>, cache: Cache) -> Arc<Self> {
        let key = cache.next_key.fetch_add(1, Ordering::Relaxed);
        Arc::new(Self {
            found,
            loader,
            cache,
            key,
        })
    }

    /// Puts a matrix loaded for listing into the cache, for this file's
    /// trials to run without loading it again.
    pub fn keep(&self, m: Arc<Matrix>) {
        let mut c = crate::base::lock(&self.cache.inner);
        if c.len() >= self.cache.capacity {
            c.remove(0);
        }
        c.push((self.key, m));
    }

    /// The matrix, from the cache or loaded now (the cache's lock is not
    /// held while loading).
    pub fn matrix(&self) -> Result<Arc<Matrix>, String> {
        let key = self.key;
        {
            let mut c = crate::base::lock(&self.cache.inner);
            if let Some(i) = c.iter().position(|(k, _)| *k == key) {
                let entry = c.remove(i);
                let m = entry.1.clone();
                c.push(entry);
                return Ok(m);
            }
        }
        let m: Arc<Matrix> = match discover::load_one(&self.found, &self.loader) {
            Loaded::Matrix(m) => Arc::from(m),
            Loaded::Errors(e) => {
                return Err(format!(
                    "{} no longer loads (it changed after the trials were listed):\n{e}",
                    self.found.display
                ))
            }
            Loaded::Registry => {
                return Err(format!(
                    "{} is no longer a matrix (it changed after the trials were listed)",
                    self.found.display
                ))
            }
        };
        let mut c = crate::base::lock(&self.cache.inner);
        if !c.iter().any(|(k, _)| *k == key) {
            if c.len() >= self.cache.capacity {
                c.remove(0);
            }
            c.push((key, m.clone()));
        }
        Ok(m)
    }

    /// The row listed at `index` with this [`name_check`], or why not.
    pub fn row<'m>(&self, m: &'m Matrix, index: usize, check: u64) -> Result<&'m Row, String> {
        m.rows
            .get(index)
            .filter(|r| name_check(&m.row_id(r)) == check)
            .ok_or_else(|| {
                format!(
                    "{}: the row listed as number {} is not there any more (the file changed after the trials were listed): list the trials again",
                    self.found.display,
                    index + 1
                )
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(dir: &std::path::Path, name: &str, row: &str) -> Found {
        let path = dir.join(name);
        std::fs::write(
            &path,
            format!("title: t\npolicy:\n  routes: [{{ name: A, attempts: 2 }}]\nrows:\n  - name: {row}\n    inject: {{ A: [200] }}\n    expect: {{ trace: \"A1 200 return\" }}\n"),
        )
        .unwrap();
        Found {
            display: name.to_string(),
            path,
        }
    }

    #[test]
    fn the_cache_holds_two_files_a_thread_and_reuses_a_loaded_one() {
        let dir = tempfile::tempdir().unwrap();
        let loader = Arc::new(Loader::new(crate::Systems::new()));
        let cache = Cache::new(1);
        let files: Vec<Arc<LazyFile>> = (0..5)
            .map(|i| {
                let f = file(dir.path(), &format!("f{i}.yaml"), "r");
                LazyFile::new(f, loader.clone(), cache.clone())
            })
            .collect();
        let first = files[0].matrix().unwrap();
        assert!(
            Arc::ptr_eq(&first, &files[0].matrix().unwrap()),
            "loaded once"
        );
        for f in &files {
            f.matrix().unwrap();
        }
        assert_eq!(crate::base::lock(&cache.inner).len(), 2);
        // Evicted: loaded again, a new matrix.
        assert!(!Arc::ptr_eq(&first, &files[0].matrix().unwrap()));
    }

    #[test]
    fn a_row_that_moved_or_a_file_that_broke_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let loader = Arc::new(Loader::new(crate::Systems::new()));
        let found = file(dir.path(), "m.yaml", "r");
        let lazy = LazyFile::new(found.clone(), loader, Cache::new(1));
        let m = lazy.matrix().unwrap();
        assert_eq!(lazy.row(&m, 0, name_check("m.yaml::r")).unwrap().name, "r");
        let e = lazy.row(&m, 0, name_check("m.yaml::other")).unwrap_err();
        assert!(
            e.contains("m.yaml: the row listed as number 1 is not there any more"),
            "{e}"
        );
        assert!(lazy.row(&m, 1, name_check("m.yaml::r")).is_err());
        std::fs::write(&found.path, "title: t\nrows: [").unwrap();
        let broken = LazyFile::new(
            found,
            Arc::new(Loader::new(crate::Systems::new())),
            Cache::new(1),
        );
        let Err(e) = broken.matrix() else {
            panic!("a broken file loaded")
        };
        assert!(e.starts_with("m.yaml no longer loads"), "{e}");
    }

    #[test]
    fn exact_reads_only_the_asked_row_and_falls_back_to_the_whole_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.yaml");
        let row = |n: &str| {
            format!("  - name: {n}\n    inject: {{ A: [200] }}\n    expect: {{ trace: \"A1 200 return\" }}\n")
        };
        let head = "title: t\npolicy:\n  routes: [{ name: A, attempts: 2 }]\nrows:\n";
        std::fs::write(&path, format!("{head}{}{}{}", row("a"), row("b"), row("c"))).unwrap();
        let found = Found {
            display: "m.yaml".into(),
            path: path.clone(),
        };
        let loader = Loader::new(crate::Systems::new());
        let env = Env::default();
        let listed = |id: &str| match list(&found, &loader, &[], &env, Some(id)) {
            Listed::Matrix(l) => l,
            _ => panic!("m.yaml lists"),
        };
        let l = listed("m.yaml::b");
        let m = l.matrix.unwrap();
        assert_eq!(m.rows.len(), 1, "only the asked row is read");
        assert_eq!(m.rows[0].name, "b");
        // Diagnostics still point into the real file.
        assert_eq!(m.row_location(&m.rows[0]), "m.yaml:8:5");
        assert_eq!(l.rows.len(), 1);
        assert_eq!((l.rows[0].id.as_str(), l.rows[0].index), ("m.yaml::b", 0));
        // A name the text reader cannot find: the whole file.
        let l = listed("m.yaml::zz");
        assert_eq!(l.matrix.unwrap().rows.len(), 3);
        // Two rows of that name: the whole file, which says so.
        std::fs::write(&path, format!("{head}{}{}", row("a"), row("a"))).unwrap();
        assert!(matches!(
            list(&found, &loader, &[], &env, Some("m.yaml::a")),
            Listed::Errors(_)
        ));
    }
}
