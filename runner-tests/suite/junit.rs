//! The JUnit report as CI systems read it: valid against the shipped
//! `docs/schema/junit-10.xsd` (the Jenkins xunit plugin's JUnit dialect),
//! with times, counts, skipped rows, errors for files that do not load,
//! the diff in the failure body and each row's `file:line` as a property.
//!
//! The schema check needs xmllint (Debian's libxml2-utils, installed by
//! `.ci/run`), so it is `#[ignore]`d in a plain `cargo test` and run by
//! `.ci/run` with `--ignored`; there it fails, never passes, without
//! xmllint.

use std::path::Path;
use std::process::Command;

use crate::common::{cli, workspace, write};

const ROWS: &str = "title: j
policy:
  routes: [{ name: A, attempts: 2 }]
  backoff: { initial: 1s, factor: 2, cap: 30s, jitter: none }
rows:
  - name: passes
    inject: { A: [200] }
    expect: { trace: A1 200 return }

  - name: fails <with> \"markup\" & a diff
    inject: { A: [503, 200] }
    expect:
      trace: |
        A1 503 UPSTREAM_UNAVAILABLE retry wait=2s
        A2 200 return

  - name: ignored
    ignore: not today
    inject: { A: [200] }
    expect: { trace: A1 200 return }
";

/// A tree with a passing, a failing and an ignored row, and a file that
/// does not load; returns the report `faultmatrix run --junit` wrote.
fn report(dir: &Path) -> String {
    write(dir, "matrices/j.yaml", ROWS);
    write(dir, "matrices/broken.yaml", "title: b\nrows: [\n");
    let (code, out, err) = cli(dir, &["run", "matrices", "--junit", "out.xml"]);
    assert_eq!(code, 2, "a file that does not load: exit 2\n{out}{err}");
    std::fs::read_to_string(dir.join("out.xml")).unwrap()
}

fn attr<'a>(xml: &'a str, element: &str, name: &str) -> Vec<&'a str> {
    xml.match_indices(&format!("<{element} "))
        .filter_map(|(i, _)| {
            let tag = &xml[i..i + xml[i..].find('>')?];
            let at = tag.find(&format!(" {name}=\""))? + name.len() + 3;
            Some(&tag[at..at + tag[at..].find('"')?])
        })
        .collect()
}

#[test]
fn the_report_has_times_counts_and_lines() {
    let dir = tempfile::tempdir().unwrap();
    let xml = report(dir.path());
    assert!(
        xml.contains(
            "<testsuites name=\"faultmatrix\" tests=\"4\" failures=\"1\" errors=\"1\" time=\""
        ),
        "{xml}"
    );
    assert!(xml.contains("<testsuite name=\"matrices/j.yaml\" tests=\"3\" failures=\"1\" errors=\"0\" skipped=\"1\" time=\""), "{xml}");
    assert!(xml.contains("<testsuite name=\"matrices/broken.yaml\" tests=\"1\" failures=\"0\" errors=\"1\" skipped=\"0\""), "{xml}");
    // Every case, suite and the root has a time in seconds.
    for element in ["testsuites", "testsuite", "testcase"] {
        let times = attr(&xml, element, "time");
        assert!(!times.is_empty(), "{element} has no time\n{xml}");
        for t in times {
            assert!(
                t.parse::<f64>().is_ok_and(|s| s >= 0.0),
                "{element} time={t}"
            );
        }
    }
    assert_eq!(attr(&xml, "testcase", "time").len(), 4);
    assert!(xml.contains("<skipped message=\"not today\"/>"), "{xml}");
    assert!(
        xml.contains("<error message="),
        "the broken file is an error\n{xml}"
    );
    // The diff is in the failure's body, escaped.
    assert!(
        xml.contains("- A1 503 UPSTREAM_UNAVAILABLE retry wait=2s\n+ A1 503 UPSTREAM_UNAVAILABLE retry wait=1s\n"),
        "{xml}"
    );
    assert!(
        xml.contains("name=\"fails &lt;with&gt; &quot;markup&quot; &amp; a diff\""),
        "{xml}"
    );
    // Row lines as suite properties (the schema allows no line on a case).
    for (row, line) in [("passes", 6), ("ignored", 17)] {
        let p = format!("<property name=\"line: {row}\" value=\"matrices/j.yaml:{line}\"/>");
        assert!(xml.contains(&p), "{p}\n{xml}");
    }
    assert!(!xml.contains(" line=\""), "{xml}");
}

/// xmllint's verdict on `file` against the shipped schema.
fn xmllint(file: &Path) -> (bool, String) {
    let xsd = workspace().join("docs/schema/junit-10.xsd");
    let out = Command::new("xmllint")
        .arg("--noout")
        .arg("--schema")
        .arg(&xsd)
        .arg(file)
        .output()
        .unwrap_or_else(|e| {
            panic!("xmllint is needed to validate JUnit (apt-get install libxml2-utils): {e}")
        });
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
#[ignore = "needs xmllint (apt-get install libxml2-utils); .ci/run runs it with --ignored"]
fn the_report_validates_against_the_shipped_junit_schema() {
    let dir = tempfile::tempdir().unwrap();
    report(dir.path());
    let (ok, msg) = xmllint(&dir.path().join("out.xml"));
    assert!(ok, "out.xml is not valid junit-10:\n{msg}");
    // The schema is not vacuous: what the old report wrote is refused.
    let old = write(
        dir.path(),
        "old.xml",
        "<?xml version=\"1.0\"?>\n<testsuites tests=\"1\" failures=\"0\" skipped=\"0\">\n  <testsuite name=\"m.yaml\" tests=\"1\" failures=\"0\" skipped=\"0\">\n    <testcase classname=\"m.yaml\" name=\"r\" file=\"m.yaml\" line=\"3\"/>\n  </testsuite>\n</testsuites>\n",
    );
    let (ok, msg) = xmllint(&old);
    assert!(!ok, "the old report should not validate");
    for refused in ["skipped", "errors", "file", "line"] {
        assert!(msg.contains(&format!("'{refused}'")), "{refused}: {msg}");
    }
}

/// Every row result carries its line without indexing the file: the
/// rows' `name` positions read from the text's lines
/// (`base::yaml::one_row::row_names`) are the position index's, for every
/// matrix file of the repository in the shape it reads.
#[test]
fn row_lines_read_from_the_text_are_the_index_positions() {
    use faultmatrix::base::yaml::{one_row::row_names, parse_value, Positions, Seg};
    let root = workspace();
    let mut stack = vec![root.join("matrices"), root.join("runner-tests")];
    let (mut files, mut rows) = (0, 0);
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in entries.flatten() {
            let path = e.path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            if !path.extension().is_some_and(|x| x == "yaml" || x == "yml") {
                continue;
            }
            let Ok(text) = std::fs::read_to_string(&path) else {
                continue;
            };
            // Only what parses has an index to agree with.
            let (Ok(_), Some(read)) = (parse_value(&text), row_names(&text)) else {
                continue;
            };
            let index = Positions::index(&text);
            for (i, (pos, _)) in read.iter().enumerate() {
                let name = [
                    Seg::Key("rows".into()),
                    Seg::Index(i),
                    Seg::Key("name".into()),
                ];
                assert_eq!(*pos, index.key(&name), "row {i} of {}", path.display());
            }
            files += 1;
            rows += read.len();
        }
    }
    assert!(
        files >= 15 && rows >= 100,
        "{files} files, {rows} rows read"
    );
}
