//! The reference retry/fallback system: the default system under test
//! (`system: reference`), a [`Controller`] from the
//! [`faultmatrix_controller`] crate run once per row, and its `policy:`
//! block read from a matrix with positioned diagnostics.
//!
//! A production service depends on `faultmatrix-controller` directly (serde
//! and tokio's `time` feature, nothing else); everything here re-exports
//! it, so `faultmatrix::policy::Controller` and
//! `faultmatrix_controller::Controller` are the same type.
//!
//! | piece | what it holds |
//! |---|---|
//! | [`Policy`] ([`config`]) | routes and budgets, backoff, deadline, timeouts, guidance, classification knobs |
//! | [`Controller`] ([`controller`]) | the decision loop: retry, switch, stop, escalate |
//! | [`Invocation`] | one logical request: transport, request, id, deadline, jitter, sinks |
//! | [`backoff`] | `initial * factor^retry`, capped, jitter none / full / equal / decorrelated |
//! | [`retry_after`] | `Retry-After` (seconds, three HTTP-date forms) and `retry-after-ms` |
//! | [`from_yaml_str`], [`from_value`] | a `policy:` block as YAML |
//!
//! Every configuration key, its default and meaning: `docs/configuration.md`.
//!

use std::sync::Arc;

pub use faultmatrix_controller::policy::{backoff, config, controller, retry_after};
pub use faultmatrix_controller::{
    AboveCap, Backoff, Codes, ConfigError, Controller, Invocation, Jitter, OutputSink, Policy,
    PolicyConfig, RetryAfter, RouteConfig, MAX_FIELD_LEN,
};

use crate::base::yaml::{self, Seg, Value, YamlError};
use crate::contracts::system::{RowContext, System, SystemResult};
use crate::contracts::transport::BoxFuture;
use crate::load::built::Built;
use crate::model::registry::Registry;

/// The reference system: a [`Controller`] run once per row.
pub struct Reference {
    controller: Controller,
}

impl Reference {
    /// The system for this controller (register variants of it in
    /// [`Systems`](crate::load::systems::Systems) to compare policies).
    pub fn new(controller: Controller) -> Self {
        Self { controller }
    }

    /// The controller.
    pub fn controller(&self) -> &Controller {
        &self.controller
    }
}

impl System for Reference {
    fn run(&self, ctx: RowContext) -> BoxFuture<'_, SystemResult> {
        Box::pin(async move {
            let inv = Invocation::new(ctx.transport.as_ref(), &ctx.request, &ctx.request_id)
                .deadline_opt(ctx.deadline)
                .jitter(ctx.jitter.clone())
                .escalations(ctx.escalations.clone())
                .wall_start(ctx.wall_start);
            self.controller.execute(inv).await
        })
    }
}

fn key_path(e: &ConfigError) -> Vec<Seg> {
    let mut path = vec![Seg::Key("policy".into())];
    for seg in &e.path {
        path.push(match seg {
            config::KeySeg::Key(k) => Seg::Key(crate::base::yaml::Key::lit(k)),
            config::KeySeg::Index(i) => Seg::Index(*i),
        });
    }
    path
}

/// Parses a `policy:` block (`Value::Null` gives the defaults). Every
/// problem is reported, each with the path of the key in error.
pub fn from_value(value: &Value) -> Result<Policy, Vec<YamlError>> {
    if value.is_null() {
        return Ok(Policy::default());
    }
    let raw: PolicyConfig =
        yaml::from_value(value, &[Seg::Key("policy".into())]).map_err(|e| vec![e])?;
    raw.validate().map_err(|errors| {
        errors
            .0
            .iter()
            .map(|e| YamlError {
                pos: None,
                path: key_path(e),
                message: e.message.clone(),
            })
            .collect()
    })
}

/// Parses policy YAML text (the contents of a `policy:` block), for a
/// service that keeps its retry configuration in a file. Errors name the
/// key (`policy.backoff.factor: ...`), one per line.
pub fn from_yaml_str(text: &str) -> Result<Policy, String> {
    let value = yaml::parse_value(text).map_err(|e| e.message)?;
    from_value(&value).map_err(|errors| {
        errors
            .iter()
            .map(|e| format!("{}: {}", yaml::path_text(&e.path), e.message))
            .collect::<Vec<_>>()
            .join("\n")
    })
}

/// Checks the policy's code names against the registry.
fn check_codes(policy: &Policy, registry: &Registry) -> Vec<YamlError> {
    let mut errors = Vec::new();
    for (i, code) in policy.switch_on.iter().flatten().enumerate() {
        if registry.get(code).is_none() {
            let hint = crate::base::diag::hint_suffix(code, registry.names());
            errors.push(YamlError {
                pos: None,
                path: vec![
                    Seg::Key("policy".into()),
                    Seg::Key("switch_on".into()),
                    Seg::Index(i),
                ],
                message: format!(
                    "unknown reason code `{code}`: codes come from the registry ({}){hint}",
                    registry.origin
                ),
            });
        }
    }
    errors
}

/// Factory for the `reference` system: parses the `policy:` block.
pub fn build_reference(policy: &Value, registry: &Arc<Registry>) -> Result<Built, Vec<YamlError>> {
    let policy = from_value(policy)?;
    let errors = check_codes(&policy, registry);
    if !errors.is_empty() {
        return Err(errors);
    }
    let routes = policy.routes.iter().map(|r| r.name.clone()).collect();
    let body_paths = policy.body_paths.clone();
    let deadline = policy.deadline;
    Ok(Built {
        body_paths,
        system: Arc::new(Reference::new(Controller::new(
            policy,
            registry.table.clone(),
        ))),
        routes: Some(routes),
        deadline,
    })
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::load::load_text;
    use crate::load::systems::Systems;

    fn errors(policy: &str) -> String {
        let text = format!(
            "title: t\npolicy:\n{policy}\nrows:\n  - name: r\n    inject: {{ A: [200] }}\n    expect: {{ stop: success }}\n"
        );
        match load_text("m.yaml", &text, None, &Systems::new()) {
            Ok(_) => String::new(),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn policy_problems_are_diagnostics_with_positions() {
        let e = errors("  routes: [{ name: A }]\n  switch_on: [MODEL_UNAVAILBLE]");
        assert!(e.contains("unknown reason code `MODEL_UNAVAILBLE`"), "{e}");
        assert!(e.contains("did you mean `MODEL_UNAVAILABLE`"), "{e}");
        assert!(e.contains("m.yaml:4:"), "{e}");
        let e = errors("  routes: [{ name: A, backoff: { jitter: ful } }]");
        assert!(e.contains("unknown value `ful`"), "{e}");
        assert!(e.contains("did you mean `full`"), "{e}");
        let e = errors("  routes: [{ name: A }]\n  retry_after: { above_cap: refuze }");
        assert!(e.contains("did you mean `refuse`"), "{e}");
        assert_eq!(errors("  routes: [{ name: A }]\n  switch_on: []"), "");
    }

    #[test]
    fn route_backoff_inherits_what_it_does_not_set() {
        let p = from_yaml_str(
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
        let p = from_yaml_str("retry_after: {cap: 5s}").unwrap();
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
        assert_eq!(from_value(&Value::Null).unwrap(), d);
    }

    #[test]
    fn every_problem_is_reported_with_its_key() {
        let e = from_yaml_str(
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
        let e = from_yaml_str("backof: {}").unwrap_err();
        assert!(e.contains("backof"), "{e}");
    }
}
