//! The model cache: a matrix file's validated rows kept in a compact binary
//! form, so a run that reads the same file again skips parsing and
//! validation (issue 15: a row's load is about 40 % of its cost).
//!
//! It is opt-in (`faultmatrix run --cache DIR`, or `FAULTMATRIX_CACHE`): a
//! directory the user names, never one a matrix names. One entry per
//! matrix path, replaced when the file changes; an entry is used only when
//! everything the load read is unchanged, and is never trusted across
//! builds:
//!
//! - the program: the crate's version, the entry format, and the running
//!   executable's size and modification time (any rebuild is a miss);
//! - the file: its path, the name it is shown under, and its whole text,
//!   compared byte for byte (not a hash of it);
//! - the registry it names: resolved and confined again, its whole text
//!   compared;
//! - the loader: whether it blesses, and the system the file names, which
//!   is built again from the stored `policy` by the loader's own factory
//!   (a system is code, not data: it is never stored).
//!
//! What is not cached loads cold, exactly as without a cache: a file with
//! errors, a command system, and a file with a tape row (a tape is a file of
//! its own). A damaged or foreign entry (a checksum, a format or a stamp
//! that does not match, a truncated file) is a miss, never an error. A
//! write that fails leaves the run as it is; the first failure is kept for
//! the caller to show ([`ModelCache::write_error`]).

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};

use crate::base::confine;
use crate::base::yaml::{Key, Seg};
use crate::base::yaml::{Pos, Value};
use crate::load::cache::RegistryCache;
use crate::load::systems::Systems;
use crate::model::expect::Expect;
use crate::model::matrix::{Matrix, SystemUnderTest};
use crate::model::registry::CodeLimit;
use crate::model::row::{Row, RowSystem, Script, Settings, WrittenAttempts};

/// The entry format; bump it when the stored shape changes (the stamp
/// also changes with every build, so this guards a same-binary reuse).
const FORMAT: u32 = 1;
const MAGIC: &[u8; 8] = b"FMMODEL\0";
/// The largest entry read back. A model takes about 25 times its text,
/// and its stored form less than that; past this the file loads cold.
const MAX_ENTRY_BYTES: u64 = 32 * confine::MAX_FILE_BYTES;

/// What a load needs to rebuild the parts of a matrix that are code, not
/// data: noted by the loader while it loads a file (see
/// `Loader::with_cache`).
#[derive(Debug, Default)]
pub(crate) struct Recipe {
    /// The `registry:` as written, and the text read for it.
    pub registry: Option<(String, Arc<str>)>,
    /// The file's `policy`, as given to the system's factory.
    pub policy: Option<Value>,
    /// The file's `codes:` limits.
    pub file_limits: Vec<CodeLimit>,
    /// For each loaded row, in order: the merged policy and the row's own
    /// limits its system was built from, when it has one.
    pub rows: Vec<Option<(Value, Vec<CodeLimit>)>>,
}

/// The parts of the loader a stored matrix is checked and rebuilt with.
pub(crate) struct Using<'a> {
    /// The systems a `system:` key may name.
    pub systems: &'a Systems,
    /// The run's registry files.
    pub registries: &'a RegistryCache,
    /// The configured roots (see [`crate::base::confine`]).
    pub roots: &'a [PathBuf],
    /// Whether the loader blesses.
    pub bless: bool,
}

/// A directory of stored models, shared by every file a run loads.
#[derive(Debug)]
pub struct ModelCache {
    dir: PathBuf,
    stamp: String,
    write_error: Mutex<Option<String>>,
    read: AtomicU64,
    stored: AtomicU64,
}

/// The part of an entry compared before anything else is decoded.
#[derive(Serialize, Deserialize)]
struct Head<'a> {
    stamp: &'a str,
    path: &'a str,
    display: &'a str,
    bless: bool,
    source: &'a str,
    registry: Option<(&'a str, &'a str)>,
}

#[derive(Serialize, Deserialize)]
struct Body {
    system: String,
    /// The file's `policy` as YAML text (a YAML value cannot be stored in
    /// the binary form; the text reads back to the same value).
    policy: Option<String>,
    file_limits: Vec<CodeLimit>,
    title: String,
    row_names: Option<Vec<Pos>>,
    /// Each distinct `attempts` list once; rows name theirs by index.
    attempts: Vec<Vec<WrittenAttempts>>,
    /// Each distinct row settings once (rows mostly share the file's):
    /// a copy costs less than reading one back.
    settings: Vec<Settings>,
    rows: Vec<StoredRow>,
}

/// A [`Row`] without what is rebuilt: its path (`rows[i]`, its place in
/// the file), its settings and `attempts` (by index), its system.
#[derive(Serialize, Deserialize)]
struct StoredRow {
    name: String,
    ignore: Option<String>,
    tags: Vec<String>,
    script: Script,
    expect: Expect,
    settings: u32,
    attempts: u32,
    /// The merged policy (YAML text) and the row's own limits.
    system: Option<(String, Vec<CodeLimit>)>,
}

impl ModelCache {
    /// A cache in `dir` (created at the first write) for this build of the
    /// program. `None` when the running executable cannot be identified:
    /// an entry is never trusted across builds, so without an identity
    /// nothing is cached.
    pub fn new(dir: PathBuf) -> Option<Self> {
        let exe = std::env::current_exe().ok()?;
        let meta = std::fs::metadata(exe).ok()?;
        let modified = meta
            .modified()
            .ok()?
            .duration_since(std::time::UNIX_EPOCH)
            .ok()?;
        let stamp = format!(
            "faultmatrix-core {} format {FORMAT} exe {} {}.{:09}",
            env!("CARGO_PKG_VERSION"),
            meta.len(),
            modified.as_secs(),
            modified.subsec_nanos()
        );
        Some(Self::with_stamp(dir, stamp))
    }

    /// A cache with a given stamp (tests: two stamps are two builds).
    pub fn with_stamp(dir: PathBuf, stamp: String) -> Self {
        Self {
            dir,
            stamp,
            write_error: Mutex::new(None),
            read: AtomicU64::new(0),
            stored: AtomicU64::new(0),
        }
    }

    /// Files read back from the cache, and files stored in it, so far.
    pub fn counts(&self) -> (u64, u64) {
        (
            self.read.load(Ordering::Relaxed),
            self.stored.load(Ordering::Relaxed),
        )
    }

    /// The directory entries are kept in.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The first write that failed in this run, if any (what the operating
    /// system said); the run itself is unaffected.
    pub fn write_error(&self) -> Option<String> {
        crate::base::lock(&self.write_error).clone()
    }

    /// The entry for the matrix at `path` (its absolute form, as written).
    fn entry_path(&self, abs: &str) -> PathBuf {
        self.dir
            .join(format!("{:016x}.fmmodel", checksum(abs.as_bytes())))
    }

    /// The matrix stored for this file and text, rebuilt; `None` on any
    /// difference (the caller loads the file cold).
    pub(crate) fn get(
        &self,
        loader: &Using<'_>,
        display: &str,
        text: &str,
        path: &Path,
    ) -> Option<Matrix> {
        let abs = absolute(path)?;
        let bytes = read_bounded(&self.entry_path(&abs))?;
        let rest = bytes.strip_prefix(MAGIC.as_slice())?;
        let (sum, payload) = rest.split_first_chunk::<8>()?;
        let (head, body): (Head<'_>, &[u8]) = postcard::take_from_bytes(payload).ok()?;
        let same = head.stamp == self.stamp
            && head.path == abs
            && head.display == display
            && head.bless == loader.bless
            && head.source == text;
        if !same || u64::from_le_bytes(*sum) != checksum(body) {
            return None;
        }
        let dir = path.parent();
        let registry = match head.registry {
            None => super::registry::builtin(),
            Some((written, stored)) => {
                let root = confine::root_for(loader.roots, dir)?;
                let here = dir.unwrap_or(Path::new(""));
                confine::resolve(&root, here, written, confine::Want::ExistingFile).ok()?;
                let at = dir.map_or_else(|| Path::new(written).to_path_buf(), |d| d.join(written));
                let (registry, read) = loader.registries.load_with_text(&at).ok()?;
                if *read != *stored {
                    return None;
                }
                registry
            }
        };
        let body: Body = postcard::from_bytes(body).ok()?;
        let factory = loader.systems.get(&body.system)?;
        let sys_registry = registry.limited(&body.file_limits);
        let policy = match &body.policy {
            Some(t) => crate::base::yaml::parse_value(t).ok()?,
            None => Value::Null,
        };
        let built = factory(&policy, &sys_registry).ok()?;
        let attempts: Vec<Arc<[WrittenAttempts]>> =
            body.attempts.into_iter().map(Arc::from).collect();
        let mut rows = Vec::with_capacity(body.rows.len());
        for (i, stored) in body.rows.into_iter().enumerate() {
            let mut settings = body.settings.get(stored.settings as usize)?.clone();
            settings.attempts = attempts.get(stored.attempts as usize)?.clone();
            let mut row = Row {
                name: stored.name,
                path: vec![Seg::Key(Key::lit("rows")), Seg::Index(i)],
                ignore: stored.ignore,
                tags: stored.tags,
                script: stored.script,
                settings,
                expect: stored.expect,
            };
            if let Some((merged, limits)) = stored.system {
                let merged = crate::base::yaml::parse_value(&merged).ok()?;
                let b = factory(&merged, &sys_registry.limited(&limits)).ok()?;
                row.settings.system = Some(RowSystem {
                    system: b.system,
                    deadline: b.deadline,
                });
            }
            rows.push(row);
        }
        let mut matrix = Matrix::new(
            display.to_string(),
            Arc::from(text),
            body.title,
            SystemUnderTest::InProcess {
                name: body.system,
                system: built.system,
            },
            registry,
            rows,
            built.body_paths,
        );
        matrix.deadline = built.deadline;
        if let Some(at) = body.row_names {
            matrix.note_row_name_positions(at);
        }
        self.read.fetch_add(1, Ordering::Relaxed);
        Some(matrix)
    }

    /// Stores a matrix just loaded cold from `text`, when it can be rebuilt
    /// from what is stored (see the module's documentation).
    pub(crate) fn put(
        &self,
        loader: &Using<'_>,
        display: &str,
        text: &str,
        path: &Path,
        matrix: &Matrix,
        recipe: Recipe,
    ) {
        let Some(abs) = absolute(path) else { return };
        let Some(bytes) = self.encode(loader, display, text, &abs, matrix, recipe) else {
            return;
        };
        match self.write(&self.entry_path(&abs), &bytes) {
            Ok(()) => {
                self.stored.fetch_add(1, Ordering::Relaxed);
            }
            Err(e) => {
                let mut first = crate::base::lock(&self.write_error);
                if first.is_none() {
                    *first = Some(format!("{}: {e}", self.dir.display()));
                }
            }
        }
    }

    /// A matrix's entry, or `None` when it cannot be rebuilt from one
    /// (see the module's documentation) or would be too large.
    fn encode(
        &self,
        loader: &Using<'_>,
        display: &str,
        text: &str,
        abs: &str,
        matrix: &Matrix,
        recipe: Recipe,
    ) -> Option<Vec<u8>> {
        let SystemUnderTest::InProcess { name, .. } = &matrix.system else {
            return None;
        };
        let tape = matrix
            .rows
            .iter()
            .any(|r| matches!(r.script, Script::Tape(_)));
        if tape || recipe.rows.len() != matrix.rows.len() {
            return None;
        }
        let yaml = |v: &Value| serde_yaml::to_string(v).ok();
        let policy = match &recipe.policy {
            Some(p) => Some(yaml(p)?),
            None => None,
        };
        let mut lists: Vec<&Arc<[WrittenAttempts]>> = Vec::new();
        let mut settings: Vec<(Vec<u8>, Settings)> = Vec::new();
        let mut rows = Vec::with_capacity(matrix.rows.len());
        for (i, (row, system)) in matrix.rows.iter().zip(recipe.rows).enumerate() {
            if row.path != [Seg::Key(Key::lit("rows")), Seg::Index(i)] {
                return None;
            }
            let bytes = postcard::to_stdvec(&row.settings).ok()?;
            let in_table = index_in(
                &mut settings,
                |(b, _)| *b == bytes,
                || (bytes.clone(), row.settings.clone()),
            );
            let at = &row.settings.attempts;
            let attempts = index_in(&mut lists, |l| Arc::ptr_eq(l, at) || **l == *at, || at);
            let system = match system {
                Some((merged, limits)) => Some((yaml(&merged)?, limits)),
                None => None,
            };
            rows.push(StoredRow {
                name: row.name.clone(),
                ignore: row.ignore.clone(),
                tags: row.tags.clone(),
                script: row.script.clone(),
                expect: row.expect.clone(),
                settings: in_table,
                attempts,
                system,
            });
        }
        let body = Body {
            system: name.clone(),
            policy,
            file_limits: recipe.file_limits,
            title: matrix.title.clone(),
            row_names: matrix.noted_row_names().map(<[Pos]>::to_vec),
            attempts: lists.iter().map(|l| l.to_vec()).collect(),
            settings: settings.into_iter().map(|(_, s)| s).collect(),
            rows,
        };
        let head = Head {
            stamp: &self.stamp,
            path: abs,
            display,
            bless: loader.bless,
            source: text,
            registry: recipe.registry.as_ref().map(|(w, t)| (w.as_str(), &**t)),
        };
        let (head, body) = (
            postcard::to_stdvec(&head).ok()?,
            postcard::to_stdvec(&body).ok()?,
        );
        let mut bytes = Vec::with_capacity(MAGIC.len() + 8 + head.len() + body.len());
        bytes.extend_from_slice(MAGIC);
        bytes.extend_from_slice(&checksum(&body).to_le_bytes());
        bytes.extend_from_slice(&head);
        bytes.extend_from_slice(&body);
        (bytes.len() as u64 <= MAX_ENTRY_BYTES).then_some(bytes)
    }

    /// Writes an entry whole or not at all: a temporary file renamed over
    /// the entry (a reader sees the old entry or the new one).
    fn write(&self, to: &Path, bytes: &[u8]) -> std::io::Result<()> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        std::fs::create_dir_all(&self.dir)?;
        let tmp = to.with_extension(format!(
            "{}.{}.tmp",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let written = std::fs::write(&tmp, bytes).and_then(|()| std::fs::rename(&tmp, to));
        if written.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        written
    }
}

/// The index of the first item of `table` that is `same`, pushing `new()`
/// when there is none (parts rows share are stored once).
fn index_in<T>(table: &mut Vec<T>, same: impl Fn(&T) -> bool, new: impl FnOnce() -> T) -> u32 {
    let i = match table.iter().position(same) {
        Some(i) => i,
        None => {
            table.push(new());
            table.len() - 1
        }
    };
    i as u32
}

/// The path as an absolute path's text (the entry's key).
fn absolute(path: &Path) -> Option<String> {
    let abs = std::path::absolute(path).ok()?;
    abs.to_str().map(str::to_string)
}

/// Reads a whole entry, or `None` (missing, unreadable, or too large).
fn read_bounded(path: &Path) -> Option<Vec<u8>> {
    let file = std::fs::File::open(path).ok()?;
    let len = file.metadata().ok()?.len();
    if len > MAX_ENTRY_BYTES {
        return None;
    }
    let mut bytes = Vec::with_capacity(len as usize);
    file.take(MAX_ENTRY_BYTES).read_to_end(&mut bytes).ok()?;
    Some(bytes)
}

/// A 64-bit checksum, eight bytes at a time (it finds a damaged entry; the
/// key of an entry is compared in full, not by this).
fn checksum(bytes: &[u8]) -> u64 {
    const K: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut h: u64 = bytes.len() as u64 ^ K;
    let mut chunks = bytes.chunks_exact(8);
    for c in &mut chunks {
        let w = u64::from_le_bytes(c.try_into().unwrap_or_default());
        h = (h ^ w).wrapping_mul(K).rotate_left(29);
    }
    let mut tail = [0u8; 8];
    tail[..chunks.remainder().len()].copy_from_slice(chunks.remainder());
    h = (h ^ u64::from_le_bytes(tail)).wrapping_mul(K);
    h ^ (h >> 32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_checksum_sees_every_byte() {
        let base = vec![7u8; 37];
        let sum = checksum(&base);
        for i in 0..base.len() {
            let mut b = base.clone();
            b[i] ^= 1;
            assert_ne!(checksum(&b), sum, "byte {i}");
        }
        assert_ne!(checksum(&base[..36]), sum);
    }
}
