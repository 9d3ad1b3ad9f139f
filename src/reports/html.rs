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
use super::{CallView, ObservedRun, RowResult, Summary, Verdict};

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
.pictures { display: flex; gap: 1em; flex-wrap: wrap; }
figure { margin: 0 0 .5em; } figcaption { font-size: .85em; color: #555; }
figure.expected svg { background: #f7f9ff; }
.label.wait { fill: #555; }
.call rect { fill: #4a8; } .call.error rect { fill: #e94; } .call.terminal rect { fill: #d33; }
line.wait { stroke: #888; stroke-dasharray: 4 3; }
line.deadline { stroke: #d33; stroke-width: 2; }
#controls { margin: 1em 0; }
"#;

const SCRIPT: &str = r#"
(function () {
  var calls = document.querySelectorAll('svg.observed .call').length;
  // Label boxes (route names, waits, deadline, axis) must never overlap:
  // measured here, in the page, as the browser laid them out.
  var overlaps = 0, labels = 0;
  document.querySelectorAll('svg.timeline').forEach(function (svg) {
    var boxes = Array.prototype.map.call(svg.querySelectorAll('text.label'), function (t) {
      return t.getBBox();
    });
    labels += boxes.length;
    for (var i = 0; i < boxes.length; i++) {
      for (var j = i + 1; j < boxes.length; j++) {
        var a = boxes[i], b = boxes[j];
        if (a.x < b.x + b.width && b.x < a.x + a.width &&
            a.y < b.y + b.height && b.y < a.y + a.height) { overlaps++; }
      }
    }
  });
  var rows = document.querySelectorAll('section.row').length;
  var stats = document.getElementById('stats');
  stats.textContent = rows + ' rows, ' + calls + ' calls drawn';
  stats.setAttribute('data-calls', String(calls));
  stats.setAttribute('data-rows', String(rows));
  stats.setAttribute('data-labels', String(labels));
  stats.setAttribute('data-overlaps', String(overlaps));
  stats.setAttribute('data-wait-labels', String(document.querySelectorAll('svg text.label.wait').length));
  stats.setAttribute('data-expected', String(document.querySelectorAll('svg.timeline.expected').length));
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

/// Width of one character of a label (11px monospace, rounded up), to
/// keep label boxes apart without measuring text.
const CHAR_W: f64 = 7.0;
/// Height of one strip of wait labels under a lane.
const STRIP_H: f64 = 13.0;
/// Height of a call box.
const BOX_H: f64 = 20.0;
/// The band above the lanes (the deadline's label) and below (the axis).
const BAND_H: f64 = 16.0;
/// Width of the drawing area right of the route names.
const PLOT_W: f64 = 460.0;

fn text_w(s: &str) -> f64 {
    s.chars().count() as f64 * CHAR_W
}

/// The time scale and lanes shared by the pictures of one row (observed,
/// and expected for a failed row), so the two line up.
struct Scale {
    span: f64,
    left: f64,
    routes: Vec<String>,
}

impl Scale {
    fn of(run: &ObservedRun) -> Self {
        let expected = run.expected.as_deref().unwrap_or(&[]);
        let mut routes: Vec<String> = Vec::new();
        for c in expected.iter().chain(&run.calls) {
            if !routes.contains(&c.route) {
                routes.push(c.route.clone());
            }
        }
        let last = run
            .calls
            .iter()
            .chain(expected)
            .map(|c| c.end.unwrap_or(c.start))
            .chain([run.returned_at])
            .max()
            .unwrap_or_default();
        // The scale follows the calls; a deadline far beyond them is named
        // at the right edge instead of squeezing the calls into a corner.
        let mut span = ms(last).max(1000.0) * 1.25;
        if let Some(d) = run.deadline {
            if ms(d) <= span * 2.0 {
                span = span.max(ms(d) * 1.05);
            }
        }
        let longest = routes.iter().map(|r| text_w(r)).fold(0.0, f64::max);
        Self {
            span,
            left: (longest + 10.0).max(40.0),
            routes,
        }
    }

    fn x(&self, d: Duration) -> f64 {
        self.left + ms(d) / self.span * PLOT_W
    }

    fn lane(&self, route: &str) -> usize {
        self.routes.iter().position(|r| r == route).unwrap_or(0)
    }
}

/// Places a label `[l, r)` in the first strip where it touches no other
/// (4px apart), opening a strip when none has room; returns the strip.
fn place(strips: &mut Vec<Vec<(f64, f64)>>, l: f64, r: f64) -> usize {
    let free = |s: &Vec<(f64, f64)>| s.iter().all(|&(a, b)| r + 4.0 <= a || l >= b + 4.0);
    let i = match strips.iter().position(free) {
        Some(i) => i,
        None => {
            strips.push(Vec::new());
            strips.len() - 1
        }
    };
    strips[i].push((l, r));
    i
}

/// The timeline picture of one run, as inline SVG: a lane per route, a box
/// per call, each wait a dashed line with its duration under the lane, the
/// deadline as a red line named in the band above the lanes, the time axis
/// in the band below. Labels (route names, waits, deadline, axis) never
/// overlap: each band holds one kind, and wait labels that would touch
/// move to another strip under their lane.
pub fn timeline(run: &ObservedRun) -> String {
    picture(run, &Scale::of(run), &run.calls, "observed")
}

fn picture(run: &ObservedRun, sc: &Scale, calls: &[CallView], kind: &str) -> String {
    let width = sc.left + PLOT_W + 10.0;
    // Wait labels first: they decide each lane's height.
    let mut strips: Vec<Vec<Vec<(f64, f64)>>> = vec![Vec::new(); sc.routes.len().max(1)];
    let mut waits: Vec<(usize, usize, usize, f64, String, f64, f64)> = Vec::new();
    for (i, c) in calls.iter().enumerate() {
        let (Some(wait), Some(next)) = (c.wait, calls.get(i + 1)) else {
            continue;
        };
        if wait.is_zero() && c.wait_text.is_none() {
            continue;
        }
        let text = c
            .wait_text
            .clone()
            .unwrap_or_else(|| crate::base::duration::format(wait));
        let x0 = sc.x(c.start) + box_w(sc, c);
        let x1 = sc.x(next.start);
        let w = text_w(&text);
        let l = ((x0 + x1 - w) / 2.0).clamp(sc.left, sc.left + PLOT_W - w);
        let lane = sc.lane(&c.route);
        let strip = place(&mut strips[lane], l, l + w);
        waits.push((i, lane, strip, l, text, x0, x1));
    }
    let mut tops = Vec::with_capacity(strips.len());
    let mut y = BAND_H + 4.0;
    for s in &strips {
        tops.push(y);
        y += BOX_H + 6.0 + STRIP_H * s.len() as f64;
    }
    let height = y + BAND_H;
    let mut s = String::new();
    let _ = write!(
        s,
        "<svg class=\"timeline {kind}\" width=\"{width}\" height=\"{height}\" viewBox=\"0 0 {width} {height}\" role=\"img\" aria-label=\"{kind} timeline of {} calls\">",
        calls.len()
    );
    for (i, r) in sc.routes.iter().enumerate() {
        let mid = tops[i] + BOX_H / 2.0;
        let _ = write!(
            s,
            "<text class=\"label route\" x=\"2\" y=\"{}\">{}</text><line x1=\"{}\" x2=\"{}\" y1=\"{mid}\" y2=\"{mid}\" stroke=\"#eee\"/>",
            mid + 4.0,
            escape(r),
            sc.left,
            sc.left + PLOT_W
        );
    }
    for c in calls {
        let y = tops[sc.lane(&c.route)];
        let x0 = sc.x(c.start);
        let w = box_w(sc, c);
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
            "<g class=\"{class}\" data-call=\"{}\"><title>{}</title><rect x=\"{x0:.1}\" y=\"{y}\" width=\"{w:.1}\" height=\"{BOX_H}\" rx=\"3\"/><text x=\"{:.1}\" y=\"{}\" fill=\"#fff\">{}</text></g>",
            escape(&c.label),
            escape(&title),
            x0 + 3.0,
            y + 14.0,
            escape(&c.label)
        );
    }
    for (i, lane, strip, l, text, x0, x1) in waits {
        let next = &calls[i + 1];
        let y1 = tops[lane] + BOX_H / 2.0;
        let y2 = tops[sc.lane(&next.route)] + BOX_H / 2.0;
        let ty = tops[lane] + BOX_H + 6.0 + STRIP_H * (strip as f64 + 1.0) - 3.0;
        let _ = write!(
            s,
            "<line class=\"wait\" x1=\"{x0:.1}\" x2=\"{x1:.1}\" y1=\"{y1}\" y2=\"{y2}\"><title>wait {}</title></line><text class=\"label wait\" x=\"{l:.1}\" y=\"{ty}\">{}</text>",
            escape(&text),
            escape(&text)
        );
    }
    if let Some(d) = run.deadline {
        let name = format!("deadline {}", crate::base::duration::format(d));
        if ms(d) <= sc.span {
            let xd = sc.x(d);
            let _ = write!(
                s,
                "<line class=\"deadline\" x1=\"{xd:.1}\" x2=\"{xd:.1}\" y1=\"{BAND_H}\" y2=\"{}\"><title>{name}</title></line>",
                height - BAND_H
            );
            // Named in the band above the lanes, on the side with room.
            let (x, anchor) = if xd + 3.0 + text_w(&name) <= width {
                (xd + 3.0, "start")
            } else {
                (xd - 3.0, "end")
            };
            let _ = write!(
                s,
                "<text class=\"label deadline\" x=\"{x:.1}\" y=\"{}\" text-anchor=\"{anchor}\" fill=\"#d33\">{name}</text>",
                BAND_H - 4.0
            );
        } else {
            let _ = write!(
                s,
                "<text class=\"label deadline later\" x=\"{}\" y=\"{}\" text-anchor=\"end\" fill=\"#d33\">{name} →</text>",
                sc.left + PLOT_W,
                BAND_H - 4.0
            );
        }
    }
    let _ = write!(
        s,
        "<text class=\"label axis\" x=\"{}\" y=\"{}\">0s</text><text class=\"label axis\" x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>",
        sc.left,
        height - 4.0,
        sc.left + PLOT_W,
        height - 4.0,
        crate::base::duration::format(Duration::from_millis(sc.span.round() as u64))
    );
    s.push_str("</svg>");
    s
}

/// A call's box: as long as the call took, and wide enough for its label.
fn box_w(sc: &Scale, c: &CallView) -> f64 {
    let end = c.end.unwrap_or(c.start);
    (sc.x(end) - sc.x(c.start)).max(text_w(&c.label) + 6.0)
}

/// The pictures of a row: the observed timeline, and for a failed row
/// that asserts a trace the expected one above it on the same scale.
fn pictures(run: &ObservedRun) -> String {
    let sc = Scale::of(run);
    let mut out = String::new();
    if let Some(expected) = &run.expected {
        let stop = run
            .expected_stop
            .as_deref()
            .map(|s| format!(", stop {}", escape(s)))
            .unwrap_or_default();
        let _ = write!(
            out,
            "<figure class=\"expected\"><figcaption>expected{stop}</figcaption>{}</figure>",
            picture(run, &sc, expected, "expected")
        );
    }
    let _ = write!(
        out,
        "<figure class=\"observed\"><figcaption>observed, stop {}</figcaption>{}</figure>",
        escape(&run.stop),
        picture(run, &sc, &run.calls, "observed")
    );
    out
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

/// Why some results have no timeline, when some have none: guardrails
/// make no calls; generated tests keep no trace (their message has the
/// diff); files that do not load never ran; passed rows beyond the first
/// [`MAX_PASSED_DRAWN`](crate::engine::run::MAX_PASSED_DRAWN) are listed
/// only (every failed row is drawn).
fn undrawn_note(results: &[RowResult]) -> Option<String> {
    use crate::engine::results::RowKind;
    let count = |kind: RowKind, passed_only: bool| {
        results
            .iter()
            .filter(|r| r.observed.is_none() && r.meta.kind == kind)
            .filter(|r| match r.verdict {
                Verdict::Passed => true,
                Verdict::Failed(_) => !passed_only,
                Verdict::Ignored(_) => false,
            })
            .count()
    };
    let n = |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
    let mut why = Vec::new();
    let g = count(RowKind::Guardrail, false);
    if g > 0 {
        why.push(format!(
            "{} (checks of a registry file: they make no calls)",
            n(g, "guardrail", "guardrails")
        ));
    }
    let t = count(RowKind::Generated, false);
    if t > 0 {
        why.push(format!(
            "{} (their trace is not kept; a failure's message carries its diff)",
            n(t, "registry-generated test", "registry-generated tests")
        ));
    }
    let f = count(RowKind::File, false);
    if f > 0 {
        why.push(format!(
            "{} (nothing ran)",
            n(f, "file that does not load", "files that do not load")
        ));
    }
    let p = count(RowKind::Row, true);
    if p > 0 {
        why.push(format!(
            "{} beyond the first {} (every failed row is drawn)",
            n(p, "passed row", "passed rows"),
            crate::engine::run::MAX_PASSED_DRAWN
        ));
    }
    (!why.is_empty()).then(|| format!("Listed without a timeline: {}.", why.join("; ")))
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
    if let Some(note) = undrawn_note(results) {
        let _ = writeln!(out, "<p id=\"undrawn\">{}</p>", escape(&note));
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
                "<div class=\"picture\"><div class=\"pictures\">{}</div><pre class=\"trace\">{}\nstop: {}</pre></div>",
                pictures(o),
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
    fn wait_labels_that_would_touch_take_another_strip() {
        let mut strips = Vec::new();
        assert_eq!(place(&mut strips, 0.0, 30.0), 0);
        assert_eq!(place(&mut strips, 20.0, 50.0), 1);
        assert_eq!(place(&mut strips, 32.0, 60.0), 2, "4px apart at least");
        assert_eq!(place(&mut strips, 34.0, 60.0), 0);
        assert_eq!(place(&mut strips, 55.0, 70.0), 1);
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
            wait_text: None,
        };
        let run = ObservedRun {
            lines: vec!["A1 503 UPSTREAM_UNAVAILABLE switch".into()],
            calls: vec![call("A1", "A", 0, "switch"), call("B1", "B", 1, "fail")],
            returned_at: Duration::from_secs(1),
            deadline: Some(Duration::from_secs(2)),
            stop: "exhausted".into(),
            expected: Some(vec![
                call("A1", "A", 0, "retry"),
                call("A2", "A", 1, "fail"),
            ]),
            expected_stop: Some("exhausted".into()),
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
                RowResult {
                    meta: crate::engine::results::RowMeta {
                        kind: crate::engine::results::RowKind::Guardrail,
                        ..Default::default()
                    },
                    ..row("r.yaml::guardrail::g", Verdict::Passed, None)
                },
            ],
        );
        // Two calls observed, two expected, each picture on one scale.
        assert_eq!(page.matches("<g class=\"call").count(), 4);
        assert_eq!(page.matches("<svg class=\"timeline expected\"").count(), 1);
        assert_eq!(page.matches("class=\"deadline\"").count(), 2);
        assert_eq!(page.matches("class=\"label deadline\"").count(), 2);
        // One wait labelled in each (the last call has no next one).
        assert_eq!(page.matches("<text class=\"label wait\"").count(), 2);
        assert!(page.contains("<span class=\"del\">- a</span>"));
        assert!(page.contains("<p id=\"undrawn\">Listed without a timeline: 1 guardrail (checks of a registry file: they make no calls); 1 passed row beyond the first 1000 (every failed row is drawn).</p>"), "{page}");
        assert!(page.contains("class=\"row passed compact\" data-id=\"f.yaml::compact\""));
    }
}
