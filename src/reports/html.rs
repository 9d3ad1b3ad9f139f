//! A self-contained HTML report (no external files, no network): a summary,
//! then one section per row (failed rows first) with its trace as a timeline picture (a lane
//! per route, a box per call, dashed waits, the deadline as a red line)
//! beside the diff of a failed row.
//!
//! The page carries a little inline script that filters rows and counts the
//! drawn calls into `#stats` (used by the headless-browser test to prove
//! the page rendered).

use std::fmt::Write;
use std::time::Duration;

use super::junit::escape;
use super::{ObservedRun, RowResult, Summary, Verdict};

const STYLE: &str = r#"
body { font: 14px/1.4 system-ui, sans-serif; margin: 2em; color: #222; }
h1 { font-size: 1.4em; }
.row { border: 1px solid #ddd; border-radius: 6px; margin: 1em 0; padding: .6em 1em; }
.row.failed { border-color: #d33; }
.row h2 { font-size: 1em; margin: 0 0 .5em; }
.badge { display: inline-block; padding: 0 .5em; border-radius: 3px; color: #fff; font-size: .85em; }
.passed .badge { background: #2a7; } .failed .badge { background: #d33; } .ignored .badge { background: #888; }
.body { display: flex; gap: 1.5em; flex-wrap: wrap; align-items: flex-start; }
pre { background: #f6f6f6; padding: .5em; margin: 0; font-size: 12px; }
pre .del { color: #b00; } pre .ins { color: #070; }
svg text { font: 11px monospace; }
.call rect { fill: #4a8; } .call.error rect { fill: #e94; } .call.terminal rect { fill: #d33; }
.wait { stroke: #888; stroke-dasharray: 4 3; }
.deadline { stroke: #d33; stroke-width: 2; }
#controls { margin: 1em 0; }
"#;

const SCRIPT: &str = r#"
(function () {
  var calls = document.querySelectorAll('svg .call').length;
  var rows = document.querySelectorAll('section.row').length;
  var stats = document.getElementById('stats');
  stats.textContent = rows + ' rows, ' + calls + ' calls drawn';
  stats.setAttribute('data-calls', String(calls));
  stats.setAttribute('data-rows', String(rows));
  var box = document.getElementById('only-failed');
  box.addEventListener('change', function () {
    document.querySelectorAll('section.row').forEach(function (s) {
      s.style.display = (box.checked && !s.classList.contains('failed')) ? 'none' : '';
    });
  });
  document.body.setAttribute('data-rendered', 'yes');
})();
"#;

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// The timeline picture of one run, as inline SVG.
pub fn timeline(run: &ObservedRun) -> String {
    let mut routes: Vec<&str> = Vec::new();
    for c in &run.calls {
        if !routes.contains(&c.route.as_str()) {
            routes.push(&c.route);
        }
    }
    let last = run
        .calls
        .iter()
        .map(|c| c.end.unwrap_or(c.start))
        .chain([run.returned_at])
        .max()
        .unwrap_or_default();
    // The scale follows the calls; a deadline far beyond them is marked at
    // the right edge instead of squeezing the calls into a corner.
    let mut span = ms(last).max(1000.0) * 1.25;
    if let Some(d) = run.deadline {
        if ms(d) <= span * 2.0 {
            span = span.max(ms(d) * 1.05);
        }
    }
    let (left, width, lane) = (40.0, 560.0, 28.0);
    let height = lane * routes.len().max(1) as f64 + 24.0;
    let x = |d: Duration| left + ms(d) / span * width;
    let mut s = String::new();
    let _ = write!(
        s,
        "<svg class=\"timeline\" width=\"{}\" height=\"{height}\" viewBox=\"0 0 {} {height}\" role=\"img\" aria-label=\"timeline of {} calls\">",
        left + width + 10.0,
        left + width + 10.0,
        run.calls.len()
    );
    for (i, r) in routes.iter().enumerate() {
        let y = i as f64 * lane + 18.0;
        let _ = write!(s, "<text x=\"2\" y=\"{}\">{}</text>", y + 4.0, escape(r));
        let _ = write!(
            s,
            "<line x1=\"{left}\" x2=\"{}\" y1=\"{y}\" y2=\"{y}\" stroke=\"#eee\"/>",
            left + width
        );
    }
    for (i, c) in run.calls.iter().enumerate() {
        let lane_i = routes.iter().position(|r| *r == c.route).unwrap_or(0);
        let y = lane_i as f64 * lane + 8.0;
        let x0 = x(c.start);
        let end = c.end.unwrap_or(c.start);
        let w = (x(end) - x0).max(22.0);
        let class = match (c.code.is_some(), c.decision.as_str()) {
            (false, _) => "call",
            (true, "fail") => "call terminal",
            (true, _) => "call error",
        };
        let title = format!(
            "{} {} {} {} at {}",
            c.label,
            c.outcome,
            c.code.as_deref().unwrap_or(""),
            c.decision,
            crate::base::duration::format(c.start)
        );
        let _ = write!(
            s,
            "<g class=\"{class}\" data-call=\"{}\"><title>{}</title><rect x=\"{x0:.1}\" y=\"{y}\" width=\"{w:.1}\" height=\"20\" rx=\"3\"/><text x=\"{:.1}\" y=\"{}\" fill=\"#fff\">{}</text></g>",
            escape(&c.label),
            escape(&title),
            x0 + 3.0,
            y + 14.0,
            escape(&c.label)
        );
        if let (Some(wait), Some(next)) = (c.wait, run.calls.get(i + 1)) {
            if !wait.is_zero() {
                let next_lane = routes.iter().position(|r| *r == next.route).unwrap_or(0);
                let y1 = y + 10.0;
                let y2 = next_lane as f64 * lane + 18.0;
                let _ = write!(
                    s,
                    "<line class=\"wait\" x1=\"{:.1}\" x2=\"{:.1}\" y1=\"{y1}\" y2=\"{y2}\"><title>wait {}</title></line>",
                    x0 + w,
                    x(next.start),
                    crate::base::duration::format(wait)
                );
            }
        }
    }
    if let Some(d) = run.deadline {
        if ms(d) <= span {
            let xd = x(d);
            let _ = write!(
                s,
                "<line class=\"deadline\" x1=\"{xd:.1}\" x2=\"{xd:.1}\" y1=\"0\" y2=\"{height}\"><title>deadline {}</title></line>",
                crate::base::duration::format(d)
            );
        } else {
            let _ = write!(
                s,
                "<text class=\"deadline-later\" x=\"{}\" y=\"{}\" text-anchor=\"middle\" fill=\"#d33\">deadline {} →</text>",
                left + width / 2.0,
                height - 2.0,
                crate::base::duration::format(d)
            );
        }
    }
    let _ = write!(
        s,
        "<text x=\"{left}\" y=\"{}\">0s</text><text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>",
        height - 2.0,
        left + width,
        height - 2.0,
        crate::base::duration::format(Duration::from_millis(span.round() as u64))
    );
    s.push_str("</svg>");
    s
}

fn diff_html(msg: &str) -> String {
    let mut out = String::new();
    for line in msg.lines() {
        let e = escape(line);
        if line.starts_with("- ") {
            let _ = writeln!(out, "<span class=\"del\">{e}</span>");
        } else if line.starts_with("+ ") {
            let _ = writeln!(out, "<span class=\"ins\">{e}</span>");
        } else {
            let _ = writeln!(out, "{e}");
        }
    }
    out
}

/// Renders the page.
pub fn render(title: &str, results: &[RowResult]) -> String {
    let s = Summary::of(results);
    let mut out = String::new();
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{}</title><style>{STYLE}</style></head><body>\n<h1>{}</h1>\n<p id=\"summary\">{}</p>\n<p id=\"stats\"></p>\n<div id=\"controls\"><label><input type=\"checkbox\" id=\"only-failed\"> only failed rows</label></div>\n",
        escape(title),
        escape(title),
        escape(&s.line())
    );
    let undrawn = results
        .iter()
        .filter(|r| r.observed.is_none() && matches!(r.verdict, Verdict::Passed))
        .count();
    if undrawn > 0 {
        let _ = writeln!(
            out,
            "<p id=\"undrawn\">{undrawn} passed rows are listed without their timeline (the page draws at most {} passed rows; every failed row is drawn).</p>",
            crate::engine::run::MAX_PASSED_DRAWN
        );
    }
    // Failed rows first: they are what a reviewer opens the page for.
    let failed = results
        .iter()
        .filter(|r| matches!(r.verdict, Verdict::Failed(_)));
    let others = results
        .iter()
        .filter(|r| !matches!(r.verdict, Verdict::Failed(_)));
    for r in failed.chain(others) {
        if r.observed.is_none() && matches!(r.verdict, Verdict::Passed) {
            let _ = writeln!(
                out,
                "<section class=\"row passed compact\" data-id=\"{}\" data-calls=\"0\"><h2><span class=\"badge\">passed</span> {}</h2></section>",
                escape(&r.id),
                escape(&r.id)
            );
            continue;
        }
        let (class, badge) = match &r.verdict {
            Verdict::Passed => ("passed", "passed"),
            Verdict::Failed(_) => ("failed", "FAILED"),
            Verdict::Ignored(_) => ("ignored", "ignored"),
        };
        let calls = r.observed.as_ref().map_or(0, |o| o.calls.len());
        let _ = write!(
            out,
            "<section class=\"row {class}\" data-id=\"{}\" data-calls=\"{calls}\">\n<h2><span class=\"badge\">{badge}</span> {}</h2>\n<div class=\"body\">",
            escape(&r.id),
            escape(&r.id)
        );
        if let Some(o) = &r.observed {
            let _ = write!(
                out,
                "<div class=\"picture\">{}<pre class=\"trace\">{}\nstop: {}</pre></div>",
                timeline(o),
                escape(&o.lines.join("\n")),
                escape(&o.stop)
            );
        }
        match &r.verdict {
            Verdict::Failed(f) => {
                let _ = write!(out, "<pre class=\"diff\">{}</pre>", diff_html(&f.render()));
            }
            Verdict::Ignored(reason) => {
                let _ = write!(out, "<p>ignored: {}</p>", escape(reason));
            }
            Verdict::Passed => {}
        }
        out.push_str("</div></section>\n");
    }
    let _ = write!(out, "<script>{SCRIPT}</script>\n</body></html>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reports::CallView;

    fn row(id: &str, verdict: Verdict, observed: Option<Box<ObservedRun>>) -> RowResult {
        RowResult {
            id: id.into(),
            tags: vec![],
            verdict,
            observed,
            meta: Default::default(),
        }
    }

    #[test]
    fn draws_one_box_per_call_and_lists_undrawn_rows() {
        let call = |label: &str, route: &str, start: u64, decision: &str| CallView {
            label: label.into(),
            route: route.into(),
            outcome: "503".into(),
            code: Some("UPSTREAM_UNAVAILABLE".into()),
            decision: decision.into(),
            start: Duration::from_secs(start),
            end: Some(Duration::from_secs(start)),
            wait: Some(Duration::from_secs(1)),
        };
        let run = ObservedRun {
            lines: vec!["A1 503 UPSTREAM_UNAVAILABLE switch".into()],
            calls: vec![call("A1", "A", 0, "switch"), call("B1", "B", 1, "fail")],
            returned_at: Duration::from_secs(1),
            deadline: Some(Duration::from_secs(2)),
            stop: "exhausted".into(),
        };
        let page = render(
            "t",
            &[
                row(
                    "f.yaml::drawn",
                    Verdict::Failed(crate::verdict::Failure::whole(
                        crate::verdict::Location::file("f.yaml"),
                        crate::verdict::ProblemKind::Trace,
                        "- a\n+ b",
                    )),
                    Some(Box::new(run)),
                ),
                row("f.yaml::compact", Verdict::Passed, None),
            ],
        );
        assert_eq!(page.matches("<g class=\"call").count(), 2);
        assert_eq!(page.matches("class=\"deadline\"").count(), 1);
        assert!(page.contains("<span class=\"del\">- a</span>"));
        assert!(page.contains("<p id=\"undrawn\">1 passed rows are listed without their timeline"));
        assert!(page.contains("class=\"row passed compact\" data-id=\"f.yaml::compact\""));
    }
}
