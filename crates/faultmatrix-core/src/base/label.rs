//! Names derived from route names: the call label of a trace line (`A1`,
//! `gpt4#1`) and the environment variable that carries a route's URL.

pub use faultmatrix_controller::outcome::call_label;

/// The environment variable `prefix + ROUTE`: the route name upper-cased,
/// every other character than an ASCII letter or digit written as `_`
/// (`FAULTMATRIX_URL_OPENAI_PRIMARY` for `openai-primary`).
pub fn route_var(prefix: &str, route: &str) -> String {
    let mut s = String::from(prefix);
    for c in route.chars() {
        s.push(if c.is_ascii_alphanumeric() {
            c.to_ascii_uppercase()
        } else {
            '_'
        });
    }
    s
}

/// Lowercase words joined by `_`: `503 twice on A` → `503_twice_on_a`.
pub fn slug(text: &str) -> String {
    let mut out = String::new();
    for c in text.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.ends_with('_') && !out.is_empty() {
            out.push('_');
        }
    }
    while out.ends_with('_') {
        out.pop();
    }
    if out.is_empty() {
        out.push_str("row");
    }
    out
}

/// The snapshot name of a row: `<file stem>__<row slug>`.
pub fn snapshot_name(matrix_file: &str, row_name: &str) -> String {
    let stem = std::path::Path::new(matrix_file)
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    format!("{}__{}", slug(&stem), slug(row_name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_and_variables() {
        assert_eq!(call_label("A", 1), "A1");
        assert_eq!(call_label("gpt4", 2), "gpt4#2");
        assert_eq!(
            route_var("FAULTMATRIX_URL_", "openai-primary"),
            "FAULTMATRIX_URL_OPENAI_PRIMARY"
        );
    }
}
