//! Hostile input (issue 16): a matrix never reads or writes outside its
//! tree, never opens anything but a regular file, and never replaces a file
//! that is not a tape. Every case runs in a temporary directory holding a
//! `root/` (the matrices) and an `outside/` beside it; no test points at a
//! real system file.

use std::path::PathBuf;

use faultmatrix::exec::tape::upstream::{Reply, Upstream};
use faultmatrix::exec::tape::{Mode, RecordOptions};
use faultmatrix::load::Loader;
use faultmatrix::model::Matrix;
use faultmatrix::system::Systems;

use crate::common::{cli, cli_env, write};

const HEAD: &str = "title: hostile\npolicy:\n  routes: [{ name: A, attempts: 3 }]\n  backoff: { initial: 1s, factor: 2, cap: 30s, jitter: none }\n  deadline: 60s\nrows:\n";

/// A row replaying (or recording) the tape at `tape`.
fn tape_row(tape: &str) -> String {
    format!(
        "  - name: served\n    tape: {tape}\n    record: {{ expect: [200] }}\n    expect:\n      trace: |\n        A1 200 return\n      stop: success\n"
    )
}

struct Tree {
    dir: tempfile::TempDir,
}

impl Tree {
    fn new() -> Self {
        let t = Self {
            dir: tempfile::tempdir().expect("temp dir"),
        };
        std::fs::create_dir_all(t.root()).unwrap();
        write(t.dir.path(), "outside/x.yaml", "secret: hunter2\n");
        t
    }
    fn root(&self) -> PathBuf {
        self.dir.path().join("root")
    }
    fn outside(&self) -> PathBuf {
        self.dir.path().join("outside")
    }
    /// Writes `root/m.yaml` and loads it with the root configured.
    fn load(&self, rows: &str) -> Result<Matrix, String> {
        let p = write(&self.root(), "m.yaml", &format!("{HEAD}{rows}"));
        Loader::new(Systems::new())
            .with_roots([self.root()])
            .load_file(&p, "m.yaml")
            .map_err(|e| e.to_string())
    }
    /// The names in `outside/`.
    fn outside_files(&self) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(self.outside())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }
}

fn record_mode(up: &Upstream) -> Mode {
    Mode::Record(RecordOptions {
        upstreams: [("A".to_string(), up.url())].into_iter().collect(),
        keys: Default::default(),
        env: false,
    })
}

fn run(m: &Matrix, mode: &Mode) -> Result<(), String> {
    let opts = faultmatrix::engine::run::RunOptions {
        exec: faultmatrix::exec::run::ExecOptions {
            mode: mode.clone(),
            env: std::sync::Arc::new(faultmatrix::base::env::Env::capture()),
        },
        ..Default::default()
    };
    faultmatrix::engine::run::run_row(m, &m.rows[0], &opts)
        .0
        .map_err(|f| f.render())
}

#[test]
fn tapes_outside_the_tree_are_refused_at_load() {
    let t = Tree::new();
    let abs = t.outside().join("new.yaml");
    for (tape, why) in [
        ("../outside/x.yaml", "resolves outside the matrices' root"),
        ("../outside/new.yaml", "resolves outside the matrices' root"),
        (
            "tapes/../../outside/x.yaml",
            "resolves outside the matrices' root",
        ),
        (abs.to_str().unwrap(), "is an absolute path"),
    ] {
        let e = t.load(&tape_row(tape)).err().expect("refused");
        assert!(e.contains(&format!("tape `{tape}` {why}")), "{tape}: {e}");
        assert!(e.contains("m.yaml:"), "{e}");
        assert!(!e.contains("hunter2"), "never echoes the file: {e}");
    }
    assert_eq!(t.outside_files(), ["x.yaml"], "nothing was created outside");
}

#[cfg(unix)]
#[test]
fn symlinks_out_of_the_tree_are_refused() {
    let t = Tree::new();
    std::fs::create_dir_all(t.root().join("tapes")).unwrap();
    std::os::unix::fs::symlink(t.outside().join("x.yaml"), t.root().join("tapes/l.yaml")).unwrap();
    std::os::unix::fs::symlink(t.outside(), t.root().join("out")).unwrap();
    for tape in ["tapes/l.yaml", "out/x.yaml", "out/new/deeper.yaml"] {
        let e = t.load(&tape_row(tape)).err().expect("refused");
        assert!(
            e.contains("resolves outside the matrices' root"),
            "{tape}: {e}"
        );
    }
    // The registry and a command's cwd follow the same rule.
    let m = format!("{HEAD}{}", tape_row("tapes/t.yaml"))
        .replace("rows:\n", "registry: out/x.yaml\nrows:\n");
    write(&t.root(), "m.yaml", &m);
    let e = Loader::new(Systems::new())
        .with_roots([t.root()])
        .load_file(&t.root().join("m.yaml"), "m.yaml")
        .err()
        .expect("refused")
        .to_string();
    assert!(e.contains("registry `out/x.yaml` resolves outside"), "{e}");
    assert!(!e.contains("hunter2"), "{e}");
    let m = "title: c\nsystem: { command: [sh, -c, 'true'], cwd: ../outside, routes: [A] }\nrows:\n  - name: r\n    inject: { A: [200] }\n    expect: { stop: success }\n";
    write(&t.root(), "c.yaml", m);
    let e = Loader::new(Systems::new())
        .with_roots([t.root()])
        .load_file(&t.root().join("c.yaml"), "c.yaml")
        .err()
        .expect("refused")
        .to_string();
    assert!(e.contains("`cwd`: `../outside` resolves outside"), "{e}");
    assert_eq!(t.outside_files(), ["x.yaml"]);
}

#[test]
fn a_tape_that_is_the_matrix_itself_is_refused() {
    let t = Tree::new();
    let e = t.load(&tape_row("m.yaml")).err().expect("refused");
    assert!(e.contains("`tape: m.yaml` is this matrix file"), "{e}");
    let e = t.load(&tape_row("./m.yaml")).err().expect("refused");
    assert!(e.contains("is this matrix file"), "{e}");
}

#[cfg(unix)]
#[test]
fn fifos_and_directories_are_refused_before_opening() {
    let t = Tree::new();
    let fifo = t.root().join("fifo.yaml");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .is_ok_and(|s| s.success());
    assert!(made, "mkfifo is needed for this test");
    std::fs::create_dir_all(t.root().join("adir")).unwrap();
    // Each of these would block forever (or read a directory) if opened.
    let e = t.load(&tape_row("fifo.yaml")).err().expect("refused");
    assert!(
        e.contains("tape `fifo.yaml` is a FIFO, not a regular file"),
        "{e}"
    );
    let e = t.load(&tape_row("adir")).err().expect("refused");
    assert!(
        e.contains("tape `adir` is a directory, not a regular file"),
        "{e}"
    );
    let m =
        format!("{HEAD}  - name: r\n    inject: {{ A: [200] }}\n    expect: {{ stop: success }}\n")
            .replace("rows:\n", "registry: fifo.yaml\nrows:\n");
    write(&t.root(), "m.yaml", &m);
    let e = Loader::new(Systems::new())
        .load_file(&t.root().join("m.yaml"), "m.yaml")
        .err()
        .expect("refused")
        .to_string();
    assert!(e.contains("registry `fifo.yaml` is a FIFO"), "{e}");
    // A matrix path that is a FIFO is refused by the CLI too.
    let (code, out, err) = cli(&t.root(), &["check", "fifo.yaml"]);
    assert_eq!(code, 2, "{out}{err}");
    assert!(
        out.contains("cannot read the file: it is a FIFO, not a regular file"),
        "{out}{err}"
    );
}

#[test]
fn record_never_replaces_a_file_that_is_not_a_tape() {
    let t = Tree::new();
    let notes = "# my notes\nnot: a tape\n";
    write(&t.root(), "tapes/notes.yaml", notes);
    let m = t
        .load(&tape_row("tapes/notes.yaml"))
        .unwrap_or_else(|e| panic!("{e}"));
    let up = Upstream::start(vec![Reply::json(200, "{}")]).unwrap();
    let e = run(&m, &record_mode(&up)).unwrap_err();
    assert!(e.contains("refused to write the tape"), "{e}");
    assert!(e.contains("not a faultmatrix tape"), "{e}");
    assert_eq!(
        std::fs::read_to_string(t.root().join("tapes/notes.yaml")).unwrap(),
        notes
    );
    // A new tape inside the tree is written (the control case).
    let m = t
        .load(&tape_row("tapes/new/fresh.yaml"))
        .unwrap_or_else(|e| panic!("{e}"));
    let up = Upstream::start(vec![Reply::json(200, "{}")]).unwrap();
    run(&m, &record_mode(&up)).unwrap();
    let text = std::fs::read_to_string(t.root().join("tapes/new/fresh.yaml")).unwrap();
    assert!(text.contains("digest: sha256:"), "{text}");
    // And it may be recorded again over itself.
    let up = Upstream::start(vec![Reply::json(200, "{}")]).unwrap();
    run(&m, &record_mode(&up)).unwrap();
}

#[cfg(unix)]
#[test]
fn a_symlink_planted_after_loading_is_not_followed_by_a_recording() {
    let t = Tree::new();
    let m = t
        .load(&tape_row("tapes/t.yaml"))
        .unwrap_or_else(|e| panic!("{e}"));
    // Between loading and recording, the tapes folder becomes a symlink out.
    std::os::unix::fs::symlink(t.outside(), t.root().join("tapes")).unwrap();
    let up = Upstream::start(vec![Reply::json(200, "{}")]).unwrap();
    let e = run(&m, &record_mode(&up)).unwrap_err();
    assert!(e.contains("refused to write the tape"), "{e}");
    assert_eq!(t.outside_files(), ["x.yaml"], "nothing landed outside");
}

#[cfg(unix)]
#[test]
fn a_symlinked_snapshots_folder_gets_no_files() {
    let t = Tree::new();
    write(
        &t.root(),
        "m.yaml",
        &format!(
            "{HEAD}  - name: snap\n    inject: {{ A: [200] }}\n    expect: {{ snapshot: true }}\n"
        ),
    );
    std::os::unix::fs::symlink(t.outside(), t.root().join("snapshots")).unwrap();
    let (code, out, err) = cli_env(&t.root(), &["run", "m.yaml"], &[("CI", "false")]);
    assert_ne!(code, 0, "{out}{err}");
    assert!(format!("{out}{err}").contains("is a symlink"), "{out}{err}");
    assert_eq!(t.outside_files(), ["x.yaml"], "no .snap.new outside");
}

#[test]
fn the_cli_root_is_the_directory_it_was_given() {
    let t = Tree::new();
    write(
        &t.root(),
        "sub/m.yaml",
        &format!("{HEAD}{}", tape_row("../tapes/t.yaml")),
    );
    // Run on the whole tree: `sub/../tapes` is inside it (the tape is only
    // missing).
    let (_, out, err) = cli(&t.root(), &["check", "."]);
    assert!(
        !format!("{out}{err}").contains("resolves outside"),
        "{out}{err}"
    );
    // Run on the sub folder alone: its root is that folder.
    let (code, out, err) = cli(&t.root(), &["check", "sub"]);
    assert_ne!(code, 0);
    assert!(
        format!("{out}{err}").contains("resolves outside"),
        "{out}{err}"
    );
    // FAULTMATRIX_ROOT widens it explicitly.
    let (_, out, err) = cli_env(&t.root(), &["check", "sub"], &[("FAULTMATRIX_ROOT", ".")]);
    assert!(
        !format!("{out}{err}").contains("resolves outside"),
        "{out}{err}"
    );
}

#[test]
fn oversized_files_are_refused_without_reading_them_whole() {
    let t = Tree::new();
    let p = t.root().join("big.yaml");
    let f = std::fs::File::create(&p).unwrap();
    f.set_len(faultmatrix::base::confine::MAX_FILE_BYTES + 1)
        .unwrap();
    let (code, out, err) = cli(&t.root(), &["check", "big.yaml"]);
    assert_ne!(code, 0);
    assert!(
        format!("{out}{err}").contains("larger than the limit of 16777216 bytes"),
        "{out}{err}"
    );
    // A run reads a matrix of up to 64 MiB a chunk of rows at a time, when
    // it is in the plain shape; this one is not, so it is refused, saying so.
    let (code, out, err) = cli(&t.root(), &["run", "big.yaml"]);
    assert_eq!(code, 2, "{out}{err}");
    let all = format!("{out}{err}");
    assert!(
        all.contains("larger than the limit of 16777216 bytes (16 MiB) for a file loaded whole")
            && all.contains("a matrix file of up to 64 MiB loads a chunk of rows at a time"),
        "{all}"
    );
    // Past 64 MiB nothing is read.
    f.set_len(faultmatrix::base::confine::MAX_MATRIX_BYTES + 1)
        .unwrap();
    let (code, out, err) = cli(&t.root(), &["run", "big.yaml"]);
    assert_eq!(code, 2, "{out}{err}");
    assert!(
        format!("{out}{err}").contains("larger than the limit of 67108864 bytes (64 MiB)"),
        "{out}{err}"
    );
}

#[test]
fn ignore_takes_booleans_or_a_reason_and_false_runs_the_row() {
    let t = Tree::new();
    let row = |ignore: &str| {
        format!("  - name: r\n    ignore: {ignore}\n    inject: {{ A: [200] }}\n    expect: {{ stop: success }}\n")
    };
    let load = |ignore: &str| t.load(&row(ignore)).map(|m| m.rows[0].ignore.clone());
    assert_eq!(load("false").unwrap(), None, "`ignore: false` runs the row");
    assert_eq!(load("~").unwrap(), None);
    assert_eq!(load("true").unwrap().as_deref(), Some("ignored"));
    assert_eq!(
        load("flaky, see 12").unwrap().as_deref(),
        Some("flaky, see 12")
    );
    for bad in ["''", "'  '", "'no'", "'False'", "[x]", "3"] {
        let e = load(bad).unwrap_err();
        assert!(e.contains("`ignore` of row `r`"), "{bad}: {e}");
    }
}

#[test]
fn row_names_are_escaped_in_test_names_and_reports() {
    let t = Tree::new();
    // A newline, an ANSI colour and a right-to-left override in names.
    write(
        &t.root(),
        "m.yaml",
        &format!("{HEAD}  - name: \"two\\nlines\"\n    inject: {{ A: [503, 503, 503] }}\n    expect: {{ stop: success }}\n  - name: \"\\e[31mred \\u202Edcba\"\n    inject: {{ A: [200] }}\n    expect: {{ stop: success }}\n"),
    );
    let (_, out, _) = cli(&t.root(), &["list", "m.yaml"]);
    assert_eq!(
        out, "m.yaml::two\\nlines\nm.yaml::\\u{1b}[31mred \\u{202e}dcba\n",
        "one line per row, nothing raw"
    );
    let (code, out, err) = cli(&t.root(), &["run", "m.yaml"]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.contains("m.yaml::two\\nlines"), "{out}");
    for raw in ['\u{1b}', '\u{202e}'] {
        assert!(!out.contains(raw) && !err.contains(raw), "{out}{err}");
    }
    assert!(!out.contains("two\nlines"), "{out}");
}

#[cfg(target_os = "linux")]
#[test]
fn stale_recording_files_of_dead_processes_are_removed_on_the_next_recording() {
    let t = Tree::new();
    // Above any pid_max: that process cannot exist. Pid 1 always does.
    let dead = write(&t.root(), "tapes/.t.yaml.recording-999999999-0", "partial");
    let live = write(&t.root(), "tapes/.t.yaml.recording-1-0", "partial");
    let other = write(&t.root(), "tapes/.u.yaml.recording-999999999-0", "partial");
    let m = t
        .load(&tape_row("tapes/t.yaml"))
        .unwrap_or_else(|e| panic!("{e}"));
    let up = Upstream::start(vec![Reply::json(200, "{}")]).unwrap();
    run(&m, &record_mode(&up)).unwrap();
    assert!(!dead.exists(), "a dead process's temp file is removed");
    assert!(live.exists(), "a live process's temp file is kept");
    assert!(other.exists(), "only this tape's temp files are considered");
    assert!(t.root().join("tapes/t.yaml").is_file());
}

#[cfg(unix)]
#[test]
fn a_matrix_that_is_a_symlink_out_of_the_tree_is_never_read() {
    let t = Tree::new();
    // A valid matrix outside, so reading it would load (and run) it.
    let outside =
        format!("{HEAD}  - name: r\n    inject: {{ A: [200] }}\n    expect: {{ stop: success }}\n");
    write(&t.outside(), "m.yaml", &outside);
    std::os::unix::fs::symlink(t.outside().join("m.yaml"), t.root().join("link.yaml")).unwrap();
    // A symlink that stays inside the tree is read as usual.
    write(&t.root(), "real/ok.yaml", &outside);
    std::os::unix::fs::symlink(t.root().join("real/ok.yaml"), t.root().join("inside.yaml"))
        .unwrap();
    let e = Loader::new(Systems::new())
        .with_roots([t.root()])
        .load_file(&t.root().join("link.yaml"), "link.yaml")
        .err()
        .expect("refused")
        .to_string();
    assert!(e.contains("link.yaml:1:1"), "{e}");
    assert!(e.contains("resolves outside the matrices' root"), "{e}");
    Loader::new(Systems::new())
        .with_roots([t.root()])
        .load_file(&t.root().join("inside.yaml"), "inside.yaml")
        .expect("a symlink inside the tree loads");
    // Through the CLI, given the tree or the link itself.
    for args in [&["check", "root"][..], &["run", "root/link.yaml"]] {
        let (code, out, err) = cli(t.dir.path(), args);
        assert_ne!(code, 0, "{args:?}: {out}{err}");
        assert!(
            out.contains("link.yaml:1:1") && out.contains("resolves outside"),
            "{args:?}: {out}{err}"
        );
        assert!(!out.contains("ok      root/link.yaml"), "{out}");
    }
}

#[test]
fn a_byte_order_mark_opening_a_file_is_allowed() {
    let t = Tree::new();
    let rows = "  - name: r\n    inject: { A: [200] }\n    expect: { stop: success }\n";
    let p = write(&t.root(), "m.yaml", &format!("\u{FEFF}{HEAD}{rows}"));
    Loader::new(Systems::new())
        .load_file(&p, "m.yaml")
        .expect("a leading byte-order mark is allowed by YAML");
    // An error on line 1 still points at its column in the file.
    let p = write(
        &t.root(),
        "b.yaml",
        &format!("\u{FEFF}titel: x\n{}", HEAD.split_once('\n').unwrap().1),
    );
    let e = Loader::new(Systems::new())
        .load_file(&p, "b.yaml")
        .err()
        .expect("unknown key")
        .to_string();
    assert!(e.contains("unknown key `titel`"), "{e}");
    assert!(e.contains("b.yaml:1:2"), "{e}");
}

#[test]
fn deep_flow_nesting_is_refused_before_the_yaml_library_reads_it() {
    // 32,000 levels in a 64 KB file took 10 s in libyaml's scanner before
    // serde_yaml's own limit spoke; the pre-check refuses it at level 65.
    let t = Tree::new();
    let n = 32_000;
    let body = format!(
        "  - name: r\n    inject: {{ A: [{{ status: 200, body: {}{} }}] }}\n    expect: {{ stop: success }}\n",
        "[".repeat(n),
        "]".repeat(n)
    );
    let e = t.load(&body).err().expect("refused");
    assert!(
        e.contains("nests deeper than 64 levels") && e.contains("m.yaml:8:"),
        "{e}"
    );
    // 60 levels are fine.
    let body = body
        .replace(&"[".repeat(n), &"[".repeat(56))
        .replace(&"]".repeat(n), &"]".repeat(56));
    t.load(&body).expect("56 levels of body load");
}

#[test]
fn a_password_in_an_upstream_url_is_never_printed() {
    let t = Tree::new();
    write(
        &t.root(),
        "m.yaml",
        &format!("{HEAD}{}", tape_row("tapes/t.yaml")),
    );
    let (code, out, err) = cli_env(
        &t.root(),
        &["record", "m.yaml"],
        &[(
            "FAULTMATRIX_UPSTREAM_A",
            "http://user:hunter2@127.0.0.1:9/v1",
        )],
    );
    assert_ne!(code, 0, "{out}{err}");
    assert!(
        out.contains("http://***@127.0.0.1:9/v1` holds credentials"),
        "{out}{err}"
    );
    assert!(
        !out.contains("hunter2") && !err.contains("hunter2"),
        "{out}{err}"
    );
    assert!(
        !t.root().join("tapes/t.yaml").exists(),
        "no tape was written"
    );
}
