//! Finding matrix files: directories walked, files matched with globs
//! ([`crate::engine::glob`]), registries (files with `codes:` and no
//! `rows:`) left out, and loading spread over threads.

use std::path::{Path, PathBuf};

use crate::base::diag::FileErrors;
use crate::engine::error::{EngineError, EngineErrorKind};
use crate::engine::glob::GlobSet;
use crate::load::Loader;
use crate::model::Matrix;

/// A matrix file to load.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Found {
    /// The path to read.
    pub path: PathBuf,
    /// The name used in test ids and messages (`matrices/x.yaml`).
    pub display: String,
}

/// The default pattern: every YAML file below the root.
pub const DEFAULT_GLOB: &str = "**/*.{yaml,yml}";

/// Builds a glob set.
pub fn globset(patterns: &[String]) -> Result<GlobSet, EngineError> {
    GlobSet::new(patterns).map_err(|(pattern, e)| {
        EngineError::new(EngineErrorKind::BadGlob {
            pattern,
            reason: e.reason,
        })
    })
}

pub use crate::base::paths::display_name;

/// Whether text is a reason-code registry rather than a matrix.
pub fn is_registry(text: &str) -> bool {
    // A line starting `k` is the text's first line or follows a newline:
    // one substring search each, not a walk over every line.
    let top = |k: &str, after_newline: &str| text.starts_with(k) || text.contains(after_newline);
    top("codes:", "\ncodes:") && !top("rows:", "\nrows:")
}

/// Whether a file is a snapshot or other non-matrix YAML we never load.
fn skipped_dir(name: &str) -> bool {
    name.starts_with('.') || name == "snapshots" || name == "tapes" || name == "target"
}

/// Files under `root` (a file or directory) matching `set` (relative to
/// `root` for directories).
pub fn find(root: &Path, set: &GlobSet, cwd: &Path) -> std::io::Result<Vec<Found>> {
    let mut out = Vec::new();
    // Anything that is not a directory (a file, but also a FIFO or a
    // device) is one matrix path; loading refuses what is not a regular file.
    if root.exists() && !root.is_dir() {
        out.push(Found {
            path: root.to_path_buf(),
            display: display_name(root, cwd),
        });
        return Ok(out);
    }
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir)? {
            let entry = entry?;
            let path = entry.path();
            let name = entry.file_name();
            let name = name.to_string_lossy();
            let ft = entry.file_type()?;
            if ft.is_dir() {
                if !skipped_dir(&name) {
                    stack.push(path);
                }
                continue;
            }
            let rel = path.strip_prefix(root).unwrap_or(&path);
            // Explore mode's invariants files are not matrices.
            if set.is_match(rel) && !name.ends_with(".invariants.yaml") {
                out.push(Found {
                    display: display_name(&path, cwd),
                    path,
                });
            }
        }
    }
    out.sort();
    Ok(out)
}

/// What loading one file gave.
pub enum Loaded {
    /// A valid matrix.
    Matrix(Box<Matrix>),
    /// A registry file (not a matrix; skipped by runners).
    Registry,
    /// Errors.
    Errors(FileErrors),
}

/// Loads one file.
pub fn load_one(found: &Found, loader: &Loader) -> Loaded {
    let limit = crate::base::confine::MAX_FILE_BYTES;
    // A file out of the tree (a symlink) is never read; `load_file` says why.
    let inside = crate::base::confine::matrix_file(&loader.roots, &found.path).is_ok();
    let text = match inside.then(|| crate::base::confine::read_text(&found.path, limit)) {
        Some(Ok(t)) => t,
        _ => {
            return match loader.load_file(&found.path, &found.display) {
                Ok(m) => Loaded::Matrix(Box::new(m)),
                Err(e) => Loaded::Errors(e),
            }
        }
    };
    if is_registry(&text) {
        return Loaded::Registry;
    }
    match loader.load_text_at(&found.display, &text, &found.path) {
        Ok(m) => Loaded::Matrix(Box::new(m)),
        Err(e) => Loaded::Errors(e),
    }
}

/// Loads files on `threads` threads, keeping their order.
pub fn load_all(files: &[Found], loader: &Loader, threads: usize) -> Vec<Loaded> {
    crate::engine::pool::map(files, threads, |_, f| load_one(f, loader))
}

pub use crate::engine::pool::default_threads;

#[cfg(test)]
mod tests {
    use super::is_registry;

    #[test]
    fn a_registry_has_codes_and_no_rows_at_the_top() {
        // The definition: some line starts `codes:`, none starts `rows:`.
        let by_lines = |t: &str| {
            let top = |k: &str| t.lines().any(|l| l.starts_with(k));
            top("codes:") && !top("rows:")
        };
        for t in [
            "codes:\n  - name: X\n",
            "title: t\ncodes:\n  - name: X\n",
            "title: t\r\ncodes: []\r\n",
            "codes: []\nrows:\n  - name: a\n",
            "title: t\nrows: []\ncodes: []\n",
            "title: t\n  codes: []\n",
            "# codes:\nx: 1\n",
            "xcodes: []\n",
            "",
            "codes:",
            "rows:\ncodes:",
        ] {
            assert_eq!(is_registry(t), by_lines(t), "{t:?}");
        }
        assert!(is_registry("title: t\ncodes: []\n"));
        assert!(!is_registry("codes: []\nrows: []\n"));
    }
}
