//! The HTML report in a real headless browser (Debian's `chromium`): the
//! page renders, its script runs, every row's timeline shows exactly the
//! calls the row made, every wait is labelled, a failed row draws its
//! expected timeline beside the observed one, and no two labels overlap as
//! the browser lays them out (measured in the page with `getBBox`).
//!
//! Ignored by a plain `cargo test` because it needs chromium; `.ci/run`
//! installs chromium and runs it with `--ignored`. When run, a missing
//! browser FAILS the test: it never passes without a browser.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

const MATRIX: &str = "title: browser
policy:
  routes: [{ name: A, attempts: 2 }, { name: B, attempts: 2 }]
  backoff: { initial: 1s, factor: 2, cap: 30s, jitter: none }
  deadline: 30s
rows:
  - name: one call
    inject: { A: [401] }
    expect: { trace: A1 401 AUTH_FAILED fail, stop: terminal }

  - name: three calls
    inject: { A: [503, 503], B: [200] }
    expect:
      trace: |
        A1 503 UPSTREAM_UNAVAILABLE retry wait=1s
        A2 503 UPSTREAM_UNAVAILABLE switch
        B1 200 return

  - name: four calls, wrong expectation
    inject:
      A: [{ status: 504, repeat: forever }]
      B: [{ status: 504, repeat: forever }]
    expect:
      trace: |
        A1 504 GATEWAY_TIMEOUT retry wait=1s
        A2 504 GATEWAY_TIMEOUT switch
        B1 504 GATEWAY_TIMEOUT fail

  - name: short waits on a long scale
    policy:
      routes: [{ name: A, attempts: 5 }]
      backoff: { initial: 100ms, factor: 1 }
    inject: { A: [{ status: 429, headers: { retry-after: '10' } }, 429, 429, 429, 200] }
    expect:
      trace: |
        A1 429 RATE_LIMITED retry wait=10s
        A2 429 RATE_LIMITED retry wait=100ms
        A3 429 RATE_LIMITED retry wait=100ms
        A4 429 RATE_LIMITED retry wait=100ms
        A5 200 return
";

fn chromium() -> &'static str {
    for c in ["chromium", "chromium-browser"] {
        if Command::new(c)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
        {
            return c;
        }
    }
    panic!(
        "this test needs a headless browser: install Debian's chromium (`apt-get install -y chromium`); it does not pass without one"
    );
}

fn browser(args: &[&str], page: &Path) -> String {
    let profile = tempfile::tempdir().unwrap();
    let mut child = Command::new(chromium())
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(args)
        .arg(format!("file://{}", page.display()))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let start = Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        if start.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            panic!("chromium did not finish within 60 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let out = child.wait_with_output().unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn attr<'a>(tag: &'a str, name: &str) -> Option<&'a str> {
    let at = tag.find(&format!("{name}=\""))? + name.len() + 2;
    tag[at..].split('"').next()
}

#[test]
#[ignore = "needs Debian's chromium; .ci/run installs it and runs this with --ignored"]
fn html_report_renders_with_the_right_calls() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("matrices")).unwrap();
    std::fs::write(dir.path().join("matrices/b.yaml"), MATRIX).unwrap();
    let page = dir.path().join("report.html");
    let out = Command::new(crate::common::bin())
        .args(["run", "matrices", "--html"])
        .arg(&page)
        .current_dir(dir.path())
        .env_remove("GITHUB_ACTIONS")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "one row is meant to fail");

    let dom = browser(&["--dump-dom"], &page);
    assert!(
        dom.contains("data-rendered=\"yes\""),
        "the page's script did not run:\n{dom}"
    );
    let stats = dom.split("id=\"stats\"").nth(1).expect("stats element");
    assert_eq!(attr(stats, "data-rows"), Some("4"));
    assert_eq!(
        attr(stats, "data-calls"),
        Some("13"),
        "1 + 3 + 4 + 5 calls observed and drawn"
    );
    // Every wait that is not zero is labelled: 1 (three calls) + 2
    // observed and 1 expected (the failed row) + 4 (short waits).
    assert_eq!(attr(stats, "data-wait-labels"), Some("8"));
    // Only the failed row draws an expected timeline.
    assert_eq!(attr(stats, "data-expected"), Some("1"));
    // Route names, waits, deadlines and axes: measured where the browser
    // put them, no two label boxes overlap (the 100ms
    // waits after a 10s one are 4px apart and stack into strips).
    let labels: usize = attr(stats, "data-labels").unwrap().parse().unwrap();
    assert!(labels >= 8 + 5 * 3, "{labels} labels");
    assert_eq!(attr(stats, "data-overlaps"), Some("0"));

    // Row by row: the calls drawn in each section match the row.
    let mut seen = Vec::new();
    for section in dom.split("<section ").skip(1) {
        let section = section.split("</section>").next().unwrap();
        let id = attr(section, "data-id").unwrap().to_string();
        let observed = section
            .split("<figure class=\"observed\">")
            .nth(1)
            .unwrap_or("");
        let drawn = observed.matches("class=\"call").count();
        seen.push((id, drawn));
    }
    assert_eq!(
        seen,
        [
            (
                "matrices/b.yaml::four calls, wrong expectation".to_string(),
                4
            ),
            ("matrices/b.yaml::one call".to_string(), 1),
            ("matrices/b.yaml::three calls".to_string(), 3),
            (
                "matrices/b.yaml::short waits on a long scale".to_string(),
                5
            ),
        ],
        "failed rows first, then the others in file order"
    );
    // The failed row shows its diff beside the picture.
    let failed = dom
        .split("<section ")
        .find(|s| s.contains("four calls, wrong"))
        .unwrap();
    assert!(failed.contains("class=\"row failed\""));
    // Its expected timeline: the three calls it expects, above the four
    // it made, on the same scale.
    let expected = failed
        .split("<figure class=\"expected\">")
        .nth(1)
        .and_then(|f| f.split("</figure>").next())
        .expect("an expected timeline");
    assert_eq!(expected.matches("class=\"call").count(), 3);
    assert!(expected.contains("<figcaption>expected</figcaption>"));
    assert!(failed.contains("<span class=\"ins\">+ B2 504 GATEWAY_TIMEOUT fail</span>"));

    // And it paints: a real PNG of some size.
    let shot = dir.path().join("shot.png");
    browser(
        &[
            "--window-size=1000,1200",
            &format!("--screenshot={}", shot.display()),
        ],
        &page,
    );
    let png = std::fs::read(&shot).expect("chromium wrote a screenshot");
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    assert!(
        png.len() > 10_000,
        "screenshot is suspiciously small: {} bytes",
        png.len()
    );
}
