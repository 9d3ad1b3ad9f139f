//! The second pass: raw serde shapes into the model, with a diagnostic for
//! every problem (file, line, column, what was expected, did you mean).

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use super::raw::{RawEntry, RawExpect, RawMatrix, RawRequest, RawRow, RawSettings};
use crate::base::diag::{did_you_mean, Diagnostic, FileErrors};
use crate::base::duration::DurationSpec;
use crate::base::yaml::{self, Pos, Positions, Seg, Value, YamlError};
use crate::contracts::system::Systems;
use crate::model::registry::{Code, CodeDef, Codes, Fixture, Registry, StatusMatch};
use crate::model::{
    Answer, Entry, Expect, ExpectedError, ExpectedEscalation, JitterInput, Matrix, Repeat,
    RouteScript, Row, ScriptedResponse, Settings, SseItem, StreamSpec, STOP_REASONS,
};

/// Collects diagnostics for one file; indexes positions only when needed.
struct Ctx<'a> {
    file: &'a str,
    source: &'a str,
    positions: Option<Positions>,
    diags: Vec<Diagnostic>,
}

fn key(s: &str) -> Seg {
    Seg::Key(s.to_string())
}

fn child(path: &[Seg], seg: Seg) -> Vec<Seg> {
    let mut p = path.to_vec();
    p.push(seg);
    p
}

impl<'a> Ctx<'a> {
    fn new(file: &'a str, source: &'a str) -> Self {
        Self {
            file,
            source,
            positions: None,
            diags: Vec::new(),
        }
    }

    /// The loaded value when no error was found; otherwise every error of
    /// the file, in file order.
    fn finish<T>(self, value: Option<T>) -> Result<T, FileErrors> {
        match value {
            Some(v) if self.diags.is_empty() => Ok(v),
            _ => {
                let mut diagnostics = self.diags;
                diagnostics.sort_by_key(|d| d.pos);
                diagnostics.dedup();
                Err(FileErrors {
                    file: self.file.to_string(),
                    source: Some(self.source.to_string()),
                    diagnostics,
                })
            }
        }
    }

    fn positions(&mut self) -> &Positions {
        let source = self.source;
        self.positions
            .get_or_insert_with(|| Positions::index(source))
    }

    fn pos(&mut self, path: &[Seg]) -> Pos {
        self.positions().value(path)
    }

    fn key_pos(&mut self, path: &[Seg]) -> Pos {
        self.positions().key(path)
    }

    fn error(&mut self, path: &[Seg], message: impl Into<String>) {
        let pos = self.pos(path);
        self.diags.push(Diagnostic::new(self.file, pos, message));
    }

    fn error_at(
        &mut self,
        pos: Pos,
        message: impl Into<String>,
        label: Option<String>,
        help: Option<String>,
    ) {
        let mut d = Diagnostic::new(self.file, pos, message).help(help);
        d.label = label;
        self.diags.push(d);
    }

    /// Turns a serde / semantic error into a diagnostic.
    fn yaml_error(&mut self, e: YamlError) {
        // "unknown field `x`, expected one of `a`, `b`" / "unknown variant ..."
        for kind in ["unknown field", "unknown variant"] {
            if let Some(rest) = e.message.strip_prefix(kind) {
                let word = rest.split('`').nth(1).unwrap_or("").to_string();
                let expected: Vec<String> = rest
                    .split_once("expected")
                    .map(|(_, list)| {
                        list.split('`')
                            .skip(1)
                            .step_by(2)
                            .map(str::to_string)
                            .collect()
                    })
                    .unwrap_or_default();
                let mut parent = e.path.clone();
                if kind == "unknown field" && parent.last() == Some(&key(&word)) {
                    parent.pop();
                }
                let pos = match e.pos {
                    Some(p) => p,
                    None if kind == "unknown field" => self.key_pos(&child(&parent, key(&word))),
                    None => self.pos(&e.path),
                };
                let what = if kind == "unknown field" {
                    "key"
                } else {
                    "value"
                };
                let place = describe(&parent);
                let label = (!expected.is_empty())
                    .then(|| format!("expected one of: {}", expected.join(", ")));
                let help = did_you_mean(&word, expected.iter().map(String::as_str));
                self.error_at(pos, format!("unknown {what} `{word}`{place}"), label, help);
                return;
            }
        }
        if let Some(field) = e
            .message
            .strip_prefix("missing field `")
            .and_then(|r| r.split('`').next())
        {
            let pos = if e.path.is_empty() {
                Pos { line: 1, col: 1 }
            } else {
                self.pos(&e.path)
            };
            let place = if e.path.is_empty() {
                "the file".to_string()
            } else {
                format!("`{}`", yaml::path_text(&e.path))
            };
            self.error_at(
                pos,
                format!("missing key `{field}` in {place}"),
                Some(format!("add `{field}:` here")),
                None,
            );
            return;
        }
        let pos = match e.pos {
            Some(p) => p,
            None => self.pos(&e.path),
        };
        let msg = if e.path.is_empty() {
            e.message
        } else {
            format!("`{}`: {}", yaml::path_text(&e.path), e.message)
        };
        self.error_at(pos, msg, None, None);
    }
}

/// A YAML syntax error: what the parser said, at its position.
fn syntax_error(cx: &mut Ctx<'_>, e: YamlError) {
    let pos = e.pos.unwrap_or(Pos { line: 1, col: 1 });
    cx.error_at(
        pos,
        format!("invalid YAML: {}", e.message),
        Some("the YAML syntax breaks here (check the indentation and brackets)".into()),
        None,
    );
}

fn describe(path: &[Seg]) -> String {
    if path.is_empty() {
        String::new()
    } else {
        format!(" in `{}`", yaml::path_text(path))
    }
}

/// Loads and validates one matrix file. `display` is the name shown in
/// messages and test ids.
pub fn load_file(path: &Path, display: &str, systems: &Systems) -> Result<Matrix, FileErrors> {
    match std::fs::read_to_string(path) {
        Ok(text) => load_text(display, &text, path.parent(), systems),
        Err(e) => Err(FileErrors {
            file: display.to_string(),
            source: None,
            diagnostics: vec![Diagnostic::new(
                display,
                Pos { line: 1, col: 1 },
                format!("cannot read the file: {e}"),
            )],
        }),
    }
}

/// [`RawMatrix`] with typed rows: the fast path for well-formed files. Its
/// fields mirror `RawMatrix`; a key missing here only costs the slow path.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct FastMatrix {
    title: String,
    #[serde(default)]
    system: Option<Value>,
    #[serde(default)]
    policy: Option<Value>,
    #[serde(default)]
    registry: Option<String>,
    #[serde(default)]
    defaults: Option<RawSettings>,
    #[serde(default)]
    tapes: Option<Value>,
    rows: Vec<RawRow>,
}

impl FastMatrix {
    fn split(self) -> (RawMatrix, Option<Vec<RawRow>>) {
        let raw = RawMatrix {
            title: self.title,
            system: self.system,
            policy: self.policy,
            registry: self.registry,
            defaults: self.defaults,
            tapes: self.tapes,
            rows: Vec::new(),
        };
        (raw, Some(self.rows))
    }
}

/// Validates matrix text. `dir` resolves a relative `registry:` path.
pub fn load_text(
    display: &str,
    text: &str,
    dir: Option<&Path>,
    systems: &Systems,
) -> Result<Matrix, FileErrors> {
    let mut cx = Ctx::new(display, text);
    let result = load_inner(&mut cx, text, dir, systems);
    cx.finish(result)
}

fn load_inner(
    cx: &mut Ctx<'_>,
    text: &str,
    dir: Option<&Path>,
    systems: &Systems,
) -> Option<Matrix> {
    // Fast path: a well-formed file goes straight into typed rows, without
    // an intermediate `Value` tree. Any shape error falls back to the slow
    // path below, which collects every error of the file with its position.
    let (raw, mut typed_rows) = match yaml::from_str::<FastMatrix>(text) {
        Ok(f) => f.split(),
        Err(_) => {
            let value = match yaml::parse_value(text) {
                Ok(v) => v,
                Err(e) => {
                    syntax_error(cx, e);
                    return None;
                }
            };
            if !value.is_mapping() {
                cx.error(
                    &[],
                    "a matrix file is a mapping with `title`, `policy` and `rows`",
                );
                return None;
            }
            let (raw, errors) = super::recover::from_value_all::<RawMatrix>(&value, &[]);
            for e in errors {
                cx.yaml_error(e);
            }
            (raw?, None)
        }
    };

    // Registry.
    let registry = match &raw.registry {
        None => Registry::builtin(),
        Some(rel) => {
            let path = dir.map_or_else(|| Path::new(rel).to_path_buf(), |d| d.join(rel));
            match crate::load::cache::load(&path) {
                Ok(r) => r,
                Err(e) => {
                    registry_load_error(cx, &path, e);
                    return None;
                }
            }
        }
    };

    // System.
    let mut command = None;
    let system_name = match &raw.system {
        None => "reference".to_string(),
        Some(Value::String(s)) => s.clone(),
        Some(v @ Value::Mapping(_)) => match crate::exec::wire::command::parse_system(v, dir) {
            Ok(spec) => {
                command = Some(Arc::new(spec));
                "command".to_string()
            }
            Err(errors) => {
                for e in errors {
                    cx.yaml_error(e);
                }
                return None;
            }
        },
        Some(_) => {
            cx.error(
                &[key("system")],
                "`system` is the name of a registered system, such as `reference`, or `{ command: [program, args...] }`",
            );
            return None;
        }
    };
    let factory = match &command {
        Some(spec) => {
            let built = crate::exec::wire::command::built(spec);
            let f: crate::contracts::system::Factory = Arc::new(move |_, _| {
                Ok(crate::contracts::system::Built {
                    system: built.system.clone(),
                    routes: built.routes.clone(),
                    body_paths: Vec::new(),
                })
            });
            Some(f)
        }
        None => systems.get(&system_name).cloned(),
    };
    let Some(factory) = factory else {
        let names: Vec<&str> = systems.names().collect();
        let pos = cx.pos(&[key("system")]);
        cx.error_at(
            pos,
            format!("unknown system `{system_name}`"),
            Some(format!("expected one of: {}", names.join(", "))),
            did_you_mean(&system_name, names.iter().copied()),
        );
        return None;
    };
    let policy = raw.policy.clone().unwrap_or(Value::Null);
    let built = match factory(&policy, &registry) {
        Ok(b) => Some(b),
        Err(errors) => {
            for e in errors {
                cx.yaml_error(e);
            }
            None
        }
    };

    // Defaults.
    let mut base = Settings::default();
    if let Some(d) = &raw.defaults {
        apply_settings(cx, &mut base, d, &[key("defaults")]);
    }

    // Tape settings.
    let tape_config = match crate::load::tape::parse_config(raw.tapes.as_ref()) {
        Ok(c) => Arc::new(c),
        Err(errors) => {
            for e in errors {
                cx.yaml_error(e);
            }
            Arc::default()
        }
    };

    // Rows.
    let routes: Option<Vec<String>> = built.as_ref().and_then(|b| b.routes.clone());
    let check_stops = system_name == "reference";
    if typed_rows
        .as_ref()
        .map_or(raw.rows.is_empty(), Vec::is_empty)
    {
        cx.error(
            &[key("rows")],
            "`rows` is empty: a matrix needs at least one row",
        );
    }
    let mut rows = Vec::with_capacity(typed_rows.as_ref().map_or(raw.rows.len(), Vec::len));
    let mut names: HashMap<String, usize> = HashMap::new();
    let count = typed_rows.as_ref().map_or(raw.rows.len(), Vec::len);
    let mut typed = typed_rows.take().map(Vec::into_iter);
    for i in 0..count {
        let path = vec![key("rows"), Seg::Index(i)];
        let mut rr: RawRow = match typed.as_mut().and_then(Iterator::next) {
            Some(r) => r,
            None => {
                let (rr, errors) = super::recover::from_value_all(&raw.rows[i], &path);
                for e in errors {
                    cx.yaml_error(e);
                }
                match rr {
                    Some(r) => r,
                    None => continue,
                }
            }
        };
        if let Some(first) = names.get(&rr.name) {
            let first_line = cx.pos(&[key("rows"), Seg::Index(*first), key("name")]).line;
            cx.error(
                &child(&path, key("name")),
                format!("duplicate row name `{}`: row names are unique in a file (first used on line {first_line})", rr.name),
            );
        } else {
            names.insert(rr.name.clone(), i);
        }
        let (tape, record) = (rr.tape.take(), rr.record.take());
        let has_inject = rr.inject.is_some();
        if let Some(mut row) = validate_row(
            cx,
            rr,
            path.clone(),
            &base,
            routes.as_deref(),
            &registry,
            check_stops,
        ) {
            row.tape =
                row_tape(cx, tape, record, has_inject, &path, dir, &tape_config).map(Box::new);
            rows.push(row);
        }
    }
    // Snapshot rows need distinct snapshot names.
    let mut snaps: HashMap<String, usize> = HashMap::new();
    for row in rows.iter().filter(|r| r.expect.snapshot) {
        let name = crate::verdict::snapshot::name(cx.file, &row.name);
        let line = cx.pos(&row.path).line;
        if let Some(first) = snaps.insert(name.clone(), line) {
            cx.error(
                &child(&row.path, key("name")),
                format!("snapshot name `{name}` is already used by the row on line {first}: rename one of the rows"),
            );
        }
    }
    let built = built?;
    if !cx.diags.is_empty() {
        return None;
    }
    let mut matrix = Matrix::new(
        cx.file.to_string(),
        Arc::from(text),
        raw.title,
        system_name,
        built.system,
        registry,
        rows,
        built.body_paths,
    );
    matrix.command = command;
    Some(matrix)
}

/// One diagnostic on the `registry:` key of a matrix whose registry does
/// not load; the registry's own errors are reported for its file (by
/// `faultmatrix check` or as a failing test named after it).
fn registry_load_error(cx: &mut Ctx<'_>, path: &Path, e: crate::load::cache::RegistryError) {
    use crate::load::cache::{self, RegistryError};
    let shown = cache::display(path);
    let pos = cx.pos(&[key("registry")]);
    match e {
        RegistryError::Read(why) => cx.error_at(
            pos,
            format!("cannot read registry `{shown}`: {why}"),
            Some("the path is relative to this file".into()),
            None,
        ),
        RegistryError::Invalid(errors) => {
            let n = errors.diagnostics.len();
            let first = errors.diagnostics.first().map_or(String::new(), |d| {
                format!(": {} ({}:{}:{})", d.message, d.file, d.pos.line, d.pos.col)
            });
            cx.error_at(
                pos,
                format!("registry `{shown}` does not load{first}"),
                Some(format!(
                    "{n} error{} in the registry",
                    if n == 1 { "" } else { "s" }
                )),
                Some(format!(
                    "run `faultmatrix check {shown}` to see every error"
                )),
            );
        }
    }
}

/// A row's `tape:` and `record:` keys (see `crate::load::tape`).
fn row_tape(
    cx: &mut Ctx<'_>,
    tape: Option<String>,
    record: Option<Value>,
    has_inject: bool,
    path: &[Seg],
    dir: Option<&Path>,
    config: &Arc<crate::exec::tape::TapeConfig>,
) -> Option<crate::exec::tape::TapeRow> {
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
    match crate::load::tape::parse_row(&tape, record.as_ref(), path, dir, config) {
        Ok(t) => Some(t),
        Err(errors) => {
            for e in errors {
                cx.yaml_error(e);
            }
            None
        }
    }
}

fn apply_settings(cx: &mut Ctx<'_>, s: &mut Settings, raw: &RawSettings, path: &[Seg]) {
    apply(
        cx,
        s,
        path,
        Overrides {
            deadline: raw.deadline.map(|d| d.0),
            jitter: raw.jitter.as_deref(),
            jitter_seed: raw.jitter_seed,
            request: raw.request.as_ref(),
            horizon: raw.horizon.map(|d| d.0),
            budget: raw.budget.map(|d| d.0),
            max_calls: raw.max_calls,
            tolerance: raw.tolerance.as_ref(),
        },
    );
}

struct Overrides<'r> {
    deadline: Option<Duration>,
    jitter: Option<&'r [f64]>,
    jitter_seed: Option<u64>,
    request: Option<&'r RawRequest>,
    horizon: Option<Duration>,
    budget: Option<Duration>,
    max_calls: Option<u32>,
    tolerance: Option<&'r crate::exec::wire::tolerance::RawTolerance>,
}

fn apply(cx: &mut Ctx<'_>, s: &mut Settings, path: &[Seg], o: Overrides<'_>) {
    if let Some(d) = o.deadline {
        s.deadline = Some(d);
    }
    if o.jitter.is_some() && o.jitter_seed.is_some() {
        cx.error(
            &child(path, key("jitter_seed")),
            "give either `jitter` (explicit draws) or `jitter_seed`, not both",
        );
    }
    if let Some(draws) = o.jitter {
        for (i, d) in draws.iter().enumerate() {
            if !(0.0..1.0).contains(d) {
                cx.error(
                    &child(&child(path, key("jitter")), Seg::Index(i)),
                    format!("jitter draw {d} is outside [0, 1): a draw is a fraction such as 0.25"),
                );
            }
        }
        s.jitter = JitterInput::Draws(draws.to_vec());
    }
    if let Some(seed) = o.jitter_seed {
        s.jitter = JitterInput::Seed(seed);
    }
    if let Some(r) = o.request {
        let q = &mut s.request;
        if let Some(m) = &r.model {
            q.model = Some(m.clone());
        }
        q.stream = r.stream.unwrap_or(q.stream);
        q.create = r.create.unwrap_or(q.create);
        q.idempotency_key = r.idempotency_key.unwrap_or(q.idempotency_key);
        q.size = r.size.unwrap_or(q.size);
        if let Some(routing) = &r.routing {
            match yaml::to_json(routing) {
                Ok(j) => q.routing = Some(crate::exec::tape::replay::canonical(&j)),
                Err(e) => cx.error(
                    &child(&child(path, key("request")), key("routing")),
                    format!("`routing` is not JSON-like: {e}"),
                ),
            }
        }
    }
    if let Some(h) = o.horizon {
        s.horizon = h;
    }
    if let Some(b) = o.budget {
        if b.is_zero() {
            cx.error(
                &child(path, key("budget")),
                "`budget` is 0: the system could not run at all",
            );
        }
        s.budget = b;
    }
    if let Some(m) = o.max_calls {
        if m == 0 {
            cx.error(
                &child(path, key("max_calls")),
                "`max_calls` is 0: no call could be made",
            );
        }
        s.max_calls = m;
    }
    if let Some(t) = o.tolerance {
        match t.apply(s.tolerance) {
            Ok(t) => s.tolerance = t,
            Err(m) => cx.error(&child(path, key("tolerance")), m),
        }
    }
}

fn validate_row(
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
            let rpath = child(&inject_path, key(route));
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
                route: route.to_string(),
                entries,
            });
        }
    }

    let trace_routes: Vec<String> = match routes {
        Some(r) => r.to_vec(),
        None => inject.iter().map(|s| s.route.clone()).collect(),
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
        ignore: rr.ignore,
        tags: rr.tags,
        inject,
        settings,
        expect,
        tape: None,
    })
}

const ENTRY_WORDS: [&str; 5] = ["timeout", "reset", "malformed", "truncated", "ok"];

fn script_entries(cx: &mut Ctx<'_>, v: &Value, path: &[Seg], registry: &Registry) -> Vec<Entry> {
    match v {
        Value::Sequence(items) => {
            let mut out = Vec::new();
            for (i, item) in items.iter().enumerate() {
                let p = child(path, Seg::Index(i));
                if let Some(e) = entry(cx, item, &p, registry) {
                    if i + 1 < items.len() && e.repeat == Repeat::Forever {
                        cx.error(
                            &p,
                            "an entry that repeats forever must be the last of its route",
                        );
                    }
                    out.push(e);
                }
            }
            if items.is_empty() {
                cx.error(
                    path,
                    "empty script: give at least one answer, or leave the route out",
                );
            }
            out
        }
        // A bare code: the fixture's own attempt-indexed behaviour.
        Value::String(s) if registry.get(s).is_some() => {
            let def = registry.get(s).expect("checked");
            match &def.fixture {
                Some(f) => {
                    let mut failing = f.entry.clone();
                    match f.recovers_after {
                        Some(n) => {
                            failing.repeat = Repeat::Times(n.max(1));
                            vec![failing, Entry::ok()]
                        }
                        None => vec![failing],
                    }
                }
                None => {
                    cx.error(path, format!("code `{s}` has no fixture in the registry"));
                    Vec::new()
                }
            }
        }
        other => entry(cx, other, path, registry).into_iter().collect(),
    }
}

fn status_entry(status: u16) -> Entry {
    Entry {
        answer: Answer::Response(ScriptedResponse {
            status,
            ..ScriptedResponse::default()
        }),
        latency: Duration::ZERO,
        repeat: Repeat::Times(1),
        committed: false,
        label: status.to_string(),
    }
}

fn fault_entry(word: &str) -> Option<Entry> {
    let answer = match word {
        "timeout" => Answer::Timeout,
        "reset" => Answer::Reset,
        "malformed" => Answer::Malformed,
        "truncated" => Answer::Truncated,
        "ok" => return Some(Entry::ok()),
        _ => return None,
    };
    Some(Entry {
        answer,
        latency: Duration::ZERO,
        repeat: Repeat::Times(1),
        committed: false,
        label: word.to_string(),
    })
}

fn check_status(cx: &mut Ctx<'_>, path: &[Seg], n: i64) -> Option<u16> {
    if (100..=599).contains(&n) {
        Some(n as u16)
    } else {
        cx.error(
            path,
            format!("status {n} is not an HTTP status: expected 100 to 599"),
        );
        None
    }
}

fn entry(cx: &mut Ctx<'_>, v: &Value, path: &[Seg], registry: &Registry) -> Option<Entry> {
    match v {
        Value::Number(n) => {
            let n = n.as_i64().unwrap_or(-1);
            check_status(cx, path, n).map(status_entry)
        }
        Value::String(s) => {
            if let Some(e) = fault_entry(s) {
                return Some(e);
            }
            if let Ok(n) = s.parse::<i64>() {
                return check_status(cx, path, n).map(status_entry);
            }
            if let Some(def) = registry.get(s) {
                return match &def.fixture {
                    Some(f) => {
                        let mut e = f.entry.clone();
                        e.label = s.clone();
                        Some(e)
                    }
                    None => {
                        cx.error(path, format!("code `{s}` has no fixture in the registry"));
                        None
                    }
                };
            }
            let pos = cx.pos(path);
            let candidates = ENTRY_WORDS.iter().copied().chain(registry.names());
            cx.error_at(
                pos,
                format!("unknown script entry `{s}`"),
                Some("expected a status such as 503, timeout, reset, malformed, ok, or a reason code".into()),
                did_you_mean(s, candidates),
            );
            None
        }
        Value::Mapping(_) => {
            let raw: RawEntry = {
                let (raw, errors) = super::recover::from_value_all(v, path);
                for e in errors {
                    cx.yaml_error(e);
                }
                raw?
            };
            if raw.recovers_after.is_some() {
                cx.error(&child(path, key("recovers_after")), "`recovers_after` belongs in a registry fixture, not a script entry: repeat the failing entry instead");
            }
            let mut e = entry_from_raw(cx, &raw, path, registry, false)?;
            e.repeat = match &raw.repeat {
                None => Repeat::Times(1),
                Some(Value::String(s)) if s == "forever" => Repeat::Forever,
                Some(Value::Number(n))
                    if n.as_u64().is_some_and(|n| n >= 1 && n <= u32::MAX as u64) =>
                {
                    Repeat::Times(n.as_u64().expect("checked") as u32)
                }
                Some(_) => {
                    cx.error(
                        &child(path, key("repeat")),
                        "`repeat` is a count of at least 1, or `forever`",
                    );
                    Repeat::Times(1)
                }
            };
            if let Repeat::Times(n) = e.repeat {
                if n > 1 {
                    e.label = format!("{} x{n}", e.label);
                }
            } else {
                e.label = format!("{} forever", e.label);
            }
            Some(e)
        }
        _ => {
            cx.error(path, "a script entry is a status (503), a word (timeout, reset, malformed, ok), a reason code, or a map with `status`");
            None
        }
    }
}

/// Converts a mapped entry (script entry or registry fixture).
fn entry_from_raw(
    cx: &mut Ctx<'_>,
    raw: &RawEntry,
    path: &[Seg],
    registry: &Registry,
    fixture: bool,
) -> Option<Entry> {
    let kinds = [
        raw.status.is_some(),
        raw.fault.is_some(),
        raw.code.is_some(),
    ]
    .iter()
    .filter(|b| **b)
    .count();
    if kinds != 1 {
        let msg = if fixture {
            "a fixture gives exactly one of `status` or `fault`"
        } else {
            "an entry gives exactly one of `status`, `fault` or `code`"
        };
        cx.error(path, msg);
        return None;
    }
    if fixture && raw.code.is_some() {
        cx.error(
            &child(path, key("code")),
            "a fixture cannot refer to another code",
        );
        return None;
    }
    let latency = raw.latency.map_or(Duration::ZERO, |d| d.0);
    let committed = raw.committed.unwrap_or(false);
    if let Some(code) = &raw.code {
        let Some(def) = registry.get(code) else {
            let pos = cx.pos(&child(path, key("code")));
            cx.error_at(
                pos,
                format!("unknown reason code `{code}`"),
                None,
                did_you_mean(code, registry.names()),
            );
            return None;
        };
        let Some(f) = &def.fixture else {
            cx.error(
                &child(path, key("code")),
                format!("code `{code}` has no fixture in the registry"),
            );
            return None;
        };
        let mut e = f.entry.clone();
        e.latency = latency;
        e.committed = committed;
        e.label = code.clone();
        return Some(e);
    }
    if let Some(f) = &raw.fault {
        if raw.headers.is_some() || raw.body.is_some() || raw.stream.is_some() {
            cx.error(
                path,
                format!("a `{f}` fault has no response: drop `headers`, `body` and `stream`"),
            );
        }
        let Some(mut e) = fault_entry(f).filter(|_| f != "ok") else {
            let pos = cx.pos(&child(path, key("fault")));
            cx.error_at(
                pos,
                format!("unknown fault `{f}`"),
                Some("expected one of: timeout, reset, malformed, truncated".into()),
                did_you_mean(f, ["timeout", "reset", "malformed", "truncated"]),
            );
            return None;
        };
        e.latency = latency;
        e.committed = committed;
        return Some(e);
    }
    let status = check_status(
        cx,
        &child(path, key("status")),
        raw.status.expect("checked") as i64,
    )?;
    let mut headers = Vec::new();
    if let Some(h) = &raw.headers {
        for (k, v) in h {
            let name = k.as_str().map(str::to_string);
            let value = match v {
                Value::String(s) => Some(s.clone()),
                Value::Number(n) => Some(n.to_string()),
                Value::Bool(b) => Some(b.to_string()),
                _ => None,
            };
            match (name, value) {
                (Some(n), Some(v)) => headers.push((n, v)),
                _ => cx.error(
                    &child(path, key("headers")),
                    "headers are `Name: value` pairs of words, numbers or strings",
                ),
            }
        }
    }
    let body = match &raw.body {
        None => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(other) => match yaml::to_json(other) {
            Ok(j) => Some(j.to_string()),
            Err(e) => {
                cx.error(
                    &child(path, key("body")),
                    format!("body cannot be written as JSON: {e}"),
                );
                None
            }
        },
    };
    let stream = raw.stream.as_ref().map(|s| {
        let mut items = Vec::new();
        for (i, it) in s.events.iter().enumerate() {
            let ip = child(&child(&child(path, key("stream")), key("events")), Seg::Index(i));
            match (&it.comment, &it.data) {
                (Some(c), None) if it.event.is_none() && it.id.is_none() => items.push(SseItem::Comment(c.clone())),
                (None, Some(d)) => {
                    let data = match d {
                        Value::String(s) => s.clone(),
                        other => yaml::to_json(other).map(|j| j.to_string()).unwrap_or_default(),
                    };
                    items.push(SseItem::Event {
                        event: it.event.clone(),
                        data,
                        id: it.id.clone(),
                    })
                }
                _ => cx.error(&ip, "a stream item is either `comment: text` or `data: ...` (with optional `event` and `id`)"),
            }
        }
        StreamSpec {
            items,
            breaks: s.breaks,
        }
    });
    let label = if stream.as_ref().is_some_and(|s| s.breaks) {
        format!("{status} stream break")
    } else if stream.is_some() {
        format!("{status} stream")
    } else {
        status.to_string()
    };
    Some(Entry {
        answer: Answer::Response(ScriptedResponse {
            status,
            headers,
            body,
            stream,
        }),
        latency,
        repeat: Repeat::Times(1),
        committed,
        label,
    })
}

/// Position of the `i`-th line of an expected trace (a list item, or a line
/// of a block string).
pub fn trace_item_pos(positions: &Positions, source: &str, path: &[Seg], i: usize) -> Pos {
    let item = child(path, Seg::Index(i));
    let item_pos = positions.value(&item);
    let node_pos = positions.value(path);
    if item_pos != node_pos {
        return item_pos;
    }
    let src_lines: Vec<&str> = source.lines().collect();
    // A block scalar's position is its first content line; an inline
    // string's is its own line.
    let mut n = node_pos.line.saturating_sub(1);
    let mut seen = 0;
    while n < src_lines.len() {
        let l = src_lines[n];
        n += 1;
        if l.trim().is_empty() {
            continue;
        }
        if seen == i {
            let col = l.len() - l.trim_start().len() + 1;
            return Pos { line: n, col };
        }
        seen += 1;
    }
    Pos {
        line: node_pos.line + 1 + i,
        col: node_pos.col,
    }
}

fn validate_expect(
    cx: &mut Ctx<'_>,
    raw: &RawExpect,
    path: Vec<Seg>,
    routes: &[String],
    registry: &Registry,
    check_stops: bool,
) -> Expect {
    let trace_path = child(&path, key("trace"));
    let mut expect = Expect {
        trace_path: trace_path.clone(),
        ..Expect::default()
    };
    let mut asserted = false;
    if let Some(t) = &raw.trace {
        asserted = true;
        let texts: Vec<String> = match t {
            Value::String(s) => s.lines().filter(|l| !l.trim().is_empty()).map(str::to_string).collect(),
            Value::Sequence(items) => items
                .iter()
                .enumerate()
                .filter_map(|(i, v)| match v {
                    Value::String(s) => Some(s.clone()),
                    _ => {
                        cx.error(&child(&trace_path, Seg::Index(i)), "a trace line is a string such as `A1 503 UPSTREAM_UNAVAILABLE retry wait=1s`");
                        None
                    }
                })
                .collect(),
            _ => {
                cx.error(&trace_path, "`trace` is a block of lines (`trace: |`) or a list of strings");
                Vec::new()
            }
        };
        let mut lines = Vec::new();
        for (i, text) in texts.iter().enumerate() {
            match crate::exec::trace::parse_line(text, routes) {
                Ok(l) => {
                    if let Some(code) = &l.code {
                        if registry.get(code).is_none() && !is_http_code(code) {
                            let pos = {
                                let source = cx.source;
                                trace_item_pos(cx.positions(), source, &trace_path, i)
                            };
                            let pos =
                                crate::base::diag::token_pos(cx.source, pos, &format!("`{code}`"));
                            cx.error_at(
                                pos,
                                format!(
                                    "unknown reason code `{code}` in trace line `{}`",
                                    text.trim()
                                ),
                                Some(format!(
                                    "codes come from the registry ({})",
                                    registry.origin
                                )),
                                did_you_mean(code, registry.names()),
                            );
                        }
                    }
                    lines.push(l)
                }
                Err(msg) => {
                    let pos = {
                        let source = cx.source;
                        trace_item_pos(cx.positions(), source, &trace_path, i)
                    };
                    let (msg, help) = crate::base::diag::split_hint(&msg);
                    let pos = crate::base::diag::token_pos(cx.source, pos, &msg);
                    cx.error_at(pos, format!("bad trace line: {msg}"), None, help);
                }
            }
        }
        if lines.is_empty() && !texts.is_empty() {
            // errors reported above
        } else if texts.is_empty() {
            cx.error(&trace_path, "`trace` is empty: a row that expects no call says so with `stop` and an empty `inject`");
        }
        expect.trace = Some(lines);
    }
    if let Some(stop) = &raw.stop {
        asserted = true;
        if check_stops && !STOP_REASONS.contains(&stop.as_str()) {
            let pos = cx.pos(&child(&path, key("stop")));
            cx.error_at(
                pos,
                format!("unknown stop reason `{stop}`"),
                Some(format!("expected one of: {}", STOP_REASONS.join(", "))),
                did_you_mean(stop, STOP_REASONS),
            );
        }
        expect.stop = Some(stop.clone());
    }
    if let Some(e) = &raw.elapsed {
        asserted = true;
        match DurationSpec::parse(e) {
            Ok(s) => expect.elapsed = Some(s),
            Err(m) => cx.error(&child(&path, key("elapsed")), format!("elapsed: {m}")),
        }
    }
    if let Some(e) = &raw.error {
        asserted = true;
        if let Some(code) = &e.code {
            check_code(
                cx,
                code,
                &child(&child(&path, key("error")), key("code")),
                registry,
            );
        }
        expect.error = Some(ExpectedError {
            request_id: e.request_id.clone(),
            code: e.code.clone(),
            attempts: e.attempts.clone(),
            max_len: e.max_len,
        });
    }
    if let Some(list) = &raw.escalations {
        asserted = true;
        let mut out = Vec::new();
        for (i, esc) in list.iter().enumerate() {
            let p = child(
                &child(&child(&path, key("escalations")), Seg::Index(i)),
                key("code"),
            );
            check_code(cx, &esc.code, &p, registry);
            out.push(ExpectedEscalation {
                code: esc.code.clone(),
                to: esc.to.clone(),
            });
        }
        expect.escalations = Some(out);
    }
    if let Some(r) = raw.records {
        asserted = true;
        expect.records = Some(r);
    }
    if let Some(a) = raw.amplification {
        asserted = true;
        if !(a.is_finite() && a >= 0.0) {
            cx.error(
                &child(&path, key("amplification")),
                "`amplification` is a ratio such as 3 or 1.5",
            );
        }
        expect.amplification = Some(a);
    }
    if let Some(o) = &raw.output {
        asserted = true;
        expect.output = Some(o.clone());
    }
    if raw.snapshot == Some(true) {
        asserted = true;
        expect.snapshot = true;
        if raw.trace.is_some() {
            let pos = cx.key_pos(&child(&path, key("snapshot")));
            cx.error_at(
                pos,
                "give either `trace` or `snapshot: true`, not both",
                Some("a snapshot row keeps its trace in the snapshot file".into()),
                None,
            );
        }
    }
    if let Some(r) = &raw.requests {
        asserted = true;
        match crate::exec::wire::assertions::parse(r, &child(&path, key("requests"))) {
            Ok(a) => expect.requests = a,
            Err(errors) => {
                for (p, m) in errors {
                    cx.error(&p, m);
                }
            }
        }
    }
    if !asserted {
        cx.error(
            &path,
            "the row asserts nothing: give `trace`, `stop` or another expectation",
        );
    }
    expect
}

fn is_http_code(code: &str) -> bool {
    code.strip_prefix("HTTP_")
        .is_some_and(|n| n.len() == 3 && n.bytes().all(|b| b.is_ascii_digit()))
}

fn check_code(cx: &mut Ctx<'_>, code: &str, path: &[Seg], registry: &Registry) {
    if registry.get(code).is_none() && !is_http_code(code) {
        let pos = cx.pos(path);
        cx.error_at(
            pos,
            format!("unknown reason code `{code}`"),
            Some(format!(
                "codes come from the registry ({})",
                registry.origin
            )),
            did_you_mean(code, registry.names()),
        );
    }
}

// ---------------------------------------------------------------- registry

#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawRegistry {
    /// Format version: 1.
    version: u32,
    /// Heads the review table (`faultmatrix codes`).
    #[serde(default)]
    title: Option<String>,
    /// Every reason code, by name (RATE_LIMITED).
    #[schemars(with = "std::collections::BTreeMap<String, RawCode>")]
    codes: serde_yaml::Mapping,
    /// Fixtures keyed by code, when not written inline under the code.
    #[serde(default)]
    #[schemars(with = "Option<std::collections::BTreeMap<String, RawEntry>>")]
    fixtures: Option<serde_yaml::Mapping>,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
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
    #[schemars(with = "Option<RawEntry>")]
    fixture: Option<Value>,
}

#[derive(serde::Deserialize, Default, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawMatch {
    /// Exact statuses, or classes such as 5xx.
    #[serde(default)]
    #[schemars(with = "Vec<crate::load::schema::StatusMatchSchema>")]
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

fn registry_fixture(
    cx: &mut Ctx<'_>,
    name: &str,
    value: &Value,
    fp: &[Seg],
    empty: &Registry,
) -> Option<(Fixture, Option<Pos>)> {
    let re = match yaml::from_value::<RawEntry>(value, fp) {
        Err(e) => {
            cx.yaml_error(e);
            return None;
        }
        Ok(re) => re,
    };
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
        Some(_) => Some(cx.key_pos(&child(fp, key("recovers_after")))),
        None => None,
    };
    let line = cx.key_pos(fp).line;
    let mut e = entry_from_raw(cx, &re, fp, empty, true)?;
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
    let mut recovers_at: Vec<Option<Pos>> = Vec::new();
    let mut seen = HashSet::new();
    for (k, v) in &raw.codes {
        let Some(name) = k.as_str() else {
            cx.error(&[key("codes")], "code names are words such as RATE_LIMITED");
            continue;
        };
        let path = vec![key("codes"), key(name)];
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
            if !["timeout", "reset", "malformed", "broken"].contains(&o.as_str()) {
                cx.error(
                    &child(&child(&path, key("match")), key("outcome")),
                    format!("unknown outcome `{o}`: expected timeout, reset, malformed or broken"),
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
        if let (Some(n), Some(pos), true) = (recovers, rpos, c.retryable_declared && !c.retryable) {
            cx.error_at(
                *pos,
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
    recovers_at: &mut [Option<Pos>],
    empty: &Registry,
) -> Vec<crate::model::registry::StrayFixture> {
    let mut stray_fixtures = Vec::new();
    for (k, v) in fixtures {
        let Some(name) = k.as_str() else {
            cx.error(
                &[key("fixtures")],
                "fixtures are keyed by code name, such as RATE_LIMITED",
            );
            continue;
        };
        let fp = vec![key("fixtures"), key(name)];
        let Some((mut f, rpos)) = registry_fixture(cx, name, v, &fp, empty) else {
            continue;
        };
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

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFixtures {
    version: u32,
    fixtures: serde_yaml::Mapping,
}

/// A registry of given codes whose fixtures come from `text`, a document
/// with `version: 1` and a `fixtures:` section (the built-in registry).
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
        let mut list: Vec<Code> = codes
            .codes
            .iter()
            .map(|def| Code {
                def: def.clone(),
                retryable_declared: true,
                line: 0,
                fixture: None,
            })
            .collect();
        let mut recovers_at = vec![None; list.len()];
        let stray = fixtures_section(&mut cx, &raw.fixtures, &mut list, &mut recovers_at, &empty);
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
