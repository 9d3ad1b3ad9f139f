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
use crate::engine::chunked;
use crate::engine::discover::{self, Found, Loaded};
use crate::engine::guardrails::Coverage;
use crate::load::Loader;
use crate::model::{Matrix, Row};

// A matrix file is at most `MAX_MATRIX_BYTES` long and a row takes more
// than a byte, so a row's index fits a `u32`.
const _: () = assert!(crate::base::confine::MAX_MATRIX_BYTES <= u32::MAX as u64);

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
    /// What every trial name of the file starts with (`file::`).
    pub prefix: String,
    /// The rest of their trial names (the row names, escaped), one after
    /// the other: one allocation a file, not one a row. Names allocated one
    /// by one while files load and drop their models are scattered over the
    /// allocator's pages, which then stay resident.
    pub names: String,
    /// Why a command system's program cannot run here.
    pub program_missing: Option<String>,
    /// The codes the file's rows use (the registry coverage guardrail).
    pub coverage: Coverage,
    /// The matrix itself, when listing was asked to keep it (`--exact`:
    /// one file, whose trial then does not load it a second time).
    pub matrix: Option<Arc<Matrix>>,
    /// A file loaded in chunks: the row number each chunk ends before,
    /// and where its chunks are in the file.
    pub chunks: Option<Box<(Vec<u32>, chunked::Plan)>>,
}

/// One row, as listed: 16 bytes, as a million of them are held at once
/// before they become trials.
pub(super) struct ListedRow {
    /// Where its name ends in [`Listing::names`] (it starts where the
    /// previous row's ends).
    pub end: usize,
    /// Where the row is in its file (counting every row).
    pub index: u32,
    /// Marked `ignore:`.
    pub ignored: bool,
}

/// Loads `found` and keeps what its trials need (`tags`: rows carrying one
/// of them; empty: every row). `exact`: the one trial asked for by
/// `--exact`, whose matrix is kept, and whose row alone is read when the
/// file's text allows ([`one_row`]). A large file is listed a chunk at a
/// time ([`chunked`]), and its trials load the chunk holding their row.
pub(super) fn list(
    found: &Found,
    loader: &Loader,
    tags: &[String],
    env: &Env,
    exact: Option<&str>,
    sizes: chunked::Sizes,
) -> Listed {
    let keep = exact.is_some();
    let loaded = match exact.and_then(|id| one_row(found, loader, id)) {
        Some(m) => Loaded::Matrix(m),
        None => match chunked::open(found, loader, sizes) {
            chunked::Opened::Whole => discover::load_one(found, loader),
            chunked::Opened::Refused(e) => Loaded::Errors(e),
            chunked::Opened::Chunks(c) => {
                let mut listing = Listing {
                    rows: Vec::new(),
                    prefix: String::new(),
                    names: String::new(),
                    program_missing: None,
                    coverage: Coverage::new(),
                    matrix: None,
                    chunks: Some(Box::new((Vec::with_capacity(c.len()), c.plan()))),
                };
                let mut seen = 0;
                match c.check(|m| {
                    listing.coverage.record(m);
                    listing.program_missing = super::program_missing(m, env);
                    listing.prefix = id_prefix(m);
                    listed_rows(m, tags, seen, &mut listing.rows, &mut listing.names);
                    seen += m.rows.len() as u32;
                    listing.chunks.as_mut().unwrap().0.push(seen);
                }) {
                    chunked::Checked::Valid => {
                        listing.names.shrink_to_fit();
                        listing.rows.shrink_to_fit();
                        return Listed::Matrix(listing);
                    }
                    chunked::Checked::Errors(e) => Loaded::Errors(e),
                    chunked::Checked::Whole(l) => l,
                }
            }
        },
    };
    match loaded {
        Loaded::Registry => Listed::Registry,
        Loaded::Errors(e) => Listed::Errors(e.to_string()),
        Loaded::Matrix(m) => {
            let mut coverage = Coverage::new();
            coverage.record(&m);
            let (mut rows, mut names) = (Vec::new(), String::new());
            listed_rows(&m, tags, 0, &mut rows, &mut names);
            rows.shrink_to_fit();
            names.shrink_to_fit();
            Listed::Matrix(Listing {
                rows,
                prefix: id_prefix(&m),
                names,
                program_missing: super::program_missing(&m, env),
                coverage,
                matrix: keep.then(|| Arc::from(m)),
                chunks: None,
            })
        }
    }
}

/// Adds the rows of `m` carrying one of `tags`, numbered from `first`, to
/// `rows`, and their trial names to `names`.
fn listed_rows(
    m: &Matrix,
    tags: &[String],
    first: u32,
    rows: &mut Vec<ListedRow>,
    names: &mut String,
) {
    for (index, r) in m.rows.iter().enumerate() {
        if crate::engine::select::has_tag(tags, &r.tags) {
            names.push_str(&crate::base::label::escape(&r.name));
            rows.push(ListedRow {
                end: names.len(),
                // Fewer rows than bytes, and bytes fit a u32 (asserted above).
                index: first + index as u32,
                ignored: r.ignore.is_some(),
            });
        }
    }
}

/// What the trial names of `m`'s rows start with: [`Matrix::row_id`]
/// is this and the escaped row name.
fn id_prefix(m: &Matrix) -> String {
    format!("{}::", crate::base::label::escape(&m.file))
}

impl Listing {
    /// Each listed row with its trial name (allocated here, to its size).
    pub fn rows(&self) -> impl Iterator<Item = (String, &ListedRow)> {
        let mut start = 0;
        self.rows.iter().map(move |r| {
            let name = &self.names[start..r.end];
            start = r.end;
            let mut id = String::with_capacity(self.prefix.len() + name.len());
            id.push_str(&self.prefix);
            id.push_str(name);
            (id, r)
        })
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
/// hash of its trial name, so a trial does not keep its name twice; 32
/// bits, so a trial's closure is 16 bytes).
pub(super) fn name_check(id: &str) -> u32 {
    let mut h = DefaultHasher::new();
    id.hash(&mut h);
    h.finish() as u32
}

/// Loaded files (or chunks of a file) by key, most recently used last.
type Entries = Vec<((usize, u32), Arc<Matrix>)>;

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

    fn put(&self, key: (usize, u32), m: Arc<Matrix>) {
        let mut c = crate::base::lock(&self.inner);
        if !c.iter().any(|(k, _)| *k == key) {
            if c.len() >= self.capacity {
                c.remove(0);
            }
            c.push((key, m));
        }
    }

    fn get(&self, key: (usize, u32)) -> Option<Arc<Matrix>> {
        let mut c = crate::base::lock(&self.inner);
        let i = c.iter().position(|(k, _)| *k == key)?;
        let entry = c.remove(i);
        let m = entry.1.clone();
        c.push(entry);
        Some(m)
    }
}

/// A matrix file whose trials load it when they run.
pub(super) struct LazyFile {
    found: Found,
    loader: Arc<Loader>,
    cache: Cache,
    /// The file's key in the cache.
    key: usize,
    /// A file loaded in chunks: the row number each chunk ends before, and
    /// how it was chunked.
    chunks: Option<(Vec<u32>, chunked::Sizes, chunked::Plan)>,
    /// Held while the file (or a chunk of it) loads: test threads run
    /// neighbouring rows, so without it each would load the same chunk at
    /// once (a 100k-row file's harness peak was twice one thread's).
    loading: Mutex<()>,
}

impl LazyFile {
    #[cfg(test)]
    pub fn new(found: Found, loader: Arc<Loader>, cache: Cache) -> Arc<Self> {
        Self::with_chunks(found, loader, cache, None)
    }

    /// A file listed a chunk at a time (`ends`: where each chunk ends).
    pub fn with_chunks(
        found: Found,
        loader: Arc<Loader>,
        cache: Cache,
        chunks: Option<(Vec<u32>, chunked::Sizes, chunked::Plan)>,
    ) -> Arc<Self> {
        let key = cache.next_key.fetch_add(1, Ordering::Relaxed);
        Arc::new(Self {
            found,
            loader,
            cache,
            key,
            chunks,
            loading: Mutex::new(()),
        })
    }

    /// Puts a matrix loaded for listing into the cache, for this file's
    /// trials to run without loading it again.
    pub fn keep(&self, m: Arc<Matrix>) {
        self.cache.put((self.key, 0), m);
    }

    /// The matrix, from the cache or loaded now (the cache's lock is not
    /// held while loading).
    pub fn matrix(&self) -> Result<Arc<Matrix>, String> {
        let key = (self.key, 0);
        if let Some(m) = self.cache.get(key) {
            return Ok(m);
        }
        let _loading = crate::base::lock(&self.loading);
        if let Some(m) = self.cache.get(key) {
            return Ok(m); // another thread loaded it meanwhile
        }
        let m: Arc<Matrix> = match discover::load_one(&self.found, &self.loader) {
            Loaded::Matrix(m) => Arc::from(m),
            Loaded::Errors(e) => return Err(self.changed(&e.to_string())),
            Loaded::Registry => {
                return Err(format!(
                    "{} is no longer a matrix (it changed after the trials were listed)",
                    self.found.display
                ))
            }
        };
        self.cache.put(key, m.clone());
        Ok(m)
    }

    fn changed(&self, e: &str) -> String {
        format!(
            "{} no longer loads (it changed after the trials were listed):\n{e}",
            self.found.display
        )
    }

    /// The matrix holding the row listed as `index`, and where the row is
    /// in it: the whole file, or the chunk holding that row.
    pub fn matrix_of(&self, index: u32) -> Result<(Arc<Matrix>, u32), String> {
        let Some((ends, sizes, plan)) = &self.chunks else {
            return Ok((self.matrix()?, index));
        };
        let k = ends.partition_point(|&end| end <= index);
        let first = if k == 0 { 0 } else { ends[k - 1] };
        let key = (self.key, k as u32);
        if let Some(m) = self.cache.get(key) {
            return Ok((m, index - first));
        }
        let _loading = crate::base::lock(&self.loading);
        if let Some(m) = self.cache.get(key) {
            return Ok((m, index - first)); // another thread loaded it meanwhile
        }
        // The chunk's own bytes when the file is as listed; else the file
        // is opened again, which says what changed.
        let m = match plan.load(&self.found, &self.loader, k) {
            Some(m) => m.map_err(|e| self.changed(&e.to_string()))?,
            None => self.open_chunk(ends.len(), *sizes, k)?,
        };
        let m = Arc::new(m);
        self.cache.put(key, m.clone());
        Ok((m, index - first))
    }

    /// Chunk `k` of the file opened again (read whole and chunked anew).
    fn open_chunk(&self, listed: usize, sizes: chunked::Sizes, k: usize) -> Result<Matrix, String> {
        Ok(match chunked::open(&self.found, &self.loader, sizes) {
            chunked::Opened::Chunks(c) if c.len() == listed => {
                c.load(k).map_err(|e| self.changed(&e.to_string()))?
            }
            _ => {
                return Err(format!(
                    "{}: its rows are not where they were listed (the file changed after the trials were listed): list the trials again",
                    self.found.display
                ))
            }
        })
    }

    /// The row at `at` of `m` (listed as number `listed` of the file) with
    /// this [`name_check`], or why not.
    pub fn row<'m>(
        &self,
        m: &'m Matrix,
        at: u32,
        listed: u32,
        check: u32,
    ) -> Result<&'m Row, String> {
        m.rows
            .get(at as usize)
            .filter(|r| name_check(&m.row_id(r)) == check)
            .ok_or_else(|| {
                format!(
                    "{}: the row listed as number {} is not there any more (the file changed after the trials were listed): list the trials again",
                    self.found.display,
                    listed + 1
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

    /// Test threads run neighbouring rows: when they ask for the same
    /// file (or chunk) at once, it is loaded once and shared, not once per
    /// thread (which doubled a 100k-row file's peak memory).
    #[test]
    fn threads_asking_at_once_share_one_load() {
        let dir = tempfile::tempdir().unwrap();
        let loader = Arc::new(Loader::new(crate::Systems::new()));
        for round in 0..20 {
            let cache = Cache::new(4);
            let f = file(dir.path(), &format!("f{round}.yaml"), "r");
            let lazy = LazyFile::new(f, loader.clone(), cache.clone());
            let start = Arc::new(std::sync::Barrier::new(4));
            let got: Vec<Arc<Matrix>> = (0..4)
                .map(|_| {
                    let (lazy, start) = (lazy.clone(), start.clone());
                    std::thread::spawn(move || {
                        start.wait();
                        lazy.matrix().unwrap()
                    })
                })
                .collect::<Vec<_>>()
                .into_iter()
                .map(|t| t.join().unwrap())
                .collect();
            for m in &got[1..] {
                assert!(Arc::ptr_eq(&got[0], m), "round {round}: loaded twice");
            }
        }
    }

    #[test]
    fn a_row_that_moved_or_a_file_that_broke_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let loader = Arc::new(Loader::new(crate::Systems::new()));
        let found = file(dir.path(), "m.yaml", "r");
        let lazy = LazyFile::new(found.clone(), loader, Cache::new(1));
        let m = lazy.matrix().unwrap();
        assert_eq!(
            lazy.row(&m, 0, 0, name_check("m.yaml::r")).unwrap().name,
            "r"
        );
        let e = lazy.row(&m, 0, 0, name_check("m.yaml::other")).unwrap_err();
        assert!(
            e.contains("m.yaml: the row listed as number 1 is not there any more"),
            "{e}"
        );
        assert!(lazy.row(&m, 1, 1, name_check("m.yaml::r")).is_err());
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
        let sizes = chunked::Sizes::default();
        let listed = |id: &str| match list(&found, &loader, &[], &env, Some(id), sizes) {
            Listed::Matrix(l) => l,
            _ => panic!("m.yaml lists"),
        };
        let mut l = listed("m.yaml::b");
        let m = l.matrix.take().unwrap();
        assert_eq!(m.rows.len(), 1, "only the asked row is read");
        assert_eq!(m.rows[0].name, "b");
        // Diagnostics still point into the real file.
        assert_eq!(m.row_location(&m.rows[0]), "m.yaml:8:5");
        assert_eq!(l.rows.len(), 1);
        let (id, first) = l.rows().next().unwrap();
        assert_eq!((id.as_str(), first.index), ("m.yaml::b", 0));
        // A name the text reader cannot find: the whole file.
        let l = listed("m.yaml::zz");
        assert_eq!(l.matrix.unwrap().rows.len(), 3);
        // Two rows of that name: the whole file, which says so.
        std::fs::write(&path, format!("{head}{}{}", row("a"), row("a"))).unwrap();
        assert!(matches!(
            list(&found, &loader, &[], &env, Some("m.yaml::a"), sizes),
            Listed::Errors(_)
        ));
    }
}
