//! Tapes end to end: record from a scripted upstream on 127.0.0.1, replay
//! with no network, and every way a replay or a recording must fail.
//!
//! Also checks that the tapes shipped under `matrices/tapes/` are exactly
//! what the record mode records from the scripted upstreams below. To
//! re-record them after a deliberate change:
//!
//! ```sh
//! FAULTMATRIX_RERECORD_SHIPPED=1 cargo test --test suite tapes::shipped_tapes
//! ```

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use faultmatrix::exec::tape::upstream::{Reply, Upstream};
use faultmatrix::exec::tape::{self, Mode, RecordOptions, Tape};
use faultmatrix::model::Matrix;
use faultmatrix::system::Systems;

/// The credential the recorder sends (no known prefix: only the literal
/// secret scrub can catch it).
const KEY: &str = "KEYSECRET5-plain";

/// Every value the upstream sends that must never reach a tape.
const SECRETS: [&str; 9] = [
    "COOKIE-SECRET-1",
    "ACCOUNT-HEADER-SECRET",
    "ORGSECRET1",
    "ORGSECRET2",
    "ACCTSECRET3",
    "OWNER-SECRET-4",
    "KEYSECRET5",
    "CUSSECRET6",
    "ORGSECRET7",
];

fn rate_limited() -> Reply {
    Reply::json(
        429,
        r#"{"error":{"code":"rate_limit_exceeded","message":"Rate limit reached for org-ORGSECRET2 on account acct_ACCTSECRET3","owner":"OWNER-SECRET-4"},"echo":"Bearer KEYSECRET5-plain"}"#,
    )
    .header("retry-after", "1")
    .header("set-cookie", "session=COOKIE-SECRET-1; Path=/")
    .header("x-account", "ACCOUNT-HEADER-SECRET")
    .header("openai-organization", "org-ORGSECRET1")
}

fn served() -> Reply {
    Reply::json(
        200,
        r#"{"id":"chatcmpl-1","customer":"cus_CUSSECRET6","choices":[{"message":{"content":"hello"}}]}"#,
    )
}

fn model_not_found() -> Reply {
    Reply::json(
        404,
        r#"{"error":{"code":"model_not_found","message":"The model gpt-4o-mini does not exist for org-ORGSECRET2"}}"#,
    )
}

const KEEP_ALIVE_STREAM: &str = ": keep-alive\n\n: keep-alive\n\ndata: {\"c\":\"Hel\",\"org\":\"org-ORGSECRET7\"}\n\ndata: {\"c\":\"lo\"}\n\ndata: [DONE]\n\n";

const HEAD: &str = r#"title: tapes under test
policy:
  routes:
    - { name: A, attempts: 3 }
    - { name: B, attempts: 2 }
  backoff: { initial: 1s, factor: 2, cap: 30s, jitter: none }
  deadline: 60s
  attempt_timeout: 5s
tapes:
  scrub: { headers: [x-account], json_paths: [error.owner], prefixes: [cus_] }
  timeout: 2s
defaults:
  request:
    model: gpt-4o-mini
    routing: { provider: { order: [openai], allow_fallbacks: false } }
rows:
"#;

const RATE_LIMITED_ROW: &str = r#"
  - name: rate limited twice then served
    tape: tapes/rate-limited.yaml
    record: { expect: [429, 429, 200] }
    expect:
      trace: |
        A1 429 RATE_LIMITED retry wait=1s
        A2 429 RATE_LIMITED retry wait=2s
        A3 200 return
      stop: success
"#;

struct Tree {
    dir: tempfile::TempDir,
}

impl Tree {
    fn new() -> Self {
        Self {
            dir: tempfile::tempdir().expect("temp dir"),
        }
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    /// Writes `m.yaml` and loads it.
    fn matrix(&self, rows: &str) -> Matrix {
        let p = self.path("m.yaml");
        std::fs::write(&p, format!("{HEAD}{rows}")).unwrap();
        faultmatrix::load::load_file(&p, "m.yaml", &Systems::new())
            .unwrap_or_else(|e| panic!("{e}"))
    }

    fn tape_text(&self, rel: &str) -> String {
        std::fs::read_to_string(self.path(rel)).unwrap()
    }

    /// Files in `tapes/`, temporary ones included.
    fn tape_dir(&self) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(self.path("tapes"))
            .map(|d| {
                d.map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        v.sort();
        v
    }
}

fn check(m: &Matrix, row: &str, mode: &Mode) -> Result<(), String> {
    let r = m
        .rows
        .iter()
        .find(|r| r.name == row)
        .unwrap_or_else(|| panic!("no row {row}"));
    check_row(m, r, mode)
}

/// Runs a row in `mode` and judges it (a recording is committed only when
/// it passes).
fn check_row(m: &Matrix, r: &faultmatrix::model::Row, mode: &Mode) -> Result<(), String> {
    let opts = faultmatrix::engine::run::RunOptions {
        exec: faultmatrix::exec::run::ExecOptions {
            mode: mode.clone(),
            env: std::sync::Arc::new(faultmatrix::base::env::Env::capture()),
        },
        ..Default::default()
    };
    faultmatrix::engine::run::run_row(m, r, &opts)
        .0
        .map_err(|f| f.render())
}

fn record(routes: &[(&str, &Upstream)]) -> Mode {
    Mode::Record(RecordOptions {
        upstreams: routes
            .iter()
            .map(|(r, u)| (r.to_string(), u.url()))
            .collect(),
        keys: routes
            .iter()
            .map(|(r, _)| (r.to_string(), KEY.to_string()))
            .collect(),
        env: false,
    })
}

fn statuses(tape: &Tape) -> Vec<String> {
    tape.interactions
        .iter()
        .map(|i| tape::format::response_label(&i.response))
        .collect()
}

#[test]
fn a_recorded_429_429_200_tape_replays_as_exactly_that_sequence() {
    let t = Tree::new();
    let m = t.matrix(RATE_LIMITED_ROW);
    let up = Upstream::start(vec![rate_limited(), rate_limited(), served()]).unwrap();
    check(&m, "rate limited twice then served", &record(&[("A", &up)])).unwrap();
    // The calls really went out, with the credential.
    let seen = up.requests();
    assert_eq!(seen.len(), 3);
    assert!(
        seen[0].starts_with("POST /v1/chat/completions HTTP/1.1"),
        "{}",
        seen[0]
    );
    assert!(seen[0].contains(&format!("authorization: Bearer {KEY}")));
    assert!(
        seen[0].contains(r#""provider":{"allow_fallbacks":false,"order":["openai"]}"#)
            || seen[0].contains(r#""provider":{"order":["openai"],"allow_fallbacks":false}"#),
        "{}",
        seen[0]
    );
    drop(up);

    let text = t.tape_text("tapes/rate-limited.yaml");
    let tape = Tape::from_text("t", &text).unwrap();
    assert_eq!(statuses(&tape), ["429", "429", "200"]);
    assert!(text.contains("- retry-after: '1'"), "{text}");
    // Timing is not on the tape.
    assert!(
        !text.contains("wait") && !text.contains("latency"),
        "{text}"
    );

    // Replay needs no network: the upstream is gone.
    check(&m, "rate limited twice then served", &Mode::Replay).unwrap();

    // ...and it replays exactly that sequence: a row expecting a different
    // one fails with the trace diff.
    let m2 = t.matrix(&RATE_LIMITED_ROW.replace(
        "        A2 429 RATE_LIMITED retry wait=2s\n        A3 200 return",
        "        A2 200 return",
    ));
    let e = check(&m2, "rate limited twice then served", &Mode::Replay).unwrap_err();
    assert!(
        e.contains("- A2 200 return") && e.contains("+ A2 429 RATE_LIMITED retry wait=2s"),
        "{e}"
    );
}

#[test]
fn no_secret_from_the_recording_upstream_reaches_any_tape() {
    let t = Tree::new();
    let rows = r#"
  - name: refused everywhere on A then B answers
    tape: tapes/secrets.yaml
    request: { stream: true }
    record: { expect: [429, 404, 200] }
    expect:
      trace: |
        A1 429 RATE_LIMITED retry wait=1s
        A2 404 MODEL_UNAVAILABLE switch
        B1 200 return
      stop: success
"#;
    let m = t.matrix(rows);
    let a = Upstream::start(vec![rate_limited(), model_not_found()]).unwrap();
    let b = Upstream::start(vec![Reply::sse(200, KEEP_ALIVE_STREAM)
        .header("set-cookie", "session=COOKIE-SECRET-1")
        .header("x-customer", "cus_CUSSECRET6")])
    .unwrap();
    check(
        &m,
        "refused everywhere on A then B answers",
        &record(&[("A", &a), ("B", &b)]),
    )
    .unwrap();
    for up in [&a, &b] {
        assert!(
            up.requests().iter().all(|r| r.contains(KEY)),
            "the key was sent"
        );
    }
    let text = t.tape_text("tapes/secrets.yaml");
    for s in SECRETS {
        assert!(!text.contains(s), "secret {s} reached the tape:\n{text}");
    }
    // Scrubbed, not dropped: a reviewer sees that the values were there.
    for kept in [
        "authorization: '[scrubbed]'",
        "set-cookie: '[scrubbed]'",
        "x-account: '[scrubbed]'",
        "org-[scrubbed]",
        "acct_[scrubbed]",
        "cus_[scrubbed]",
        "rate_limit_exceeded",
    ] {
        assert!(text.contains(kept), "{kept} missing:\n{text}");
    }
    check(&m, "refused everywhere on A then B answers", &Mode::Replay).unwrap();
}

#[test]
fn streams_keep_event_boundaries_and_open_with_their_keep_alive_comments() {
    let t = Tree::new();
    let rows = r#"
  - name: a stream that breaks before output is retried, then opens with keep-alives
    tape: tapes/stream.yaml
    request: { stream: true }
    expect:
      trace: |
        A1 broken STREAM_BROKEN retry wait=1s
        A2 200 return
      stop: success
      output: '{"c":"Hel","org":"org-[scrubbed]"}{"c":"lo"}[DONE]'
"#;
    let m = t.matrix(rows);
    let up = Upstream::start(vec![
        Reply::sse(200, ": keep-alive\n\n").breaks(),
        Reply::sse(200, KEEP_ALIVE_STREAM),
    ])
    .unwrap();
    // No `record:`: the shape comes from the trace (broken, then 200).
    check(
        &m,
        "a stream that breaks before output is retried, then opens with keep-alives",
        &record(&[("A", &up)]),
    )
    .unwrap();
    let tape = Tape::from_text("t", &t.tape_text("tapes/stream.yaml")).unwrap();
    let first = tape.interactions[0].response.stream.as_ref().unwrap();
    assert!(first.breaks);
    assert_eq!(first.events.len(), 1);
    let second = tape.interactions[1].response.stream.as_ref().unwrap();
    assert!(!second.breaks);
    let kinds: Vec<String> = second
        .events
        .iter()
        .map(|e| match (&e.comment, &e.data) {
            (Some(c), _) => format!(": {c}"),
            (None, Some(d)) => format!("data {d}"),
            _ => "?".into(),
        })
        .collect();
    assert_eq!(
        kinds,
        [
            ": keep-alive",
            ": keep-alive",
            "data {\"c\":\"Hel\",\"org\":\"org-[scrubbed]\"}",
            "data {\"c\":\"lo\"}",
            "data [DONE]"
        ]
    );
    check(
        &m,
        "a stream that breaks before output is retried, then opens with keep-alives",
        &Mode::Replay,
    )
    .unwrap();
}

/// Records the rate-limited tape into a fresh tree.
fn recorded_tree() -> Tree {
    let t = Tree::new();
    let m = t.matrix(RATE_LIMITED_ROW);
    let up = Upstream::start(vec![rate_limited(), rate_limited(), served()]).unwrap();
    check(&m, "rate limited twice then served", &record(&[("A", &up)])).unwrap();
    t
}

fn tape_row(name: &str, tape: &str, extra: &str, trace: &str, stop: &str) -> String {
    format!(
        "\n  - name: {name}\n    tape: {tape}\n{extra}    expect:\n      trace: |\n{}      stop: {stop}\n",
        trace
            .lines()
            .map(|l| format!("        {l}\n"))
            .collect::<String>()
    )
}

#[test]
fn replay_failures_each_have_their_own_message() {
    let t = recorded_tree();
    let full =
        "A1 429 RATE_LIMITED retry wait=1s\nA2 429 RATE_LIMITED retry wait=2s\nA3 200 return";
    // An unused answer: the row's deadline stops the retries after two
    // calls, so the tape's third answer is never asked for.
    let rows = tape_row(
        "unused answer",
        "tapes/rate-limited.yaml",
        "    deadline: 1500ms\n",
        "A1 429 RATE_LIMITED retry wait=1s\nA2 429 RATE_LIMITED fail",
        "deadline",
    );
    let m = t.matrix(&rows);
    let e = check(&m, "unused answer", &Mode::Replay).unwrap_err();
    assert!(
        e.contains(
            "1 recorded answer was never requested: interaction 3 (A 200); the system made 2 calls"
        ),
        "{e}"
    );

    // An extra call: a tape recorded under a deadline holds two refusals;
    // replayed without the deadline, the system makes a third call.
    let two = tape_row(
        "two refusals",
        "tapes/two.yaml",
        "    deadline: 1500ms\n",
        "A1 429 RATE_LIMITED retry wait=1s\nA2 429 RATE_LIMITED fail",
        "deadline",
    );
    let m = t.matrix(&two);
    let a = Upstream::start(vec![rate_limited(), rate_limited()]).unwrap();
    check(&m, "two refusals", &record(&[("A", &a)])).unwrap();
    drop(a);
    let m = t.matrix(&two.replace("    deadline: 1500ms\n", ""));
    let e = check(&m, "two refusals", &Mode::Replay).unwrap_err();
    assert!(
        e.contains("call 3 (A3) but the tape holds 2 interactions: more calls than the tape holds"),
        "{e}"
    );

    // A changed pin fails; the same pin with its keys reordered does not.
    let pinned = |routing: &str| {
        tape_row(
            "pinned",
            "tapes/rate-limited.yaml",
            &format!("    request: {{ routing: {routing} }}\n"),
            full,
            "success",
        )
    };
    let m = t.matrix(&pinned(
        "{ provider: { allow_fallbacks: false, order: [openai] } }",
    ));
    check(&m, "pinned", &Mode::Replay).unwrap();
    let m = t.matrix(&pinned(
        "{ provider: { order: [azure], allow_fallbacks: false } }",
    ));
    let e = check(&m, "pinned", &Mode::Replay).unwrap_err();
    // The tape's verdict comes first, right under the row's location; the
    // trace diff follows as context.
    let third = e.lines().nth(2).unwrap_or_default();
    assert!(
        third.starts_with("tape ") && third.contains("routing differs"),
        "{e}"
    );
    assert_eq!(e.matches("routing differs").count(), 1, "{e}");
    assert!(
        e.contains("call 1 (A1) does not match the tape's interaction 1 (A 429): routing differs: the tape has {\"provider\":{\"allow_fallbacks\":false,\"order\":[\"openai\"]}}, the call sent {\"provider\":{\"allow_fallbacks\":false,\"order\":[\"azure\"]}}"),
        "{e}"
    );
    // A changed model and stream flag are named too.
    let m = t.matrix(&tape_row(
        "other model",
        "tapes/rate-limited.yaml",
        "    request: { model: gpt-4o, stream: true }\n",
        full,
        "success",
    ));
    let e = check(&m, "other model", &Mode::Replay).unwrap_err();
    assert!(
        e.contains("model differs: the tape has gpt-4o-mini, the call sent gpt-4o; stream differs: the tape has stream=false, the call sent stream=true"),
        "{e}"
    );

    // A missing tape fails, naming the path as written.
    let m = t.matrix(&tape_row(
        "missing",
        "tapes/nowhere.yaml",
        "",
        full,
        "success",
    ));
    let e = check(&m, "missing", &Mode::Replay).unwrap_err();
    assert!(e.contains("tapes/nowhere.yaml does not exist"), "{e}");
    assert!(e.contains("a missing tape fails, it never skips"), "{e}");
    assert!(
        e.contains("(the row says `tape: tapes/nowhere.yaml`)"),
        "{e}"
    );

    // An edited tape is rejected.
    let p = t.path("tapes/rate-limited.yaml");
    let text = std::fs::read_to_string(&p).unwrap();
    std::fs::write(&p, text.replacen("status: 429", "status: 200", 1)).unwrap();
    let m = t.matrix(RATE_LIMITED_ROW);
    let e = check(&m, "rate limited twice then served", &Mode::Replay).unwrap_err();
    assert!(e.contains("was changed after it was recorded"), "{e}");
    assert!(e.contains("never edited by hand; record it again"), "{e}");
}

#[test]
fn a_failed_recording_leaves_the_old_tape_byte_for_byte() {
    let t = recorded_tree();
    let before = std::fs::read(t.path("tapes/rate-limited.yaml")).unwrap();
    let m = t.matrix(RATE_LIMITED_ROW);

    // The upstream does not refuse this time.
    let up = Upstream::start(vec![served()]).unwrap();
    let e = check(&m, "rate limited twice then served", &record(&[("A", &up)])).unwrap_err();
    assert!(
        e.contains("the upstream did not misbehave on cue: wanted 429 then 429 then 200, got 200"),
        "{e}"
    );
    assert!(
        e.contains("nothing is wrong with the code under test"),
        "{e}"
    );
    assert!(e.contains("the old tape is unchanged"), "{e}");
    assert_eq!(
        std::fs::read(t.path("tapes/rate-limited.yaml")).unwrap(),
        before
    );
    assert_eq!(
        t.tape_dir(),
        ["rate-limited.yaml"],
        "no temporary file is left"
    );

    // On cue, but the row fails (it expects other waits): not written either.
    let m = t.matrix(&RATE_LIMITED_ROW.replace("wait=2s", "wait=3s"));
    let up = Upstream::start(vec![rate_limited(), rate_limited(), served()]).unwrap();
    let e = check(&m, "rate limited twice then served", &record(&[("A", &up)])).unwrap_err();
    assert!(e.contains("trace differs"), "{e}");
    assert_eq!(
        std::fs::read(t.path("tapes/rate-limited.yaml")).unwrap(),
        before
    );
    assert_eq!(t.tape_dir(), ["rate-limited.yaml"]);

    // An upstream that cannot be reached is named, and changes nothing.
    let gone = Upstream::start(vec![]).unwrap();
    let url = gone.url();
    drop(gone);
    let mode = Mode::Record(RecordOptions {
        upstreams: BTreeMap::from([("A".to_string(), url.clone())]),
        ..RecordOptions::default()
    });
    let m = t.matrix(RATE_LIMITED_ROW);
    let e = check(&m, "rate limited twice then served", &mode).unwrap_err();
    assert!(
        e.contains(&format!("cannot reach the upstream of route A at {url}")),
        "{e}"
    );
    assert_eq!(
        std::fs::read(t.path("tapes/rate-limited.yaml")).unwrap(),
        before
    );

    // No upstream configured for a route.
    let e = check(
        &m,
        "rate limited twice then served",
        &Mode::Record(RecordOptions::default()),
    )
    .unwrap_err();
    assert!(e.contains("no upstream for route A"), "{e}");
    assert!(e.contains("FAULTMATRIX_UPSTREAM_A"), "{e}");
    assert_eq!(
        std::fs::read(t.path("tapes/rate-limited.yaml")).unwrap(),
        before
    );

    // A successful re-recording of the same exchange gives the same bytes.
    let up = Upstream::start(vec![rate_limited(), rate_limited(), served()]).unwrap();
    check(&m, "rate limited twice then served", &record(&[("A", &up)])).unwrap();
    assert_eq!(
        std::fs::read(t.path("tapes/rate-limited.yaml")).unwrap(),
        before
    );
}

/// What the upstreams answer when the shipped tapes are recorded, by row.
fn shipped_script(row: &str) -> Vec<(&'static str, Vec<Reply>)> {
    match row {
        "rate limited twice, then served by the primary" => {
            vec![("A", vec![rate_limited(), rate_limited(), served()])]
        }
        "refused on every attempt, then the backup answers" => vec![
            ("A", vec![rate_limited(), rate_limited(), rate_limited()]),
            ("B", vec![served()]),
        ],
        "model not found on one provider is handed to the other" => {
            vec![("A", vec![model_not_found()]), ("B", vec![served()])]
        }
        "a stream that opens with keep-alive comments" => {
            vec![("A", vec![Reply::sse(200, KEEP_ALIVE_STREAM)])]
        }
        "a stream that breaks after output is not replayed on the backup" => vec![(
            "A",
            vec![Reply::sse(200, ": keep-alive\n\ndata: {\"c\":\"partial\"}\n\n").breaks()],
        )],
        other => panic!("no upstream script for shipped row `{other}`: add one to shipped_script"),
    }
}

#[test]
fn shipped_tapes_are_what_the_record_mode_records() {
    let root = &crate::common::workspace();
    let shipped = root.join("matrices/tapes.yaml");
    let t = Tree::new();
    let copy = t.path("tapes.yaml");
    std::fs::copy(&shipped, &copy).unwrap();
    let m = faultmatrix::load::load_file(&copy, "tapes.yaml", &Systems::new())
        .unwrap_or_else(|e| panic!("{e}"));
    let rerecord = std::env::var("FAULTMATRIX_RERECORD_SHIPPED").is_ok_and(|v| v == "1");
    let mut stale = Vec::new();
    for row in &m.rows {
        let Some(tape) = row.tape() else { continue };
        let ups: Vec<(&str, Upstream)> = shipped_script(&row.name)
            .into_iter()
            .map(|(r, replies)| (r, Upstream::start(replies).unwrap()))
            .collect();
        let refs: Vec<(&str, &Upstream)> = ups.iter().map(|(r, u)| (*r, u)).collect();
        check_row(&m, row, &record(&refs)).unwrap_or_else(|e| panic!("{e}"));
        let recorded = std::fs::read_to_string(&tape.path).unwrap();
        let target = root.join("matrices").join(&tape.written);
        if rerecord {
            std::fs::create_dir_all(target.parent().unwrap()).unwrap();
            std::fs::write(&target, &recorded).unwrap();
        } else if std::fs::read_to_string(&target).ok().as_deref() != Some(recorded.as_str()) {
            stale.push(tape.written.clone());
        }
    }
    assert!(
        stale.is_empty(),
        "shipped tapes differ from what the record mode records: {stale:?}\nre-record them with FAULTMATRIX_RERECORD_SHIPPED=1 cargo test --test suite tapes::shipped_tapes"
    );
}

#[test]
fn resets_and_timeouts_are_recorded_as_faults_and_replay_as_such() {
    let t = Tree::new();
    let rows = r#"
  - name: reset, then too slow, then served
    tape: tapes/faults.yaml
    record: { expect: [reset, timeout, 200] }
    expect:
      trace: |
        A1 reset CONNECTION_RESET retry wait=1s
        A2 timeout TIMEOUT retry wait=2s
        A3 200 return
      stop: success
      elapsed: 8s
"#;
    let m = t.matrix(rows);
    let up = Upstream::start(vec![
        Reply::reset(),
        // Slower than `tapes.timeout: 2s`, in real time: a delay is a lower
        // bound, so load cannot make it arrive in time. (The timeout is 2s,
        // not 300ms, so that an answer sent at once is never late on a
        // loaded machine either.)
        served().delay(std::time::Duration::from_millis(2500)),
        served(),
    ])
    .unwrap();
    check(
        &m,
        "reset, then too slow, then served",
        &record(&[("A", &up)]),
    )
    .unwrap();
    let text = t.tape_text("tapes/faults.yaml");
    assert!(
        text.contains("fault: reset") && text.contains("fault: timeout"),
        "{text}"
    );
    drop(up);
    // The replayed timeout lasts the system's own 5s attempt timeout, on
    // the virtual clock.
    check(&m, "reset, then too slow, then served", &Mode::Replay).unwrap();
}

#[test]
fn bad_tape_keys_in_a_matrix_are_diagnosed_with_positions() {
    let cases: [(&str, &str); 5] = [
        (
            "  - name: both\n    tape: tapes/x.yaml\n    inject: { A: [200] }\n    expect: { stop: success }\n",
            "error: a row takes its script from `inject` or from `tape`, not both\n  --> m.yaml:18:5",
        ),
        (
            "  - name: record alone\n    record: { expect: [429] }\n    inject: { A: [200] }\n    expect: { stop: success }\n",
            "error: `record` without `tape`: only a tape is recorded\n  --> m.yaml:18:5",
        ),
        (
            "  - name: bad shape\n    tape: tapes/x.yaml\n    record: { expect: [429, later] }\n    expect: { stop: success }\n",
            "error: `record.expect[1]` of row `bad shape`: `later` is not an answer shape: expected a status such as 429, or one of timeout, reset, malformed, broken\n  --> m.yaml:19:29",
        ),
        (
            "  - name: typo\n    tape: tapes/x.yaml\n    record: { expcet: [429] }\n    expect: { stop: success }\n",
            "error: unknown key `expcet` in `record` of row `typo`\n  --> m.yaml:19:15",
        ),
        (
            "  - name: empty\n    tape: ''\n    expect: { stop: success }\n",
            "error: `tape` of row `empty`: `tape` is empty",
        ),
    ];
    for (rows, want) in cases {
        let t = Tree::new();
        let p = t.path("m.yaml");
        std::fs::write(&p, format!("{HEAD}{rows}")).unwrap();
        let e = match faultmatrix::load::load_file(&p, "m.yaml", &Systems::new()) {
            Ok(_) => panic!("loaded:\n{rows}"),
            Err(e) => e.to_string(),
        };
        assert!(e.contains(want), "want:\n{want}\ngot:\n{e}");
    }
    // The `tapes:` block itself: an upstream is http:// or https://.
    let t = Tree::new();
    let p = t.path("m.yaml");
    let text = format!("{HEAD}{RATE_LIMITED_ROW}").replace(
        "  timeout: 2s",
        "  timeout: 2s\n  upstreams: { A: 'ftp://api.example.com' }",
    );
    std::fs::write(&p, text).unwrap();
    let e = faultmatrix::load::load_file(&p, "m.yaml", &Systems::new())
        .err()
        .expect("ftp is refused")
        .to_string();
    assert!(e.contains("is not an http:// or https:// URL"), "{e}");
    assert!(e.contains("--> m.yaml:12:"), "{e}");
}

fn cli(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> (i32, String) {
    let (code, out, err) = crate::common::cli_env(dir, args, env);
    (code, format!("{out}{err}"))
}

#[test]
fn the_cli_records_with_either_switch_and_replays_with_no_network() {
    let t = Tree::new();
    t.matrix(RATE_LIMITED_ROW);
    let dir = t.dir.path();

    // Replay of a tape not yet recorded: a failure, not a skip.
    let (code, out) = cli(dir, &["run", "m.yaml"], &[]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("tapes/rate-limited.yaml does not exist"),
        "{out}"
    );
    assert!(out.contains("0 passed, 1 failed"), "{out}");

    // `faultmatrix record`, upstream and key from the environment.
    let up = Upstream::start(vec![rate_limited(), rate_limited(), served()]).unwrap();
    let env = [
        ("FAULTMATRIX_UPSTREAM_A", up.url()),
        ("FAULTMATRIX_UPSTREAM_A_KEY", KEY.to_string()),
    ];
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let (code, out) = cli(dir, &["record", "m.yaml"], &env);
    assert_eq!(code, 0, "{out}");
    assert!(up.requests()[0].contains(KEY));
    let first = t.tape_text("tapes/rate-limited.yaml");
    assert!(!first.contains("KEYSECRET5"), "{first}");
    drop(up);

    // `FAULTMATRIX_RECORD=1 faultmatrix run` records too; an upstream that
    // does not refuse leaves the tape as it was.
    let up = Upstream::start(vec![served()]).unwrap();
    let url = up.url();
    let (code, out) = cli(
        dir,
        &["run", "m.yaml"],
        &[
            ("FAULTMATRIX_RECORD", "1"),
            ("FAULTMATRIX_UPSTREAM_A", &url),
        ],
    );
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("did not misbehave on cue: wanted 429 then 429 then 200, got 200"),
        "{out}"
    );
    assert_eq!(t.tape_text("tapes/rate-limited.yaml"), first);
    drop(up);

    // Replay: no upstream anywhere.
    let (code, out) = cli(dir, &["run", "m.yaml"], &[]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("1 passed, 0 failed"), "{out}");
}

/// A local HTTPS upstream: TLS on 127.0.0.1 with a certificate for
/// `localhost` signed by a CA generated here, in front of a scripted
/// plain upstream (each connection is decrypted and passed on).
struct TlsFront {
    port: u16,
    ca_pem: String,
    _rt: tokio::runtime::Runtime,
}

impl TlsFront {
    fn start(plain: &Upstream) -> Self {
        use tokio_rustls::rustls;
        let mut ca = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        ca.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        ca.distinguished_name
            .push(rcgen::DnType::CommonName, "faultmatrix test CA");
        let ca =
            rcgen::CertifiedIssuer::self_signed(ca, rcgen::KeyPair::generate().unwrap()).unwrap();
        let key = rcgen::KeyPair::generate().unwrap();
        let leaf = rcgen::CertificateParams::new(vec!["localhost".to_string()])
            .unwrap()
            .signed_by(&key, &ca)
            .unwrap();
        let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(
                vec![leaf.der().clone()],
                rustls::pki_types::PrivatePkcs8KeyDer::from(key.serialize_der()).into(),
            )
            .unwrap();
        let acceptor = tokio_rustls::TlsAcceptor::from(std::sync::Arc::new(config));
        let to = plain.url().trim_start_matches("http://").to_string();
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let port = listener.local_addr().unwrap().port();
        rt.spawn(async move {
            let listener = tokio::net::TcpListener::from_std(listener).unwrap();
            while let Ok((tcp, _)) = listener.accept().await {
                let (acceptor, to) = (acceptor.clone(), to.clone());
                tokio::spawn(async move {
                    let Ok(mut tls) = acceptor.accept(tcp).await else {
                        return;
                    };
                    let Ok(mut plain) = tokio::net::TcpStream::connect(to.as_str()).await else {
                        return;
                    };
                    let _ = tokio::io::copy_bidirectional(&mut tls, &mut plain).await;
                });
            }
        });
        Self {
            port,
            ca_pem: ca.pem(),
            _rt: rt,
        }
    }

    fn url(&self) -> String {
        format!("https://localhost:{}", self.port)
    }
}

#[test]
fn a_tape_is_recorded_from_an_https_upstream_trusted_through_a_ca_file() {
    let t = Tree::new();
    t.matrix(RATE_LIMITED_ROW);
    let dir = t.dir.path();
    let up = Upstream::start(vec![rate_limited(), rate_limited(), served()]).unwrap();
    let front = TlsFront::start(&up);
    let url = front.url();
    let ca = t.path("ca.pem");
    std::fs::write(&ca, &front.ca_pem).unwrap();
    let ca = ca.display().to_string();
    let upstream = [
        ("FAULTMATRIX_UPSTREAM_A", url.as_str()),
        ("FAULTMATRIX_UPSTREAM_A_KEY", KEY),
    ];

    // Not trusted: refused before anything is sent, with the way out.
    let (code, out) = cli(dir, &["record", "m.yaml"], &upstream);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains(&format!("cannot reach the upstream of route A at {url}")),
        "{out}"
    );
    assert!(out.contains("certificate"), "{out}");
    assert!(out.contains("FAULTMATRIX_CA_FILE=FILE"), "{out}");
    assert!(up.requests().is_empty(), "{:?}", up.requests());
    assert!(!t.path("tapes/rate-limited.yaml").exists());

    // Trusted through FAULTMATRIX_CA_FILE: recorded over TLS.
    let mut env = upstream.to_vec();
    env.push(("FAULTMATRIX_CA_FILE", ca.as_str()));
    let (code, out) = cli(dir, &["record", "m.yaml"], &env);
    assert_eq!(code, 0, "{out}");
    assert_eq!(up.requests().len(), 3);
    assert!(up.requests()[0].contains(KEY));
    let tape = t.tape_text("tapes/rate-limited.yaml");
    assert!(!tape.contains("KEYSECRET5"), "{tape}");
    assert_eq!(
        statuses(
            &Tape::read(
                &t.path("tapes/rate-limited.yaml"),
                "tapes/rate-limited.yaml"
            )
            .unwrap()
        ),
        ["429", "429", "200"]
    );
    drop(front);
    drop(up);

    // Replay: no upstream anywhere.
    let (code, out) = cli(dir, &["run", "m.yaml"], &[]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("1 passed, 0 failed"), "{out}");
}

#[test]
fn the_recorder_refuses_answers_over_its_size_limits() {
    use faultmatrix::exec::net::{MAX_BODY, MAX_HEAD};
    let cases = [
        (
            served().header("x-padding", &"h".repeat(MAX_HEAD)),
            format!("more than the {MAX_HEAD} the recorder takes"),
        ),
        (
            Reply::json(200, &format!("\"{}\"", "b".repeat(MAX_BODY))),
            format!("is more than {MAX_BODY} bytes, the most the recorder takes"),
        ),
    ];
    for (reply, want) in cases {
        let t = Tree::new();
        t.matrix(RATE_LIMITED_ROW);
        let up = Upstream::start(vec![reply]).unwrap();
        let url = up.url();
        let (code, out) = cli(
            t.dir.path(),
            &["record", "m.yaml"],
            &[("FAULTMATRIX_UPSTREAM_A", url.as_str())],
        );
        assert_eq!(code, 1, "{out}");
        assert!(out.contains(&want), "want {want}:\n{out}");
        assert!(!t.path("tapes/rate-limited.yaml").exists());
    }
}
