//! The authoring workflow as a user runs it: the `faultmatrix` binary in a
//! throw-away tree. Snapshot rows (new, accepted, changed; locally and under
//! CI), the `snapshots` check, tag selection, report files, GitHub
//! annotations, and plain output on a pipe.

use std::path::PathBuf;
use std::process::{Command, Output};

const MATRIX: &str = "title: authoring
policy:
  routes: [{ name: A, attempts: 3 }, { name: B, attempts: 1 }]
  backoff: { initial: 1s, factor: 2, cap: 30s, jitter: none }
  deadline: 30s
rows:
  - name: retry then success
    tags: [retry]
    inject: { A: [503, 200] }
    expect: { snapshot: true }

  - name: plain row
    tags: [plain]
    inject: { A: [200] }
    expect:
      trace: A1 200 return
";

struct Tree {
    dir: tempfile::TempDir,
}

impl Tree {
    fn new(matrix: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("matrices")).unwrap();
        std::fs::write(dir.path().join("matrices/auth.yaml"), matrix).unwrap();
        Self { dir }
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    fn run(&self, args: &[&str], env: &[(&str, &str)]) -> Output {
        let mut cmd = Command::new(crate::common::bin());
        cmd.args(args).current_dir(self.dir.path());
        for k in [
            "CI",
            "TF_BUILD",
            "GITHUB_ACTIONS",
            "INSTA_UPDATE",
            "INSTA_FORCE_PASS",
            "INSTA_OUTPUT",
            "INSTA_WORKSPACE_ROOT",
            "NO_COLOR",
        ] {
            cmd.env_remove(k);
        }
        for (k, v) in env {
            cmd.env(k, v);
        }
        cmd.output().unwrap()
    }

    fn snapshot_files(&self) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(self.path("matrices/snapshots"))
            .map(|d| {
                d.flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        v.sort();
        v
    }
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

const SNAP: &str = "matrices/snapshots/auth__retry_then_success.snap";

fn accept_pending(t: &Tree) {
    std::fs::rename(t.path(&format!("{SNAP}.new")), t.path(SNAP)).unwrap();
}

#[test]
fn a_new_snapshot_under_ci_fails_and_writes_nothing() {
    let t = Tree::new(MATRIX);
    let o = t.run(&["run", "matrices"], &[("CI", "true")]);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    let out = stdout(&o);
    assert!(
        out.contains(&format!(
            "snapshot {SNAP} does not exist (new snapshot under CI: nothing was written)\nobserved:\n  A1 503 UPSTREAM_UNAVAILABLE retry wait=1s\n  A2 200 return\n  stop: success\n"
        )),
        "{out}"
    );
    assert_eq!(t.snapshot_files(), Vec::<String>::new());
}

#[test]
fn review_cycle_new_accept_change() {
    let t = Tree::new(MATRIX);
    // New, locally: fails, writes a pending snapshot for `cargo insta review`.
    let o = t.run(&["run", "matrices"], &[]);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    assert!(stdout(&o).contains(&format!("new snapshot {SNAP} (written to {SNAP}.new)")));
    assert_eq!(t.snapshot_files(), ["auth__retry_then_success.snap.new"]);
    let pending = std::fs::read_to_string(t.path(&format!("{SNAP}.new"))).unwrap();
    assert!(pending.contains("description: \"matrices/auth.yaml :: retry then success\""));
    assert!(
        pending.ends_with(
            "---\nA1 503 UPSTREAM_UNAVAILABLE retry wait=1s\nA2 200 return\nstop: success\n"
        ),
        "{pending}"
    );

    // `snapshots` refuses an unreviewed snapshot.
    let o = t.run(&["snapshots"], &[]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stdout(&o).contains(
        "pending snapshot matrices/snapshots/auth__retry_then_success.snap.new was not reviewed"
    ));

    // Accepted (what `cargo insta accept` does): passes, also under CI.
    accept_pending(&t);
    let o = t.run(&["run", "matrices"], &[("CI", "true")]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    assert!(stdout(&o).ends_with("2 passed, 0 failed\n"));
    assert_eq!(t.run(&["snapshots"], &[]).status.code(), Some(0));

    // Changed under CI: fails with the diff; nothing written, even when
    // INSTA_UPDATE asks for it.
    let accepted = std::fs::read(t.path(SNAP)).unwrap();
    std::fs::write(
        t.path("matrices/auth.yaml"),
        MATRIX.replace("A: [503, 200]", "A: [503, 503, 200]"),
    )
    .unwrap();
    for update in ["auto", "always"] {
        let o = t.run(
            &["run", "matrices"],
            &[("CI", "true"), ("INSTA_UPDATE", update)],
        );
        assert_eq!(o.status.code(), Some(1));
        let out = stdout(&o);
        assert!(
            out.contains(&format!(
                "snapshot {SNAP} differs (- accepted, + observed; under CI nothing was written):\n  A1 503 UPSTREAM_UNAVAILABLE retry wait=1s\n- A2 200 return\n+ A2 503 UPSTREAM_UNAVAILABLE retry wait=2s\n+ A3 200 return\n  stop: success\n"
            )),
            "{out}"
        );
        assert_eq!(std::fs::read(t.path(SNAP)).unwrap(), accepted);
        assert_eq!(t.snapshot_files(), ["auth__retry_then_success.snap"]);
    }

    // Changed locally: a pending snapshot beside the untouched accepted one.
    let o = t.run(&["run", "matrices"], &[]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(std::fs::read(t.path(SNAP)).unwrap(), accepted);
    assert_eq!(
        t.snapshot_files(),
        [
            "auth__retry_then_success.snap",
            "auth__retry_then_success.snap.new"
        ]
    );
}

#[test]
fn unreferenced_snapshots_are_rejected() {
    let t = Tree::new(MATRIX);
    t.run(&["run", "matrices"], &[]);
    accept_pending(&t);
    let stale = t.path("matrices/snapshots/auth__a_row_that_was_renamed.snap");
    std::fs::copy(t.path(SNAP), &stale).unwrap();
    let o = t.run(&["snapshots", "matrices"], &[]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        stdout(&o),
        "error: unreferenced snapshot matrices/snapshots/auth__a_row_that_was_renamed.snap (no snapshot row names it: delete it, or run `faultmatrix snapshots --delete-unreferenced`)\n1 snapshot rows, 1 unreferenced, 0 pending\n"
    );
    let o = t.run(&["snapshots", "--delete-unreferenced"], &[]);
    assert_eq!(o.status.code(), Some(0));
    assert!(!stale.exists());
    assert!(t.path(SNAP).exists());
}

#[test]
fn tags_select_rows() {
    let t = Tree::new(MATRIX);
    let o = t.run(&["list", "--tag", "plain"], &[]);
    assert_eq!(stdout(&o), "matrices/auth.yaml::plain row\n");
    let o = t.run(
        &["run", "--tag", "plain", "--tag", "nothing"],
        &[("CI", "true")],
    );
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(
        stdout(&o),
        "ok      matrices/auth.yaml::plain row\n1 passed, 0 failed\n"
    );
    let o = t.run(&["run", "--tag", "nothing"], &[]);
    assert_eq!(o.status.code(), Some(2), "zero rows selected is an error");
}

#[test]
fn harness_selects_by_tag() {
    let t = Tree::new(MATRIX);
    let h = faultmatrix::harness::Harness::new(t.path("matrices"));
    let args = libtest_mimic::Arguments::default();
    assert_eq!(h.trials(&args).unwrap().len(), 2);
    let h = faultmatrix::harness::Harness::new(t.path("matrices")).tags(&["plain"]);
    let names: Vec<String> = h
        .trials(&args)
        .unwrap()
        .iter()
        .map(|t| t.name().to_string())
        .collect();
    assert_eq!(names.len(), 1);
    assert!(names[0].ends_with("auth.yaml::plain row"), "{names:?}");
}

const FAILING: &str = "title: failing
policy:
  routes: [{ name: A, attempts: 2 }]
  backoff: { initial: 1s, factor: 2, cap: 30s, jitter: none }
  deadline: 30s
rows:
  - name: passes
    inject: { A: [200] }
    expect: { trace: A1 200 return }

  - name: wrong <wait> & more
    inject: { A: [503, 200] }
    expect:
      trace: |
        A1 503 UPSTREAM_UNAVAILABLE retry wait=2s
        A2 200 return
";

#[test]
fn reports_junit_markdown_and_annotations() {
    let t = Tree::new(FAILING);
    let summary = t.path("step-summary.md");
    std::fs::write(&summary, "earlier step\n").unwrap();
    let o = t.run(
        &[
            "run",
            "matrices",
            "--junit",
            "out.xml",
            "--markdown",
            "out.md",
            "--html",
            "out.html",
        ],
        &[
            ("GITHUB_ACTIONS", "true"),
            ("GITHUB_STEP_SUMMARY", summary.to_str().unwrap()),
        ],
    );
    assert_eq!(o.status.code(), Some(1));
    let out = stdout(&o);
    assert!(!out.contains('\x1b'), "plain on a pipe: {out:?}");
    let ann: Vec<&str> = out.lines().filter(|l| l.starts_with("::error ")).collect();
    assert_eq!(ann.len(), 1, "{out}");
    assert!(
        ann[0].starts_with("::error file=matrices/auth.yaml,line=11,col=5,title=wrong <wait> & more::row `wrong <wait> & more` failed%0A"),
        "{}",
        ann[0]
    );

    let xml = std::fs::read_to_string(t.path("out.xml")).unwrap();
    assert_eq!(xml.matches("<testcase ").count(), 2);
    assert_eq!(xml.matches("<failure ").count(), 1);
    assert!(
        xml.contains(
            "<testsuites name=\"faultmatrix\" tests=\"2\" failures=\"1\" errors=\"0\" time=\""
        ),
        "{xml}"
    );
    assert!(xml.contains("<testcase classname=\"matrices/auth.yaml\" name=\"wrong &lt;wait&gt; &amp; more\" time=\""), "{xml}");
    assert!(xml.contains("<property name=\"line: wrong &lt;wait&gt; &amp; more\" value=\"matrices/auth.yaml:11\"/>"), "{xml}");
    assert!(
        xml.contains("<testcase classname=\"matrices/auth.yaml\" name=\"passes\" time=\""),
        "{xml}"
    );
    assert!(xml.contains("- A1 503 UPSTREAM_UNAVAILABLE retry wait=2s\n+ A1 503 UPSTREAM_UNAVAILABLE retry wait=1s\n"));

    let md = std::fs::read_to_string(t.path("out.md")).unwrap();
    assert_eq!(
        std::fs::read_to_string(&summary).unwrap(),
        format!("earlier step\n{md}"),
        "the job summary gets the Markdown report appended"
    );
    assert!(md.starts_with("## ❌ faultmatrix: 1 passed, 1 failed\n"));
    assert!(md.contains("| matrices/auth.yaml::wrong <wait> & more | `matrices/auth.yaml:11:5` |"));
    assert!(md.contains("```diff\n"));

    let html = std::fs::read_to_string(t.path("out.html")).unwrap();
    assert!(html.contains(
        "data-id=\"matrices/auth.yaml::wrong &lt;wait&gt; &amp; more\" data-calls=\"2\""
    ));
    assert!(!html.contains("src=\"http"), "self-contained");

    let o = t.run(&["run", "matrices", "--color", "always"], &[]);
    assert!(stdout(&o).contains("\x1b[31m- A1 503 UPSTREAM_UNAVAILABLE retry wait=2s\x1b[0m"));
}

#[test]
fn a_terminal_gets_colour_without_asking() {
    // `script` (util-linux, essential on Debian) gives the binary a pty.
    let t = Tree::new(FAILING);
    let bin = crate::common::bin();
    let bin = bin.display();
    let o = Command::new("script")
        .args(["-qec", &format!("{bin} run matrices"), "/dev/null"])
        .current_dir(t.dir.path())
        .env_remove("NO_COLOR")
        .env_remove("CI")
        .output()
        .expect("`script` runs the binary on a pseudo-terminal");
    let out = stdout(&o);
    assert!(
        out.contains("\x1b[31m- A1 503 UPSTREAM_UNAVAILABLE retry wait=2s\x1b[0m"),
        "{out:?}"
    );
    let o = Command::new("script")
        .args(["-qec", &format!("{bin} run matrices"), "/dev/null"])
        .current_dir(t.dir.path())
        .env("NO_COLOR", "1")
        .env_remove("CI")
        .output()
        .unwrap();
    assert!(!stdout(&o).contains("\x1b["), "NO_COLOR is honoured");
}

#[test]
fn progress_is_drawn_on_request_and_never_on_a_pipe() {
    let t = Tree::new(FAILING);
    let o = t.run(&["run", "matrices"], &[]);
    assert!(
        !String::from_utf8_lossy(&o.stderr).contains(" files, "),
        "no progress on a pipe"
    );
    let o = t.run(&["run", "matrices"], &[("FAULTMATRIX_PROGRESS", "always")]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("\r[1/1 files, "), "{err:?}");
    assert!(
        err.ends_with("\r\x1b[2K"),
        "the line is cleared at the end: {err:?}"
    );
    assert!(
        !stdout(&o).contains(" files, "),
        "progress goes to stderr only"
    );
}

#[test]
fn insta_force_pass_from_the_user_collects_but_ci_still_fails() {
    // `cargo insta test` sets INSTA_FORCE_PASS=1: every pending snapshot is
    // written and the run passes, for `cargo insta review` to decide.
    let t = Tree::new(MATRIX);
    let o = t.run(&["run", "matrices"], &[("INSTA_FORCE_PASS", "1")]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    assert_eq!(t.snapshot_files(), ["auth__retry_then_success.snap.new"]);
    // Under CI the same run fails and writes nothing more.
    std::fs::remove_file(t.path(&format!("{SNAP}.new"))).unwrap();
    let o = t.run(
        &["run", "matrices"],
        &[("INSTA_FORCE_PASS", "1"), ("CI", "true")],
    );
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(t.snapshot_files(), Vec::<String>::new());
}
