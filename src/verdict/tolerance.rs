//! Matching real time by *snapping*: an observed wait inside the row's
//! tolerance is replaced by the expected value before the trace is
//! rendered, so the diff stays quiet; a wait outside keeps its measured
//! value (to the millisecond) and a problem line says by how much it missed.

use std::time::Duration;

use crate::base::duration::{self, DurationSpec};
use crate::exec::run::Observation;
use crate::exec::trace::call_label;
use crate::model::tolerance::{Miss, Tolerance};
use crate::model::Row;

fn miss_text(what: &str, spec: &DurationSpec, actual: Duration, t: &Tolerance, m: Miss) -> String {
    let (lo, hi) = t.window(spec);
    let (by, dir) = match m {
        Miss::Short(d) => (d, "too short"),
        Miss::Late(d) => (d, "too late"),
    };
    format!(
        "{what}: observed {}, expected {spec} {} = {}..{}: {} {dir}",
        duration::format(actual),
        t.describe(),
        duration::format(lo),
        duration::format(hi),
        duration::format(by),
    )
}

/// Snaps an over-the-wire observation onto the row's expectations: waits,
/// `at` times and `elapsed` inside the tolerance take the expected value;
/// the ones outside stay measured and each adds a problem naming the call.
/// A call expected with no wait is expected to wait 0s.
pub fn snap(row: &Row, obs: &mut Observation, t: &Tolerance) {
    let expected = row.expect.trace.as_deref().unwrap_or(&[]);
    let mut problems = Vec::new();
    for (i, line) in obs.lines.iter_mut().enumerate() {
        let exp = crate::verdict::lines::expected_for(expected, i, line);
        let label = call_label(&line.route, line.attempt);
        if let Some(w) = line.wait {
            let zero = DurationSpec::Exact(Duration::ZERO);
            let spec = exp.and_then(|e| e.wait.as_ref());
            // Only judge waits where the expected line is the same call.
            let same_call =
                exp.is_some_and(|e| e.route() == line.route && e.attempt == line.attempt);
            match (spec, same_call) {
                (Some(s), true) => match t.check(s, w) {
                    Ok(v) => line.wait = Some(v),
                    Err(m) => problems.push(miss_text(
                        &format!("{label} wait (after {label}, before the next call)"),
                        s,
                        w,
                        t,
                        m,
                    )),
                },
                (None, _) => {
                    // No wait written: 0s expected; gaps within the
                    // tolerance are noise. A line that differs anyway (an
                    // extra call, another decision) is judged without
                    // `late`, so the diff shows a real wait it made (the
                    // extra retry's 800ms) rather than hiding it as noise.
                    let matching =
                        same_call && exp.is_some_and(|e| e.decision.as_str() == line.decision);
                    let judge = if matching {
                        *t
                    } else {
                        Tolerance {
                            late: Duration::ZERO,
                            ..*t
                        }
                    };
                    match judge.check(&zero, w) {
                        Ok(_) => line.wait = Some(Duration::ZERO),
                        Err(m) if matching => problems.push(miss_text(
                            &format!("{label} wait (none written, so 0s)"),
                            &zero,
                            w,
                            t,
                            m,
                        )),
                        Err(_) => {}
                    }
                }
                (Some(_), false) => {}
            }
        }
        if let Some(at) = exp.and_then(|e| e.at.as_ref()) {
            match t.check(at, line.at) {
                Ok(v) => line.at = v,
                Err(m) => problems.push(miss_text(&format!("{label} at"), at, line.at, t, m)),
            }
        }
    }
    // The system returns when it prints its result, a moment after the last
    // answer: a gap inside the tolerance of 0s is that moment, not a wait.
    if let Some(end) = obs.calls.last().and_then(|c| c.ended) {
        let gap = obs.returned_at.saturating_sub(end);
        if t.check(&DurationSpec::Exact(Duration::ZERO), gap).is_ok() {
            obs.returned_at = obs.returned_at.min(end);
        }
    }
    if let Some(spec) = &row.expect.elapsed {
        match t.check(spec, obs.returned_at) {
            Ok(v) => obs.returned_at = v,
            Err(m) => problems.push(miss_text("elapsed", spec, obs.returned_at, t, m)),
        }
    }
    if !problems.is_empty() {
        obs.failures.push(format!(
            "real time outside tolerance ({}):\n{}",
            t.describe(),
            problems
                .iter()
                .map(|p| format!("  {p}"))
                .collect::<Vec<_>>()
                .join("\n")
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn misses_say_by_how_much() {
        let t = Tolerance::default();
        let s = miss_text(
            "A1 wait",
            &DurationSpec::Exact(ms(1000)),
            ms(300),
            &t,
            Miss::Short(ms(550)),
        );
        assert_eq!(
            s,
            "A1 wait: observed 300ms, expected 1s ±(50ms + 10%) +1s late = 850ms..2150ms: 550ms too short"
        );
    }

    #[test]
    fn late_misses_name_the_late_window() {
        let t = Tolerance::default();
        let two = DurationSpec::Exact(ms(2000));
        let observed = ms(5000);
        let miss = t.check(&two, observed).unwrap_err();
        assert_eq!(miss, Miss::Late(ms(1750)));
        assert_eq!(
            miss_text("A1 wait", &two, observed, &t, miss),
            "A1 wait: observed 5s, expected 2s ±(50ms + 10%) +1s late = 1750ms..3250ms: 1750ms too late"
        );
        let symmetric = Tolerance {
            late: Duration::ZERO,
            ..t
        };
        let miss = symmetric.check(&two, ms(2300)).unwrap_err();
        assert_eq!(
            miss_text("elapsed", &two, ms(2300), &symmetric, miss),
            "elapsed: observed 2300ms, expected 2s ±(50ms + 10%) = 1750ms..2250ms: 50ms too late"
        );
    }
}
