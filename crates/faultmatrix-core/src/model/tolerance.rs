//! Tolerances for real time. Over HTTP on the real clock an observed wait
//! never equals the expected one to the nanosecond, and a loaded machine
//! only ever makes it longer (timers never fire early). A row (or the
//! file's `defaults`) sets `tolerance: { abs: 50ms, rel: 10%, late: 1s }`:
//! an observed duration `d` matches an expected `x` when
//! `x - (abs + rel*x) <= d <= x + (abs + rel*x) + late`. A range `lo..hi`
//! widens to `lo - (abs + rel*lo) .. hi + (abs + rel*hi) + late`. The early
//! side catches a client that waits too little; `late` absorbs scheduler
//! delay, and a wait far too long still fails.
//! In-process rows never use a tolerance: virtual time is exact.

use std::time::Duration;

use crate::base::duration::{self, DurationSpec};

/// How far a real duration may be from the expected one.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Tolerance {
    /// Absolute slack, both sides.
    pub abs: Duration,
    /// Relative slack, both sides, a fraction of the expected value (0.1 = 10%).
    pub rel: f64,
    /// Extra slack on the late side only: how much later than
    /// `x + abs + rel*x` a real time may come out on a loaded machine.
    pub late: Duration,
}

/// The default `late`: the largest lateness measured by
/// `bench/lateness.sh` on a loaded 2-core machine, with room to spare
/// (docs/over-the-wire.md, "Real time and tolerances").
pub const DEFAULT_LATE: Duration = Duration::from_millis(1000);

impl Default for Tolerance {
    /// `abs: 50ms, rel: 10%, late: 1s`.
    fn default() -> Self {
        Self {
            abs: Duration::from_millis(50),
            rel: 0.10,
            late: DEFAULT_LATE,
        }
    }
}

impl Tolerance {
    fn slack(&self, x: Duration) -> Duration {
        // `mul_f64` panics past Duration::MAX; this saturates instead.
        let relative =
            Duration::try_from_secs_f64(x.as_secs_f64() * self.rel).unwrap_or(Duration::MAX);
        self.abs.saturating_add(relative)
    }

    /// The accepted window around an expectation: `abs + rel*x` below,
    /// that and `late` above.
    pub fn window(&self, spec: &DurationSpec) -> (Duration, Duration) {
        let (lo, hi) = match *spec {
            DurationSpec::Exact(x) => (x, x),
            DurationSpec::Range(lo, hi) => (lo, hi),
        };
        (
            lo.saturating_sub(self.slack(lo)),
            hi.saturating_add(self.slack(hi)).saturating_add(self.late),
        )
    }

    /// `Ok(value to show)` when `actual` matches; `Err(miss)` otherwise,
    /// where the miss says on which side of the window it was, and by how much.
    pub fn check(&self, spec: &DurationSpec, actual: Duration) -> Result<Duration, Miss> {
        let (lo, hi) = self.window(spec);
        if actual < lo {
            return Err(Miss::Short(lo - actual));
        }
        if actual > hi {
            return Err(Miss::Late(actual - hi));
        }
        Ok(match *spec {
            DurationSpec::Exact(x) => x,
            DurationSpec::Range(a, b) => actual.clamp(a, b),
        })
    }

    /// Human text: `±(50ms + 10%) +1s late`, or `±(50ms + 10%)` without a
    /// late allowance.
    pub fn describe(&self) -> String {
        let both = format!(
            "±({} + {}%)",
            duration::format(self.abs),
            (self.rel * 100.0 * 1000.0).round() / 1000.0
        );
        if self.late.is_zero() {
            both
        } else {
            format!("{both} +{} late", duration::format(self.late))
        }
    }
}

/// How a duration missed its window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Miss {
    /// Below the window by this much: the client waited too little.
    Short(Duration),
    /// Above the window, late allowance included, by this much.
    Late(Duration),
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    fn symmetric() -> Tolerance {
        Tolerance {
            abs: ms(50),
            rel: 0.1,
            late: Duration::ZERO,
        }
    }

    #[test]
    fn windows_are_abs_plus_rel() {
        let t = symmetric();
        let one = DurationSpec::Exact(ms(1000));
        assert_eq!(t.window(&one), (ms(850), ms(1150)));
        assert_eq!(t.check(&one, ms(1149)), Ok(ms(1000)));
        assert_eq!(t.check(&one, ms(1200)), Err(Miss::Late(ms(50))));
        assert_eq!(t.check(&one, ms(300)), Err(Miss::Short(ms(550))));
        let r = DurationSpec::Range(ms(100), ms(200));
        assert_eq!(t.window(&r), (ms(40), ms(270)));
        assert_eq!(t.check(&r, ms(150)), Ok(ms(150)));
        assert_eq!(t.check(&r, ms(60)), Ok(ms(100)));
        let zero = DurationSpec::Exact(Duration::ZERO);
        assert_eq!(t.check(&zero, ms(3)), Ok(Duration::ZERO));
    }

    #[test]
    fn late_widens_only_the_late_side() {
        let t = Tolerance::default();
        let one = DurationSpec::Exact(ms(1000));
        // The early side is as without `late`: a client waiting too little fails.
        assert_eq!(t.window(&one), (ms(850), ms(2150)));
        assert_eq!(t.check(&one, ms(849)), Err(Miss::Short(ms(1))));
        assert_eq!(t.check(&one, ms(500)), Err(Miss::Short(ms(350))));
        assert_eq!(t.check(&one, ms(850)), Ok(ms(1000)));
        // Late within the allowance (a loaded machine) passes, shown as expected.
        assert_eq!(t.check(&one, ms(1369)), Ok(ms(1000)));
        assert_eq!(t.check(&one, ms(2150)), Ok(ms(1000)));
        // Past it fails, by how far past the whole late window.
        assert_eq!(t.check(&one, ms(2151)), Err(Miss::Late(ms(1))));
        // A wait far too long still fails: an hour, or 120s of Retry-After
        // honoured where 2s was expected.
        assert_eq!(
            t.check(&one, Duration::from_secs(3600)),
            Err(Miss::Late(Duration::from_secs(3600) - ms(2150)))
        );
        let two = DurationSpec::Exact(ms(2000));
        assert_eq!(
            t.check(&two, Duration::from_secs(120)),
            Err(Miss::Late(Duration::from_secs(120) - ms(3250)))
        );
        // Ranges: late widens the upper end only.
        let r = DurationSpec::Range(ms(100), ms(200));
        assert_eq!(t.window(&r), (ms(40), ms(1270)));
        assert_eq!(t.check(&r, ms(900)), Ok(ms(200)));
        assert_eq!(t.check(&r, ms(39)), Err(Miss::Short(ms(1))));
        // 0s expected (no wait written, or no time after the answer): a
        // scheduling gap is none, a second and more is a wait.
        let zero = DurationSpec::Exact(Duration::ZERO);
        assert_eq!(t.check(&zero, ms(186)), Ok(Duration::ZERO));
        assert_eq!(t.check(&zero, ms(1100)), Err(Miss::Late(ms(50))));
    }

    #[test]
    fn huge_values_saturate_instead_of_overflowing() {
        let t = Tolerance {
            abs: Duration::MAX,
            rel: 10.0,
            late: Duration::MAX,
        };
        let x = DurationSpec::Exact(Duration::from_secs(u64::MAX / 2));
        assert_eq!(t.window(&x), (Duration::ZERO, Duration::MAX));
    }

    #[test]
    fn descriptions_name_the_late_allowance() {
        assert_eq!(Tolerance::default().describe(), "±(50ms + 10%) +1s late");
        assert_eq!(symmetric().describe(), "±(50ms + 10%)");
    }
}
