//! Loading registry files once per run. A thousand matrices that say
//! `registry: codes.yaml` share one parsed [`Registry`]: the file is read
//! each time (cheap) and parsed again only when its text changed, so an
//! edited registry is never served stale. The cache is a value the engine
//! owns ([`RegistryCache`]), not process-wide state.

use std::collections::HashMap;
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::base::diag::FileErrors;
use crate::model::registry::Registry;

/// Why a registry file could not be used: the load layer's error for
/// registries (a struct and its kind).
#[derive(Debug, Clone)]
pub struct RegistryError {
    /// The registry as shown in messages.
    pub file: String,
    /// What went wrong.
    pub kind: RegistryErrorKind,
}

/// The kinds of [`RegistryError`].
#[derive(Debug, Clone)]
pub enum RegistryErrorKind {
    /// The file could not be read (what the operating system said).
    Read(String),
    /// The file has errors (schema, a terminal code that recovers...).
    Invalid(Arc<FileErrors>),
}

impl std::fmt::Display for RegistryError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.kind {
            RegistryErrorKind::Read(why) => {
                write!(f, "error: cannot read registry `{}`: {why}", self.file)
            }
            RegistryErrorKind::Invalid(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for RegistryError {}

type Slot = (Arc<str>, Result<Arc<Registry>, Arc<FileErrors>>);

/// Registry files parsed once per text, for one run (the engine owns one;
/// nothing is kept between runs or across the process).
#[derive(Debug, Default)]
pub struct RegistryCache {
    map: Mutex<HashMap<(PathBuf, String), Slot>>,
    /// The run's working directory (registries are shown relative to it).
    cwd: PathBuf,
}

/// `a/b/../c.yaml` as `a/c.yaml`, without touching the file system.
pub fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                if matches!(out.components().next_back(), Some(Component::Normal(_))) {
                    out.pop();
                } else {
                    out.push("..");
                }
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// The name a registry file is shown under (relative to `cwd` when below
/// it, `/` separators), the same as discovery's.
pub fn display(path: &Path, cwd: &Path) -> String {
    crate::base::paths::display_name(&normalize(path), cwd)
}

impl RegistryCache {
    /// An empty cache.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty cache for a run in this working directory.
    pub fn in_dir(cwd: PathBuf) -> Self {
        Self {
            cwd,
            ..Self::default()
        }
    }

    /// The name a registry file is shown under in this run.
    pub fn display(&self, path: &Path) -> String {
        display(path, &self.cwd)
    }

    /// Loads a registry file, parsing it at most once per distinct text.
    pub fn load(&self, path: &Path) -> Result<Arc<Registry>, RegistryError> {
        self.load_with_text(path).map(|(r, _)| r)
    }

    /// [`Self::load`], with the text the registry was read from (what the
    /// model cache compares before it uses a stored matrix).
    pub fn load_with_text(&self, path: &Path) -> Result<(Arc<Registry>, Arc<str>), RegistryError> {
        let shown = self.display(path);
        let text = crate::base::confine::read_text(path, crate::base::confine::MAX_FILE_BYTES)
            .map_err(|e| RegistryError {
                file: shown.clone(),
                kind: RegistryErrorKind::Read(e.to_string()),
            })?;
        let canonical = std::fs::canonicalize(path).unwrap_or_else(|_| normalize(path));
        let key = (canonical.clone(), shown.clone());
        let invalid = |e: Arc<FileErrors>| RegistryError {
            file: shown.clone(),
            kind: RegistryErrorKind::Invalid(e),
        };
        {
            let map = crate::base::lock(&self.map);
            if let Some((cached, result)) = map.get(&key) {
                if **cached == *text {
                    let text = cached.clone();
                    return result.clone().map(|r| (r, text)).map_err(invalid);
                }
            }
        }
        let result = match crate::load::registry_from_text(&shown, &text) {
            Ok(mut r) => {
                r.path = Some(canonical);
                Ok(Arc::new(r))
            }
            Err(e) => Err(Arc::new(e)),
        };
        let text: Arc<str> = Arc::from(text);
        crate::base::lock(&self.map).insert(key, (text.clone(), result.clone()));
        result.map(|r| (r, text)).map_err(invalid)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalizes_parent_components() {
        assert_eq!(
            normalize(Path::new("matrices/sub/../codes.yaml")),
            PathBuf::from("matrices/codes.yaml")
        );
        assert_eq!(
            normalize(Path::new("./../x/./y.yaml")),
            PathBuf::from("../x/y.yaml")
        );
    }

    #[test]
    fn parses_once_and_reloads_edited_text() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("codes.yaml");
        let text = "version: 1\ncodes:\n  A_CODE: { retryable: false, escalate_to: x }\n";
        std::fs::write(&p, text).unwrap();
        let cache = RegistryCache::new();
        let a = cache.load(&p).unwrap();
        let b = cache.load(&p).unwrap();
        assert!(Arc::ptr_eq(&a, &b), "the same text is parsed once");
        std::fs::write(&p, text.replace("A_CODE", "B_CODE")).unwrap();
        let c = cache.load(&p).unwrap();
        assert_eq!(c.names().collect::<Vec<_>>(), ["B_CODE"]);
    }
}
