//! `faultmatrix run` streams: a line per row as it finishes, the failures
//! and the summary last, `--quiet`, and the progress line as
//! `FAULTMATRIX_PROGRESS` says.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use crate::common::{bin, cli, cli_env, write};

const QUICK: &str = "title: a
policy:
  routes: [{ name: A, attempts: 2 }]
  backoff: { initial: 1s, factor: 2, cap: 30s, jitter: none }
rows:
  - name: first
    inject: { A: [200] }
    expect: { trace: A1 200 return }
  - name: second
    inject: { A: [503, 200] }
    expect:
      trace: |
        A1 503 UPSTREAM_UNAVAILABLE retry wait=1s
        A2 200 return
";

#[test]
fn a_rows_line_is_written_before_the_run_ends() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "matrices/a.yaml", QUICK);
    // b.yaml's command waits until the test creates `go`: the run cannot
    // end before a.yaml's lines have been read.
    let go = dir.path().join("go");
    write(
        dir.path(),
        "matrices/b.yaml",
        &format!(
            "title: b\nsystem:\n  command: [sh, -c, 'while [ ! -e {} ]; do sleep 0.05; done']\n  timeout: 60s\nrows:\n  - name: waits\n    inject: {{ api: [200] }}\n    expect: {{ trace: api1 200 return }}\n",
            go.display()
        ),
    );
    let mut child = Command::new(bin())
        .args(["run", "matrices", "--threads", "1"])
        .current_dir(dir.path())
        .env_remove("FAULTMATRIX_PROGRESS")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let (tx, rx) = mpsc::channel();
    let out = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut seen = Vec::new();
    let got = |seen: &mut Vec<String>| {
        let l = rx
            .recv_timeout(Duration::from_secs(30))
            .unwrap_or_else(|_| panic!("no live line within 30 s (so far: {seen:?})"));
        seen.push(l);
    };
    got(&mut seen);
    got(&mut seen);
    assert_eq!(
        seen,
        [
            "ok      matrices/a.yaml::first",
            "ok      matrices/a.yaml::second"
        ]
    );
    assert!(child.try_wait().unwrap().is_none(), "still running b.yaml");
    std::fs::write(&go, "").unwrap();
    let status = child.wait().unwrap();
    let rest: Vec<String> = rx.iter().collect();
    assert_eq!(
        status.code(),
        Some(1),
        "b.yaml's command made no call: {rest:?}"
    );
    assert_eq!(rest[0], "FAILED  matrices/b.yaml::waits");
    assert_eq!(
        rest.last().unwrap(),
        "2 passed, 1 failed",
        "the summary is last"
    );
}

#[test]
fn quiet_prints_failures_and_the_summary_only() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "matrices/a.yaml", QUICK);
    let (code, out, _) = cli(dir.path(), &["run", "matrices"]);
    assert_eq!(code, 0);
    assert_eq!(
        out,
        "ok      matrices/a.yaml::first\nok      matrices/a.yaml::second\n2 passed, 0 failed\n"
    );
    let (code, out, err) = cli(dir.path(), &["run", "--quiet", "matrices"]);
    assert_eq!(
        (code, out.as_str(), err.as_str()),
        (0, "2 passed, 0 failed\n", "")
    );
}

#[test]
fn progress_follows_faultmatrix_progress() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "matrices/a.yaml", QUICK);
    let err_with = |v: Option<&str>| {
        let env: Vec<(&str, &str)> = v.map(|v| ("FAULTMATRIX_PROGRESS", v)).into_iter().collect();
        cli_env(dir.path(), &["run", "matrices"], &env).2
    };
    // On a pipe, `auto` (the default) draws nothing; `always` draws from
    // the start, with files and rows; `never` draws nothing.
    assert_eq!(err_with(None), "");
    assert_eq!(err_with(Some("auto")), "");
    assert_eq!(err_with(Some("never")), "");
    let err = err_with(Some("always"));
    assert!(err.contains("\r[1/1 files, 2 rows]"), "{err:?}");
    assert!(err.ends_with("\r\x1b[2K"), "{err:?}");
    // --quiet draws no progress either.
    let (_, _, err) = cli_env(
        dir.path(),
        &["run", "--quiet", "matrices"],
        &[("FAULTMATRIX_PROGRESS", "always")],
    );
    assert_eq!(err, "");
}

#[test]
fn a_terminal_gets_progress_once_a_run_lasts_a_second() {
    // `script` (util-linux) gives the binary a pty, as a terminal would.
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "matrices/a.yaml", QUICK);
    let on_a_pty = |dir: &std::path::Path| {
        let o = Command::new("script")
            .args([
                "-qec",
                &format!("{} run matrices", bin().display()),
                "/dev/null",
            ])
            .current_dir(dir)
            .env_remove("FAULTMATRIX_PROGRESS")
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .output()
            .unwrap();
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    let quick = on_a_pty(dir.path());
    assert!(quick.contains("2 passed, 0 failed"), "{quick:?}");
    assert!(
        !quick.contains(" files, "),
        "a quick run draws no progress: {quick:?}"
    );
    // A command row that takes 1.5 s of real time: the progress line shows.
    write(
        dir.path(),
        "matrices/b.yaml",
        "title: b\nsystem:\n  command: [sh, -c, 'sleep 1.5']\n  timeout: 60s\nrows:\n  - name: slow\n    inject: { api: [200] }\n    expect: { trace: api1 200 return }\n",
    );
    let slow = on_a_pty(dir.path());
    assert!(slow.contains(" files, "), "{slow:?}");
    assert!(slow.contains("FAILED  matrices/b.yaml::slow"), "{slow:?}");
}

/// A run keeps only the failed and ignored rows unless a report lists
/// every row; the summary still counts every row, and the CLI's summary
/// line and Markdown report say the same counts either way.
#[test]
fn passed_rows_are_counted_and_dropped_unless_a_report_lists_every_row() {
    use faultmatrix::engine::plan::{run_files_live, Keep};
    use faultmatrix::reports::Verdict;
    let dir = tempfile::tempdir().unwrap();
    let failing = QUICK.replace("inject: { A: [200] }", "inject: { A: [503, 200] }");
    write(dir.path(), "a.yaml", QUICK);
    write(dir.path(), "b.yaml", &failing);
    let files: Vec<faultmatrix::engine::discover::Found> = ["a.yaml", "b.yaml"]
        .iter()
        .map(|f| faultmatrix::engine::discover::Found {
            display: f.to_string(),
            path: dir.path().join(f),
        })
        .collect();
    let loader = faultmatrix::load::Loader::new(faultmatrix::Systems::new());
    let run = |keep| {
        let told = std::sync::Mutex::new(0usize);
        let out = run_files_live(
            &files,
            &loader,
            &Default::default(),
            &Default::default(),
            2,
            &|_| {},
            &|_, _| *told.lock().unwrap() += 1,
            &|_| {},
            keep,
        );
        (out, told.into_inner().unwrap())
    };
    let (all, told_all) = run(Keep::All);
    let (kept, told_kept) = run(Keep::NotPassed);
    assert_eq!(
        (told_all, told_kept),
        (4, 4),
        "every row is told either way"
    );
    assert_eq!(all.results.len(), 4);
    assert_eq!(
        all.summary,
        faultmatrix::engine::results::Summary::of(&all.results)
    );
    assert_eq!((all.summary.passed, all.summary.failed), (3, 1));
    assert_eq!(kept.summary, all.summary);
    assert_eq!(kept.results.len(), 1, "only the failure is kept");
    assert!(matches!(kept.results[0].verdict, Verdict::Failed(_)));
    assert_eq!(kept.results[0].id, "b.yaml::first");

    // The CLI (no JUnit or HTML report) says the counts of every row.
    let md = dir.path().join("summary.md");
    let (code, stdout, _) = cli(
        dir.path(),
        &[
            "run",
            "--quiet",
            "--markdown",
            "summary.md",
            "a.yaml",
            "b.yaml",
        ],
    );
    assert_eq!(code, 1, "{stdout}");
    assert!(stdout.contains("3 passed, 1 failed"), "{stdout}");
    assert!(stdout.contains("---- b.yaml::first ----"), "{stdout}");
    let md = std::fs::read_to_string(md).unwrap();
    assert!(md.contains("3 passed, 1 failed"), "{md}");
}
