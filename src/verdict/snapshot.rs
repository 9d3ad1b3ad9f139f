//! Snapshot rows: a row with `expect: { snapshot: true }` leaves its trace
//! (and stop reason) to a snapshot file that a reviewer accepts.
//!
//! Every snapshot is named explicitly after its file and row and stored
//! beside the matrix, in a `snapshots/` folder:
//!
//! ```text
//! matrices/seed-fallback.yaml  row "503 twice on A then B succeeds"
//! matrices/snapshots/seed-fallback__503_twice_on_a_then_b_succeeds.snap
//! ```
//!
//! The files are insta's `.snap` format, written here (insta itself is not
//! a dependency): a header naming the matrix file and the row, then the
//! trace. The usual workflow applies: a new or changed trace fails the row
//! and writes `….snap.new` beside the accepted file; `cargo insta review`
//! (or `cargo insta accept`) moves it in. What happens is decided by
//! [`Options`], read once at the entry point as insta reads its
//! environment (`INSTA_UPDATE`, `INSTA_FORCE_PASS`, `CI`).
//!
//! Under CI (`CI` set to anything but `false`/`0`) a new or changed
//! snapshot fails the row and nothing is written at all, whatever
//! `INSTA_UPDATE` says.
//!
//! [`unreferenced`] lists snapshot files that no snapshot row names; CI
//! rejects them (`faultmatrix snapshots`).

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use crate::base::env::Env;
use crate::exec::run::Observation;
use crate::model::{Matrix, Row};
use crate::verdict::failure::{Problem, ProblemKind};

/// The folder, beside the matrices, that holds snapshots.
pub const DIR: &str = "snapshots";

pub use crate::base::label::{slug, snapshot_name as name};

/// The folder holding the snapshots of a matrix file.
pub fn dir_of(matrix_file: &str) -> PathBuf {
    let parent = Path::new(matrix_file)
        .parent()
        .unwrap_or_else(|| Path::new(""));
    parent.join(DIR)
}

/// The accepted snapshot file of a row.
pub fn path(matrix_file: &str, row_name: &str) -> PathBuf {
    dir_of(matrix_file).join(format!("{}.snap", name(matrix_file, row_name)))
}

/// What a snapshot holds: the observed trace lines, then `stop: <reason>`.
pub fn contents(obs: &Observation) -> String {
    let mut s = String::new();
    for l in &obs.lines {
        s.push_str(&l.render(None));
        s.push('\n');
    }
    s.push_str("stop: ");
    s.push_str(obs.stop());
    s.push('\n');
    s
}

/// When snapshot files are written (`INSTA_UPDATE`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Update {
    /// `auto` (the default): new and changed snapshots go to `.snap.new`.
    #[default]
    Auto,
    /// `always`: the accepted file is overwritten (the row passes).
    Always,
    /// `unseen`: a new snapshot is accepted at once, a changed one goes to
    /// `.snap.new`.
    Unseen,
    /// `new`: new and changed snapshots go to `.snap.new`.
    New,
    /// `no`: nothing is written.
    No,
}

/// How snapshot rows behave, read once at the entry point.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Options {
    /// Under CI: a difference always fails and nothing is written.
    pub ci: bool,
    /// When files are written.
    pub update: Update,
    /// `INSTA_FORCE_PASS=1` (as `cargo insta test` sets it): pending
    /// snapshots are written and the row passes. Never under CI.
    pub force_pass: bool,
}

impl Options {
    /// The options insta would read from this environment.
    pub fn from_env(env: &Env) -> Self {
        let ci = match env.var("CI") {
            Some("false") | Some("0") | Some("") => false,
            None => env.var("TF_BUILD").is_some(),
            Some(_) => true,
        };
        let update = match env.var("INSTA_UPDATE") {
            Some("always") | Some("1") => Update::Always,
            Some("unseen") => Update::Unseen,
            Some("new") => Update::New,
            Some("no") | Some("0") => Update::No,
            _ => Update::Auto,
        };
        Self {
            ci,
            update,
            force_pass: env.var("INSTA_FORCE_PASS") == Some("1"),
        }
    }
}

/// The accepted snapshot's text, without its header.
fn accepted(path: &Path) -> Option<String> {
    // Never read through a symlinked folder or file (it could point
    // outside the tree); the write that follows is refused with a message.
    let linked = |p: &Path| std::fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_symlink());
    if linked(path) || path.parent().is_some_and(linked) {
        return None;
    }
    let text = crate::base::confine::read_text(path, crate::base::confine::MAX_FILE_BYTES).ok()?;
    Some(body_of(&text).to_string())
}

/// The contents of a `.snap` file: what follows its `---` header.
fn body_of(text: &str) -> &str {
    let Some(rest) = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))
    else {
        return text;
    };
    match rest.find("\n---\n") {
        Some(i) => &rest[i + 5..],
        None => match rest.find("\n---\r\n") {
            Some(i) => &rest[i + 6..],
            None => text,
        },
    }
}

fn normalise(s: &str) -> String {
    s.trim_end().replace("\r\n", "\n")
}

/// A `.snap` file: insta's header (the matrix file and line as the source,
/// the row as the description), then the trace.
fn snap_file(matrix: &Matrix, row: &Row, contents: &str) -> String {
    let quote = |s: &str| serde_json::to_string(s).unwrap_or_else(|_| format!("{s:?}"));
    let line = matrix.positions().key(&row.path).line;
    format!(
        "---\nsource: {}\nassertion_line: {line}\ndescription: {}\ninput_file: {}\n---\n{contents}",
        quote(&matrix.file),
        quote(&format!("{} :: {}", matrix.file, row.name)),
        quote(&matrix.file),
    )
}

/// Writes a file atomically (a temporary file beside it, then a rename).
/// The write stays beside the matrix: a `snapshots/` folder (or file) that
/// is a symlink resolving elsewhere is refused (see
/// [`crate::base::confine`]).
fn write_atomic(path: &Path, text: &str) -> std::io::Result<()> {
    let refused = |why: String| std::io::Error::new(std::io::ErrorKind::PermissionDenied, why);
    let folder = path.parent().filter(|d| !d.as_os_str().is_empty());
    let matrix_dir = folder
        .and_then(Path::parent)
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let root = std::fs::canonicalize(matrix_dir)?;
    if let Some(dir) = folder {
        if std::fs::symlink_metadata(dir).is_ok_and(|m| m.file_type().is_symlink()) {
            return Err(refused(format!(
                "{} is a symlink: snapshots are written only into a real folder beside the matrix",
                dir.display()
            )));
        }
    }
    crate::base::confine::check_write(&root, path).map_err(refused)?;
    if let Some(dir) = folder {
        std::fs::create_dir_all(dir)?;
    }
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(format!(".tmp-{}", std::process::id()));
    let tmp = PathBuf::from(tmp);
    {
        use std::io::Write;
        let _ = std::fs::remove_file(&tmp);
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)?;
        f.write_all(text.as_bytes())?;
    }
    std::fs::rename(&tmp, path).inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
    })
}

/// Checks a snapshot row's observed trace against its accepted snapshot.
/// `Ok(())` when they match, when the snapshot was accepted in place
/// (`INSTA_UPDATE=always`, or `unseen` for a new one), or when the user set
/// `INSTA_FORCE_PASS=1` (the pending file is written for review). Under CI
/// a difference always fails and nothing is written.
pub fn check(matrix: &Matrix, row: &Row, obs: &Observation, opts: &Options) -> Result<(), Problem> {
    let observed = contents(obs);
    let file = path(&matrix.file, &row.name);
    let shown = file.display().to_string();
    let old = accepted(&file);
    if old
        .as_deref()
        .is_some_and(|o| normalise(o) == normalise(&observed))
    {
        return Ok(());
    }
    let problem = |text: String| Err(Problem::new(ProblemKind::Snapshot, text));
    let diff_text =
        |old: &str| crate::verdict::compare::diff(&format!("{}\n", normalise(old)), &observed);
    if opts.ci {
        return problem(match &old {
            None => format!(
                "snapshot {shown} does not exist (new snapshot under CI: nothing was written)\nobserved:\n{}\
                 run `cargo test` locally, then `cargo insta review` and commit the accepted snapshot\n",
                indent(&observed)
            ),
            Some(o) => format!(
                "snapshot {shown} differs (- accepted, + observed; under CI nothing was written):\n{}\
                 run `cargo test` locally, then `cargo insta review` and commit the accepted snapshot\n",
                diff_text(o)
            ),
        });
    }
    let accept = match opts.update {
        Update::Always => true,
        Update::Unseen => old.is_none(),
        Update::Auto | Update::New | Update::No => false,
    };
    let text = snap_file(matrix, row, &observed);
    if accept {
        return write_atomic(&file, &text).map_err(|e| {
            Problem::new(
                ProblemKind::Snapshot,
                format!("snapshot {shown}: cannot write it: {e}"),
            )
        });
    }
    let pending = format!("{shown}.new");
    if opts.update != Update::No {
        if let Err(e) = write_atomic(Path::new(&pending), &text) {
            return problem(format!("snapshot {shown}: cannot write {pending}: {e}"));
        }
    }
    if opts.force_pass {
        // `cargo insta test`: the pending snapshot is written; review decides.
        return Ok(());
    }
    let written = if opts.update == Update::No {
        "nothing was written (INSTA_UPDATE=no)".to_string()
    } else {
        format!("written to {pending}")
    };
    problem(match &old {
        None => format!(
            "new snapshot {shown} ({written}):\n{}\
             review it with `cargo insta review` (or accept with `cargo insta accept`)\n",
            indent(&observed)
        ),
        Some(o) => format!(
            "snapshot {shown} differs (- accepted, + observed; {written}):\n{}\
             review it with `cargo insta review` (or accept with `cargo insta accept`)\n",
            diff_text(o)
        ),
    })
}

fn indent(s: &str) -> String {
    s.lines().map(|l| format!("  {l}\n")).collect()
}

/// Snapshot files (`*.snap`) in `snapshots/` folders beside the given
/// matrices that no snapshot row of those matrices names.
pub fn unreferenced(matrices: &[Matrix]) -> Vec<PathBuf> {
    let mut dirs: HashSet<PathBuf> = HashSet::new();
    let mut wanted: HashSet<PathBuf> = HashSet::new();
    for m in matrices {
        dirs.insert(dir_of(&m.file));
        for r in &m.rows {
            if r.expect.snapshot {
                wanted.insert(path(&m.file, &r.name));
            }
        }
    }
    let mut out = Vec::new();
    for d in dirs {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            let is_snap = p.extension().is_some_and(|x| x == "snap");
            if is_snap && !wanted.contains(&p) {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// Pending snapshots (`*.snap.new`, not reviewed yet) beside the given
/// matrices.
pub fn pending(matrices: &[Matrix]) -> Vec<PathBuf> {
    let dirs: HashSet<PathBuf> = matrices.iter().map(|m| dir_of(&m.file)).collect();
    let mut out: Vec<PathBuf> = dirs
        .iter()
        .filter_map(|d| std::fs::read_dir(d).ok())
        .flat_map(|e| e.flatten().map(|e| e.path()))
        .filter(|p| p.to_string_lossy().ends_with(".snap.new"))
        .collect();
    out.sort();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_body_follows_the_header() {
        assert_eq!(
            body_of("---\nsource: x\n---\nA1 200 return\n"),
            "A1 200 return\n"
        );
        assert_eq!(body_of("A1 200 return\n"), "A1 200 return\n");
        let env = Env::from_pairs([("CI", "true"), ("INSTA_UPDATE", "always")]);
        let o = Options::from_env(&env);
        assert!(o.ci && o.update == Update::Always && !o.force_pass);
        assert!(!Options::from_env(&Env::from_pairs([("CI", "false")])).ci);
    }

    #[test]
    fn names_follow_file_and_row() {
        assert_eq!(slug("503 twice on A, then B!"), "503_twice_on_a_then_b");
        assert_eq!(
            path("matrices/sub/x-y.yaml", "A then B"),
            Path::new("matrices/sub/snapshots/x_y__a_then_b.snap")
        );
        assert_eq!(slug("***"), "row");
    }
}
