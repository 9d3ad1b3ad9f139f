//! How paths are shown in test ids and messages.

use std::path::Path;

/// Display name of a path: relative to `cwd` (the run's working directory,
/// captured by the entry point) when below it, with `/` separators. An
/// empty `cwd` leaves the path as given.
pub fn display_name(path: &Path, cwd: &Path) -> String {
    let rel = if cwd.as_os_str().is_empty() {
        path
    } else {
        path.strip_prefix(cwd).unwrap_or(path)
    };
    let s = rel.to_string_lossy().replace('\\', "/");
    s.strip_prefix("./").map(str::to_string).unwrap_or(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_to_the_working_directory() {
        let cwd = Path::new("/work/repo");
        assert_eq!(
            display_name(Path::new("/work/repo/m/x.yaml"), cwd),
            "m/x.yaml"
        );
        assert_eq!(
            display_name(Path::new("/elsewhere/x.yaml"), cwd),
            "/elsewhere/x.yaml"
        );
        assert_eq!(
            display_name(Path::new("./m/x.yaml"), Path::new("")),
            "m/x.yaml"
        );
    }
}
