//! What a command system said: the end of its stdout and stderr, its JSON
//! result, how it ended, and the shell lines that run it by hand. Kept on
//! every command row's [`Observation`](crate::exec::observation::Observation)
//! (bounded), shown only under a failing row's problems, so debugging a
//! failure does not start with `faultmatrix serve` and guessing the
//! command's environment.

use crate::exec::observation::CommandOutput;
use crate::model::command::CommandSpec;
use crate::model::{Matrix, Row};

/// `FAULTMATRIX_URL_<ROUTE>`, as the runner names it.
fn url_var(route: &str) -> String {
    crate::base::label::route_var("FAULTMATRIX_URL_", route)
}

/// Lines kept from the end of each stream.
pub const MAX_LINES: usize = 20;
/// Bytes kept from the end of each stream (whole lines, but for a last
/// line longer than this).
pub const MAX_BYTES: usize = 4000;
/// Characters kept of the JSON result line.
pub const MAX_JSON: usize = 2000;

/// What the command printed, bounded, and `ended` (how it ended, in
/// words); `reproduce` is left empty (see [`reproduce`]).
pub fn output(ended: String, stdout: &[u8], stderr: &[u8], json: Option<&str>) -> CommandOutput {
    CommandOutput {
        ended,
        stdout: tail(stdout),
        stderr: tail(stderr),
        json: json.map(|j| cut_chars(j, MAX_JSON)),
        reproduce: Vec::new(),
    }
}

/// The last [`MAX_LINES`] lines of `bytes`, at most [`MAX_BYTES`] bytes,
/// preceded by a line saying how many lines were cut.
pub fn tail(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let lines: Vec<&str> = text.lines().collect();
    let mut kept: Vec<String> = Vec::new();
    let mut size = 0;
    for line in lines.iter().rev() {
        if kept.len() == MAX_LINES {
            break;
        }
        let line = if line.len() > MAX_BYTES {
            let mut start = line.len() - MAX_BYTES;
            while !line.is_char_boundary(start) {
                start += 1;
            }
            format!("… ({start} bytes cut) {}", &line[start..])
        } else {
            line.to_string()
        };
        if !kept.is_empty() && size + line.len() > MAX_BYTES {
            break;
        }
        size += line.len();
        kept.push(line);
    }
    kept.reverse();
    let cut = lines.len() - kept.len();
    let mut out = String::new();
    if cut > 0 {
        let cut_bytes: usize = lines[..cut].iter().map(|l| l.len() + 1).sum();
        out.push_str(&format!(
            "… {cut} earlier line(s) cut ({cut_bytes} bytes) …\n"
        ));
    }
    for l in kept {
        out.push_str(&l);
        out.push('\n');
    }
    out
}

/// `text`'s first `max` characters, and how many were cut.
fn cut_chars(text: &str, max: usize) -> String {
    let total = text.chars().count();
    if total <= max {
        return text.to_string();
    }
    let head: String = text.chars().take(max).collect();
    format!("{head} … ({} more characters cut)", total - max)
}

/// The shell lines that run the row by hand: `faultmatrix serve` for the
/// row's scripts (it prints each `FAULTMATRIX_URL_<ROUTE>=…` to export),
/// then the command in its directory with the variables the runner sets,
/// the system's and the row's `env` as written (the shell expands
/// `${VAR}` and `${VAR:-default}` as the runner does, and a secret taken
/// from the environment is not printed).
pub fn reproduce(matrix: &Matrix, row: &Row, spec: &CommandSpec) -> Vec<String> {
    let routes: Vec<String> = row.scripted_routes();
    let mut vars: Vec<(String, String)> = Vec::new();
    let routes_var: Vec<String> = routes
        .iter()
        .map(|r| format!("{r}=${{{}}}", url_var(r)))
        .collect();
    vars.push(("FAULTMATRIX_ROUTES".into(), routes_var.join(",")));
    vars.push((
        "FAULTMATRIX_REQUEST_ID".into(),
        quote(&crate::exec::observation::request_id(
            &matrix.file,
            &row.name,
        )),
    ));
    vars.push(("FAULTMATRIX_ROW".into(), quote(&row.name)));
    let file = std::fs::canonicalize(&matrix.file)
        .map(|p| p.display().to_string())
        .unwrap_or_else(|_| matrix.file.clone());
    vars.push(("FAULTMATRIX_FILE".into(), quote(&file)));
    if let Some(d) = row.settings.deadline {
        vars.push(("FAULTMATRIX_DEADLINE_MS".into(), d.as_millis().to_string()));
    }
    for (k, v) in spec.env.iter().chain(row.settings.env.iter()) {
        vars.push((k.clone(), quote_expanding(v)));
    }
    let dir = match &spec.cwd {
        Some(c) => std::fs::canonicalize(c).unwrap_or_else(|_| c.clone()),
        None => std::env::current_dir().unwrap_or_default(),
    };
    let exports: Vec<String> = routes
        .iter()
        .map(|r| format!("{}=http://127.0.0.1:PORT", url_var(r)))
        .collect();
    let mut command = format!("cd {} &&", quote(&dir.display().to_string()));
    for (k, v) in &vars {
        command.push_str(&format!(" {k}={v}"));
    }
    for a in &spec.argv {
        command.push(' ');
        command.push_str(&quote_expanding(a));
    }
    vec![
        format!(
            "faultmatrix serve {} --row {}",
            quote(&matrix.file),
            quote(&row.name)
        ),
        format!(
            "# in a second shell: export what it printed ({})",
            exports.join(" ")
        ),
        command,
    ]
}

/// `s` as one shell word, quoted only when it must be.
pub fn quote(s: &str) -> String {
    let plain = !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "_-./:=,+@%".contains(c));
    if plain {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

/// `s` as one shell word in which `${…}` still expands (the runner's
/// `${VAR}` and `${VAR:-default}`), and nothing else does.
pub fn quote_expanding(s: &str) -> String {
    if !s.contains("${") {
        return quote(s);
    }
    let mut out = String::from("\"");
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '$' if chars.peek() == Some(&'{') => out.push('$'),
            '$' | '"' | '\\' | '`' => {
                out.push('\\');
                out.push(c);
            }
            _ => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tail_keeps_the_last_lines_and_says_what_it_cut() {
        let text: String = (1..=30).map(|i| format!("line {i}\n")).collect();
        let t = tail(text.as_bytes());
        let cut: usize = (1..=10).map(|i| format!("line {i}\n").len()).sum();
        assert!(
            t.starts_with(&format!(
                "… 10 earlier line(s) cut ({cut} bytes) …\nline 11\n"
            )),
            "{t}"
        );
        assert!(t.ends_with("line 30\n"), "{t}");
        assert_eq!(t.lines().count(), 21);
        assert_eq!(tail(b""), "");
    }

    #[test]
    fn a_tail_is_bounded_in_bytes_even_for_one_long_line() {
        let long = "x".repeat(10 * MAX_BYTES);
        let t = tail(format!("short\n{long}\n").as_bytes());
        assert!(t.len() < MAX_BYTES + 100, "{}", t.len());
        assert!(t.starts_with("… 1 earlier line(s) cut (6 bytes) …\n… (36000 bytes cut) xxx"));
    }

    #[test]
    fn a_json_result_is_bounded() {
        let j = format!("{{\"output\": \"{}\"}}", "y".repeat(3000));
        let c = cut_chars(&j, MAX_JSON);
        assert!(c.ends_with(&format!("… ({} more characters cut)", j.len() - MAX_JSON)));
        assert_eq!(cut_chars("{}", MAX_JSON), "{}");
    }

    #[test]
    fn words_are_quoted_for_the_shell() {
        assert_eq!(quote("python3"), "python3");
        assert_eq!(quote("a b"), "'a b'");
        assert_eq!(quote("it's"), r"'it'\''s'");
        assert_eq!(quote(""), "''");
        assert_eq!(quote_expanding("${PY:-python3}"), "\"${PY:-python3}\"");
        assert_eq!(
            quote_expanding("${K} \"$x\" `y`"),
            r#""${K} \"\$x\" \`y\`""#
        );
    }
}
