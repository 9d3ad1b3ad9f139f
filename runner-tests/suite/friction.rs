//! The frictions of issue 14, one test each, run the way a row runs: load a
//! matrix from text, run the row against the reference system, judge it.
//! Each asserts the behaviour that was missing (a test that failed before
//! the fix).

use faultmatrix::exec::run::run_row;
use faultmatrix::load::load_text;
use faultmatrix::system::Systems;

/// A matrix on the reference system with one-and-a-half-second backoff.
fn matrix(rows: &str) -> String {
    format!(
        "title: friction
policy:
  routes: [{{ name: A, attempts: 3 }}, {{ name: B, attempts: 1 }}]
  backoff: {{ initial: 1.5s, factor: 2, cap: 30s, jitter: none }}
  deadline: 60s
rows:
{rows}"
    )
}

/// The verdict on the file's first row, rendered as every report prints it.
fn verdict(rows: &str) -> Result<(), String> {
    let text = matrix(rows);
    let m =
        load_text("friction.yaml", &text, None, &Systems::new()).unwrap_or_else(|e| panic!("{e}"));
    let obs = run_row(&m, &m.rows[0]);
    faultmatrix::verdict::check(&m, &m.rows[0], &obs).map_err(|f| f.render())
}

#[test]
fn waits_compare_by_value_whatever_the_unit() {
    for wait in ["1.5s", "1500ms", "1.5s..1.5s", "1s..2s", "1500000us"] {
        let rows = format!(
            "  - name: r
    inject: {{ A: [503, 200] }}
    expect:
      trace: |
        A1 503 UPSTREAM_UNAVAILABLE retry wait={wait}
        A2 200 return
"
        );
        verdict(&rows).unwrap_or_else(|e| panic!("wait={wait}: {e}"));
    }
}

#[test]
fn fields_compare_in_any_order() {
    verdict(
        "  - name: r
    inject: { A: [503, 200] }
    expect:
      trace: |
        A1 503 UPSTREAM_UNAVAILABLE retry at=0s wait=1.5s
        A2 200 return at=1500ms
",
    )
    .unwrap();
}

#[test]
fn a_failing_diff_shows_holding_lines_as_written() {
    let e = verdict(
        "  - name: r
    inject: { A: [503, 503, 200] }
    expect:
      trace: |
        A1 503 UPSTREAM_UNAVAILABLE retry wait=1.5s..1.5s
        A2 503 UPSTREAM_UNAVAILABLE retry wait=1s
        A3 200 return
",
    )
    .unwrap_err();
    assert!(
        e.contains("  A1 503 UPSTREAM_UNAVAILABLE retry wait=1.5s..1.5s\n"),
        "{e}"
    );
    assert!(!e.contains("1500ms..1500ms"), "{e}");
    assert!(
        e.contains("+ A2 503 UPSTREAM_UNAVAILABLE retry wait=3s\n"),
        "{e}"
    );
}

#[test]
fn an_asserted_field_is_never_hidden_by_a_neighbour() {
    // The expected trace misses A3, so B1 sits where A3 was expected: its
    // observed line still shows `at=`, from B1's own expected line.
    let e = verdict(
        "  - name: r
    inject: { A: [503, 503, 503], B: [200] }
    expect:
      trace: |
        A1 503 UPSTREAM_UNAVAILABLE retry wait=1.5s
        A2 503 UPSTREAM_UNAVAILABLE retry wait=3s
        B1 200 return at=12s
",
    )
    .unwrap_err();
    assert!(e.contains("- B1 200 return at=12s\n"), "{e}");
    assert!(e.contains("+ B1 200 return at=4500ms\n"), "{e}");
}

#[test]
fn an_asserted_wait_the_call_lacks_is_shown_absent() {
    let e = verdict(
        "  - name: r
    inject: { A: [503, 503, 503], B: [200] }
    expect:
      trace: |
        A1 503 UPSTREAM_UNAVAILABLE retry wait=1.5s
        A2 503 UPSTREAM_UNAVAILABLE retry wait=3s
        A3 503 UPSTREAM_UNAVAILABLE switch
        B1 200 retry wait=1s
",
    )
    .unwrap_err();
    assert!(e.contains("+ B1 200 return wait=absent\n"), "{e}");
    assert!(
        e.contains("note: B1: `wait=1s` is asserted, but no wait followed"),
        "{e}"
    );
}

#[test]
fn durations_take_the_humantime_grammar_everywhere() {
    // In a row setting, a script entry's latency and a trace line alike.
    verdict(
        "  - name: r
    deadline: 1m 30s
    inject: { A: [{ status: 503, latency: 1min }, 200] }
    expect:
      trace: |
        A1 503 UPSTREAM_UNAVAILABLE retry wait=1.5s
        A2 200 return at=1m1500ms
      elapsed: 1m1.5s
",
    )
    .unwrap();
    let text = matrix("  - name: r\n    deadline: 1m30x\n    expect: { stop: success }\n");
    let e = match load_text("friction.yaml", &text, None, &Systems::new()) {
        Ok(_) => panic!("`1m30x` was accepted"),
        Err(e) => e.to_string(),
    };
    assert!(e.contains("unknown unit `x`"), "{e}");
}

/// The `### `key`` headings of a `## ` section of docs/format.md.
fn documented(section: &str) -> Vec<String> {
    let text = std::fs::read_to_string("docs/format.md").unwrap();
    let start = text
        .find(&format!("\n## {section}\n"))
        .unwrap_or_else(|| panic!("docs/format.md has no `## {section}`"));
    let body = &text[start + section.len() + 5..];
    let body = &body[..body.find("\n## ").unwrap_or(body.len())];
    let mut keys: Vec<String> = body
        .lines()
        .filter_map(|l| l.strip_prefix("### "))
        .flat_map(|h| {
            h.split('`')
                .skip(1)
                .step_by(2)
                .map(str::to_string)
                .collect::<Vec<_>>()
        })
        .collect();
    keys.sort();
    keys
}

/// The keys the loader accepts at a level, from the schema generated from
/// its own serde shapes.
fn accepted(def: Option<&str>) -> Vec<String> {
    let schema: serde_json::Value = serde_json::from_str(&faultmatrix::load::schema::render(
        faultmatrix::load::schema::Kind::Matrix,
    ))
    .unwrap();
    let node = match def {
        None => &schema,
        Some(d) => &schema["$defs"][d],
    };
    let mut keys: Vec<String> = node["properties"]
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect();
    keys.sort();
    keys
}

#[test]
fn format_md_documents_every_key_the_loader_accepts() {
    for (section, def) in [
        ("File keys", None),
        ("Row keys", Some("RawRow")),
        ("`expect` keys", Some("RawExpect")),
    ] {
        assert_eq!(
            documented(section),
            accepted(def),
            "docs/format.md `## {section}` against the loader's keys"
        );
    }
}

/// The keys listed (`- `key`: …`) under a `### `key`` heading of
/// docs/format.md.
fn listed_under(heading: &str) -> Vec<String> {
    let text = std::fs::read_to_string("docs/format.md").unwrap();
    let start = text
        .find(&format!("\n### `{heading}`\n"))
        .unwrap_or_else(|| panic!("docs/format.md has no `### `{heading}``"));
    let body = &text[start + heading.len() + 8..];
    let body = &body[..body.find("\n#").unwrap_or(body.len())];
    let mut keys: Vec<String> = body
        .lines()
        .filter_map(|l| l.strip_prefix("- `"))
        .filter_map(|l| l.split_once("`:"))
        .map(|(k, _)| k.to_string())
        .collect();
    keys.sort();
    keys
}

#[test]
fn format_md_lists_every_tolerance_key_the_loader_accepts() {
    let listed = listed_under("tolerance");
    assert!(listed.contains(&"late".to_string()), "{listed:?}");
    assert_eq!(
        listed,
        accepted(Some("RawTolerance")),
        "docs/format.md `### `tolerance`` against the loader's keys"
    );
}

#[test]
fn the_terminal_stop_is_documented_as_one_call_with_the_terminal_code() {
    let text = std::fs::read_to_string("docs/format.md").unwrap();
    assert!(text.contains("exactly one call *answered with the terminal code*"));
    assert!(text.contains("replays as `201`"));
}

#[test]
fn unused_repeated_answers_are_counted_once() {
    let e = verdict(
        "  - name: r
    inject: { A: [200, { status: 503, repeat: 5 }] }
    expect: { stop: success }
",
    )
    .unwrap_err();
    assert!(
        e.contains("route A: 5 scripted answers were never requested (503 x5); 1 call was made"),
        "{e}"
    );
}

#[test]
fn a_part_of_a_stop_reason_gets_a_suggestion() {
    let text = matrix("  - name: r\n    inject: { A: [200] }\n    expect: { stop: refused }\n");
    let e = match load_text("friction.yaml", &text, None, &Systems::new()) {
        Ok(_) => panic!("`refused` was accepted"),
        Err(e) => e.to_string(),
    };
    assert!(
        e.contains("did you mean `guidance-refused` or `switch-refused`?"),
        "{e}"
    );
}

#[test]
fn the_json_schema_enumerates_the_reference_stop_reasons() {
    let schema: serde_json::Value = serde_json::from_str(&faultmatrix::load::schema::render(
        faultmatrix::load::schema::Kind::Matrix,
    ))
    .unwrap();
    let v = jsonschema::validator_for(&schema).unwrap();
    let doc = |system: &str, stop: &str| -> serde_json::Value {
        let yaml = format!(
            "title: t\nsystem: {system}\nrows:\n  - name: a\n    expect: {{ stop: {stop} }}\n"
        );
        serde_json::to_value(serde_yaml::from_str::<serde_yaml::Value>(&yaml).unwrap()).unwrap()
    };
    assert!(!v.is_valid(&doc("reference", "sucess")));
    assert!(v.is_valid(&doc("reference", "success")));
    // A custom system reports its own stop reasons.
    assert!(v.is_valid(&doc("chat-client", "gave-up")));
}

#[test]
fn policy_keys_can_be_set_per_row() {
    // The file backs off from 1.5s; this row from 4s, the next with a
    // budget of one call on A.
    verdict(
        "  - name: r
    policy: { backoff: { initial: 4s } }
    inject: { A: [503, 503, 200] }
    expect:
      trace: |
        A1 503 UPSTREAM_UNAVAILABLE retry wait=4s
        A2 503 UPSTREAM_UNAVAILABLE retry wait=8s
        A3 200 return
",
    )
    .unwrap();
    verdict(
        "  - name: r
    policy: { routes: [{ name: A, attempts: 1 }, { name: B, attempts: 1 }] }
    inject: { A: [503], B: [200] }
    expect:
      trace: |
        A1 503 UPSTREAM_UNAVAILABLE switch
        B1 200 return
",
    )
    .unwrap();
}

#[test]
fn a_row_policy_is_validated_with_the_file_s_messages_at_the_row_s_key() {
    let text = matrix(
        "  - name: r
    policy: { backoff: { factr: 3 } }
    inject: { A: [200] }
    expect: { stop: success }
",
    );
    let e = match load_text("friction.yaml", &text, None, &Systems::new()) {
        Ok(_) => panic!("`factr` was accepted"),
        Err(e) => e.to_string(),
    };
    assert!(e.contains("did you mean `factor`"), "{e}");
    assert!(
        e.contains("friction.yaml:8:26"),
        "points at the row's key: {e}"
    );
}

#[test]
fn a_command_system_s_env_can_be_set_per_row() {
    let text = "title: t
system: { command: [sh, -c, 'test \"$FM_WHO\" = row'], env: { FM_WHO: file } }
rows:
  - name: the file's env
    expect: { stop: failed }
  - name: the row's env
    env: { FM_WHO: row }
    expect: { stop: success }
";
    let m = load_text("t.yaml", text, None, &Systems::new()).unwrap_or_else(|e| panic!("{e}"));
    for row in &m.rows {
        let obs = run_row(&m, row);
        faultmatrix::verdict::check(&m, row, &obs)
            .unwrap_or_else(|f| panic!("{}: {}", row.name, f.render()));
    }
    let bad = matrix("  - name: r\n    env: { X: y }\n    expect: { stop: success }\n");
    let e = match load_text("friction.yaml", &bad, None, &Systems::new()) {
        Ok(_) => panic!("`env` on an in-process row was accepted"),
        Err(e) => e.to_string(),
    };
    assert!(e.contains("`env` is for a command system"), "{e}");
}

#[test]
fn the_wall_clock_is_settable_per_file_and_row() {
    // A scenario written for 2023: an RFC 850 date 20s after "now" is read
    // as 2023 (not 1923) and honoured as a 20s wait.
    let rows = |clock: &str| {
        format!(
            "  - name: r
{clock}    inject:
      A:
        - {{ status: 503, headers: {{ Retry-After: 'Friday, 29-Sep-23 12:00:20 GMT' }} }}
        - 200
    expect:
      trace: |
        A1 503 UPSTREAM_UNAVAILABLE retry wait=20s
        A2 200 return
"
        )
    };
    verdict(&rows("    clock: { wall: 2023-09-29T12:00:00Z }\n")).unwrap();
    verdict(&rows(
        "    clock: { wall: 'Fri, 29 Sep 2023 12:00:00 GMT' }\n",
    ))
    .unwrap();
    // Without a clock "now" is 1994, and RFC 9110 reads `23` as the year
    // within 50 years ahead: 2023, 29 years away, far above the cap, so
    // the guidance is refused and the run fails at once.
    let e = verdict(&rows("")).unwrap_err();
    assert!(e.contains("+ A1 503 UPSTREAM_UNAVAILABLE fail"), "{e}");
    // Per file.
    let file =
        matrix(&rows("")).replace("rows:\n", "clock: { wall: 2023-09-29T12:00:00Z }\nrows:\n");
    let m = load_text("f.yaml", &file, None, &Systems::new()).unwrap_or_else(|e| panic!("{e}"));
    let obs = run_row(&m, &m.rows[0]);
    faultmatrix::verdict::check(&m, &m.rows[0], &obs).unwrap_or_else(|f| panic!("{}", f.render()));
    let bad = matrix("  - name: r\n    clock: { wall: tomorrow }\n    expect: { stop: success }\n");
    let e = match load_text("friction.yaml", &bad, None, &Systems::new()) {
        Ok(_) => panic!("`tomorrow` was accepted"),
        Err(e) => e.to_string(),
    };
    assert!(e.contains("`tomorrow` is not a wall-clock time"), "{e}");
}

#[test]
fn check_warns_when_a_code_caps_a_route_s_attempts() {
    let dir = tempfile::tempdir().unwrap();
    crate::common::write(
        dir.path(),
        "m.yaml",
        "title: t\npolicy:\n  routes: [{ name: A, attempts: 5 }, { name: B, attempts: 1 }]\nrows:\n  - name: r\n    inject: { A: [503, 503, 503], B: [200] }\n    expect: { stop: success }\n",
    );
    let (code, out, err) = crate::common::cli(dir.path(), &["check", "m.yaml"]);
    assert_eq!(code, 0, "a warning does not fail check: {out}{err}");
    assert!(
        out.contains("warning: route A allows 5 attempts, but a code's `max_attempts` caps it: ")
            && out.contains("UPSTREAM_UNAVAILABLE at 3 (built-in registry)"),
        "{out}"
    );
    assert!(out.contains(" --> m.yaml:3:33"), "{out}");
    assert!(!out.contains("route B allows"), "{out}");
}

/// A reference matrix whose route A allows five calls (the built-in
/// registry allows a 503 three).
fn capped(top: &str, row_keys: &str) -> String {
    format!(
        "title: caps
policy:
  routes: [{{ name: A, attempts: 5 }}, {{ name: B, attempts: 1 }}]
  backoff: {{ initial: 1s, factor: 1, cap: 30s, jitter: none }}
{top}rows:
  - name: five on A
{row_keys}    inject: {{ A: [503, 503, 503, 503, 200] }}
    expect:
      trace: |
        A1 503 UPSTREAM_UNAVAILABLE retry wait=1s
        A2 503 UPSTREAM_UNAVAILABLE retry wait=1s
        A3 503 UPSTREAM_UNAVAILABLE retry wait=1s
        A4 503 UPSTREAM_UNAVAILABLE retry wait=1s
        A5 200 return
"
    )
}

fn run_capped(text: &str) -> Result<(), String> {
    let m = load_text("caps.yaml", text, None, &Systems::new()).unwrap_or_else(|e| panic!("{e}"));
    let obs = run_row(&m, &m.rows[0]);
    faultmatrix::verdict::check(&m, &m.rows[0], &obs).map_err(|f| f.render())
}

#[test]
fn the_diff_says_why_a_route_switched_early() {
    let e = run_capped(&capped("", "")).unwrap_err();
    assert!(e.contains("+ A3 503 UPSTREAM_UNAVAILABLE switch"), "{e}");
    assert!(
        e.contains("note: route A switched after 3 calls, not 5: UPSTREAM_UNAVAILABLE caps it at 3 (built-in registry), below the route's `attempts: 5` (caps.yaml:3:33); set `codes: { UPSTREAM_UNAVAILABLE: { max_attempts: 5 } }` in the row or file to allow more"),
        "{e}"
    );
    // The run stopping on its last route is explained too, with the
    // stop when no trace is asserted.
    let one_route = "title: caps
policy:
  routes: [{ name: A, attempts: 4 }]
rows:
  - name: r
    inject: { A: [{ status: 503, repeat: forever }] }
    expect: { stop: success }
";
    let e = run_capped(one_route).unwrap_err();
    assert!(
        e.contains("stop: expected `success`, observed `exhausted`\nnote: route A stopped after 3 calls, not 4: UPSTREAM_UNAVAILABLE caps it at 3 (built-in registry), below the route's `attempts: 4` (caps.yaml:3:33)"),
        "{e}"
    );
    // A route that used its own attempts says nothing of caps.
    let e = run_capped(&capped("", "").replace("attempts: 5", "attempts: 2")).unwrap_err();
    assert!(!e.contains("note: route A"), "{e}");
}

#[test]
fn codes_raise_a_limit_per_file_or_row_without_a_registry_file() {
    let file = "codes:\n  UPSTREAM_UNAVAILABLE: { max_attempts: 5 }\n";
    run_capped(&capped(file, "")).unwrap();
    run_capped(&capped(
        "",
        "    codes: { UPSTREAM_UNAVAILABLE: { max_attempts: 5 } }\n",
    ))
    .unwrap();
    // A row's lowers the file's again, and the diff points at the row's.
    let e = run_capped(&capped(
        file,
        "    codes: { UPSTREAM_UNAVAILABLE: { max_attempts: 2 } }\n",
    ))
    .unwrap_err();
    assert!(e.contains("+ A2 503 UPSTREAM_UNAVAILABLE switch"), "{e}");
    assert!(
        e.contains("UPSTREAM_UNAVAILABLE caps it at 2 (caps.yaml:9:52, `codes`)"),
        "{e}"
    );
    // check: no warning once the file raises the limit; a row's own
    // limit is warned at its place.
    let dir = tempfile::tempdir().unwrap();
    crate::common::write(dir.path(), "a.yaml", &capped(file, ""));
    let (code, out, err) = crate::common::cli(dir.path(), &["check", "a.yaml"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("warning: route A allows 5"), "{out}");
    assert!(!out.contains("UPSTREAM_UNAVAILABLE at"), "{out}");
    crate::common::write(
        dir.path(),
        "b.yaml",
        &capped(
            "",
            "    codes: { UPSTREAM_UNAVAILABLE: { max_attempts: 2 } }\n",
        ),
    );
    let (_, out, _) = crate::common::cli(dir.path(), &["check", "b.yaml"]);
    assert!(
        out.contains("UPSTREAM_UNAVAILABLE at 2 (b.yaml:7:52, `codes`)"),
        "{out}"
    );
}

/// The values the loader accepts at a place, read from its own message for
/// a wrong value there (`expected one of: a, b`).
fn loader_values(text: &str) -> Vec<String> {
    let e = match load_text("enum.yaml", text, None, &Systems::new()) {
        Ok(_) => panic!("`bogus` was accepted:\n{text}"),
        Err(e) => e.to_string(),
    };
    let list = e
        .lines()
        .find_map(|l| {
            l.split_once("expected one of: ")
                .map(|(_, l)| l.to_string())
        })
        .unwrap_or_else(|| panic!("no list of values in:\n{e}"));
    list.split(", ").map(str::to_string).collect()
}

#[test]
fn every_enum_the_loader_enforces_is_in_the_json_schema() {
    let schema: serde_json::Value = serde_json::from_str(&faultmatrix::load::schema::render(
        faultmatrix::load::schema::Kind::Matrix,
    ))
    .unwrap();
    let v = jsonschema::validator_for(&schema).unwrap();
    let json = |yaml: &str| -> serde_json::Value {
        serde_json::to_value(serde_yaml::from_str::<serde_yaml::Value>(yaml).unwrap()).unwrap()
    };
    // Each place the loader takes one of a fixed list of words: a file
    // with `V` there. The list is the loader's (from its message, or its
    // constant); the schema must accept exactly those words there.
    let row = "rows:\n  - name: a\n    inject: { A: [200] }\n    expect: { stop: success }\n";
    let places: Vec<(&str, String, Option<Vec<String>>)> = vec![
        (
            "expect.stop",
            "title: t\nrows:\n  - name: a\n    inject: { A: [200] }\n    expect: { stop: V }\n"
                .into(),
            None,
        ),
        (
            "inject fault",
            "title: t\nrows:\n  - name: a\n    inject: { A: [{ fault: V }, 200] }\n    expect: { stop: success }\n".into(),
            None,
        ),
        (
            "a relative header date's form",
            "title: t\nrows:\n  - name: a\n    inject: { A: [{ status: 503, headers: { retry-after: { http-date: now+1s, form: V } } }, 200] }\n    expect: { stop: success }\n".into(),
            None,
        ),
        (
            "policy.backoff.jitter",
            format!("title: t\npolicy: {{ backoff: {{ jitter: V }} }}\n{row}"),
            None,
        ),
        (
            "policy.retry_after.above_cap",
            format!("title: t\npolicy: {{ retry_after: {{ above_cap: V }} }}\n{row}"),
            None,
        ),
        (
            // Its message names the two words in a sentence.
            "system.clock",
            format!("title: t\nsystem: {{ command: [python3, x.py], routes: [A], clock: V }}\n{row}"),
            Some(vec!["virtual".into(), "real".into()]),
        ),
    ];
    for (place, text, words) in places {
        let words = words.unwrap_or_else(|| loader_values(&text.replace(": V", ": bogus")));
        assert!(!words.is_empty(), "{place}");
        for w in &words {
            let doc = json(&text.replace(": V", &format!(": {w}")));
            assert!(
                v.is_valid(&doc),
                "{place}: the schema rejects `{w}`, which the loader accepts"
            );
        }
        let bogus = json(&text.replace(": V", ": bogus"));
        assert!(
            !v.is_valid(&bogus),
            "{place}: the schema accepts `bogus`; the loader takes only {words:?}"
        );
    }
}

#[test]
fn header_dates_can_be_written_relative_to_the_wall_clock() {
    let row = |clock: &str, header: &str, wait: &str| {
        format!(
            "  - name: r
{clock}    inject:
      A:
        - {{ status: 503, latency: 2s, headers: {{ retry-after: {header} }} }}
        - 200
    expect:
      trace: |
        A1 503 UPSTREAM_UNAVAILABLE retry wait={wait}
        A2 200 return at={}
",
            if wait == "20s" { "22s" } else { "3.5s" }
        )
    };
    // Every form, on the default clock and on a 2023 one: `now` is when
    // the answer is sent (after its 2s latency), so the guidance is 20s.
    for clock in ["", "    clock: { wall: 2023-09-29T12:00:00Z }\n"] {
        for form in [
            "",
            ", form: imf-fixdate",
            ", form: rfc850",
            ", form: asctime",
        ] {
            let h = format!("{{ http-date: now+20s{form} }}");
            verdict(&row(clock, &h, "20s")).unwrap_or_else(|e| panic!("{h}: {e}"));
        }
        // A date in the past is no guidance: the backoff's 1.5s.
        verdict(&row(clock, "{ http-date: now-5s }", "1.5s")).unwrap();
    }
    for (header, message) in [
        (
            "{ http_date: now+20s }",
            "unknown key `http_date` in a header value",
        ),
        (
            "{ http-date: now+20s, form: rfc-850 }",
            "did you mean `rfc850`?",
        ),
        (
            "{ http-date: tomorrow }",
            "`tomorrow` is not a time relative to now",
        ),
        ("{ http-date: now+20 }", "has no unit"),
    ] {
        let text = matrix(&row("", header, "20s"));
        let e = match load_text("friction.yaml", &text, None, &Systems::new()) {
            Ok(_) => panic!("{header} was accepted"),
            Err(e) => e.to_string(),
        };
        assert!(e.contains(message), "{header}: {e}");
        assert!(e.contains(" --> friction.yaml:10:"), "{header}: {e}");
        assert_eq!(e.matches("error:").count(), 1, "{e}");
    }
}
