//! How paths are shown in test ids and messages.

use std::path::Path;

/// Display name of a path: relative to the current directory when below
/// it, with `/` separators.
pub fn display_name(path: &Path) -> String {
    let cwd = std::env::current_dir().ok();
    let rel = cwd
        .as_deref()
        .and_then(|c| path.strip_prefix(c).ok())
        .unwrap_or(path);
    let s = rel.to_string_lossy().replace('\\', "/");
    s.strip_prefix("./").map(str::to_string).unwrap_or(s)
}
