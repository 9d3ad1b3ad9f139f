//! The reference system's configuration: the `policy:` block of a matrix,
//! parsed in two passes like everything else (serde shape, then checks).

use std::time::Duration;

use serde::Deserialize;

use crate::load::raw::Dur;
use crate::yaml::{self, Seg, Value, YamlError};

/// Jitter applied on top of the capped exponential delay.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, schemars::JsonSchema)]
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, schemars::JsonSchema)]
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
/// use faultmatrix::policy::{Policy, RouteConfig};
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

#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct RawPolicy {
    /// Upstreams in fallback order, each with its attempt budget (the first call included).
    #[serde(default)]
    routes: Option<Vec<RawRoute>>,
    /// Delay before retry n: `initial * factor^n`, capped, with jitter.
    #[serde(default)]
    backoff: Option<RawBackoff>,
    /// One deadline for the whole run, shared by all routes.
    #[serde(default)]
    deadline: Option<Dur>,
    /// How long one call may take (capped by what is left of the deadline). Default 60s.
    #[serde(default)]
    attempt_timeout: Option<Dur>,
    /// Wait before the first call on the next route. Default 0s.
    #[serde(default)]
    switch_delay: Option<Dur>,
    /// Server guidance (`Retry-After`, `retry-after-ms`): honor, cap, above_cap.
    #[serde(default)]
    retry_after: Option<RawRetryAfter>,
    /// JSON paths in error bodies that name a code (default: error.code, error.type, code).
    #[serde(default)]
    body_paths: Option<Vec<String>>,
    /// Codes that move to the next route at once.
    #[serde(default)]
    switch_on: Option<Vec<String>>,
    /// Retry create requests with unknown outcome even without an idempotency key (unsafe).
    #[serde(default)]
    retry_creates_without_key: Option<bool>,
}

#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct RawRoute {
    /// Name in scripts (`inject`) and traces (`A1`).
    name: String,
    /// Calls allowed on the route, the first included. Default 3.
    #[serde(default)]
    attempts: Option<u32>,
    /// This route's own backoff; fields not given are the policy's.
    #[serde(default)]
    backoff: Option<RawBackoff>,
}

#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct RawBackoff {
    /// Delay before the first retry. Default 1s.
    #[serde(default)]
    initial: Option<Dur>,
    /// Growth per retry. Default 2.
    #[serde(default)]
    factor: Option<f64>,
    /// Upper bound of a computed delay, before jitter. Default 30s.
    #[serde(default)]
    cap: Option<Dur>,
    /// `none` (default), `full`, `equal` or `decorrelated`.
    #[serde(default)]
    jitter: Option<Jitter>,
}

#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct RawRetryAfter {
    /// Read server guidance at all. Default true.
    #[serde(default)]
    honor: Option<bool>,
    /// Most guidance honored. Default 60s.
    #[serde(default)]
    cap: Option<Dur>,
    /// `clamp` (default) or `refuse` (stop `guidance-refused`).
    #[serde(default)]
    above_cap: Option<AboveCap>,
}

/// The JSON Schema of the reference system's `policy:` block, generated
/// from the serde shape it is parsed with (for `faultmatrix schema`).
pub fn policy_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
    generator.subschema_for::<RawPolicy>()
}

fn err(path: Vec<Seg>, message: String) -> YamlError {
    YamlError {
        pos: None,
        path,
        message,
    }
}

fn key(s: &str) -> Seg {
    Seg::Key(s.to_string())
}

fn child(path: &[Seg], seg: Seg) -> Vec<Seg> {
    let mut p = path.to_vec();
    p.push(seg);
    p
}

/// `base` with the fields `raw` gives; problems go to `errors`.
fn merge_backoff(
    base: &Backoff,
    raw: RawBackoff,
    path: &[Seg],
    errors: &mut Vec<YamlError>,
) -> Backoff {
    let b = Backoff {
        initial: raw.initial.map_or(base.initial, |d| d.0),
        factor: raw.factor.unwrap_or(base.factor),
        cap: raw.cap.map_or(base.cap, |d| d.0),
        jitter: raw.jitter.unwrap_or(base.jitter),
    };
    if !(b.factor.is_finite() && b.factor >= 1.0) {
        errors.push(err(
            child(path, key("factor")),
            format!("`factor` is {}: expected a number of at least 1", b.factor),
        ));
    }
    if b.cap < b.initial {
        errors.push(err(
            child(path, key("cap")),
            format!(
                "`cap` ({}) is below `initial` ({}): every delay would be the cap",
                crate::duration::format(b.cap),
                crate::duration::format(b.initial)
            ),
        ));
    }
    b
}

impl Policy {
    /// Parses policy YAML text (the contents of a `policy:` block), for a
    /// service that keeps its retry configuration in a file. Errors name
    /// the key (`policy.backoff.factor: ...`), one per line.
    pub fn from_yaml_str(text: &str) -> Result<Policy, String> {
        let value = yaml::parse_value(text).map_err(|e| e.message)?;
        Policy::from_value(&value).map_err(|errors| {
            errors
                .iter()
                .map(|e| format!("{}: {}", yaml::path_text(&e.path), e.message))
                .collect::<Vec<_>>()
                .join("\n")
        })
    }

    /// The backoff that applies on a route.
    pub fn backoff_for<'a>(&'a self, route: &'a RouteConfig) -> &'a Backoff {
        route.backoff.as_ref().unwrap_or(&self.backoff)
    }

    /// Parses a `policy:` block (`Value::Null` gives the defaults). Every
    /// problem is reported, each with the path of the key in error.
    pub fn from_value(value: &Value) -> Result<Policy, Vec<YamlError>> {
        let base = vec![key("policy")];
        if value.is_null() {
            return Ok(Policy::default());
        }
        let raw: RawPolicy = yaml::from_value(value, &base).map_err(|e| vec![e])?;
        let d = Policy::default();
        let mut errors = Vec::new();
        let at = |k: &str| child(&base, key(k));
        let backoff = match raw.backoff {
            Some(b) => merge_backoff(&d.backoff, b, &at("backoff"), &mut errors),
            None => d.backoff.clone(),
        };
        let routes = match raw.routes {
            None => d.routes,
            Some(rs) => {
                if rs.is_empty() {
                    errors.push(err(
                        at("routes"),
                        "`routes` is empty: a policy needs at least one route".into(),
                    ));
                }
                let mut out: Vec<RouteConfig> = Vec::new();
                for (i, r) in rs.into_iter().enumerate() {
                    let p = child(&at("routes"), Seg::Index(i));
                    if out.iter().any(|o| o.name == r.name) {
                        errors.push(err(
                            child(&p, key("name")),
                            format!("route `{}` is declared twice", r.name),
                        ));
                    }
                    if r.name.is_empty() || r.name.contains(char::is_whitespace) {
                        errors.push(err(
                            child(&p, key("name")),
                            format!("route name `{}` must be one word", r.name),
                        ));
                    }
                    let attempts = r.attempts.unwrap_or(3);
                    if attempts == 0 {
                        errors.push(err(
                            child(&p, key("attempts")),
                            "`attempts` is 0: it counts the first call, so it is at least 1".into(),
                        ));
                    }
                    let own = r.backoff.map(|b| {
                        merge_backoff(&backoff, b, &child(&p, key("backoff")), &mut errors)
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
        let attempt_timeout = raw.attempt_timeout.map_or(d.attempt_timeout, |d| d.0);
        if attempt_timeout.is_zero() {
            errors.push(err(
                at("attempt_timeout"),
                "`attempt_timeout` is 0: no call could ever complete".into(),
            ));
        }
        let body_paths = raw.body_paths.unwrap_or_default();
        for (i, bp) in body_paths.iter().enumerate() {
            if bp.is_empty() || bp.split('.').any(str::is_empty) {
                errors.push(err(
                    child(&at("body_paths"), Seg::Index(i)),
                    format!("body path `{bp}` is not a dotted path such as `error.code`"),
                ));
            }
        }
        if !errors.is_empty() {
            return Err(errors);
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

    #[test]
    fn route_backoff_inherits_what_it_does_not_set() {
        let p = Policy::from_yaml_str(
            "backoff: {initial: 2s, cap: 20s}\nroutes: [{name: A}, {name: B, backoff: {jitter: full}}]",
        )
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
    fn defaults_hold_when_keys_are_absent() {
        let p = Policy::from_yaml_str("retry_after: {cap: 5s}").unwrap();
        let d = Policy::default();
        assert!(p.retry_after.honor);
        assert_eq!(p.retry_after.above_cap, AboveCap::Clamp);
        assert_eq!(p.retry_after.cap, Duration::from_secs(5));
        assert_eq!(
            (p.switch_delay, p.attempt_timeout),
            (Duration::ZERO, Duration::from_secs(60))
        );
        assert_eq!(p.switch_on, None);
        assert_eq!(p.routes, d.routes);
        assert_eq!(Policy::from_value(&Value::Null).unwrap(), d);
    }

    #[test]
    fn every_problem_is_reported_with_its_key() {
        let e = Policy::from_yaml_str(
            "routes: [{name: A, attempts: 0, backoff: {initial: 9s, cap: 1s}}, {name: A}]\nbackoff: {factor: 0.5}\nattempt_timeout: 0s\nbody_paths: [error..code]",
        )
        .unwrap_err();
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
        let e = Policy::from_yaml_str("backof: {}").unwrap_err();
        assert!(e.contains("backof"), "{e}");
    }

    /// The keys serde accepts at `prefix`, from its "expected one of" list.
    fn accepted(yaml: &str) -> Vec<String> {
        let e = Policy::from_yaml_str(yaml).unwrap_err();
        let list = e.split_once("expected one of").expect(&e).1;
        list.split('`')
            .skip(1)
            .step_by(2)
            .map(str::to_string)
            .collect()
    }

    #[test]
    fn docs_describe_every_policy_key() {
        let docs = include_str!("../../docs/configuration.md");
        let start = docs.find("## The `policy:` block").unwrap();
        let end = docs.find("## What happens after each attempt").unwrap();
        let documented: Vec<&str> = docs[start..end]
            .lines()
            .filter_map(|l| l.strip_prefix("| `"))
            .filter_map(|l| l.split_once('`').map(|(k, _)| k))
            .collect();
        let mut keys = Vec::new();
        for k in accepted("zzz: 1") {
            keys.push(k);
        }
        for k in accepted("backoff: {zzz: 1}") {
            keys.push(format!("backoff.{k}"));
        }
        for k in accepted("retry_after: {zzz: 1}") {
            keys.push(format!("retry_after.{k}"));
        }
        for k in accepted("routes: [{name: A, zzz: 1}]") {
            keys.push(format!("routes[].{k}"));
        }
        assert!(keys.len() > 15, "{keys:?}");
        for k in &keys {
            // A nested map is documented through its fields.
            let covered = documented.contains(&k.as_str())
                || documented.iter().any(|d| d.starts_with(&format!("{k}.")));
            assert!(covered, "docs/configuration.md does not describe `{k}`");
        }
        for d in documented.iter().filter(|d| !d.starts_with("request.")) {
            if ["deadline", "jitter", "jitter_seed"].contains(d) || keys.iter().any(|k| k == d) {
                continue;
            }
            panic!("docs/configuration.md describes `{d}`, which the policy does not accept");
        }
    }
}
