//! Issue 13, item 5: a failing command-system row shows what the command
//! said (the end of its stdout and stderr, bounded, its JSON result, how it
//! ended) and the shell lines that run it by hand, and those lines work.

use crate::common::{cli, workspace};

const FILE: &str = "runner-tests/wire-wrong/command-output/m.yaml";

/// The failure block of the one failing row, with this checkout's path
/// written `<workspace>`.
fn failure() -> String {
    let root = workspace();
    let (code, out, err) = cli(&root, &["run", FILE]);
    assert_eq!(code, 1, "{out}{err}");
    let start = out
        .find("row `a 500 is retried` failed")
        .unwrap_or_else(|| panic!("no failure in:\n{out}"));
    let end = out.rfind("\n0 passed, 1 failed").expect("summary");
    out[start..end]
        .replace(&root.display().to_string(), "<workspace>")
        .trim_end()
        .to_string()
        + "\n"
}

#[test]
fn a_failing_command_row_shows_what_the_command_said() {
    let got = failure();
    let path = workspace().join("runner-tests/wire-wrong/command-output/expected.txt");
    let want = std::fs::read_to_string(&path).unwrap();
    assert_eq!(got, want, "the message differs from {}", path.display());
}

#[test]
fn the_command_line_it_prints_runs_the_command_by_hand() {
    let got = failure().replace("<workspace>", &workspace().display().to_string());
    let line = got
        .lines()
        .skip_while(|l| *l != "run it by hand:")
        .nth(3)
        .expect("the command line")
        .trim_start();
    assert!(line.starts_with("cd "), "{line}");
    let out = std::process::Command::new("sh")
        .args(["-c", line])
        .env("FAULTMATRIX_URL_A", "http://127.0.0.1:9")
        .env_remove("FM_UNSET_FOR_THIS_TEST")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stdout.starts_with("progress 1\n"), "{stdout}");
    assert!(
        stdout.ends_with("\"code\": \"SERVER_ERROR\"}\n"),
        "{stdout}"
    );
    // The system's `env`, written with `${…:-default}`, expands as the
    // runner expanded it.
    assert!(stderr.starts_with("greeting: hello world\n"), "{stderr}");
}
