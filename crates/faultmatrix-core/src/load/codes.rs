//! `codes:` (per file or per row): one registry code's `max_attempts` set
//! in the matrix, without a registry file of its own:
//!
//! ```yaml
//! codes: { UPSTREAM_UNAVAILABLE: { max_attempts: 5 } }
//! ```
//!
//! A route gets the lower of its `attempts` and the answering code's
//! `max_attempts`; this raises (or lowers) the code's for the file's rows,
//! or for one row (a row's `codes` apply after the file's). The registry
//! file itself is unchanged, and so are the tests it generates.

use std::collections::BTreeMap;

use serde::Deserialize;

use super::ctx::{child, dyn_key, key, Ctx};
use crate::base::diag::did_you_mean;
use crate::base::yaml::Seg;
use crate::model::registry::{CodeLimit, Registry};

/// One code's limits as written.
#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct RawCodeLimit {
    /// Calls a route gets for this code's answers, the first call
    /// included (the lower of this and the route's `attempts` applies).
    pub max_attempts: u32,
}

/// `codes:` as written: a registry code to its limits.
pub type RawCodes = BTreeMap<String, RawCodeLimit>;

/// Validates `codes` at `path` against the registry: every name a code of
/// it, every code retryable, every `max_attempts` at least 1.
pub(crate) fn validate(
    cx: &mut Ctx<'_>,
    raw: &RawCodes,
    path: &[Seg],
    registry: &Registry,
) -> Vec<CodeLimit> {
    let mut out = Vec::new();
    for (name, limit) in raw {
        let at = child(path, dyn_key(name));
        let Some(code) = registry.get(name) else {
            let pos = cx.key_pos(&at);
            cx.error_at(
                pos,
                format!("unknown code `{name}` in `codes`"),
                Some(format!(
                    "a code of the registry ({}), such as {}",
                    registry.origin,
                    registry.names().take(3).collect::<Vec<_>>().join(", ")
                )),
                did_you_mean(name, registry.names()),
            );
            continue;
        };
        let value = child(&at, key("max_attempts"));
        if !code.def.retryable {
            let pos = cx.key_pos(&at);
            cx.error_at(
                pos,
                format!("`{name}` is a terminal code: it is called exactly once and has no `max_attempts`"),
                Some("only a retryable code's limit can be set".into()),
                None,
            );
            continue;
        }
        if limit.max_attempts == 0 {
            cx.error(
                &value,
                "`max_attempts` is 0: it counts the first call, so it is at least 1",
            );
            continue;
        }
        out.push(CodeLimit {
            code: name.clone(),
            max_attempts: limit.max_attempts,
            path: value,
        });
    }
    out
}
