//! The reference system's configuration: the `policy:` block of a matrix,
//! parsed in two passes like everything else (serde shape, then checks).

use std::time::Duration;

use serde::Deserialize;

use crate::load::raw::Dur;
use crate::yaml::{self, Seg, Value, YamlError};

/// Jitter applied on top of the capped exponential delay.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Jitter {
    /// The capped delay itself.
    #[default]
    None,
    /// Uniform in `0..capped`.
    Full,
    /// `capped/2 + uniform(0..capped/2)`.
    Equal,
    /// `min(cap, uniform(initial, previous*3))`.
    Decorrelated,
}

/// What to do with server guidance above the cap.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AboveCap {
    /// Wait the cap (or the backoff, if longer).
    #[default]
    Clamp,
    /// Stop with `guidance-refused`.
    Refuse,
}

/// One route.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RouteConfig {
    /// Name used in scripts and traces.
    pub name: String,
    /// Calls allowed on the route, including the first.
    pub attempts: u32,
}

/// Backoff settings.
#[derive(Debug, Clone, PartialEq)]
pub struct Backoff {
    /// First retry's delay.
    pub initial: Duration,
    /// Growth per retry.
    pub factor: f64,
    /// Upper bound on a computed delay.
    pub cap: Duration,
    /// Jitter.
    pub jitter: Jitter,
}

impl Default for Backoff {
    fn default() -> Self {
        Self {
            initial: Duration::from_secs(1),
            factor: 2.0,
            cap: Duration::from_secs(30),
            jitter: Jitter::None,
        }
    }
}

/// Server-guidance handling.
#[derive(Debug, Clone, PartialEq)]
pub struct RetryAfter {
    /// Whether `Retry-After` / `retry-after-ms` are read at all.
    pub honor: bool,
    /// Most guidance honored.
    pub cap: Duration,
    /// What to do above the cap.
    pub above_cap: AboveCap,
}

impl Default for RetryAfter {
    fn default() -> Self {
        Self {
            honor: true,
            cap: Duration::from_secs(60),
            above_cap: AboveCap::Clamp,
        }
    }
}

/// The reference system's whole configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct Policy {
    /// Routes in fallback order.
    pub routes: Vec<RouteConfig>,
    /// Backoff.
    pub backoff: Backoff,
    /// Deadline shared by all routes.
    pub deadline: Option<Duration>,
    /// Per-attempt timeout (capped by what is left of the deadline).
    pub attempt_timeout: Duration,
    /// Delay before the first call on the next route.
    pub switch_delay: Duration,
    /// Server guidance.
    pub retry_after: RetryAfter,
    /// JSON paths in error bodies that name a code.
    pub body_paths: Vec<String>,
    /// Retry timeouts of create requests that carry no idempotency key
    /// (unsafe; exists to demonstrate duplicates).
    pub retry_creates_without_key: bool,
    /// Escalate failed runs (default true).
    pub escalate: bool,
}

impl Default for Policy {
    fn default() -> Self {
        Self {
            routes: vec![RouteConfig {
                name: "A".into(),
                attempts: 3,
            }],
            backoff: Backoff::default(),
            deadline: None,
            attempt_timeout: Duration::from_secs(60),
            switch_delay: Duration::ZERO,
            retry_after: RetryAfter::default(),
            body_paths: Vec::new(),
            retry_creates_without_key: false,
            escalate: true,
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPolicy {
    #[serde(default)]
    routes: Option<Vec<RawRoute>>,
    #[serde(default)]
    backoff: Option<RawBackoff>,
    #[serde(default)]
    deadline: Option<Dur>,
    #[serde(default)]
    attempt_timeout: Option<Dur>,
    #[serde(default)]
    switch_delay: Option<Dur>,
    #[serde(default)]
    retry_after: Option<RawRetryAfter>,
    #[serde(default)]
    body_paths: Option<Vec<String>>,
    #[serde(default)]
    retry_creates_without_key: Option<bool>,
    #[serde(default)]
    escalate: Option<bool>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRoute {
    name: String,
    #[serde(default)]
    attempts: Option<u32>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawBackoff {
    #[serde(default)]
    initial: Option<Dur>,
    #[serde(default)]
    factor: Option<f64>,
    #[serde(default)]
    cap: Option<Dur>,
    #[serde(default)]
    jitter: Option<Jitter>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRetryAfter {
    #[serde(default)]
    honor: Option<bool>,
    #[serde(default)]
    cap: Option<Dur>,
    #[serde(default)]
    above_cap: Option<AboveCap>,
}

fn err(path: Vec<Seg>, message: String) -> YamlError {
    YamlError {
        pos: None,
        path,
        message,
    }
}

impl Policy {
    /// Parses a `policy:` block (`Value::Null` gives the defaults).
    pub fn from_value(value: &Value) -> Result<Policy, Vec<YamlError>> {
        let base = vec![Seg::Key("policy".into())];
        if value.is_null() {
            return Ok(Policy::default());
        }
        let raw: RawPolicy = yaml::from_value(value, &base).map_err(|e| vec![e])?;
        let d = Policy::default();
        let mut errors = Vec::new();
        let at = |segs: &[&str]| {
            let mut p = base.clone();
            p.extend(segs.iter().map(|s| Seg::Key((*s).to_string())));
            p
        };
        let routes = match raw.routes {
            None => d.routes,
            Some(rs) => {
                if rs.is_empty() {
                    errors.push(err(
                        at(&["routes"]),
                        "`routes` is empty: a policy needs at least one route".into(),
                    ));
                }
                let mut out: Vec<RouteConfig> = Vec::new();
                for (i, r) in rs.into_iter().enumerate() {
                    let mut p = at(&["routes"]);
                    p.push(Seg::Index(i));
                    if out.iter().any(|o| o.name == r.name) {
                        let mut pn = p.clone();
                        pn.push(Seg::Key("name".into()));
                        errors.push(err(pn, format!("route `{}` is declared twice", r.name)));
                    }
                    if r.name.is_empty() || r.name.contains(char::is_whitespace) {
                        let mut pn = p.clone();
                        pn.push(Seg::Key("name".into()));
                        errors.push(err(pn, format!("route name `{}` must be one word", r.name)));
                    }
                    let attempts = r.attempts.unwrap_or(3);
                    if attempts == 0 {
                        p.push(Seg::Key("attempts".into()));
                        errors.push(err(
                            p,
                            "`attempts` is 0: it counts the first call, so it is at least 1".into(),
                        ));
                    }
                    out.push(RouteConfig {
                        name: r.name,
                        attempts,
                    });
                }
                out
            }
        };
        let mut backoff = d.backoff;
        if let Some(b) = raw.backoff {
            backoff.initial = b.initial.map_or(backoff.initial, |d| d.0);
            backoff.factor = b.factor.unwrap_or(backoff.factor);
            backoff.cap = b.cap.map_or(backoff.cap, |d| d.0);
            backoff.jitter = b.jitter.unwrap_or_default();
            if !(backoff.factor.is_finite() && backoff.factor >= 1.0) {
                errors.push(err(
                    at(&["backoff", "factor"]),
                    format!(
                        "`factor` is {}: expected a number of at least 1",
                        backoff.factor
                    ),
                ));
            }
            if backoff.cap < backoff.initial {
                errors.push(err(
                    at(&["backoff", "cap"]),
                    "`cap` is below `initial`: every delay would be the cap".into(),
                ));
            }
        }
        let mut retry_after = d.retry_after;
        if let Some(r) = raw.retry_after {
            retry_after.honor = r.honor.unwrap_or(true);
            retry_after.cap = r.cap.map_or(retry_after.cap, |d| d.0);
            retry_after.above_cap = r.above_cap.unwrap_or_default();
        }
        let attempt_timeout = raw.attempt_timeout.map_or(d.attempt_timeout, |d| d.0);
        if attempt_timeout.is_zero() {
            errors.push(err(
                at(&["attempt_timeout"]),
                "`attempt_timeout` is 0: no call could ever complete".into(),
            ));
        }
        if !errors.is_empty() {
            return Err(errors);
        }
        Ok(Policy {
            routes,
            backoff,
            deadline: raw.deadline.map(|d| d.0),
            attempt_timeout,
            switch_delay: raw.switch_delay.map_or(Duration::ZERO, |d| d.0),
            retry_after,
            body_paths: raw.body_paths.unwrap_or_default(),
            retry_creates_without_key: raw.retry_creates_without_key.unwrap_or(false),
            escalate: raw.escalate.unwrap_or(true),
        })
    }
}
