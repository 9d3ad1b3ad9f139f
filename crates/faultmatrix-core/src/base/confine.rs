//! Confinement: every path a matrix names (tape, registry, command `cwd`,
//! its snapshot folder) stays inside the matrices' root, after symlinks,
//! and names a regular file (or, for a `cwd`, a directory). A matrix is
//! data a reviewer approves; it must never reach outside its tree.
//!
//! The root of a matrix is the configured root that holds it (the
//! directory given to `faultmatrix run`, the harness's root, or
//! `FAULTMATRIX_ROOT`), else the matrix file's own directory. Checks
//! happen at load, before anything is opened, and again before a write.
//!
//! Messages never show the root or the resolved target: they quote what
//! the matrix wrote and say why it is refused.

use std::io::Read;
use std::path::{Component, Path, PathBuf};

/// The largest file faultmatrix reads whole (matrix, registry, tape,
/// snapshot): 16 MiB. A whole matrix's model takes about 25 times its text.
pub const MAX_FILE_BYTES: u64 = 16 * 1024 * 1024;

/// The largest matrix file a run reads: 64 MiB. Past [`MAX_FILE_BYTES`] a
/// matrix loads only a chunk of rows at a time (the runner's
/// `engine::chunked`), so memory holds its text and one chunk's model;
/// the bound keeps that text, and a run's time, finite.
pub const MAX_MATRIX_BYTES: u64 = 64 * 1024 * 1024;

/// What a path must name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Want {
    /// A regular file, which may not exist yet (a tape to record).
    File,
    /// A regular file that exists (a registry).
    ExistingFile,
    /// A directory that exists (a command's `cwd`).
    Dir,
}

/// The canonical root for a matrix in `dir`: the longest of `roots` that
/// holds it, else `dir` itself (the working directory when `dir` is
/// empty). `None` when `dir` does not exist.
pub fn root_for(roots: &[PathBuf], dir: Option<&Path>) -> Option<PathBuf> {
    let dir = match dir {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let dir = std::fs::canonicalize(dir).ok()?;
    roots
        .iter()
        .filter_map(|r| std::fs::canonicalize(r).ok())
        .filter(|r| dir.starts_with(r))
        .max_by_key(|r| r.components().count())
        .or(Some(dir))
}

/// Checks that the matrix file at `path` stays inside its root after
/// symlinks: the longest of `roots` that holds it as written, else its
/// own folder. A matrix that is a symlink out of the tree is never read.
/// A path that does not resolve passes (reading it says why it fails).
pub fn matrix_file(roots: &[PathBuf], path: &Path) -> Result<(), String> {
    let Ok(target) = std::fs::canonicalize(path) else {
        return Ok(());
    };
    let abs = |p: &Path| std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
    let written = abs(path);
    let claimed = roots
        .iter()
        .map(|r| abs(r))
        .filter(|r| written.starts_with(r))
        .max_by_key(|r| r.components().count());
    let root = match claimed {
        Some(r) => std::fs::canonicalize(r),
        None => std::fs::canonicalize(written.parent().unwrap_or(Path::new("."))),
    };
    match root {
        Ok(root) if target.starts_with(&root) => Ok(()),
        _ => Err(
            "it resolves outside the matrices' root (symlinks followed): a matrix is read only from inside its tree".into(),
        ),
    }
}

/// What kind of thing a file-system entry is, for messages.
pub fn kind_of(meta: &std::fs::Metadata) -> &'static str {
    let ft = meta.file_type();
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if ft.is_fifo() {
            return "a FIFO";
        }
        if ft.is_char_device() || ft.is_block_device() {
            return "a device";
        }
        if ft.is_socket() {
            return "a socket";
        }
    }
    if ft.is_dir() {
        "a directory"
    } else if ft.is_file() {
        "a regular file"
    } else {
        "not a regular file"
    }
}

/// Resolves `written` (as the matrix wrote it, relative to `dir`) inside
/// `root` (canonical). Symlinks are followed as far as the path exists;
/// the rest must be plain names. Returns the resolved path, or why it is
/// refused (a sentence quoting `written`).
pub fn resolve(root: &Path, dir: &Path, written: &str, want: Want) -> Result<PathBuf, String> {
    let given = Path::new(written);
    if given.has_root() || given.is_absolute() || written.contains('\0') {
        return Err(format!(
            "`{written}` is an absolute path: a matrix names files relative to itself, inside its root"
        ));
    }
    let outside = || {
        format!(
            "`{written}` resolves outside the matrices' root (symlinks followed): a matrix never reads or writes outside its tree"
        )
    };
    let start = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    // Walk the written components from the (canonical) folder: while the
    // path exists each step is canonicalized, so symlinks are followed;
    // past the first missing name the rest is plain names (and `..` only
    // undoes a name that does not exist yet, which cannot be a symlink).
    let mut resolved =
        std::fs::canonicalize(start).map_err(|_| format!("`{written}` cannot be resolved"))?;
    let mut missing = 0usize;
    for c in given.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir if missing > 0 => {
                resolved.pop();
                missing -= 1;
            }
            Component::ParentDir => {
                resolved.pop();
            }
            Component::Normal(name) => {
                resolved.push(name);
                if missing == 0 {
                    match std::fs::canonicalize(&resolved) {
                        Ok(c) => resolved = c,
                        Err(_) => missing = 1,
                    }
                } else {
                    missing += 1;
                }
            }
            Component::Prefix(_) | Component::RootDir => return Err(outside()),
        }
    }
    if !resolved.starts_with(root) {
        return Err(outside());
    }
    if resolved == root && want != Want::Dir {
        return Err(format!("`{written}` names the root folder, not a file"));
    }
    match std::fs::metadata(&resolved) {
        Ok(meta) => {
            let ok = match want {
                Want::File | Want::ExistingFile => meta.is_file(),
                Want::Dir => meta.is_dir(),
            };
            if !ok {
                let wanted = if want == Want::Dir {
                    "a directory"
                } else {
                    "a regular file"
                };
                return Err(format!("`{written}` is {}, not {wanted}", kind_of(&meta)));
            }
        }
        Err(_) if want == Want::File => {}
        Err(_) => {
            return Err(format!("`{written}` does not exist"));
        }
    }
    Ok(resolved)
}

/// Why a file cannot be read.
#[derive(Debug)]
pub enum ReadError {
    /// It does not exist.
    Missing,
    /// Not UTF-8: the first invalid byte, at this 1-based line and column
    /// (in characters).
    NotUtf8 {
        /// Its line.
        line: usize,
        /// Its column.
        col: usize,
    },
    /// Anything else, as a sentence (`is a FIFO, not a regular file`).
    Other(String),
}

impl std::fmt::Display for ReadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReadError::Missing => f.write_str("No such file or directory"),
            ReadError::NotUtf8 { line, col } => write!(
                f,
                "it is not UTF-8 text (invalid byte at line {line}, column {col})"
            ),
            ReadError::Other(s) => f.write_str(s),
        }
    }
}

/// Reads a regular file of at most `limit` bytes as UTF-8. FIFOs, devices
/// and directories are refused before they are opened (nothing blocks,
/// nothing reads without end); a file that grows past `limit` while being
/// read is refused too.
pub fn read_text(path: &Path, limit: u64) -> Result<String, ReadError> {
    let meta = std::fs::metadata(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => ReadError::Missing,
        _ => ReadError::Other(e.to_string()),
    })?;
    if !meta.is_file() {
        return Err(ReadError::Other(format!(
            "it is {}, not a regular file",
            kind_of(&meta)
        )));
    }
    let too_big = || {
        ReadError::Other(format!(
            "it is larger than the limit of {limit} bytes ({} MiB)",
            limit / (1024 * 1024)
        ))
    };
    if meta.len() > limit {
        return Err(too_big());
    }
    let f = std::fs::File::open(path).map_err(|e| ReadError::Other(e.to_string()))?;
    let mut buf = Vec::with_capacity(meta.len() as usize);
    f.take(limit + 1)
        .read_to_end(&mut buf)
        .map_err(|e| ReadError::Other(e.to_string()))?;
    if buf.len() as u64 > limit {
        return Err(too_big());
    }
    String::from_utf8(buf).map_err(|e| {
        let at = e.utf8_error().valid_up_to();
        let bytes = e.as_bytes();
        let start = bytes[..at]
            .iter()
            .rposition(|b| *b == b'\n')
            .map_or(0, |p| p + 1);
        let line = bytes[..at].iter().filter(|b| **b == b'\n').count() + 1;
        // Everything before `at` is valid UTF-8: count characters.
        let col =
            std::str::from_utf8(&bytes[start..at]).map_or(at - start, |s| s.chars().count()) + 1;
        ReadError::NotUtf8 { line, col }
    })
}

/// Whether a write to `target` (a resolved path inside `root`) stays
/// inside: every existing ancestor resolves inside `root`, and `target`
/// itself, when it exists, is a regular file and not a symlink. Checked
/// again right before a write, so a symlink planted after loading is not
/// followed either.
pub fn check_write(root: &Path, target: &Path) -> Result<(), String> {
    if let Ok(meta) = std::fs::symlink_metadata(target) {
        if meta.file_type().is_symlink() {
            return Err("it is a symlink: a recording never follows one".into());
        }
        if !meta.is_file() {
            return Err(format!("it is {}, not a regular file", kind_of(&meta)));
        }
    }
    let mut dir = target.parent();
    while let Some(d) = dir {
        if let Ok(c) = std::fs::canonicalize(d) {
            if !c.starts_with(root) {
                return Err("its folder resolves outside the matrices' root".into());
            }
            return Ok(());
        }
        dir = d.parent();
    }
    Err("its folder cannot be resolved".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree() -> (tempfile::TempDir, PathBuf) {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().join("root");
        std::fs::create_dir_all(root.join("tapes")).unwrap();
        std::fs::create_dir_all(t.path().join("outside")).unwrap();
        std::fs::write(root.join("tapes/a.yaml"), "x").unwrap();
        std::fs::write(t.path().join("outside/x.yaml"), "secret").unwrap();
        let root = std::fs::canonicalize(root).unwrap();
        (t, root)
    }

    #[test]
    fn inside_paths_resolve_and_new_files_may_not_exist_yet() {
        let (_t, root) = tree();
        let r = resolve(&root, &root, "tapes/a.yaml", Want::File).unwrap();
        assert_eq!(r, root.join("tapes/a.yaml"));
        let r = resolve(&root, &root, "tapes/new/b.yaml", Want::File).unwrap();
        assert_eq!(r, root.join("tapes/new/b.yaml"));
        let r = resolve(&root, &root.join("tapes"), "../tapes/./a.yaml", Want::File).unwrap();
        assert_eq!(r, root.join("tapes/a.yaml"));
        assert!(resolve(&root, &root, "tapes/new/b.yaml", Want::ExistingFile).is_err());
    }

    #[test]
    fn outside_absolute_and_symlinked_paths_are_refused() {
        let (t, root) = tree();
        let e = resolve(&root, &root, "../outside/x.yaml", Want::File).unwrap_err();
        assert!(e.contains("resolves outside"), "{e}");
        let abs = t.path().join("outside/x.yaml");
        let e = resolve(&root, &root, abs.to_str().unwrap(), Want::File).unwrap_err();
        assert!(e.contains("absolute path"), "{e}");
        let e = resolve(&root, &root, "tapes/nope/../../../outside/y", Want::File).unwrap_err();
        assert!(e.contains("resolves outside"), "{e}");
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink(t.path().join("outside"), root.join("link")).unwrap();
            let e = resolve(&root, &root, "link/x.yaml", Want::File).unwrap_err();
            assert!(e.contains("resolves outside"), "{e}");
            let e = resolve(&root, &root, "link/new.yaml", Want::File).unwrap_err();
            assert!(e.contains("resolves outside"), "{e}");
            std::os::unix::fs::symlink(&abs, root.join("tapes/l.yaml")).unwrap();
            let e = resolve(&root, &root, "tapes/l.yaml", Want::File).unwrap_err();
            assert!(e.contains("resolves outside"), "{e}");
            // A write check refuses a symlink even one that stays inside.
            std::os::unix::fs::symlink(root.join("tapes/a.yaml"), root.join("tapes/in.yaml"))
                .unwrap();
            assert!(check_write(&root, &root.join("tapes/in.yaml")).is_err());
            assert!(check_write(&root, &root.join("tapes/a.yaml")).is_ok());
            assert!(check_write(&root, &root.join("link/z.yaml")).is_err());
        }
    }

    #[test]
    fn only_regular_files_are_read() {
        let (_t, root) = tree();
        let e = resolve(&root, &root, "tapes", Want::File).unwrap_err();
        assert!(e.contains("is a directory, not a regular file"), "{e}");
        assert!(resolve(&root, &root, "tapes", Want::Dir).is_ok());
        assert!(matches!(
            read_text(&root.join("tapes"), 10),
            Err(ReadError::Other(_))
        ));
        assert!(matches!(
            read_text(&root.join("none"), 10),
            Err(ReadError::Missing)
        ));
        #[cfg(unix)]
        {
            let fifo = root.join("fifo");
            let ok = std::process::Command::new("mkfifo")
                .arg(&fifo)
                .status()
                .is_ok_and(|s| s.success());
            if ok {
                let e = resolve(&root, &root, "fifo", Want::File).unwrap_err();
                assert!(e.contains("is a FIFO"), "{e}");
                // Refused before opening: this returns instead of blocking.
                let e = read_text(&fifo, 10).unwrap_err().to_string();
                assert!(e.contains("FIFO"), "{e}");
            }
        }
    }

    #[test]
    fn reads_are_bounded_and_utf8_errors_are_placed() {
        let (_t, root) = tree();
        let p = root.join("big");
        std::fs::write(&p, "a".repeat(11)).unwrap();
        let e = read_text(&p, 10).unwrap_err().to_string();
        assert!(e.contains("larger than the limit of 10 bytes"), "{e}");
        std::fs::write(&p, b"ab\ncd\xffe").unwrap();
        let e = read_text(&p, 100).unwrap_err().to_string();
        assert!(e.contains("line 2, column 3"), "{e}");
    }
}
