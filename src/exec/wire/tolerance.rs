//! Tolerances for real time. Over HTTP the clock is real, so an observed
//! wait never equals the expected one to the nanosecond: a row (or the
//! file's `defaults`) sets `tolerance: { abs: 50ms, rel: 10% }`, and an
//! observed duration `d` matches an expected `x` when
//! `|d - x| <= abs + rel * x`. A range `lo..hi` widens to
//! `lo - (abs + rel*lo) .. hi + (abs + rel*hi)`.
//!
//! Matching is done by *snapping*: an observed wait inside the tolerance is
//! replaced by the expected value before the trace is rendered, so the diff
//! stays quiet; a wait outside keeps its measured value (to the millisecond)
//! and a problem line says by how much it missed. In-process rows never use
//! a tolerance: virtual time is exact.

use std::time::Duration;

use serde::Deserialize;

use crate::base::duration::{self, DurationSpec};
use crate::exec::run::Observation;
use crate::exec::trace::call_label;
use crate::load::raw::Dur;
use crate::model::Row;

/// How far a real duration may be from the expected one.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Tolerance {
    /// Absolute slack.
    pub abs: Duration,
    /// Relative slack, a fraction of the expected value (0.1 = 10%).
    pub rel: f64,
}

impl Default for Tolerance {
    /// `abs: 50ms, rel: 10%`.
    fn default() -> Self {
        Self {
            abs: Duration::from_millis(50),
            rel: 0.10,
        }
    }
}

/// `tolerance:` as written: `{ abs: 50ms, rel: 10% }` (either may be left out).
/// Over the wire only: how far a real wait may be from the expected one.
#[derive(Debug, Clone, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawTolerance {
    /// Absolute slack (default 50ms).
    #[serde(default)]
    pub abs: Option<Dur>,
    /// Relative slack, of the expected value: `10%` or a fraction such as `0.1` (default 10%).
    #[serde(default)]
    pub rel: Option<RawRel>,
}

/// A relative tolerance as written: `10%` or a fraction such as `0.1`.
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(untagged)]
pub enum RawRel {
    /// `0.1`.
    Fraction(f64),
    /// `10%`.
    Percent(String),
}

impl RawTolerance {
    /// Applies the written fields on top of `base`.
    pub fn apply(&self, base: Tolerance) -> Result<Tolerance, String> {
        let mut t = base;
        if let Some(a) = self.abs {
            t.abs = a.0;
        }
        if let Some(r) = &self.rel {
            let v = match r {
                RawRel::Fraction(f) => *f,
                RawRel::Percent(s) => {
                    let num = s.trim().strip_suffix('%').ok_or_else(|| {
                        format!("`rel: {s}` is not a percentage: write it as `10%` or `0.1`")
                    })?;
                    num.trim()
                        .parse::<f64>()
                        .map_err(|_| format!("`rel: {s}` is not a percentage: write it as `10%`"))?
                        / 100.0
                }
            };
            if !(v.is_finite() && (0.0..=10.0).contains(&v)) {
                return Err(format!(
                    "`rel` is {v}: a relative tolerance is a fraction from 0 to 10 (0% to 1000%)"
                ));
            }
            t.rel = v;
        }
        Ok(t)
    }
}

impl Tolerance {
    fn slack(&self, x: Duration) -> Duration {
        self.abs + x.mul_f64(self.rel)
    }

    /// The accepted window around an expectation.
    pub fn window(&self, spec: &DurationSpec) -> (Duration, Duration) {
        let (lo, hi) = match *spec {
            DurationSpec::Exact(x) => (x, x),
            DurationSpec::Range(lo, hi) => (lo, hi),
        };
        (
            lo.saturating_sub(self.slack(lo)),
            hi.saturating_add(self.slack(hi)),
        )
    }

    /// `Ok(value to show)` when `actual` matches; `Err(miss)` otherwise,
    /// where the miss says how far outside the window it was.
    pub fn check(&self, spec: &DurationSpec, actual: Duration) -> Result<Duration, Miss> {
        let (lo, hi) = self.window(spec);
        if actual < lo {
            return Err(Miss::Short(lo - actual));
        }
        if actual > hi {
            return Err(Miss::Long(actual - hi));
        }
        Ok(match *spec {
            DurationSpec::Exact(x) => x,
            DurationSpec::Range(a, b) => actual.clamp(a, b),
        })
    }

    /// Human text: `±(50ms + 10%)`.
    pub fn describe(&self) -> String {
        format!(
            "±({} + {}%)",
            duration::format(self.abs),
            (self.rel * 100.0 * 1000.0).round() / 1000.0
        )
    }
}

/// How a duration missed its window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Miss {
    /// Below the window by this much.
    Short(Duration),
    /// Above the window by this much.
    Long(Duration),
}

fn miss_text(what: &str, spec: &DurationSpec, actual: Duration, t: &Tolerance, m: Miss) -> String {
    let (lo, hi) = t.window(spec);
    let (by, dir) = match m {
        Miss::Short(d) => (d, "too short"),
        Miss::Long(d) => (d, "too long"),
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

/// Rounds a real duration to the millisecond (trace text stays readable).
pub fn round_ms(d: Duration) -> Duration {
    Duration::from_millis(((d.as_micros() + 500) / 1000) as u64)
}

/// Snaps an over-the-wire observation onto the row's expectations: waits,
/// `at` times and `elapsed` inside the tolerance take the expected value;
/// the ones outside stay measured and each adds a problem naming the call.
/// A call expected with no wait is expected to wait 0s.
pub fn snap(row: &Row, obs: &mut Observation, t: &Tolerance) {
    let expected = row.expect.trace.as_deref().unwrap_or(&[]);
    let mut problems = Vec::new();
    for (i, line) in obs.lines.iter_mut().enumerate() {
        let exp = expected.get(i);
        let label = call_label(&line.route, line.attempt);
        if let Some(w) = line.wait {
            let zero = DurationSpec::Exact(Duration::ZERO);
            let spec = exp.and_then(|e| e.wait.as_ref());
            // Only judge waits where the expected line is the same call.
            let same_call = exp.is_some_and(|e| e.route == line.route && e.attempt == line.attempt);
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
                    // No wait written: 0s expected; tiny gaps are noise.
                    match t.check(&zero, w) {
                        Ok(_) => line.wait = Some(Duration::ZERO),
                        Err(m)
                            if same_call
                                && exp.is_some_and(|e| e.decision.as_str() == line.decision) =>
                        {
                            problems.push(miss_text(
                                &format!("{label} wait (none written, so 0s)"),
                                &zero,
                                w,
                                t,
                                m,
                            ))
                        }
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
    fn windows_are_abs_plus_rel() {
        let t = Tolerance {
            abs: ms(50),
            rel: 0.1,
        };
        let one = DurationSpec::Exact(ms(1000));
        assert_eq!(t.window(&one), (ms(850), ms(1150)));
        assert_eq!(t.check(&one, ms(1149)), Ok(ms(1000)));
        assert_eq!(t.check(&one, ms(1200)), Err(Miss::Long(ms(50))));
        assert_eq!(t.check(&one, ms(300)), Err(Miss::Short(ms(550))));
        let r = DurationSpec::Range(ms(100), ms(200));
        assert_eq!(t.window(&r), (ms(40), ms(270)));
        assert_eq!(t.check(&r, ms(150)), Ok(ms(150)));
        assert_eq!(t.check(&r, ms(60)), Ok(ms(100)));
        let zero = DurationSpec::Exact(Duration::ZERO);
        assert_eq!(t.check(&zero, ms(3)), Ok(Duration::ZERO));
    }

    #[test]
    fn parses_written_tolerances() {
        let base = Tolerance::default();
        let raw: RawTolerance = serde_yaml::from_str("{ abs: 20ms, rel: 5% }").unwrap();
        assert_eq!(
            raw.apply(base).unwrap(),
            Tolerance {
                abs: ms(20),
                rel: 0.05
            }
        );
        let raw: RawTolerance = serde_yaml::from_str("{ rel: 0.25 }").unwrap();
        assert_eq!(raw.apply(base).unwrap().rel, 0.25);
        let raw: RawTolerance = serde_yaml::from_str("{ rel: ten }").unwrap();
        assert!(raw.apply(base).unwrap_err().contains("percentage"));
        let raw: RawTolerance = serde_yaml::from_str("{ rel: -1 }").unwrap();
        assert!(raw.apply(base).unwrap_err().contains("fraction"));
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
            "A1 wait: observed 300ms, expected 1s ±(50ms + 10%) = 850ms..1150ms: 550ms too short"
        );
    }
}
