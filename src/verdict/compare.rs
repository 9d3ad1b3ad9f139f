//! Comparing a row's expectations with what was observed: a unified diff of
//! the trace, and every other assertion that did not hold, each a
//! [`Problem`] of its kind.

use similar::{ChangeTag, TextDiff};

use crate::exec::run::{Observation, RunEnd};
use crate::model::{Matrix, Row};
use crate::verdict::failure::{Problem, ProblemKind};
use crate::verdict::lines;

/// The observed trace as text, each call read against the expected line
/// for the same call ([`lines::shown`]): a line that holds is shown as
/// written, so the diff shows only real differences.
pub fn observed_text(row: &Row, obs: &Observation) -> String {
    observed_with_notes(row, obs).0
}

/// [`observed_text`] and the notes that explain fields shown as absent.
fn observed_with_notes(row: &Row, obs: &Observation) -> (String, Vec<String>) {
    let expected = row.expect.trace.as_deref().unwrap_or(&[]);
    // Sized for the lines the row expects (most rows see those): growing
    // it line by line cost 660 instructions a row.
    let mut out = String::with_capacity(expected.iter().map(|l| l.text.len() + 1).sum());
    let mut notes = Vec::new();
    for (i, line) in obs.lines.iter().enumerate() {
        let (text, n) = lines::shown(lines::expected_for(expected, i, line), line);
        out.push_str(&text);
        out.push('\n');
        notes.extend(n);
    }
    (out, notes)
}

/// The expected trace as text.
pub fn expected_text(row: &Row) -> Option<String> {
    row.expect.trace.as_ref().map(|lines| {
        let mut s = String::with_capacity(lines.iter().map(|l| l.text.len() + 1).sum());
        for l in lines {
            s.push_str(&l.text);
            s.push('\n');
        }
        s
    })
}

/// Longest run of observed-only (`+`) lines a diff shows whole. A longer
/// run (a runaway client: hundreds of calls the row never expected) shows
/// its first [`KEPT_OF_A_RUN`] lines, one line saying how many were cut,
/// and its last line; the guard's message follows the diff.
pub const MAX_INSERTED_RUN: usize = 12;

/// Lines kept at the start of a cut run of observed-only lines.
pub const KEPT_OF_A_RUN: usize = 8;

/// A unified diff, `-` expected and `+` observed; every line shown, except
/// that a run of more than [`MAX_INSERTED_RUN`] observed-only lines is cut.
pub fn diff(expected: &str, observed: &str) -> String {
    let d = TextDiff::from_lines(expected, observed);
    let mut out = String::new();
    let mut run: Vec<&str> = Vec::new();
    let flush = |out: &mut String, run: &mut Vec<&str>| {
        if run.len() > MAX_INSERTED_RUN {
            for line in &run[..KEPT_OF_A_RUN] {
                out.push_str("+ ");
                out.push_str(line);
                out.push('\n');
            }
            let cut = run.len() - KEPT_OF_A_RUN - 1;
            out.push_str(&format!(
                "+ … {cut} more observed call{} cut …\n",
                if cut == 1 { "" } else { "s" }
            ));
            out.push_str("+ ");
            out.push_str(run[run.len() - 1]);
            out.push('\n');
        } else {
            for line in run.iter() {
                out.push_str("+ ");
                out.push_str(line);
                out.push('\n');
            }
        }
        run.clear();
    };
    for change in d.iter_all_changes() {
        let text = change.value().trim_end_matches('\n');
        let sign = match change.tag() {
            ChangeTag::Insert => {
                run.push(text);
                continue;
            }
            ChangeTag::Delete => '-',
            ChangeTag::Equal => ' ',
        };
        flush(&mut out, &mut run);
        out.push(sign);
        out.push(' ');
        out.push_str(text);
        out.push('\n');
    }
    flush(&mut out, &mut run);
    out
}

/// Index of the first expected line that differs, if any.
fn first_difference(expected: &str, observed: &str) -> Option<usize> {
    let e: Vec<&str> = expected.lines().collect();
    let o: Vec<&str> = observed.lines().collect();
    (0..e.len().max(o.len())).find(|&i| e.get(i) != o.get(i))
}

/// The row's own assertions (everything but its snapshot and tape), in
/// the order a report shows them; empty when every one holds.
pub fn problems(matrix: &Matrix, row: &Row, obs: &Observation) -> Vec<Problem> {
    let mut problems = Problems::default();
    let exp = &row.expect;
    let (observed, notes) = observed_with_notes(row, obs);
    // Why a route stopped short (a code's `max_attempts` below its
    // `attempts`), said once: with the trace diff, else with the stop.
    let mut explained = false;
    let mut explain = |p: &mut String| {
        if !std::mem::replace(&mut explained, true) {
            for n in crate::verdict::caps::explain(matrix, row, obs) {
                p.push_str("note: ");
                p.push_str(&n);
                p.push('\n');
            }
        }
    };

    if let Some(expected) = expected_text(row) {
        if expected != observed {
            let mut p = String::from("trace differs (- expected, + observed):\n");
            p.push_str(&diff(&expected, &observed));
            if let Some(i) = first_difference(&expected, &observed) {
                let lines = exp.trace.as_ref().map_or(0, Vec::len);
                if i < lines && exp.trace_path.is_empty() {
                    // A generated row: its trace is not written in a file.
                    p.push_str(&format!("first difference: expected line {}\n", i + 1));
                } else if i < lines {
                    let line = trace_line_number(matrix, row, i);
                    p.push_str(&format!(
                        "first difference: expected line {} of the trace, at {}:{}\n",
                        i + 1,
                        matrix.file,
                        line
                    ));
                } else {
                    p.push_str(&format!(
                        "first difference: call {} was not expected (the trace lists {} call{})\n",
                        i + 1,
                        lines,
                        if lines == 1 { "" } else { "s" }
                    ));
                }
            }
            for n in &notes {
                p.push_str("note: ");
                p.push_str(n);
                p.push('\n');
            }
            explain(&mut p);
            problems.add(ProblemKind::Trace, p);
        }
    }

    if exp.pending {
        problems.add(
            ProblemKind::Stop,
            "the row asserts nothing yet: `faultmatrix run --bless` writes its observed trace and stop",
        );
    }

    let stop = obs.stop();
    if let Some(want) = &exp.stop {
        if want != stop {
            let mut p = format!("stop: expected `{want}`, observed `{stop}`\n");
            explain(&mut p);
            problems.add(ProblemKind::Stop, p);
        }
    }

    if let Some(spec) = &exp.elapsed {
        if !spec.holds(obs.returned_at) {
            problems.add(
                ProblemKind::Elapsed,
                format!(
                "elapsed: expected {spec}, observed {} (virtual time until the system returned)",
                crate::base::duration::format(obs.returned_at)
            ),
            );
        }
    }

    match (&exp.error, &obs.end) {
        (Some(_), RunEnd::Returned(Ok(_))) => problems.add(
            ProblemKind::Error,
            "error: expected a final error, but the system returned success",
        ),
        (Some(want), RunEnd::Returned(Err(got))) => {
            if let Some(id) = &want.request_id {
                let id = if id == "$request_id" {
                    &obs.request_id
                } else {
                    id
                };
                if got.request_id.as_deref() != Some(id.as_str()) {
                    problems.add(
                        ProblemKind::Error,
                        format!(
                            "error.request_id: expected `{id}`, observed `{}`",
                            got.request_id.as_deref().unwrap_or("-")
                        ),
                    );
                }
            }
            if let Some(code) = &want.code {
                if got.code.as_deref() != Some(code.as_str()) {
                    problems.add(
                        ProblemKind::Error,
                        format!(
                            "error.code: expected `{code}`, observed `{}`",
                            got.code.as_deref().unwrap_or("-")
                        ),
                    );
                }
            }
            if let Some(attempts) = &want.attempts {
                let seen: Vec<String> = got.attempts.iter().map(|a| a.to_string()).collect();
                if &seen != attempts {
                    problems.add(
                        ProblemKind::Error,
                        format!(
                            "error.attempts: expected [{}], observed [{}]",
                            attempts.join(", "),
                            seen.join(", ")
                        ),
                    );
                }
            }
            if let Some(max) = want.max_len {
                let len = got.to_string().len();
                if len > max {
                    problems.add(
                        ProblemKind::Error,
                        format!("error: rendered error is {len} bytes, above max_len {max}"),
                    );
                }
            }
        }
        _ => {}
    }

    if let Some(want) = &exp.escalations {
        let got = &obs.escalations;
        let same = want.len() == got.len()
            && want
                .iter()
                .zip(got)
                .all(|(w, g)| w.code == g.code && (w.to.is_none() || w.to == g.to));
        if !same {
            let fmt_w: Vec<String> = want
                .iter()
                .map(|w| match &w.to {
                    Some(t) => format!("{} -> {t}", w.code),
                    None => w.code.clone(),
                })
                .collect();
            let fmt_g: Vec<String> = got
                .iter()
                .map(|g| format!("{} -> {}", g.code, g.to.as_deref().unwrap_or("-")))
                .collect();
            problems.add(
                ProblemKind::Escalations,
                format!(
                    "escalations: expected [{}], observed [{}]",
                    fmt_w.join(", "),
                    fmt_g.join(", ")
                ),
            );
        }
    }

    if let Some(want) = exp.records {
        if want != obs.records {
            problems.add(
                ProblemKind::Records,
                format!("records: expected {want}, observed {}", obs.records),
            );
        }
    }

    if let Some(want) = exp.amplification {
        let first = obs.calls.first().map_or(0, |c| c.request.size);
        let total: u64 = obs.calls.iter().map(|c| c.request.size).sum();
        let got = if first == 0 {
            0.0
        } else {
            total as f64 / first as f64
        };
        if (got - want).abs() > 1e-9 {
            problems.add(ProblemKind::Amplification, format!(
                "amplification: expected {want}, observed {got:.3} ({total} bytes sent, first attempt {first})"
            ));
        }
    }

    if let Some(want) = &exp.output {
        let got = obs.output().to_string();
        if &got != want {
            problems.add(
                ProblemKind::Output,
                format!("output: expected {want:?}, observed {got:?}"),
            );
        }
    }

    // The contract for terminal codes holds for every system.
    if stop == "terminal" {
        // The terminal code gets exactly one call; transient answers before
        // it (503 then 401) are ordinary retries.
        let code = match &obs.end {
            RunEnd::Returned(Err(e)) => e.code.as_deref(),
            _ => None,
        };
        let calls = match code {
            Some(c) => obs
                .lines
                .iter()
                .filter(|l| l.code.as_deref() == Some(c))
                .count(),
            None => obs.calls.len(),
        };
        if calls != 1 {
            let with = code.map(|c| format!(" answered {c}")).unwrap_or_default();
            problems.add(
                ProblemKind::Terminal,
                format!("terminal stop: expected exactly 1 call{with}, observed {calls}"),
            );
        }
        let esc = obs.escalations.len();
        if esc != 1 {
            problems.add(
                ProblemKind::Terminal,
                format!("terminal stop: expected exactly 1 escalation event, observed {esc}"),
            );
        }
        if let Some(end) = obs.calls.last().and_then(|c| c.ended) {
            if obs.returned_at > end {
                problems.add(ProblemKind::Terminal, format!(
                    "terminal stop: {} of virtual time passed after the answer (a backoff was scheduled)",
                    crate::base::duration::format(obs.returned_at - end)
                ));
            }
        }
    }

    for p in crate::verdict::requests::check(&exp.requests, &obs.calls) {
        problems.add(ProblemKind::Requests, p);
    }
    for f in &obs.failures {
        let kind = if f.starts_with("real time outside tolerance") {
            ProblemKind::Tolerance
        } else {
            ProblemKind::Harness
        };
        problems.add(kind, f.clone());
    }
    if !problems.0.is_empty() && exp.trace.is_none() && !obs.lines.is_empty() {
        let mut t = String::from("observed trace:\n");
        for l in observed.lines() {
            t.push_str("  ");
            t.push_str(l);
            t.push('\n');
        }
        problems.add(ProblemKind::ObservedTrace, t);
    }
    problems.0
}

/// What a failing command system printed and how to run it by hand: how
/// it ended, the end of its stdout and stderr, its JSON result, then the
/// shell lines (each bounded by the runner, see `exec::wire::said`).
pub fn command_output(said: &crate::exec::observation::CommandOutput) -> String {
    let mut t = format!("the command ended: {}\n", said.ended);
    for (name, text) in [("stdout", &said.stdout), ("stderr", &said.stderr)] {
        if text.is_empty() {
            t.push_str(&format!("its {name}: (nothing)\n"));
        } else {
            t.push_str(&format!("its {name} ends with:\n"));
            for l in text.lines() {
                t.push_str("  | ");
                t.push_str(l);
                t.push('\n');
            }
        }
    }
    match &said.json {
        Some(j) => t.push_str(&format!("its JSON result: {j}\n")),
        None => t.push_str("its JSON result: none (no line of its stdout starts with `{`)\n"),
    }
    if !said.reproduce.is_empty() {
        t.push_str("run it by hand:\n");
        for l in &said.reproduce {
            t.push_str("  ");
            t.push_str(l);
            t.push('\n');
        }
    }
    t
}

/// Problems in the making.
#[derive(Default)]
struct Problems(Vec<Problem>);

impl Problems {
    fn add(&mut self, kind: ProblemKind, detail: impl Into<String>) {
        self.0.push(Problem::new(kind, detail));
    }
}

/// The 1-based file line of the `i`-th expected trace line.
pub fn trace_line_number(matrix: &Matrix, row: &Row, i: usize) -> usize {
    crate::load::trace_item_pos(
        matrix.positions(),
        &matrix.source,
        &row.expect.trace_path,
        i,
    )
    .line
}

#[cfg(test)]
mod tests {
    use super::*;

    fn calls(range: std::ops::RangeInclusive<u32>) -> String {
        range
            .map(|n| format!("A{n} 429 RATE_LIMITED retry wait=1s\n"))
            .collect()
    }

    #[test]
    fn a_runaway_shows_its_first_calls_how_many_were_cut_and_its_last() {
        let expected = calls(1..=3);
        let observed = format!("{}A101 unscripted aborted\n", calls(1..=100));
        let d = diff(&expected, &observed);
        let want = format!(
            "{}{}+ … 89 more observed calls cut …\n+ A101 unscripted aborted\n",
            calls(1..=3)
                .lines()
                .map(|l| format!("  {l}\n"))
                .collect::<String>(),
            calls(4..=11)
                .lines()
                .map(|l| format!("+ {l}\n"))
                .collect::<String>(),
        );
        assert_eq!(d, want);
        assert_eq!(d.lines().count(), 3 + 8 + 2);
    }

    #[test]
    fn a_short_run_of_extra_calls_is_shown_whole() {
        let d = diff(&calls(1..=1), &calls(1..=13));
        assert_eq!(d.lines().filter(|l| l.starts_with('+')).count(), 12);
        assert!(!d.contains("cut"), "{d}");
    }
}
