//! Registry files: `version`, `codes` and `fixtures` into a [`Registry`],
//! every error reported with its position; the built-in registry.

use std::collections::HashSet;
use std::sync::{Arc, OnceLock};

use super::ctx::{child, dyn_key, key, syntax_error, Ctx};
use super::entries::{check_status, entry_from_raw};
use super::raw::RawEntry;
use crate::base::diag::FileErrors;
use crate::base::yaml::{self, Pos, Seg, Value};
use crate::model::registry::{Code, CodeDef, Codes, Fixture, Registry, StatusMatch};

/// The built-in fixtures' readable form: the built-in registry's `source`,
/// where its fixtures' lines are read.
const BUILTIN_TEXT: &str = include_str!("../model/builtin-fixtures.yaml");

/// The built-in registry: the controller's built-in codes
/// ([`Codes::builtin`]) with their fixtures, built from the table in
/// [`super::builtin`] (`src/model/builtin-fixtures.yaml` is its readable
/// form, held equal to it by a test).
pub fn builtin() -> Arc<Registry> {
    static BUILTIN: OnceLock<Arc<Registry>> = OnceLock::new();
    BUILTIN
        .get_or_init(|| Arc::new(builtin_from_table()))
        .clone()
}

/// [`builtin`] without parsing YAML: the codes are the controller's (its
/// lookup table shared, not rebuilt), the fixtures and their lines the
/// table's.
fn builtin_from_table() -> Registry {
    let table = Codes::builtin();
    let mut codes = bare_codes(&table);
    for (name, line, entry, recovers_after) in super::builtin::fixtures() {
        let Some(code) = codes.iter_mut().find(|c| c.name == name) else {
            panic!("the built-in fixture `{name}` names no built-in code");
        };
        code.fixture = Some(Fixture {
            entry,
            recovers_after,
            line,
            inline: false,
        });
    }
    Registry {
        codes,
        origin: table.origin.clone(),
        table,
        source: Some(Arc::from(BUILTIN_TEXT)),
        ..Registry::default()
    }
}

/// Registry codes for given definitions (each says whether it is
/// retryable), with no line and no fixture yet.
fn bare_codes(codes: &Codes) -> Vec<Code> {
    codes
        .codes
        .iter()
        .map(|def| Code {
            def: def.clone(),
            retryable_declared: true,
            line: 0,
            fixture: None,
        })
        .collect()
}

#[derive(serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub(crate) struct RawRegistry {
    /// Format version: 1.
    version: u32,
    /// Heads the review table (`faultmatrix codes`).
    #[serde(default)]
    title: Option<String>,
    /// Every reason code, by name (RATE_LIMITED).
    #[cfg_attr(
        feature = "schema",
        schemars(with = "std::collections::BTreeMap<String, RawCode>")
    )]
    codes: serde_yaml::Mapping,
    /// Fixtures keyed by code, when not written inline under the code.
    #[serde(default)]
    #[cfg_attr(
        feature = "schema",
        schemars(with = "Option<std::collections::BTreeMap<String, RawEntry>>")
    )]
    fixtures: Option<serde_yaml::Mapping>,
}

#[derive(serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub(crate) struct RawCode {
    /// Whether a failure with this code may be retried (a guardrail names codes without it).
    #[serde(default)]
    retryable: Option<bool>,
    /// Move to the next route at once instead of retrying this one.
    #[serde(default)]
    switch: Option<bool>,
    /// Retryable codes: calls on a route, the first included.
    #[serde(default)]
    max_attempts: Option<u32>,
    /// Who is told when a run fails with this code.
    #[serde(default)]
    escalate_to: Option<String>,
    /// How answers map to this code: `status` (429, 5xx), error-body values, `outcome`.
    #[serde(default, rename = "match")]
    matches: Option<RawMatch>,
    /// What the real upstream returns for this code (status, headers, body, recovers_after).
    #[serde(default)]
    #[cfg_attr(feature = "schema", schemars(with = "Option<RawEntry>"))]
    fixture: Option<Value>,
}

#[derive(serde::Deserialize, Default)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub(crate) struct RawMatch {
    /// Exact statuses, or classes such as 5xx.
    #[serde(default)]
    #[cfg_attr(
        feature = "schema",
        schemars(with = "Vec<crate::load::raw::StatusMatchSchema>")
    )]
    status: Vec<Value>,
    /// Error-body values (`error.code`, `error.type`) that mean this code.
    #[serde(default)]
    body: Vec<String>,
    /// `timeout`, `reset`, `malformed` or `broken`.
    #[serde(default)]
    outcome: Option<String>,
}

/// Validates registry text into a [`Registry`].
///
/// Schema errors (unknown keys, bad statuses, a fixture given twice, a
/// terminal code configured to recover) fail the load. Omissions that the
/// guardrails report by name (a code without `retryable`, `max_attempts`,
/// `escalate_to` or a fixture; a fixture naming no code) do not: the
/// registry loads and [`crate::engine::guardrails`] lists them.
pub fn registry_from_text(display: &str, text: &str) -> Result<Registry, FileErrors> {
    let mut cx = Ctx::new(display, text);
    let reg = registry_inner(&mut cx, text, display);
    cx.finish(reg)
}

/// A fixture and where its `recovers_after` is written (a path: its
/// position is found only when an error needs it).
fn registry_fixture(
    cx: &mut Ctx<'_>,
    name: &str,
    value: &Value,
    fp: &[Seg],
    empty: &Registry,
) -> Option<(Fixture, Option<Vec<Seg>>)> {
    let re = match yaml::from_value::<RawEntry>(value, fp) {
        Err(e) => {
            cx.yaml_error(e);
            return None;
        }
        Ok(re) => re,
    };
    fixture_from_raw(cx, name, &re, fp, empty, None)
}

/// [`registry_fixture`] once the fixture is deserialized. `line`: the
/// fixture's line when the caller knows it ([`plain_keys`]), else it is
/// looked up.
fn fixture_from_raw(
    cx: &mut Ctx<'_>,
    name: &str,
    re: &RawEntry,
    fp: &[Seg],
    empty: &Registry,
    line: Option<usize>,
) -> Option<(Fixture, Option<Vec<Seg>>)> {
    if re.repeat.is_some() {
        cx.error(
            &child(fp, key("repeat")),
            "a fixture does not repeat: use `recovers_after`",
        );
    }
    let recovers_pos = match re.recovers_after {
        Some(0) => {
            cx.error(
                &child(fp, key("recovers_after")),
                "`recovers_after` is 0: it counts the failing calls before the code recovers, so it is at least 1",
            );
            None
        }
        Some(_) => Some(child(fp, key("recovers_after"))),
        None => None,
    };
    let line = match line {
        Some(l) => l,
        None => cx.key_pos(fp).line,
    };
    let mut e = entry_from_raw(cx, re, fp, empty, true)?;
    e.label = name.to_string();
    Some((
        Fixture {
            entry: e,
            recovers_after: re.recovers_after,
            line,
            inline: true,
        },
        recovers_pos,
    ))
}

fn registry_inner(cx: &mut Ctx<'_>, text: &str, display: &str) -> Option<Registry> {
    let value = match yaml::parse_value(text) {
        Ok(v) => v,
        Err(e) => {
            syntax_error(cx, e);
            return None;
        }
    };
    let raw: RawRegistry = match yaml::from_value(&value, &[]) {
        Ok(r) => r,
        Err(e) => {
            cx.yaml_error(e);
            return None;
        }
    };
    if raw.version != 1 {
        cx.error(
            &[key("version")],
            format!(
                "registry version {} is not supported: expected 1",
                raw.version
            ),
        );
    }
    let empty = Registry::new(Vec::new(), display);
    let mut codes: Vec<Code> = Vec::new();
    // Where each code's `recovers_after` is written, for the terminal check.
    let mut recovers_at: Vec<Option<Vec<Seg>>> = Vec::new();
    let mut seen = HashSet::new();
    for (k, v) in &raw.codes {
        let Some(name) = k.as_str() else {
            cx.error(&[key("codes")], "code names are words such as RATE_LIMITED");
            continue;
        };
        let path = vec![key("codes"), dyn_key(name)];
        if !seen.insert(name.to_string()) {
            cx.error(&path, format!("code `{name}` is declared twice"));
        }
        if v.is_null() {
            // `CODE:` with nothing under it: loads, and every guardrail
            // names it.
        } else if !v.is_mapping() {
            cx.error(
                &path,
                format!("code `{name}` is a mapping with `retryable`, `max_attempts`, `escalate_to`, `match` and `fixture`"),
            );
            continue;
        }
        let rc: RawCode = if v.is_null() {
            RawCode {
                retryable: None,
                switch: None,
                max_attempts: None,
                escalate_to: None,
                matches: None,
                fixture: None,
            }
        } else {
            let (rc, errors) = super::recover::from_value_all(v, &path);
            for e in errors {
                cx.yaml_error(e);
            }
            match rc {
                Some(r) => r,
                None => continue,
            }
        };
        let line = cx.key_pos(&path).line;
        let retryable = rc.retryable.unwrap_or(false);
        if rc.retryable == Some(false) {
            if let Some(n) = rc.max_attempts {
                let pos = cx.key_pos(&child(&path, key("max_attempts")));
                cx.error_at(
                    pos,
                    format!("terminal code `{name}` declares `max_attempts: {n}`"),
                    Some("a terminal code is called exactly once: remove `max_attempts`, or make the code retryable".into()),
                    None,
                );
            }
        }
        if rc.max_attempts == Some(0) {
            cx.error(
                &child(&path, key("max_attempts")),
                "`max_attempts` is 0: it counts the first call, so it is at least 1",
            );
        }
        let m = rc.matches.unwrap_or_default();
        let mut statuses = Vec::new();
        for (i, s) in m.status.iter().enumerate() {
            let sp = child(
                &child(&child(&path, key("match")), key("status")),
                Seg::Index(i),
            );
            match s {
                Value::Number(n) => {
                    if let Some(st) = check_status(cx, &sp, n.as_i64().unwrap_or(-1)) {
                        statuses.push(StatusMatch::Exact(st));
                    }
                }
                Value::String(s)
                    if s.len() == 3 && s.ends_with("xx") && s.as_bytes()[0].is_ascii_digit() =>
                {
                    statuses.push(StatusMatch::Class((s.as_bytes()[0] - b'0') as u16));
                }
                _ => cx.error(
                    &sp,
                    "a status match is a status such as 429 or a class such as 5xx",
                ),
            }
        }
        if let Some(o) = &m.outcome {
            if !["timeout", "reset", "refused", "malformed", "broken"].contains(&o.as_str()) {
                cx.error(
                    &child(&child(&path, key("match")), key("outcome")),
                    format!("unknown outcome `{o}`: expected timeout, reset, refused, malformed or broken"),
                );
            }
        }
        let (fixture, rpos) = match &rc.fixture {
            None => (None, None),
            Some(fv) => {
                let fp = child(&path, key("fixture"));
                match registry_fixture(cx, name, fv, &fp, &empty) {
                    Some((f, rp)) => (Some(f), rp),
                    None => (None, None),
                }
            }
        };
        recovers_at.push(rpos);
        codes.push(Code {
            def: CodeDef {
                name: name.to_string(),
                retryable,
                switch: rc.switch.unwrap_or(false),
                max_attempts: rc.max_attempts,
                escalate_to: rc.escalate_to,
                statuses,
                body: m.body,
                outcome: m.outcome,
            },
            retryable_declared: rc.retryable.is_some(),
            line,
            fixture,
        });
    }

    let stray_fixtures = match &raw.fixtures {
        Some(f) => fixtures_section(cx, f, &mut codes, &mut recovers_at, &empty),
        None => Vec::new(),
    };

    // A terminal code never recovers.
    for (c, rpos) in codes.iter().zip(&recovers_at) {
        let recovers = c.fixture.as_ref().and_then(|f| f.recovers_after);
        if let (Some(n), Some(path), true) = (recovers, rpos, c.retryable_declared && !c.retryable)
        {
            let pos = cx.key_pos(path);
            cx.error_at(
                pos,
                format!(
                    "terminal code `{}` is configured to recover after {n} failing call{}",
                    c.name,
                    if n == 1 { "" } else { "s" }
                ),
                Some("a terminal code never succeeds on a later attempt: remove `recovers_after`, or make the code retryable".into()),
                None,
            );
        }
    }
    let mut reg = Registry::new(codes, display);
    reg.title = raw.title;
    reg.stray_fixtures = stray_fixtures;
    reg.source = Some(Arc::from(text));
    Some(reg)
}

/// The `fixtures:` section, keyed by code: each fixture joins its code;
/// fixtures naming no code are returned as strays.
fn fixtures_section(
    cx: &mut Ctx<'_>,
    fixtures: &serde_yaml::Mapping,
    codes: &mut [Code],
    recovers_at: &mut [Option<Vec<Seg>>],
    empty: &Registry,
) -> Vec<crate::model::registry::StrayFixture> {
    let mut parsed = Vec::with_capacity(fixtures.len());
    for (k, v) in fixtures {
        let Some(name) = k.as_str() else {
            cx.error(
                &[key("fixtures")],
                "fixtures are keyed by code name, such as RATE_LIMITED",
            );
            continue;
        };
        let fp = vec![key("fixtures"), dyn_key(name)];
        if let Some(f) = registry_fixture(cx, name, v, &fp, empty) {
            parsed.push((name, fp, f));
        }
    }
    join_fixtures(cx, parsed, codes, recovers_at)
}

/// Fixtures as read: each with its name, its path and where its
/// `recovers_after` is written.
type Parsed<'n> = Vec<(&'n str, Vec<Seg>, (Fixture, Option<Vec<Seg>>))>;

/// Each fixture of the `fixtures:` section joins its code; fixtures naming
/// no code are returned as strays.
fn join_fixtures(
    cx: &mut Ctx<'_>,
    parsed: Parsed<'_>,
    codes: &mut [Code],
    recovers_at: &mut [Option<Vec<Seg>>],
) -> Vec<crate::model::registry::StrayFixture> {
    let mut stray_fixtures = Vec::new();
    for (name, fp, (mut f, rpos)) in parsed {
        f.inline = false;
        match codes.iter().position(|c| c.name == name) {
            None => stray_fixtures.push(crate::model::registry::StrayFixture {
                name: name.to_string(),
                line: f.line,
            }),
            Some(i) => {
                if let Some(first) = &codes[i].fixture {
                    let pos = cx.key_pos(&fp);
                    cx.error_at(
                        pos,
                        format!("code `{name}` has two fixtures"),
                        Some(format!("the other is on line {}: keep one", first.line)),
                        None,
                    );
                    continue;
                }
                codes[i].fixture = Some(f);
                recovers_at[i] = rpos;
            }
        }
    }
    stray_fixtures
}

/// A fixtures text ([`builtin_registry`]), deserialized straight into
/// entries, with no intermediate YAML tree.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFixtures {
    version: u32,
    fixtures: Ordered,
}

/// A mapping of fixtures by code name, in the text's order.
struct Ordered(Vec<(String, RawEntry)>);

impl<'de> serde::Deserialize<'de> for Ordered {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Ordered;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("fixtures keyed by code name")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut m: A,
            ) -> Result<Ordered, A::Error> {
                let mut out = Vec::new();
                while let Some(entry) = m.next_entry::<String, RawEntry>()? {
                    out.push(entry);
                }
                Ok(Ordered(out))
            }
        }
        d.deserialize_map(V)
    }
}

/// The lines (1-based) of the keys directly under the top-level key
/// `section` of a block-style document, when every one of them is a plain
/// word written `  NAME:` at the section's first indentation; `None` when
/// the section is missing or written any other way (the caller then asks
/// the position index). Keys written twice are left out, so their lines
/// come from the index.
fn plain_keys<'t>(
    text: &'t str,
    section: &str,
) -> Option<std::collections::HashMap<&'t str, usize>> {
    let mut lines = text.lines().enumerate();
    let head = format!("{section}:");
    lines.find(|(_, l)| strip_comment(l) == head)?;
    let mut found: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    let mut twice = Vec::new();
    let mut indent = None;
    for (i, l) in lines {
        let body = strip_comment(l);
        if body.is_empty() {
            continue;
        }
        let lead = l.len() - l.trim_start_matches(' ').len();
        if lead == 0 {
            break;
        }
        if l[lead..].starts_with('\t') {
            return None;
        }
        let indent = *indent.get_or_insert(lead);
        if lead < indent {
            return None;
        }
        if lead > indent {
            continue;
        }
        let rest = &body[lead..];
        let name = rest.strip_suffix(':').or_else(|| {
            let (k, v) = rest.split_once(": ")?;
            (!v.trim().is_empty()).then_some(k)
        })?;
        if name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
            return None;
        }
        if found.insert(name, i + 1).is_some() {
            twice.push(name);
        }
    }
    for name in twice {
        found.remove(name);
    }
    Some(found)
}

/// A line without a trailing `# comment` (one preceded by a space or
/// starting the line) and trailing spaces. Only used on lines whose keys
/// are plain words, where `#` cannot be inside a quoted key.
fn strip_comment(line: &str) -> &str {
    let cut = if line.trim_start().starts_with('#') {
        0
    } else {
        line.find(" #").unwrap_or(line.len())
    };
    line[..cut].trim_end()
}

/// A registry of given codes whose fixtures come from `text`, a document
/// with `version: 1` and a `fixtures:` section, validated as a registry
/// file is (`builtin-fixtures.yaml` read this way is what [`builtin`]
/// builds from its table, as a test checks).
pub fn builtin_registry(codes: &Codes, display: &str, text: &str) -> Result<Registry, FileErrors> {
    let mut cx = Ctx::new(display, text);
    let reg = (|| {
        let raw: RawFixtures = match yaml::from_str(text) {
            Ok(r) => r,
            Err(e) => {
                cx.yaml_error(e);
                return None;
            }
        };
        if raw.version != 1 {
            cx.error(&[key("version")], "expected version 1");
        }
        let empty = Registry::new(Vec::new(), display);
        let mut list = bare_codes(codes);
        let mut recovers_at = vec![None; list.len()];
        // The built-in text is plain: its fixtures' lines are read from its
        // lines, not from a position index of the whole document (most of
        // a one-test process's start-up under nextest).
        let lines = plain_keys(text, "fixtures");
        let mut parsed = Vec::with_capacity(raw.fixtures.0.len());
        for (name, re) in &raw.fixtures.0 {
            let fp = vec![key("fixtures"), dyn_key(name)];
            let line = lines.as_ref().and_then(|l| l.get(name.as_str()).copied());
            if let Some(f) = fixture_from_raw(&mut cx, name, re, &fp, &empty, line) {
                parsed.push((name.as_str(), fp, f));
            }
        }
        let stray = join_fixtures(&mut cx, parsed, &mut list, &mut recovers_at);
        for s in &stray {
            cx.error_at(
                Pos {
                    line: s.line,
                    col: 1,
                },
                format!("fixture `{}` names no built-in code", s.name),
                None,
                None,
            );
        }
        let mut reg = Registry::new(list, codes.origin.clone());
        reg.source = Some(Arc::from(text));
        Some(reg)
    })();
    cx.finish(reg)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The built-in fixtures' lines, read from the text's lines, are the
    /// position index's, fixture by fixture.
    #[test]
    fn builtin_fixture_lines_are_the_index_lines() {
        let text = BUILTIN_TEXT;
        let plain = plain_keys(text, "fixtures").expect("the built-in text is plain");
        let index = yaml::Positions::index(text);
        let reg = builtin();
        let mut checked = 0;
        for code in &reg.codes {
            let Some(f) = &code.fixture else { continue };
            let want = index.key(&[key("fixtures"), dyn_key(&code.name)]).line;
            assert_eq!(f.line, want, "fixture {}", code.name);
            assert_eq!(
                plain.get(code.name.as_str()),
                Some(&want),
                "fixture {}",
                code.name
            );
            checked += 1;
        }
        assert!(checked >= 5, "only {checked} built-in fixtures");
        assert_eq!(plain.len(), checked);
    }

    /// Deserializing the built-in fixtures straight into entries gives what
    /// the tree-and-convert road of user registries gives.
    #[test]
    fn builtin_fixtures_are_what_the_tree_road_reads() {
        let text = BUILTIN_TEXT;
        let value = yaml::parse_value(text).unwrap();
        let fixtures = value.get("fixtures").and_then(Value::as_mapping).unwrap();
        let mut cx = Ctx::new("built-in registry", text);
        let empty = Registry::new(Vec::new(), "built-in registry");
        let reg = builtin();
        let mut compared = 0;
        for (k, v) in fixtures {
            let name = k.as_str().unwrap();
            let fp = vec![key("fixtures"), dyn_key(name)];
            let (tree, _) = registry_fixture(&mut cx, name, v, &fp, &empty).unwrap();
            let code = reg.codes.iter().find(|c| c.name == name).unwrap();
            let direct = code.fixture.as_ref().unwrap();
            assert_eq!(
                format!("{:?}", direct.entry),
                format!("{:?}", tree.entry),
                "{name}"
            );
            assert_eq!(direct.recovers_after, tree.recovers_after, "{name}");
            assert_eq!(direct.line, tree.line, "{name}");
            compared += 1;
        }
        assert!(compared >= 5);
    }

    /// The built-in registry is built from a table (no YAML parsed at a
    /// process's start); the YAML, parsed as any registry text is, gives
    /// the same registry, fixture by fixture.
    #[test]
    fn the_table_is_the_yaml() {
        let table = builtin();
        let parsed = builtin_registry(&Codes::builtin(), "built-in registry", BUILTIN_TEXT)
            .unwrap_or_else(|e| panic!("{e}"));
        let names = |r: &Registry| r.codes.iter().map(|c| c.name.clone()).collect::<Vec<_>>();
        assert_eq!(names(&table), names(&parsed));
        assert_eq!(table.origin, parsed.origin);
        assert_eq!(format!("{:?}", table.table), format!("{:?}", parsed.table));
        assert_eq!(table.title, parsed.title);
        assert_eq!(table.path, parsed.path);
        assert_eq!(table.source, parsed.source);
        assert!(table.stray_fixtures.is_empty() && parsed.stray_fixtures.is_empty());
        let mut with_fixture = 0;
        for (t, p) in table.codes.iter().zip(&parsed.codes) {
            let name = &t.name;
            assert_eq!(format!("{:?}", t.def), format!("{:?}", p.def), "{name}");
            assert_eq!(t.retryable_declared, p.retryable_declared, "{name}");
            assert_eq!(t.line, p.line, "{name}");
            match (&t.fixture, &p.fixture) {
                (None, None) => {}
                (Some(t), Some(p)) => {
                    assert_eq!(
                        format!("{:?}", t.entry),
                        format!("{:?}", p.entry),
                        "fixture {name}: the table in load/builtin.rs differs from builtin-fixtures.yaml"
                    );
                    assert_eq!(t.recovers_after, p.recovers_after, "fixture {name}");
                    assert_eq!(t.line, p.line, "fixture {name}");
                    assert_ne!(t.line, 0, "fixture {name}");
                    assert_eq!(t.inline, p.inline, "fixture {name}");
                    with_fixture += 1;
                }
                (t, p) => panic!(
                    "fixture {name}: in the table {}, in the YAML {}",
                    t.is_some(),
                    p.is_some()
                ),
            }
        }
        assert!(with_fixture >= 20, "only {with_fixture} fixtures");
    }

    #[test]
    fn plain_keys_leave_other_shapes_to_the_index() {
        let text = "version: 1\nfixtures:\n  # a comment\n  A:\n    status: 503\n\n  B: {status: 500}  # c\nother:\n  C:\n";
        let got = plain_keys(text, "fixtures").unwrap();
        assert_eq!(got.get("A"), Some(&4));
        assert_eq!(got.get("B"), Some(&7));
        assert_eq!(got.get("C"), None);
        // Keys that are not plain words, flow style, tabs: the index.
        assert!(plain_keys("fixtures:\n  \"A\":\n    status: 1\n", "fixtures").is_none());
        assert!(plain_keys("fixtures: {A: {status: 1}}\n", "fixtures").is_none());
        assert!(plain_keys("fixtures:\n    A:\n  B:\n", "fixtures").is_none());
        assert!(plain_keys("nothing: 1\n", "fixtures").is_none());
        // A key written twice is not answered from the text.
        let twice = plain_keys("fixtures:\n  A:\n  A:\n  B:\n", "fixtures").unwrap();
        assert_eq!(twice.get("A"), None);
        assert_eq!(twice.get("B"), Some(&4));
    }
}
