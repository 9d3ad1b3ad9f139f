//! A recording interrupted by a signal (issue 16, item 9): SIGTERM, SIGINT
//! or SIGHUP while a recording's temp file exists removes the file, leaves
//! the old tape byte-identical, and the process dies of that signal (a
//! shell sees 143, 130, 129). Deterministic: the test-only hold
//! (`FAULTMATRIX_TEST_HOLD_RECORDING=<path>`) stops the recording right
//! after its temp file is written and creates `<path>`; the test waits for
//! it, checks the temp file is there, and only then sends the signal.
//! Everything runs in a temporary directory against a 127.0.0.1 upstream
//! the test starts.
#![cfg(unix)]

use std::ffi::OsStr;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use faultmatrix::exec::tape::upstream::{Reply, Upstream};

use crate::common::{bin, write};

const MATRIX: &str = "title: interrupted\npolicy:\n  routes: [{ name: A, attempts: 3 }]\n  backoff: { initial: 1s, factor: 2, cap: 30s, jitter: none }\n  deadline: 60s\nrows:\n  - name: served\n    tape: tapes/t.yaml\n    record: { expect: [200] }\n    expect:\n      trace: |\n        A1 200 return\n      stop: success\n";

/// The variables that would change a run, removed from every child.
const CLEARED: [&str; 6] = [
    "FAULTMATRIX_RECORD",
    "FAULTMATRIX_BLESS",
    "FAULTMATRIX_PROGRESS",
    "FAULTMATRIX_TEST_HOLD_RECORDING",
    "CI",
    "GITHUB_ACTIONS",
];

/// A tree with `root/m.yaml` and a recorded `root/tapes/t.yaml`.
struct Tree {
    dir: tempfile::TempDir,
}

impl Tree {
    fn new() -> Self {
        let t = Self {
            dir: tempfile::tempdir().expect("temp dir"),
        };
        write(&t.root(), "m.yaml", MATRIX);
        let up = Upstream::start(vec![Reply::json(200, "{\"first\": true}")]).unwrap();
        let out = Command::new(bin())
            .args(["record", "m.yaml"])
            .current_dir(t.root())
            .env("FAULTMATRIX_UPSTREAM_A", up.url())
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        assert!(t.tape().is_file());
        t
    }
    fn root(&self) -> PathBuf {
        self.dir.path().join("root")
    }
    fn tape(&self) -> PathBuf {
        self.root().join("tapes/t.yaml")
    }
    /// The recording temp files beside the tape.
    fn temps(&self) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(self.root().join("tapes"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.contains(".recording-"))
            .collect();
        v.sort();
        v
    }
}

/// Starts `cmd` with `env` (and none of [`CLEARED`] otherwise) and the
/// signals' default actions, as a foreground process has them (a test run
/// in the background may ignore SIGINT).
fn spawn(cmd: Command, env: &[(&str, &OsStr)]) -> Child {
    spawn_ignoring(cmd, env, None)
}

/// [`spawn`], with `ignored`'s action set to ignore (as `nohup` does for
/// SIGHUP and a shell for a background job's SIGINT).
fn spawn_ignoring(mut cmd: Command, env: &[(&str, &OsStr)], ignored: Option<libc::c_int>) -> Child {
    for var in CLEARED {
        cmd.env_remove(var);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    // SAFETY: `signal` is async-signal-safe, as `pre_exec` requires.
    unsafe {
        cmd.pre_exec(move || {
            for s in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
                let action = if Some(s) == ignored {
                    libc::SIG_IGN
                } else {
                    libc::SIG_DFL
                };
                libc::signal(s, action);
            }
            Ok(())
        });
    }
    cmd.stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {cmd:?}: {e}"))
}

/// Waits for the hold's flag file (the temp file is written), then sends
/// `sig` and asserts what is left behind and how the process ended.
fn interrupt(t: &Tree, mut child: Child, flag: &Path, sig: libc::c_int, what: &str) {
    let old = std::fs::read(t.tape()).unwrap();
    wait_for_hold(t, &mut child, flag, what);
    send(&child, sig);
    let out = child.wait_with_output().unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        out.status.signal(),
        Some(sig),
        "{what}: the process dies of the signal ({:?}): {text}",
        out.status
    );
    assert_eq!(t.temps(), Vec::<String>::new(), "{what}: no temp file left");
    assert!(
        std::fs::read(t.tape()).unwrap() == old,
        "{what}: the old tape is byte-identical"
    );
}

/// Waits until the child holds with its temp file written (bounded).
fn wait_for_hold(t: &Tree, child: &mut Child, flag: &Path, what: &str) {
    let start = Instant::now();
    while !flag.exists() {
        if let Some(status) = child.try_wait().unwrap() {
            panic!("{what}: ended ({status}) before the hold");
        }
        assert!(
            start.elapsed() < Duration::from_secs(120),
            "{what}: no hold after 120 s"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let during = t.temps();
    assert_eq!(during.len(), 1, "{what}: the temp file exists: {during:?}");
}

fn send(child: &Child, sig: libc::c_int) {
    // SAFETY: a plain kill(2) of a child this test started and has not
    // yet waited for.
    assert_eq!(unsafe { libc::kill(child.id() as libc::pid_t, sig) }, 0);
}

fn cli(t: &Tree, args: &[&str], env: &[(&str, &str)], flag: &Path) -> Child {
    let mut cmd = Command::new(bin());
    cmd.args(args).current_dir(t.root());
    let mut env: Vec<(&str, &OsStr)> = env.iter().map(|(k, v)| (*k, OsStr::new(v))).collect();
    env.push(("FAULTMATRIX_TEST_HOLD_RECORDING", flag.as_os_str()));
    spawn(cmd, &env)
}

/// Starts the CLI with `args` (and `env`) against a local upstream, holds
/// it mid-recording, sends `sig` and checks the temp file is gone.
fn interrupt_cli(args: &[&str], env: &[(&str, &str)], sig: libc::c_int, what: &str) {
    let t = Tree::new();
    let up = Upstream::start(vec![Reply::json(200, "{\"second\": true}")]).unwrap();
    let flag = t.dir.path().join("held");
    let url = up.url();
    let mut env = env.to_vec();
    env.push(("FAULTMATRIX_UPSTREAM_A", &url));
    let child = cli(&t, args, &env, &flag);
    interrupt(&t, child, &flag, sig, what);
}

#[test]
fn sigterm_during_faultmatrix_record_removes_the_temp_file() {
    interrupt_cli(&["record", "m.yaml"], &[], libc::SIGTERM, "record, SIGTERM");
}

#[test]
fn sigint_during_a_recording_run_removes_the_temp_file() {
    interrupt_cli(
        &["run", "m.yaml"],
        &[("FAULTMATRIX_RECORD", "1")],
        libc::SIGINT,
        "FAULTMATRIX_RECORD=1 run, SIGINT",
    );
}

#[test]
fn sighup_during_faultmatrix_record_removes_the_temp_file() {
    interrupt_cli(&["record", "m.yaml"], &[], libc::SIGHUP, "record, SIGHUP");
}

#[test]
fn an_ignored_sigint_stays_ignored_and_sigterm_still_cleans_up() {
    let t = Tree::new();
    let up = Upstream::start(vec![Reply::json(200, "{\"second\": true}")]).unwrap();
    let flag = t.dir.path().join("held");
    let mut cmd = Command::new(bin());
    cmd.args(["record", "m.yaml"]).current_dir(t.root());
    let url = up.url();
    let mut child = spawn_ignoring(
        cmd,
        &[
            ("FAULTMATRIX_UPSTREAM_A", OsStr::new(&url)),
            ("FAULTMATRIX_TEST_HOLD_RECORDING", flag.as_os_str()),
        ],
        Some(libc::SIGINT),
    );
    wait_for_hold(&t, &mut child, &flag, "SIGINT ignored");
    // An ignored SIGINT is not taken over: the process goes on holding.
    // (Had it been taken over, it would be gone within milliseconds.)
    send(&child, libc::SIGINT);
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        child.try_wait().unwrap().is_none(),
        "an ignored SIGINT must not end the process"
    );
    assert_eq!(t.temps().len(), 1, "the recording is still under way");
    interrupt(
        &t,
        child,
        &flag,
        libc::SIGTERM,
        "SIGINT ignored, then SIGTERM",
    );
}

/// The environment variable that makes [`harness_child`] run.
const CHILD_ENV: &str = "FAULTMATRIX_TEST_HARNESS_CHILD";

#[test]
fn sigterm_during_a_recording_cargo_test_harness_removes_the_temp_file() {
    let t = Tree::new();
    let up = Upstream::start(vec![Reply::json(200, "{\"second\": true}")]).unwrap();
    let flag = t.dir.path().join("held");
    // This test binary again, running only `harness_child`: the harness on
    // libtest-mimic threads, as `FAULTMATRIX_RECORD=1 cargo test` runs it.
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args([
        "interrupt::harness_child",
        "--exact",
        "--ignored",
        "--nocapture",
    ]);
    let (root, url) = (t.root(), up.url());
    let child = spawn(
        cmd,
        &[
            (CHILD_ENV, root.as_os_str()),
            ("FAULTMATRIX_RECORD", OsStr::new("1")),
            ("FAULTMATRIX_UPSTREAM_A", OsStr::new(&url)),
            ("FAULTMATRIX_TEST_HOLD_RECORDING", flag.as_os_str()),
        ],
    );
    interrupt(&t, child, &flag, libc::SIGTERM, "harness, SIGTERM");
}

/// Runs the harness over the tree named by [`CHILD_ENV`], recording; does
/// nothing when it is not set (so `--include-ignored` passes it).
#[test]
#[ignore = "started by sigterm_during_a_recording_cargo_test_harness_removes_the_temp_file"]
fn harness_child() {
    let Some(root) = std::env::var_os(CHILD_ENV) else {
        return;
    };
    // Options from the environment, as `Harness::run` takes them.
    let root = PathBuf::from(root);
    let h = faultmatrix::harness::Harness::new(root.clone());
    // A logfile keeps the nested run's summary out of the parent's log
    // (rough_edges::nested_harness_runs_write_their_report_to_a_logfile).
    let args = libtest_mimic::Arguments {
        test_threads: Some(2),
        logfile: Some(root.join("harness-child.log").display().to_string()),
        ..Default::default()
    };
    let trials = h.trials(&args).unwrap_or_else(|e| panic!("{e}"));
    let conclusion = libtest_mimic::run(&args, trials);
    assert!(!conclusion.has_failed(), "{conclusion:?}");
}
