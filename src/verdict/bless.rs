//! Bless: a failing (or new) row's observed values written back into its
//! YAML file, in place, as insta's inline snapshots and expect-test do for
//! Rust code. The reviewer then reads the change in the pull request.
//!
//! What is written, under the row's `expect`:
//! - a new row (`expect: {}` or none, loaded as pending): `trace` and `stop`;
//! - a failing row: each asserted value that did not hold, among `trace`
//!   (lines that held stay as written), `stop`, `elapsed`, `records`,
//!   `output` and `error.code`. A snapshot row's trace stays in its
//!   snapshot file.
//!
//! Only those values change: [`crate::base::yaml_edit`] splices them into
//! the text and verifies every edit, so comments, key order, anchors and
//! formatting elsewhere stay byte-identical. The file is replaced
//! atomically (a temporary file in the same directory, then a rename), one
//! row at a time under the session's lock. A run whose harness saw
//! something wrong (an extra call, an unused answer, a hung system) is
//! never blessed, and neither is anything under `CI=true`
//! ([`refused_under_ci`]). After writing, the row is judged again against
//! what was written: it passes only if every problem was blessed away.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::base::env::Env;
use crate::base::yaml::{self, Seg, Value};
use crate::base::yaml_edit::{self, NewValue};
use crate::exec::run::{Observation, RunEnd};
use crate::model::{Matrix, Row};
use crate::verdict::failure::{Failure, Problem, ProblemKind};
use crate::verdict::lines;

/// One row whose file bless changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Blessed {
    /// The matrix file as shown.
    pub file: String,
    /// The row's name.
    pub row: String,
    /// The keys written under `expect` (`trace`, `stop`, `error.code`).
    pub keys: Vec<String>,
}

/// A blessing run: serialises writes to matrix files and keeps what was
/// written, for the summary.
#[derive(Debug, Default)]
pub struct Session {
    written: Mutex<Vec<Blessed>>,
}

/// Why bless is refused under CI, when it is.
pub fn refused_under_ci(env: &Env) -> Option<String> {
    let ci = match env.var("CI") {
        Some("false") | Some("0") | Some("") => false,
        None => env.var("TF_BUILD").is_some() || env.var("GITHUB_ACTIONS").is_some(),
        Some(_) => true,
    };
    ci.then(|| {
        "bless is refused under CI (CI is set): it writes matrix files; bless locally, review the diff and commit it".to_string()
    })
}

/// The values bless would write for a row, as paths under `expect`.
pub fn values(row: &Row, obs: &Observation) -> Vec<(Vec<&'static str>, NewValue)> {
    let exp = &row.expect;
    let mut out: Vec<(Vec<&'static str>, NewValue)> = Vec::new();
    let expected = exp.trace.as_deref().unwrap_or(&[]);
    if !exp.snapshot && (exp.pending || exp.trace.is_some()) {
        let written: Vec<String> = obs
            .lines
            .iter()
            .enumerate()
            .map(|(i, l)| {
                let (text, _) = lines::shown(lines::expected_for(expected, i, l), l);
                text.split(' ')
                    .filter(|t| !t.ends_with(&format!("={}", lines::ABSENT)))
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .collect();
        let same = exp
            .trace
            .as_ref()
            .is_some_and(|t| t.iter().map(|l| &l.text).eq(written.iter()));
        if !same && !written.is_empty() {
            out.push((vec!["trace"], NewValue::Lines(written)));
        }
    }
    let stop = obs.stop();
    if exp.pending || exp.stop.as_deref().is_some_and(|s| s != stop) {
        out.push((vec!["stop"], NewValue::Str(stop.to_string())));
    }
    if let Some(spec) = &exp.elapsed {
        if !spec.holds(obs.returned_at) {
            out.push((
                vec!["elapsed"],
                NewValue::Str(crate::base::duration::format(obs.returned_at)),
            ));
        }
    }
    if let Some(want) = exp.records {
        if want != obs.records {
            out.push((vec!["records"], NewValue::Raw(obs.records.to_string())));
        }
    }
    if let Some(want) = &exp.output {
        let got = obs.output().to_string();
        if &got != want {
            out.push((vec!["output"], NewValue::Str(got)));
        }
    }
    if let (Some(want), RunEnd::Returned(Err(got))) = (&exp.error, &obs.end) {
        if let (Some(code), Some(seen)) = (&want.code, &got.code) {
            if code != seen {
                out.push((vec!["error", "code"], NewValue::Str(seen.clone())));
            }
        }
    }
    out
}

impl Session {
    /// A session with nothing written yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// What was written so far, in the order it was written.
    pub fn written(&self) -> Vec<Blessed> {
        crate::base::lock(&self.written).clone()
    }

    /// The summary a run prints: every blessed row and the keys written.
    pub fn summary(&self) -> Option<String> {
        let w = self.written();
        if w.is_empty() {
            return None;
        }
        let mut s = format!(
            "blessed {} row{} (review the change with `git diff`):\n",
            w.len(),
            if w.len() == 1 { "" } else { "s" }
        );
        for b in &w {
            s.push_str(&format!(
                "  {}::{} ({})\n",
                b.file,
                b.row,
                b.keys.join(", ")
            ));
        }
        Some(s)
    }

    /// Blesses a row that failed: writes its observed values into its file
    /// and judges it again against them. Returns the new verdict: `Ok` when
    /// every problem was blessed away, otherwise the problems left (and
    /// what was written, or why nothing was).
    pub fn bless(
        &self,
        matrix: &Matrix,
        row: &Row,
        obs: &Observation,
        failure: Failure,
        rejudge: impl FnOnce(&Row) -> Result<(), Failure>,
    ) -> Result<(), Failure> {
        let refuse = |why: String| {
            let mut f = failure.clone();
            f.problems.push(Problem::new(
                ProblemKind::Bless,
                format!("not blessed: {why}"),
            ));
            Err(f)
        };
        if let Some(harness) = obs.failures.first() {
            let first = harness.lines().next().unwrap_or_default();
            return refuse(format!(
                "the run itself went wrong ({first}); fix the row's inject first"
            ));
        }
        if let Some(l) = obs
            .lines
            .iter()
            .find(|l| crate::model::Decision::parse(l.decision).is_none())
        {
            return refuse(format!(
                "call {} ended `{}`: only runs that end can be written",
                crate::exec::trace::call_label(&l.route, l.attempt),
                l.decision
            ));
        }
        let values = values(row, obs);
        if values.is_empty() {
            return Err(failure);
        }
        let blessed_row = match blessed(row, &values) {
            Ok(r) => r,
            Err(e) => return refuse(e),
        };
        let keys: Vec<String> = values.iter().map(|(p, _)| p.join(".")).collect();
        {
            let mut written = crate::base::lock(&self.written);
            if let Err(e) = write(Path::new(&matrix.file), row, &values) {
                drop(written);
                return refuse(format!("{}: {e}", matrix.file));
            }
            written.push(Blessed {
                file: matrix.file.clone(),
                row: row.name.clone(),
                keys: keys.clone(),
            });
        }
        rejudge(&blessed_row).map_err(|mut f| {
            f.problems.push(Problem::new(
                ProblemKind::Bless,
                format!(
                    "blessed {} into {}; the problems above remain (bless writes only those keys)",
                    keys.join(", "),
                    matrix.file
                ),
            ));
            f
        })
    }
}

/// The row as it reads after bless wrote `values`.
fn blessed(row: &Row, values: &[(Vec<&'static str>, NewValue)]) -> Result<Row, String> {
    let mut r = row.clone();
    let e = &mut r.expect;
    e.pending = false;
    for (path, v) in values {
        let text = match v {
            NewValue::Str(s) | NewValue::Raw(s) => s.clone(),
            _ => String::new(),
        };
        match (path.as_slice(), v) {
            (["trace"], NewValue::Lines(ls)) => {
                let parsed: Result<Vec<_>, String> = ls
                    .iter()
                    .map(|l| crate::load::trace_line::parse_line(l, &[]))
                    .collect();
                e.trace =
                    Some(parsed.map_err(|err| format!("observed line does not parse: {err}"))?);
            }
            (["stop"], _) => e.stop = Some(text),
            (["elapsed"], _) => {
                e.elapsed = Some(crate::base::duration::DurationSpec::parse(&text)?);
            }
            (["records"], _) => e.records = text.parse().ok(),
            (["output"], _) => e.output = Some(text),
            (["error", "code"], _) => {
                if let Some(err) = e.error.as_mut() {
                    err.code = Some(text);
                }
            }
            _ => {}
        }
    }
    Ok(r)
}

/// Writes `values` into the row's `expect` in `file`, atomically.
fn write(file: &Path, row: &Row, values: &[(Vec<&'static str>, NewValue)]) -> Result<(), String> {
    let meta = std::fs::symlink_metadata(file).map_err(|e| format!("cannot read it: {e}"))?;
    if !meta.file_type().is_file() {
        return Err("not a regular file (bless writes only regular files)".into());
    }
    let text = std::fs::read_to_string(file).map_err(|e| format!("cannot read it: {e}"))?;
    let edited = edit(&text, row, values)?;
    write_atomic(file, &edited).map_err(|e| format!("cannot write it: {e}"))
}

/// The file's text with `values` written into the row's `expect`. The row
/// is found by name in the text as it is now (earlier blessings of the
/// same file moved things).
pub fn edit(
    text: &str,
    row: &Row,
    values: &[(Vec<&'static str>, NewValue)],
) -> Result<String, String> {
    let doc = yaml::parse_value(text).map_err(|e| e.message)?;
    let index = doc
        .get("rows")
        .and_then(Value::as_sequence)
        .and_then(|rows| {
            rows.iter()
                .position(|r| r.get("name").and_then(Value::as_str) == Some(&row.name))
        })
        .ok_or_else(|| format!("row `{}` is no longer in the file", row.name))?;
    let row_path = vec![Seg::Key("rows".into()), Seg::Index(index)];
    let expect = doc["rows"][index].get("expect");
    let empty = match expect {
        None | Some(Value::Null) => true,
        Some(Value::Mapping(m)) => m.is_empty(),
        _ => false,
    };
    let mut path = row_path.clone();
    path.push(Seg::Key("expect".into()));
    if empty {
        let entries = values
            .iter()
            .map(|(p, v)| (p.join("."), v.clone()))
            .collect();
        return yaml_edit::set(text, &path, &NewValue::Map(entries));
    }
    let mut text = text.to_string();
    for (p, v) in values {
        let mut at = path.clone();
        at.extend(p.iter().map(|k| Seg::Key((*k).into())));
        text = yaml_edit::set(&text, &at, v)?;
    }
    Ok(text)
}

/// Replaces a file atomically: a temporary file in the same directory,
/// then a rename; the temporary file is removed when the rename fails.
fn write_atomic(path: &Path, text: &str) -> std::io::Result<()> {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp: PathBuf = dir.join(format!(".{name}.bless-{}.tmp", std::process::id()));
    std::fs::write(&tmp, text)?;
    std::fs::rename(&tmp, path).inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
    })
}
