//! Backoff: `initial * factor^retry`, capped, with jitter none / full /
//! equal / decorrelated, drawn from an injectable deterministic source.

use std::time::Duration;

use super::config::{Backoff, Jitter};

/// Computes delays for one route (decorrelated jitter keeps the previous
/// delay).
#[derive(Debug, Clone)]
pub struct Schedule {
    cfg: Backoff,
    previous: Duration,
}

fn scale(d: Duration, by: f64) -> Duration {
    let n = (d.as_nanos() as f64 * by).round();
    if n >= u64::MAX as f64 {
        Duration::from_nanos(u64::MAX)
    } else {
        Duration::from_nanos(n.max(0.0) as u64)
    }
}

impl Schedule {
    /// A schedule for this configuration.
    pub fn new(cfg: &Backoff) -> Self {
        Self {
            cfg: cfg.clone(),
            previous: cfg.initial,
        }
    }

    /// The capped delay before jitter for retry number `retry` (0-based).
    pub fn capped(&self, retry: u32) -> Duration {
        let grown = scale(
            self.cfg.initial,
            self.cfg.factor.powi(retry.min(1024) as i32),
        );
        grown.min(self.cfg.cap)
    }

    /// The delay before retry number `retry`; `draw` gives values in [0, 1).
    pub fn delay(&mut self, retry: u32, mut draw: impl FnMut() -> f64) -> Duration {
        let capped = self.capped(retry);
        let d = match self.cfg.jitter {
            Jitter::None => capped,
            Jitter::Full => scale(capped, draw()),
            Jitter::Equal => capped / 2 + scale(capped / 2, draw()),
            Jitter::Decorrelated => {
                let lo = self.cfg.initial;
                let hi = (self.previous * 3).max(lo);
                (lo + scale(hi - lo, draw())).min(self.cfg.cap)
            }
        };
        self.previous = d;
        d
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(j: Jitter) -> Backoff {
        Backoff {
            initial: Duration::from_secs(1),
            factor: 2.0,
            cap: Duration::from_secs(30),
            jitter: j,
        }
    }

    #[test]
    fn exponential_and_capped() {
        let mut s = Schedule::new(&cfg(Jitter::None));
        let got: Vec<u64> = (0..7).map(|r| s.delay(r, || 0.0).as_secs()).collect();
        assert_eq!(got, [1, 2, 4, 8, 16, 30, 30]);
    }

    #[test]
    fn jitter_kinds() {
        let mut s = Schedule::new(&cfg(Jitter::Full));
        assert_eq!(s.delay(2, || 0.5), Duration::from_secs(2));
        let mut s = Schedule::new(&cfg(Jitter::Equal));
        assert_eq!(s.delay(2, || 0.0), Duration::from_secs(2));
        assert_eq!(s.delay(2, || 0.5), Duration::from_secs(3));
        let mut s = Schedule::new(&cfg(Jitter::Decorrelated));
        assert_eq!(s.delay(0, || 1.0), Duration::from_secs(3));
        assert_eq!(s.delay(1, || 1.0), Duration::from_secs(9));
        assert_eq!(s.delay(2, || 1.0), Duration::from_secs(27));
        assert_eq!(s.delay(3, || 1.0), Duration::from_secs(30));
    }
}
