//! Selecting rows by tag (the harness's `tag:` filter and the CLI's
//! `--tag` end here).

/// Whether a row with `row_tags` is kept by `wanted` (empty keeps all).
pub fn has_tag(wanted: &[String], row_tags: &[String]) -> bool {
    wanted.is_empty() || row_tags.iter().any(|t| wanted.contains(t))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_selects_all() {
        assert!(has_tag(&[], &[]));
        assert!(has_tag(&["a".to_string()], &["a".to_string()]));
        assert!(!has_tag(&["a".to_string()], &["b".to_string()]));
    }
}
