//! Reading `system: { command: [...] }`: a command system's block, checked
//! into a [`CommandSpec`].

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::base::yaml::{self, Seg, Value, YamlError};
use crate::load::raw::Dur;
use crate::model::command::{Clock, CommandSpec, DEFAULT_TIMEOUT};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCommand {
    command: Vec<String>,
    #[serde(default)]
    env: Option<std::collections::BTreeMap<String, String>>,
    #[serde(default)]
    cwd: Option<String>,
    #[serde(default)]
    timeout: Option<Dur>,
    #[serde(default)]
    routes: Option<Vec<String>>,
    #[serde(default)]
    clock: Option<String>,
    #[serde(default)]
    warm: Option<bool>,
}

/// Parses a `system: { command: ... }` block; `dir` is the matrix file's
/// directory (the default working directory).
pub fn parse_system(value: &Value, dir: Option<&Path>) -> Result<CommandSpec, Vec<YamlError>> {
    let base = [Seg::Key("system".into())];
    let raw: RawCommand = yaml::from_value(value, &base).map_err(|e| vec![e])?;
    let mut errors = Vec::new();
    if raw.command.is_empty() || raw.command[0].trim().is_empty() {
        errors.push(YamlError {
            pos: None,
            path: vec![Seg::Key("system".into()), Seg::Key("command".into())],
            message: "`command` is the program and its arguments, such as [python3, client.py]"
                .into(),
        });
    }
    let timeout = raw.timeout.map_or(DEFAULT_TIMEOUT, |d| d.0);
    if timeout.is_zero() {
        errors.push(YamlError {
            pos: None,
            path: vec![Seg::Key("system".into()), Seg::Key("timeout".into())],
            message: "`timeout` is 0: the command could not run at all".into(),
        });
    }
    let clock = match raw.clock.as_deref() {
        None => Clock::default_for(raw.command.first().map_or("", String::as_str)),
        Some("virtual") => Clock::Virtual,
        Some("real") => Clock::Real,
        Some(other) => {
            errors.push(YamlError {
                pos: None,
                path: vec![Seg::Key("system".into()), Seg::Key("clock".into())],
                message: format!(
                    "`{other}` is not a clock: write `virtual` (the row's clock, shared with a Python or Node client through its shim) or `real`"
                ),
            });
            Clock::Real
        }
    };
    if !errors.is_empty() {
        return Err(errors);
    }
    let cwd = match (raw.cwd, dir) {
        (Some(c), Some(d)) => Some(d.join(c)),
        (Some(c), None) => Some(PathBuf::from(c)),
        (None, Some(d)) if !d.as_os_str().is_empty() => Some(d.to_path_buf()),
        (None, _) => None,
    };
    let warm = clock == Clock::Virtual
        && raw.warm.unwrap_or_else(|| {
            crate::model::command::is_python(&raw.command[0])
                || crate::model::command::is_node(&raw.command[0])
        });
    Ok(CommandSpec {
        argv: raw.command,
        env: raw.env.unwrap_or_default().into_iter().collect(),
        cwd,
        timeout,
        routes: raw.routes,
        clock,
        warm,
    })
}
