//! One row: its name, settings, `inject` (or tape) and expectations.

use std::path::Path;
use std::sync::Arc;

use super::ctx::{child, dyn_key, key, Ctx};
use super::entries::script_entries;
use super::expect::validate_expect;
use super::raw::RawRow;
use super::settings::{apply, Overrides};
use crate::base::confine;
use crate::base::diag::did_you_mean;
use crate::base::yaml::{Seg, Value};
use crate::model::registry::Registry;
use crate::model::{RouteScript, Row, Script, Settings};

/// Where a row's tape is read from: the matrix file's folder, the file's
/// tape settings, and the run's working directory (for display).
pub(crate) struct TapePlace<'a> {
    pub(crate) dir: Option<&'a Path>,
    pub(crate) config: &'a Arc<crate::model::tape::TapeConfig>,
    pub(crate) cwd: &'a Path,
    /// The root every path stays inside (canonical).
    pub(crate) root: &'a Path,
    /// The matrix file itself, when loaded from one.
    pub(crate) matrix: Option<&'a Path>,
}

/// A row's `tape:` and `record:` keys (see `crate::load::tape`).
pub(crate) fn row_tape(
    cx: &mut Ctx<'_>,
    tape: Option<String>,
    record: Option<Value>,
    has_inject: bool,
    path: &[Seg],
    place: &TapePlace<'_>,
) -> Option<crate::model::tape::TapeRow> {
    let (dir, config, cwd) = (place.dir, place.config, place.cwd);
    let Some(tape) = tape else {
        if record.is_some() {
            let pos = cx.key_pos(&child(path, key("record")));
            cx.error_at(
                pos,
                "`record` without `tape`: only a tape is recorded",
                Some("add `tape: tapes/NAME.yaml` (relative to this file)".into()),
                None,
            );
        }
        return None;
    };
    if has_inject {
        let pos = cx.key_pos(&child(path, key("tape")));
        cx.error_at(
            pos,
            "a row takes its script from `inject` or from `tape`, not both",
            Some("remove `inject`: the tape holds the answers".into()),
            None,
        );
        return None;
    }
    match crate::load::tape::parse_row(&tape, record.as_ref(), path, dir, config, cwd) {
        Ok(mut t) => {
            let here = dir.unwrap_or(Path::new(""));
            let at = child(path, key("tape"));
            match confine::resolve(place.root, here, &tape, confine::Want::File) {
                Ok(resolved) => {
                    let own = place
                        .matrix
                        .and_then(|m| std::fs::canonicalize(m).ok())
                        .is_some_and(|m| m == resolved);
                    if own {
                        cx.error(
                            &at,
                            format!(
                                "`tape: {tape}` is this matrix file: a tape is a file of its own"
                            ),
                        );
                        return None;
                    }
                    t.path = resolved;
                    t.root = place.root.to_path_buf();
                    Some(t)
                }
                Err(why) => {
                    cx.error(&at, format!("tape {why}"));
                    None
                }
            }
        }
        Err(errors) => {
            for e in errors {
                cx.yaml_error(e);
            }
            None
        }
    }
}

/// The longest row name, in characters (a row name is a test name; test
/// printers choke on names of 64 KiB).
pub const MAX_ROW_NAME_CHARS: usize = 1000;

pub(crate) fn validate_row(
    cx: &mut Ctx<'_>,
    rr: RawRow,
    path: Vec<Seg>,
    base: &Settings,
    routes: Option<&[String]>,
    registry: &Registry,
    check_stops: bool,
) -> Option<Row> {
    let before = cx.diags.len();
    if rr.name.trim().is_empty() {
        cx.error(&child(&path, key("name")), "row name is empty");
    }
    let chars = rr.name.chars().count();
    if chars > MAX_ROW_NAME_CHARS {
        cx.error(
            &child(&path, key("name")),
            format!("row name is {chars} characters long: the limit is {MAX_ROW_NAME_CHARS} (it names a test)"),
        );
    }
    if rr.name.contains("::") {
        cx.error(
            &child(&path, key("name")),
            "row name contains `::`, which separates file and row in test ids",
        );
    }
    let mut settings = base.clone();
    apply(
        cx,
        &mut settings,
        &path,
        Overrides {
            deadline: rr.deadline.map(|d| d.0),
            jitter: rr.jitter.as_deref(),
            jitter_seed: rr.jitter_seed,
            request: rr.request.as_ref(),
            horizon: rr.horizon.map(|d| d.0),
            budget: rr.budget.map(|d| d.0),
            max_calls: rr.max_calls,
            tolerance: rr.tolerance.as_ref(),
        },
    );

    // inject
    let inject_path = child(&path, key("inject"));
    let mut inject = Vec::new();
    if let Some(map) = &rr.inject {
        for (k, v) in map {
            let Some(route) = k.as_str() else {
                cx.error(
                    &inject_path,
                    "route names in `inject` are words such as `A`",
                );
                continue;
            };
            let rpath = child(&inject_path, dyn_key(route));
            let (route, side) = crate::model::split_key(route);
            if let Some((method, target)) = side {
                if let Err(why) = check_side_key(method, target) {
                    let pos = cx.key_pos(&rpath);
                    cx.error_at(
                        pos,
                        format!("bad keyed script `{}` in `inject`: {why}", k.as_str().unwrap_or_default()),
                        Some(
                            "a keyed script is written `ROUTE METHOD /path`, e.g. `A GET /v1/models`"
                                .into(),
                        ),
                        None,
                    );
                    continue;
                }
            }
            if let Some(known) = routes {
                if !known.iter().any(|r| r == route) {
                    let pos = cx.key_pos(&rpath);
                    cx.error_at(
                        pos,
                        format!("unknown route `{route}` in `inject`"),
                        Some(format!("the policy declares: {}", known.join(", "))),
                        did_you_mean(route, known.iter().map(String::as_str)),
                    );
                    continue;
                }
            }
            let entries = script_entries(cx, v, &rpath, registry);
            inject.push(RouteScript {
                route: match side {
                    Some((m, t)) => crate::model::side_key(route, m, t),
                    None => route.to_string(),
                },
                entries,
            });
        }
    }

    let trace_routes: std::borrow::Cow<'_, [String]> = match routes {
        Some(r) => r.into(),
        None => {
            let mut r: Vec<String> = Vec::new();
            for s in &inject {
                let route = s.key().0.to_string();
                if !r.contains(&route) {
                    r.push(route);
                }
            }
            r.into()
        }
    };
    let expect = validate_expect(
        cx,
        &rr.expect,
        child(&path, key("expect")),
        &trace_routes,
        registry,
        check_stops,
    );

    if cx.diags.len() > before {
        return None;
    }
    Some(Row {
        name: rr.name,
        path,
        ignore: rr.ignore.0,
        tags: rr.tags,
        script: Script::Inject(inject),
        settings,
        expect,
    })
}

/// Methods a keyed script may name.
const METHODS: &[&str] = &["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"];

/// Checks the method and path of a keyed script (`A GET /v1/models`).
fn check_side_key(method: &str, path: &str) -> Result<(), String> {
    if !METHODS.contains(&method) {
        return Err(format!(
            "`{method}` is not a method; expected one of {}",
            METHODS.join(", ")
        ));
    }
    if !path.starts_with('/') {
        return Err(format!("the path `{path}` must start with `/`"));
    }
    if path.contains([' ', '?', '#']) {
        return Err(format!(
            "the path `{path}` must be one path without spaces or a query (calls are matched on the path alone)"
        ));
    }
    Ok(())
}
