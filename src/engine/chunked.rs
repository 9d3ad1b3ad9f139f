//! A large matrix file loaded a chunk of rows at a time, so a run's memory
//! holds the file's text and one chunk's model, not the whole file's.
//!
//! A file above [`Sizes::above`] bytes, in the plain shape that
//! [`one_row::chunks`] reads, is split into chunks of about
//! [`Sizes::chunk`] bytes of rows. Each chunk loads as the file's text with
//! every other row's lines emptied ([`one_row::chunk_text`]), so its header
//! (title, system, defaults, codes …) is validated with it and every line
//! keeps its number. [`Chunked::check`] loads every chunk before a row runs
//! (every error of the file is reported before anything runs, as for a
//! file loaded whole) and makes the checks that span rows across chunks:
//! row names are unique in the file, and so are snapshot names. A run then
//! loads each chunk again with [`Chunked::load`], runs its rows and drops
//! it: the file's rows are parsed twice, for memory that does not grow with
//! them.
//!
//! When a chunk does not load, a file of at most
//! [`MAX_FILE_BYTES`](crate::base::confine::MAX_FILE_BYTES) is loaded
//! whole, which reports its errors exactly as always (or loads, when only
//! the split broke it: an alias to an anchor in another chunk); a larger
//! file, which cannot be loaded whole, reports every chunk's errors.
//! Anything else (blessing, which writes the file back; a file out of the
//! tree; a registry) is left to [`discover::load_one`].

use std::collections::HashMap;

use crate::base::confine::{self, MAX_FILE_BYTES, MAX_MATRIX_BYTES};
use crate::base::diag::{Diagnostic, FileErrors, LoadErrorKind};
use crate::base::yaml::one_row::{self, Chunks};
use crate::engine::discover::{self, Found, Loaded};
use crate::load::Loader;
use crate::model::Matrix;

/// When a file is loaded in chunks, and how large they are.
#[derive(Debug, Clone, Copy)]
pub struct Sizes {
    /// Files larger than this many bytes are loaded in chunks.
    pub above: u64,
    /// About this many bytes of rows a chunk (at least one row).
    pub chunk: usize,
    /// Files up to this many bytes can be loaded whole: to report their
    /// errors exactly as always when a chunk does not load.
    pub whole: u64,
}

impl Default for Sizes {
    /// Files over 4 MiB (about 17,000 rows of the benchmark's shape), in
    /// chunks of 512 KiB of rows (about 2,200 such rows). Each chunk's text
    /// keeps every line of the file (the other rows' emptied), so smaller
    /// chunks cost CPU: 256 KiB took the 60k-row file from 2.1 s to 3.5 s of
    /// CPU, for 82 MiB instead of 108 MiB. 512 KiB (was 1 MiB) took the
    /// harness on a 100k-row file from 172 MB to 126 MB with two test
    /// threads (each thread's chunks are cached), for about 15 % more CPU.
    fn default() -> Self {
        Self {
            above: 4 << 20,
            chunk: 1 << 19,
            whole: MAX_FILE_BYTES,
        }
    }
}

/// A file to load a chunk at a time.
pub struct Chunked<'a> {
    found: &'a Found,
    loader: &'a Loader,
    text: String,
    chunks: Chunks,
    whole: u64,
    /// The file's length and modification time when it was read.
    stamp: (u64, Option<std::time::SystemTime>),
}

/// Where a file's chunks are, kept after listing: a chunk is then loaded
/// by reading only its own bytes, the header and what follows the rows
/// ([`Plan::load`]), not the whole file.
#[derive(Debug, Clone)]
pub struct Plan {
    chunks: Chunks,
    stamp: (u64, Option<std::time::SystemTime>),
}

impl Plan {
    /// Chunk `k`'s matrix, read by its byte ranges. `None` when the file is
    /// not the one that was planned (another length or modification time),
    /// or cannot be read so: the caller then opens it again ([`open`]),
    /// which reports what changed.
    pub fn load(
        &self,
        found: &Found,
        loader: &Loader,
        k: usize,
    ) -> Option<Result<Matrix, FileErrors>> {
        if k >= self.chunks.len() || confine::matrix_file(&loader.roots, &found.path).is_err() {
            return None;
        }
        let mut f = std::fs::File::open(&found.path).ok()?;
        let meta = f.metadata().ok()?;
        if !meta.is_file() || (meta.len(), meta.modified().ok()) != self.stamp {
            return None;
        }
        let len = usize::try_from(meta.len()).ok()?;
        let mut read = |r: std::ops::Range<usize>| -> Option<String> {
            use std::io::{Read, Seek, SeekFrom};
            let mut buf = vec![0; r.end.checked_sub(r.start)?];
            f.seek(SeekFrom::Start(r.start as u64)).ok()?;
            f.read_exact(&mut buf).ok()?;
            String::from_utf8(buf).ok()
        };
        let [head, rows, tail] = self.chunks.pieces(k, len);
        let (head, rows, tail) = (read(head)?, read(rows)?, read(tail)?);
        let text = one_row::chunk_text_of(&self.chunks, k, &head, &rows, &tail);
        Some(loader.load_part_at(&found.display, &text, &found.path))
    }
}

/// What opening a file gave.
pub enum Opened<'a> {
    /// A large file in the plain shape: load it a chunk at a time.
    Chunks(Chunked<'a>),
    /// Any other file: load it whole ([`discover::load_one`]).
    Whole,
    /// A file over the whole-file limit that cannot be loaded in chunks.
    Refused(FileErrors),
}

/// Opens `found` for loading in chunks when it is large and in the plain
/// shape.
pub fn open<'a>(found: &'a Found, loader: &'a Loader, sizes: Sizes) -> Opened<'a> {
    let Ok(meta) = std::fs::metadata(&found.path) else {
        return Opened::Whole;
    };
    if loader.bless
        || !meta.is_file()
        || meta.len() <= sizes.above
        || confine::matrix_file(&loader.roots, &found.path).is_err()
    {
        return Opened::Whole;
    }
    // Up to the whole-file limit, anything that is not for chunks loads
    // whole; past it, only a plain matrix (up to its own limit) loads.
    let refuse = |why: String| {
        if meta.len() <= sizes.whole {
            Opened::Whole
        } else {
            Opened::Refused(unreadable(found, why))
        }
    };
    let text = match confine::read_text(&found.path, MAX_MATRIX_BYTES) {
        Ok(t) => t,
        Err(e) => return refuse(e.to_string()),
    };
    if discover::is_registry(&text) {
        return refuse(format!(
            "it is larger than the limit of {MAX_FILE_BYTES} bytes ({} MiB) for a registry",
            MAX_FILE_BYTES >> 20
        ));
    }
    match one_row::chunks(&text, sizes.chunk) {
        Some(chunks) if chunks.len() > 1 => Opened::Chunks(Chunked {
            found,
            loader,
            stamp: (text.len() as u64, meta.modified().ok()),
            text,
            chunks,
            whole: sizes.whole,
        }),
        Some(_) => Opened::Whole,
        None => refuse(format!(
            "it is larger than the limit of {MAX_FILE_BYTES} bytes ({} MiB) for a file loaded whole; a matrix file of up to {} MiB loads a chunk of rows at a time when written in the plain shape: `rows:` at column 0, then items `- name: NAME` with every name written plainly or in simple quotes",
            MAX_FILE_BYTES >> 20,
            MAX_MATRIX_BYTES >> 20
        )),
    }
}

/// A read error at the file's start, as loading reports one.
fn unreadable(found: &Found, why: String) -> FileErrors {
    FileErrors {
        kind: LoadErrorKind::Unreadable,
        file: found.display.clone(),
        source: None,
        diagnostics: vec![Diagnostic::new(
            &found.display,
            crate::base::yaml::Pos { line: 1, col: 1 },
            format!("cannot read the file: {why}"),
        )],
    }
}

/// What checking every chunk gave.
pub enum Checked {
    /// Every chunk loads and the rows across them agree: run them with
    /// [`Chunked::load`].
    Valid,
    /// The file, loaded whole (a chunk did not load alone; the file is
    /// small enough to load whole): its matrix or its errors.
    Whole(Loaded),
    /// The errors of every chunk (a file too large to load whole).
    Errors(FileErrors),
}

impl Chunked<'_> {
    /// How many chunks.
    pub fn len(&self) -> usize {
        self.chunks.len()
    }

    /// Whether there are no chunks (never: a file is chunked in two or more).
    pub fn is_empty(&self) -> bool {
        self.chunks.is_empty()
    }

    /// Where the chunks are, to load one later without reading the whole
    /// file ([`Plan::load`]).
    pub fn plan(&self) -> Plan {
        Plan {
            chunks: self.chunks.clone(),
            stamp: self.stamp,
        }
    }

    /// Chunk `k`'s matrix: the file's header and that chunk's rows.
    pub fn load(&self, k: usize) -> Result<Matrix, FileErrors> {
        let text = one_row::chunk_text(&self.text, &self.chunks, k);
        self.loader
            .load_part_at(&self.found.display, &text, &self.found.path)
    }

    /// Loads every chunk in order, giving each that loads to `each`, and
    /// checks what spans chunks: row names, and snapshot names, are unique
    /// in the file.
    pub fn check(&self, mut each: impl FnMut(&Matrix)) -> Checked {
        let mut names: HashMap<String, usize> = HashMap::new();
        let mut snaps: HashMap<String, usize> = HashMap::new();
        let mut diags: Vec<Diagnostic> = Vec::new();
        let mut syntax = false;
        let display = &self.found.display;
        for k in 0..self.len() {
            let m = match self.load(k) {
                Ok(m) => m,
                Err(e) => {
                    syntax |= e.kind == LoadErrorKind::Syntax;
                    diags.extend(e.diagnostics);
                    continue;
                }
            };
            for row in &m.rows {
                let pos = m.row_pos(row);
                if let Some(first) = names.get(&row.name) {
                    diags.push(Diagnostic::new(
                        display,
                        pos,
                        format!("duplicate row name `{}`: row names are unique in a file (first used on line {first})", crate::base::label::escape(&row.name)),
                    ));
                } else {
                    names.insert(row.name.clone(), pos.line);
                }
                if row.expect.snapshot {
                    let name = crate::base::label::snapshot_name(display, &row.name);
                    if let Some(first) = snaps.get(&name) {
                        diags.push(Diagnostic::new(
                            display,
                            pos,
                            format!("snapshot name `{name}` is already used by the row on line {first}: rename one of the rows"),
                        ));
                    } else {
                        snaps.insert(name, pos.line);
                    }
                }
            }
            each(&m);
        }
        if diags.is_empty() {
            return Checked::Valid;
        }
        if self.text.len() as u64 <= self.whole {
            let whole = self
                .loader
                .load_text_at(display, &self.text, &self.found.path);
            return Checked::Whole(match whole {
                Ok(m) => Loaded::Matrix(Box::new(m)),
                Err(e) => Loaded::Errors(e),
            });
        }
        // A header error is every chunk's: the same diagnostic, once.
        diags.sort_by_key(|d| d.pos);
        diags.dedup();
        Checked::Errors(FileErrors {
            kind: if syntax {
                LoadErrorKind::Syntax
            } else {
                LoadErrorKind::Invalid
            },
            file: display.clone(),
            source: Some(self.text.clone()),
            diagnostics: diags,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::plan::{self, Keep, Selection};
    use crate::engine::run::RunOptions;

    const HEAD: &str = "policy:\n  routes:\n    - { name: A, attempts: 2 }\n    - { name: B, attempts: 2 }\n  backoff: { initial: 1s, factor: 2, cap: 30s }\nrows:\n";

    fn row(name: &str) -> String {
        format!("  - name: {name}\n    inject:\n      A: [503, 503]\n      B: [200]\n    expect:\n      trace: |\n        A1 503 UPSTREAM_UNAVAILABLE retry wait=1s\n        A2 503 UPSTREAM_UNAVAILABLE switch\n        B1 200 return\n      stop: success\n")
    }

    /// A file of these rows, its title after them (a header key after
    /// `rows:` is kept in every chunk too).
    fn file(dir: &std::path::Path, rows: &[String]) -> Found {
        let path = dir.join("big.yaml");
        std::fs::write(&path, format!("{HEAD}{}title: t\n", rows.concat())).unwrap();
        Found {
            path,
            display: "big.yaml".into(),
        }
    }

    /// Every file is chunked, a row a chunk.
    const SMALL: Sizes = Sizes {
        above: 0,
        chunk: 1,
        whole: MAX_FILE_BYTES,
    };

    fn loader() -> Loader {
        Loader::new(crate::Systems::new())
    }

    fn whole(found: &Found, loader: &Loader) -> Result<Box<Matrix>, FileErrors> {
        match discover::load_one(found, loader) {
            Loaded::Matrix(m) => Ok(m),
            Loaded::Errors(e) => Err(e),
            Loaded::Registry => panic!("a matrix"),
        }
    }

    fn chunked<'a>(found: &'a Found, loader: &'a Loader, sizes: Sizes) -> Chunked<'a> {
        match open(found, loader, sizes) {
            Opened::Chunks(c) => c,
            _ => panic!("{} is chunked", found.display),
        }
    }

    /// Each row's id and where it is written.
    fn ids(m: &Matrix) -> Vec<(String, String)> {
        m.rows
            .iter()
            .map(|r| (m.row_id(r), m.row_location(r)))
            .collect()
    }

    #[test]
    fn chunks_hold_every_row_once_where_it_is_written() {
        let dir = tempfile::tempdir().unwrap();
        let names: Vec<String> = (0..5).map(|i| row(&format!("r{i}"))).collect();
        let found = file(dir.path(), &names);
        let loader = loader();
        let c = chunked(&found, &loader, SMALL);
        assert_eq!(c.len(), 5);
        let mut seen = Vec::new();
        let checked = c.check(|m| {
            assert_eq!(m.title, "t");
            seen.extend(ids(m));
        });
        assert!(matches!(checked, Checked::Valid));
        let want = ids(&whole(&found, &loader).unwrap());
        assert_eq!(seen, want);
        assert_eq!(want[1].1, "big.yaml:17:5");
        // Two rows a chunk; a file at most `above` bytes is loaded whole.
        let two = Sizes {
            chunk: row("r0").len() * 2,
            ..SMALL
        };
        assert_eq!(chunked(&found, &loader, two).len(), 3);
        let len = std::fs::metadata(&found.path).unwrap().len();
        let at_most = Sizes {
            above: len,
            ..SMALL
        };
        assert!(matches!(open(&found, &loader, at_most), Opened::Whole));
    }

    /// A chunk read by its own byte ranges is the chunk read from the whole
    /// text, rows, positions and the header key after the rows included;
    /// once the file changed, the plan declines and the caller opens it
    /// again.
    #[test]
    fn a_planned_chunk_is_the_chunk_and_a_changed_file_is_not_trusted() {
        let dir = tempfile::tempdir().unwrap();
        let names: Vec<String> = (0..5).map(|i| row(&format!("r{i}"))).collect();
        let found = file(dir.path(), &names);
        let loader = loader();
        let c = chunked(&found, &loader, SMALL);
        let plan = c.plan();
        for k in 0..c.len() {
            let want = c.load(k).unwrap();
            let got = plan.load(&found, &loader, k).expect("planned").unwrap();
            assert_eq!(got.title, "t");
            assert_eq!(ids(&got), ids(&want), "chunk {k}");
            assert_eq!(format!("{:?}", got.rows), format!("{:?}", want.rows));
        }
        assert!(
            plan.load(&found, &loader, c.len()).is_none(),
            "no such chunk"
        );
        // Another length: not the planned file.
        let text = std::fs::read_to_string(&found.path).unwrap();
        std::fs::write(&found.path, text.replace("name: r1\n", "name: r1b\n")).unwrap();
        assert!(plan.load(&found, &loader, 1).is_none());
    }

    /// A chunk is a part of its file: it is neither read from nor kept in
    /// the model cache, whose entry is the whole file's (each chunk would
    /// replace the last one's entry, and none would ever be read back).
    #[test]
    fn chunks_bypass_the_model_cache() {
        let dir = tempfile::tempdir().unwrap();
        let names: Vec<String> = (0..3).map(|i| row(&format!("r{i}"))).collect();
        let found = file(dir.path(), &names);
        let cache = std::sync::Arc::new(crate::load::stored::ModelCache::with_stamp(
            dir.path().join("cache"),
            "a build".into(),
        ));
        let loader = loader().with_cache(cache.clone());
        let c = chunked(&found, &loader, SMALL);
        assert!(matches!(c.check(|_| {}), Checked::Valid));
        for k in 0..c.len() {
            c.load(k).unwrap();
            c.plan().load(&found, &loader, k).expect("planned").unwrap();
        }
        assert_eq!(cache.counts(), (0, 0));
        // The whole file, loaded whole, is kept and read back.
        whole(&found, &loader).unwrap();
        whole(&found, &loader).unwrap();
        assert_eq!(cache.counts(), (1, 1));
    }

    #[test]
    fn a_name_in_two_chunks_is_refused_as_when_loaded_whole() {
        let dir = tempfile::tempdir().unwrap();
        let found = file(dir.path(), &[row("a"), row("b"), row("a")]);
        let loader = loader();
        let Err(want) = whole(&found, &loader) else {
            panic!("the file does not load")
        };
        match chunked(&found, &loader, SMALL).check(|_| {}) {
            Checked::Whole(Loaded::Errors(e)) => assert_eq!(e.to_string(), want.to_string()),
            _ => panic!("the file is loaded whole for its errors"),
        }
        // Too large to load whole: the chunks' own check says it.
        let big = Sizes { whole: 0, ..SMALL };
        let Checked::Errors(e) = chunked(&found, &loader, big).check(|_| {}) else {
            panic!("errors")
        };
        assert_eq!(e.diagnostics.len(), 1, "{e}");
        let d = &e.diagnostics[0];
        assert_eq!(d.pos.line, 27);
        assert_eq!(
            d.message,
            "duplicate row name `a`: row names are unique in a file (first used on line 7)"
        );
    }

    #[test]
    fn a_file_too_large_to_load_whole_reports_every_chunks_errors_once() {
        let dir = tempfile::tempdir().unwrap();
        let bad = row("b").replace("B: [200]", "C: [200]");
        let found = file(
            dir.path(),
            &[
                row("a"),
                bad.clone(),
                row("c"),
                bad.replace("name: b", "name: d"),
            ],
        );
        let loader = loader();
        let Err(want) = whole(&found, &loader) else {
            panic!("the file does not load")
        };
        assert_eq!(want.diagnostics.len(), 2, "{want}");
        let big = Sizes { whole: 0, ..SMALL };
        let Checked::Errors(e) = chunked(&found, &loader, big).check(|_| {}) else {
            panic!("errors")
        };
        assert_eq!(e.diagnostics, want.diagnostics);
        assert_eq!(e.to_string(), want.to_string());
        // A header error is every chunk's, and reported once.
        let text = std::fs::read_to_string(&found.path).unwrap();
        std::fs::write(&found.path, format!("system: nosuch\n{text}")).unwrap();
        let Err(want) = whole(&found, &loader) else {
            panic!("the file does not load")
        };
        let Checked::Errors(e) = chunked(&found, &loader, big).check(|_| {}) else {
            panic!("errors")
        };
        assert_eq!(e.diagnostics.len(), 1, "{e}");
        assert_eq!(e.diagnostics, want.diagnostics);
    }

    #[test]
    fn what_the_split_breaks_is_loaded_whole() {
        let dir = tempfile::tempdir().unwrap();
        // An alias to an anchor in another row: no chunk loads alone.
        let a = row("a").replace("    inject:\n", "    inject: &both\n");
        let b = "  - name: b\n    inject: *both\n    expect: { stop: success }\n".to_string();
        let found = file(dir.path(), &[a, b]);
        let loader = loader();
        match chunked(&found, &loader, SMALL).check(|_| {}) {
            Checked::Whole(Loaded::Matrix(m)) => assert_eq!(m.rows.len(), 2),
            Checked::Whole(Loaded::Errors(e)) => panic!("{e}"),
            _ => panic!("loaded whole"),
        }
        // Rows not in the plain shape: not chunked.
        std::fs::write(&found.path, format!("{HEAD}  [{{ name: a }}]\ntitle: t\n")).unwrap();
        assert!(matches!(open(&found, &loader, SMALL), Opened::Whole));
        // Blessing writes the file back: never chunked.
        let mut blessing = Loader::new(crate::Systems::new());
        blessing.bless = true;
        let found = file(dir.path(), &[row("a"), row("b")]);
        assert!(matches!(open(&found, &blessing, SMALL), Opened::Whole));
    }

    #[test]
    fn a_run_of_chunks_gives_the_results_of_a_run_of_the_whole_file() {
        let dir = tempfile::tempdir().unwrap();
        let failing = row("f").replace("stop: success", "stop: exhausted");
        let mut rows: Vec<String> = (0..6).map(|i| row(&format!("r{i}"))).collect();
        rows.insert(3, failing);
        let found = file(dir.path(), &rows);
        let loader = loader();
        let run = |chunks: Sizes| {
            let opts = RunOptions {
                chunks,
                ..RunOptions::default()
            };
            let files = [found.clone()];
            let sel = Selection::default();
            let out = plan::run_files_live(
                &files,
                &loader,
                &sel,
                &opts,
                1,
                &|_| {},
                &|_, _| {},
                &|_| {},
                Keep::All,
            );
            let results: Vec<(String, bool, Option<usize>)> = out
                .results
                .iter()
                .map(|r| {
                    (
                        r.id.clone(),
                        matches!(r.verdict, crate::engine::results::Verdict::Passed),
                        r.meta.line,
                    )
                })
                .collect();
            (results, out.summary.passed, out.summary.failed)
        };
        let chunked = run(SMALL);
        assert_eq!(chunked.0.len(), 7);
        assert_eq!((chunked.1, chunked.2), (6, 1));
        assert_eq!(chunked, run(Sizes::default()));
    }
}
