//! Tolerances for real time. Over HTTP on the real clock an observed wait
//! never equals the expected one to the nanosecond: a row (or the file's
//! `defaults`) sets `tolerance: { abs: 50ms, rel: 10% }`, and an observed
//! duration `d` matches an expected `x` when `|d - x| <= abs + rel * x`. A
//! range `lo..hi` widens to `lo - (abs + rel*lo) .. hi + (abs + rel*hi)`.
//! In-process rows never use a tolerance: virtual time is exact.

use std::time::Duration;

use crate::base::duration::{self, DurationSpec};

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
}
