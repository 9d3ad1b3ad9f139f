//! The controller's configuration: [`Policy`] in code, or [`PolicyConfig`],
//! the serde shape of a configuration file (the `policy:` block of a
//! faultmatrix matrix), checked into a `Policy` with every problem reported
//! at its key ([`PolicyConfig::validate`]).
//!
//! The crate reads no file format itself: deserialize a `PolicyConfig` with
//! the serde format crate a service already uses (YAML, JSON, TOML).

use std::fmt;
use std::time::Duration;

use serde::Deserialize;

use crate::duration::Dur;

/// The most routes a policy may declare: a fallback chain is a handful of
/// upstreams; a longer list is a mistake (or hostile), refused at load.
pub const MAX_ROUTES: usize = 100;

/// Jitter applied on top of the capped exponential delay.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
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
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum AboveCap {
    /// Wait the cap (or the backoff, if longer).
    #[default]
    Clamp,
    /// Stop with `guidance-refused`.
    Refuse,
}

/// One route (an upstream), in fallback order.
#[derive(Debug, Clone, PartialEq)]
pub struct RouteConfig {
    /// Name used in scripts and traces (and handed to the transport).
    pub name: String,
    /// Calls allowed on the route, including the first (at least 1).
    pub attempts: u32,
    /// This route's own backoff, when it differs from the policy's
    /// (`None`: the policy's [`Policy::backoff`]).
    pub backoff: Option<Backoff>,
}

impl RouteConfig {
    /// A route with this many attempts (the first call included) and the
    /// policy's backoff.
    pub fn new(name: impl Into<String>, attempts: u32) -> Self {
        Self {
            name: name.into(),
            attempts,
            backoff: None,
        }
    }
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

/// The reference system's whole configuration: the `policy:` block of a
/// matrix, or a value a service builds in code.
///
/// Every field has a default (see [`Policy::default`] and
/// `docs/configuration.md`); in code, override what you need:
///
/// ```
/// use std::time::Duration;
/// use faultmatrix_controller::{Policy, RouteConfig};
///
/// let policy = Policy {
///     routes: vec![RouteConfig::new("primary", 2), RouteConfig::new("backup", 2)],
///     deadline: Some(Duration::from_secs(30)),
///     ..Policy::default()
/// };
/// assert_eq!(policy.attempt_timeout, Duration::from_secs(60));
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Policy {
    /// Routes in fallback order (default: one route `A` with 3 attempts).
    pub routes: Vec<RouteConfig>,
    /// Backoff between attempts on one route (a route may override it).
    pub backoff: Backoff,
    /// Deadline shared by all routes, from the start of the run (default:
    /// none). A caller's [`Invocation`](super::Invocation) deadline wins.
    pub deadline: Option<Duration>,
    /// Per-attempt timeout (default 60s), capped by what is left of the
    /// deadline. It bounds the wait for a response head, and for each
    /// stream event.
    pub attempt_timeout: Duration,
    /// Delay before the first call on the next route (default 0), separate
    /// from backoff.
    pub switch_delay: Duration,
    /// Server guidance (`Retry-After`, `retry-after-ms`).
    pub retry_after: RetryAfter,
    /// JSON paths in error bodies that name a code, tried in order
    /// (default: empty, meaning `error.code`, `error.type`, `code`).
    pub body_paths: Vec<String>,
    /// Codes that move to the next route at once instead of retrying or
    /// failing (default `None`: the registry's codes marked `switch: true`,
    /// such as `MODEL_UNAVAILABLE`). A terminal code not listed fails.
    pub switch_on: Option<Vec<String>>,
    /// Retry create requests whose outcome is unknown (timeout, reset,
    /// malformed response) even without an idempotency key (default false:
    /// unsafe, it exists to show the duplicates it causes).
    pub retry_creates_without_key: bool,
}

impl Default for Policy {
    fn default() -> Self {
        Self {
            routes: vec![RouteConfig::new("A", 3)],
            backoff: Backoff::default(),
            deadline: None,
            attempt_timeout: Duration::from_secs(60),
            switch_delay: Duration::ZERO,
            retry_after: RetryAfter::default(),
            body_paths: Vec::new(),
            switch_on: None,
            retry_creates_without_key: false,
        }
    }
}

/// A policy as a configuration file writes it (every key optional; see
/// `docs/configuration.md`). [`PolicyConfig::validate`] turns it into a
/// [`Policy`].
#[derive(Debug, Default, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "schema", schemars(rename = "RawPolicy"))]
#[serde(deny_unknown_fields)]
pub struct PolicyConfig {
    /// Upstreams in fallback order, each with its attempt budget (the first call included).
    #[serde(default)]
    pub routes: Option<Vec<RouteEntry>>,
    /// Delay before retry n: `initial * factor^n`, capped, with jitter.
    #[serde(default)]
    pub backoff: Option<BackoffConfig>,
    /// One deadline for the whole run, shared by all routes.
    #[serde(default)]
    pub deadline: Option<Dur>,
    /// How long one call may take (capped by what is left of the deadline). Default 60s.
    #[serde(default)]
    pub attempt_timeout: Option<Dur>,
    /// Wait before the first call on the next route. Default 0s.
    #[serde(default)]
    pub switch_delay: Option<Dur>,
    /// Server guidance (`Retry-After`, `retry-after-ms`): honor, cap, above_cap.
    #[serde(default)]
    pub retry_after: Option<RetryAfterConfig>,
    /// JSON paths in error bodies that name a code (default: error.code, error.type, code).
    #[serde(default)]
    pub body_paths: Option<Vec<String>>,
    /// Codes that move to the next route at once.
    #[serde(default)]
    pub switch_on: Option<Vec<String>>,
    /// Retry create requests with unknown outcome even without an idempotency key (unsafe).
    #[serde(default)]
    pub retry_creates_without_key: Option<bool>,
}

/// One route of a [`PolicyConfig`]: its name, attempt budget and own backoff.
#[derive(Debug, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "schema", schemars(rename = "RawRoute"))]
#[serde(deny_unknown_fields)]
pub struct RouteEntry {
    /// Name in scripts (`inject`) and traces (`A1`).
    pub name: String,
    /// Calls allowed on the route, the first included. Default 3.
    #[serde(default)]
    pub attempts: Option<u32>,
    /// This route's own backoff; fields not given are the policy's.
    #[serde(default)]
    pub backoff: Option<BackoffConfig>,
}

/// Backoff settings of a [`PolicyConfig`] (or of one route); keys not given are inherited.
#[derive(Debug, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "schema", schemars(rename = "RawBackoff"))]
#[serde(deny_unknown_fields)]
pub struct BackoffConfig {
    /// Delay before the first retry. Default 1s.
    #[serde(default)]
    pub initial: Option<Dur>,
    /// Growth per retry. Default 2.
    #[serde(default)]
    pub factor: Option<f64>,
    /// Upper bound of a computed delay, before jitter. Default 30s.
    #[serde(default)]
    pub cap: Option<Dur>,
    /// `none` (default), `full`, `equal` or `decorrelated`.
    #[serde(default)]
    pub jitter: Option<Jitter>,
}

/// Server-guidance settings of a [`PolicyConfig`].
#[derive(Debug, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "schema", schemars(rename = "RawRetryAfter"))]
#[serde(deny_unknown_fields)]
pub struct RetryAfterConfig {
    /// Read server guidance at all. Default true.
    #[serde(default)]
    pub honor: Option<bool>,
    /// Most guidance honored. Default 60s.
    #[serde(default)]
    pub cap: Option<Dur>,
    /// `clamp` (default) or `refuse` (stop `guidance-refused`).
    #[serde(default)]
    pub above_cap: Option<AboveCap>,
}

/// The JSON Schema of a [`PolicyConfig`] (for `faultmatrix schema`).
#[cfg(feature = "schema")]
pub fn policy_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
    generator.subschema_for::<PolicyConfig>()
}

/// One step of the path to a configuration key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeySeg {
    /// A mapping key.
    Key(&'static str),
    /// A list index (0-based).
    Index(usize),
}

/// A problem with one key of a [`PolicyConfig`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    /// Where, from the policy's root (`routes[0].attempts`).
    pub path: Vec<KeySeg>,
    /// What is wrong (lowercase, no trailing period).
    pub message: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("policy")?;
        for seg in &self.path {
            match seg {
                KeySeg::Key(k) => write!(f, ".{k}")?,
                KeySeg::Index(i) => write!(f, "[{i}]")?,
            }
        }
        write!(f, ": {}", self.message)
    }
}

impl std::error::Error for ConfigError {}

/// Every problem of a [`PolicyConfig`], each at its key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigErrors(pub Vec<ConfigError>);

impl fmt::Display for ConfigErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, e) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str("\n")?;
            }
            write!(f, "{e}")?;
        }
        Ok(())
    }
}

impl std::error::Error for ConfigErrors {}

/// Refuses a duration the controller's timers cannot keep (see
/// [`crate::duration::sub_millisecond`]).
fn whole_ms(d: Duration, path: Vec<KeySeg>, errors: &mut Vec<ConfigError>) {
    if let Some(why) = crate::duration::sub_millisecond(d) {
        errors.push(ConfigError { path, message: why });
    }
}

fn at(path: &[KeySeg], seg: KeySeg) -> Vec<KeySeg> {
    let mut p = path.to_vec();
    p.push(seg);
    p
}

/// `base` with the fields `raw` gives; problems go to `errors`.
fn merge_backoff(
    base: &Backoff,
    raw: BackoffConfig,
    path: &[KeySeg],
    errors: &mut Vec<ConfigError>,
) -> Backoff {
    if let Some(d) = raw.initial {
        whole_ms(d.0, at(path, KeySeg::Key("initial")), errors);
    }
    if let Some(d) = raw.cap {
        whole_ms(d.0, at(path, KeySeg::Key("cap")), errors);
    }
    let b = Backoff {
        initial: raw.initial.map_or(base.initial, |d| d.0),
        factor: raw.factor.unwrap_or(base.factor),
        cap: raw.cap.map_or(base.cap, |d| d.0),
        jitter: raw.jitter.unwrap_or(base.jitter),
    };
    if !(b.factor.is_finite() && b.factor >= 1.0) {
        errors.push(ConfigError {
            path: at(path, KeySeg::Key("factor")),
            message: format!("`factor` is {}: expected a number of at least 1", b.factor),
        });
    }
    if b.cap < b.initial {
        errors.push(ConfigError {
            path: at(path, KeySeg::Key("cap")),
            message: format!(
                "`cap` ({}) is below `initial` ({}): every delay would be the cap",
                crate::duration::format(b.cap),
                crate::duration::format(b.initial)
            ),
        });
    }
    b
}

impl Policy {
    /// The backoff that applies on a route.
    pub fn backoff_for<'a>(&'a self, route: &'a RouteConfig) -> &'a Backoff {
        route.backoff.as_ref().unwrap_or(&self.backoff)
    }
}

impl PolicyConfig {
    /// Checks the configuration and fills in defaults. Every problem is
    /// reported, each with the path of the key in error.
    pub fn validate(self) -> Result<Policy, ConfigErrors> {
        let raw = self;
        let d = Policy::default();
        let mut errors = Vec::new();
        let top = |k: &'static str| vec![KeySeg::Key(k)];
        let backoff = match raw.backoff {
            Some(b) => merge_backoff(&d.backoff, b, &top("backoff"), &mut errors),
            None => d.backoff.clone(),
        };
        let routes = match raw.routes {
            None => d.routes,
            Some(rs) => {
                if rs.is_empty() {
                    errors.push(ConfigError {
                        path: top("routes"),
                        message: "`routes` is empty: a policy needs at least one route".into(),
                    });
                }
                if rs.len() > MAX_ROUTES {
                    errors.push(ConfigError {
                        path: top("routes"),
                        message: format!(
                            "`routes` declares {} routes: the limit is {MAX_ROUTES}",
                            rs.len()
                        ),
                    });
                    return Err(ConfigErrors(errors));
                }
                let mut out: Vec<RouteConfig> = Vec::with_capacity(rs.len());
                // Names seen, for the duplicate check (linear, not a scan
                // of the routes so far per route).
                let mut seen: std::collections::HashSet<String> =
                    std::collections::HashSet::with_capacity(rs.len());
                for (i, r) in rs.into_iter().enumerate() {
                    let p = at(&top("routes"), KeySeg::Index(i));
                    if !seen.insert(r.name.clone()) {
                        errors.push(ConfigError {
                            path: at(&p, KeySeg::Key("name")),
                            message: format!("route `{}` is declared twice", r.name),
                        });
                    }
                    if r.name.is_empty() || r.name.contains(char::is_whitespace) {
                        errors.push(ConfigError {
                            path: at(&p, KeySeg::Key("name")),
                            message: format!("route name `{}` must be one word", r.name),
                        });
                    }
                    let attempts = r.attempts.unwrap_or(3);
                    if attempts == 0 {
                        errors.push(ConfigError {
                            path: at(&p, KeySeg::Key("attempts")),
                            message:
                                "`attempts` is 0: it counts the first call, so it is at least 1"
                                    .into(),
                        });
                    }
                    let own = r.backoff.map(|b| {
                        merge_backoff(&backoff, b, &at(&p, KeySeg::Key("backoff")), &mut errors)
                    });
                    out.push(RouteConfig {
                        name: r.name,
                        attempts,
                        backoff: own,
                    });
                }
                out
            }
        };
        let mut retry_after = d.retry_after;
        if let Some(r) = raw.retry_after {
            retry_after.honor = r.honor.unwrap_or(retry_after.honor);
            retry_after.cap = r.cap.map_or(retry_after.cap, |d| d.0);
            retry_after.above_cap = r.above_cap.unwrap_or(retry_after.above_cap);
        }
        for (name, value) in [
            ("deadline", raw.deadline),
            ("attempt_timeout", raw.attempt_timeout),
            ("switch_delay", raw.switch_delay),
        ] {
            if let Some(v) = value {
                whole_ms(v.0, top(name), &mut errors);
            }
        }
        whole_ms(
            retry_after.cap,
            vec![KeySeg::Key("retry_after"), KeySeg::Key("cap")],
            &mut errors,
        );
        let attempt_timeout = raw.attempt_timeout.map_or(d.attempt_timeout, |d| d.0);
        if attempt_timeout.is_zero() {
            errors.push(ConfigError {
                path: top("attempt_timeout"),
                message: "`attempt_timeout` is 0: no call could ever complete".into(),
            });
        }
        let body_paths = raw.body_paths.unwrap_or_default();
        for (i, bp) in body_paths.iter().enumerate() {
            if bp.is_empty() || bp.split('.').any(str::is_empty) {
                errors.push(ConfigError {
                    path: at(&top("body_paths"), KeySeg::Index(i)),
                    message: format!("body path `{bp}` is not a dotted path such as `error.code`"),
                });
            }
        }
        if !errors.is_empty() {
            return Err(ConfigErrors(errors));
        }
        Ok(Policy {
            routes,
            backoff,
            deadline: raw.deadline.map(|d| d.0),
            attempt_timeout,
            switch_delay: raw.switch_delay.map_or(d.switch_delay, |d| d.0),
            retry_after,
            body_paths,
            switch_on: raw.switch_on,
            retry_creates_without_key: raw
                .retry_creates_without_key
                .unwrap_or(d.retry_creates_without_key),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn route(name: &str) -> RouteEntry {
        RouteEntry {
            name: name.into(),
            attempts: None,
            backoff: None,
        }
    }

    #[test]
    fn route_backoff_inherits_what_it_does_not_set() {
        let p = PolicyConfig {
            backoff: Some(BackoffConfig {
                initial: Some(Dur(Duration::from_secs(2))),
                factor: None,
                cap: Some(Dur(Duration::from_secs(20))),
                jitter: None,
            }),
            routes: Some(vec![
                route("A"),
                RouteEntry {
                    backoff: Some(BackoffConfig {
                        initial: None,
                        factor: None,
                        cap: None,
                        jitter: Some(Jitter::Full),
                    }),
                    ..route("B")
                },
            ]),
            ..PolicyConfig::default()
        }
        .validate()
        .unwrap();
        assert_eq!(p.backoff_for(&p.routes[0]), &p.backoff);
        let b = p.backoff_for(&p.routes[1]);
        assert_eq!(
            (b.initial, b.cap, b.factor, b.jitter),
            (
                Duration::from_secs(2),
                Duration::from_secs(20),
                2.0,
                Jitter::Full
            )
        );
        assert_eq!(p.routes[0].attempts, 3);
    }

    #[test]
    fn an_empty_config_is_the_default_policy() {
        assert_eq!(
            PolicyConfig::default().validate().unwrap(),
            Policy::default()
        );
    }

    #[test]
    fn every_problem_is_reported_with_its_key() {
        let e = PolicyConfig {
            routes: Some(vec![
                RouteEntry {
                    attempts: Some(0),
                    backoff: Some(BackoffConfig {
                        initial: Some(Dur(Duration::from_secs(9))),
                        factor: None,
                        cap: Some(Dur(Duration::from_secs(1))),
                        jitter: None,
                    }),
                    ..route("A")
                },
                route("A"),
            ]),
            backoff: Some(BackoffConfig {
                initial: None,
                factor: Some(0.5),
                cap: None,
                jitter: None,
            }),
            attempt_timeout: Some(Dur(Duration::ZERO)),
            body_paths: Some(vec!["error..code".into()]),
            ..PolicyConfig::default()
        }
        .validate()
        .unwrap_err()
        .to_string();
        for want in [
            "policy.routes[0].attempts: `attempts` is 0",
            "policy.routes[0].backoff.cap: `cap` (1s) is below `initial` (9s)",
            "policy.routes[1].name: route `A` is declared twice",
            "policy.backoff.factor: `factor` is 0.5",
            "policy.attempt_timeout: `attempt_timeout` is 0",
            "policy.body_paths[0]: body path `error..code`",
        ] {
            assert!(e.contains(want), "missing {want:?} in:\n{e}");
        }
    }

    #[test]
    fn durations_the_timers_cannot_keep_are_refused_at_their_key() {
        let us = |n| Some(Dur(Duration::from_micros(n)));
        let e = PolicyConfig {
            backoff: Some(BackoffConfig {
                initial: us(250),
                factor: None,
                cap: us(30_000_500),
                jitter: None,
            }),
            deadline: us(1_500),
            switch_delay: us(1),
            attempt_timeout: us(2_000),
            ..PolicyConfig::default()
        }
        .validate()
        .unwrap_err()
        .to_string();
        for want in [
            "policy.backoff.initial: 250us is not a whole number of milliseconds",
            "policy.backoff.cap: 30000500us",
            "policy.deadline: 1500us",
            "policy.switch_delay: 1us",
        ] {
            assert!(e.contains(want), "missing {want:?} in:\n{e}");
        }
        assert!(!e.contains("attempt_timeout"), "{e}");
    }

    #[test]
    fn a_long_route_list_is_refused_and_duplicates_are_found_in_one_pass() {
        let many: Vec<RouteEntry> = (0..=MAX_ROUTES).map(|i| route(&format!("R{i}"))).collect();
        let e = PolicyConfig {
            routes: Some(many),
            ..PolicyConfig::default()
        }
        .validate()
        .unwrap_err()
        .to_string();
        assert_eq!(
            e,
            format!("policy.routes: `routes` declares 101 routes: the limit is {MAX_ROUTES}")
        );
        let mut at_limit: Vec<RouteEntry> = (0..MAX_ROUTES - 1)
            .map(|i| route(&format!("R{i}")))
            .collect();
        at_limit.push(route("R7"));
        let e = PolicyConfig {
            routes: Some(at_limit),
            ..PolicyConfig::default()
        }
        .validate()
        .unwrap_err()
        .to_string();
        assert_eq!(e, "policy.routes[99].name: route `R7` is declared twice");
    }
}
