//! Selecting rows by tag and file glob in the cargo harness, whose
//! arguments are libtest's (fixed): a filter `tag:NAME[,NAME]` becomes a tag
//! selection, `FAULTMATRIX_TAGS=a,b` adds tags, and `FAULTMATRIX_FILES`
//! (comma-separated globs, relative to the matrix root) replaces the file
//! patterns. The CLI has `--tag` and path globs for the same.

use libtest_mimic::Arguments;

use crate::base::env::Env;

/// Whether a row with `row_tags` is kept by `wanted` (empty keeps all).
pub fn has_tag(wanted: &[String], row_tags: &[String]) -> bool {
    wanted.is_empty() || row_tags.iter().any(|t| wanted.contains(t))
}

fn split(list: &str) -> impl Iterator<Item = String> + '_ {
    list.split(',')
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(str::to_string)
}

/// Applies a `tag:` filter and the `FAULTMATRIX_TAGS` / `FAULTMATRIX_FILES`
/// variables to harness settings.
pub fn from_env(args: &mut Arguments, tags: &mut Vec<String>, globs: &mut Vec<String>, env: &Env) {
    apply(
        args,
        tags,
        globs,
        env.var("FAULTMATRIX_TAGS"),
        env.var("FAULTMATRIX_FILES"),
    );
}

/// [`from_env`] with explicit values.
pub fn apply(
    args: &mut Arguments,
    tags: &mut Vec<String>,
    globs: &mut Vec<String>,
    env_tags: Option<&str>,
    env_files: Option<&str>,
) {
    if let Some(list) = args.filter.as_deref().and_then(|f| f.strip_prefix("tag:")) {
        tags.extend(split(list));
        args.filter = None;
        args.exact = false;
    }
    if let Some(list) = env_tags {
        tags.extend(split(list));
    }
    if let Some(list) = env_files {
        let files: Vec<String> = split(list).collect();
        if !files.is_empty() {
            *globs = files;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tag_filter_becomes_a_tag_selection() {
        let mut args = Arguments {
            filter: Some("tag:retry, fallback".into()),
            ..Arguments::default()
        };
        let (mut tags, mut globs) = (Vec::new(), vec!["**/*.yaml".to_string()]);
        apply(
            &mut args,
            &mut tags,
            &mut globs,
            Some("slow"),
            Some("sub/*.yaml"),
        );
        assert_eq!(args.filter, None);
        assert_eq!(tags, ["retry", "fallback", "slow"]);
        assert_eq!(globs, ["sub/*.yaml"]);
        assert!(has_tag(&tags, &["slow".to_string()]));
        assert!(!has_tag(&tags, &["other".to_string()]));
        assert!(has_tag(&[], &[]));
    }
}
