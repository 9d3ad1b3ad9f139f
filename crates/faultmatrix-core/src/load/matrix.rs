//! Loading a matrix file: the fast typed path for well-formed files, the
//! slow path that reports every error, the registry and system it names,
//! and its rows.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use super::ctx::{child, dyn_key, key, syntax_error, Ctx};
use super::raw::{RawMatrix, RawRow, RawSettings};
use super::rows::{row_tape, validate_row, TapePlace};
use super::settings::apply_settings;
use crate::base::confine;
use crate::base::diag::{did_you_mean, Diagnostic, FileErrors, LoadErrorKind};
use crate::base::yaml::{self, Pos, Seg, Value};
use crate::contracts::system::System;
use crate::load::cache::{RegistryCache, RegistryError, RegistryErrorKind};
use crate::load::stored::{ModelCache, Recipe, Using};
use crate::load::systems::Systems;
use crate::model::{Matrix, Script, Settings, SystemUnderTest};

/// What loading files needs: the systems a `system:` key may name, and the
/// registries already parsed in this run (shared by every file a run
/// loads; none is kept beyond the loader).
#[derive(Default)]
pub struct Loader {
    /// Systems by name.
    pub systems: Systems,
    /// Registry files parsed once per text.
    pub registries: RegistryCache,
    /// The run's working directory: paths in messages are shown relative
    /// to it (empty: as given).
    pub cwd: PathBuf,
    /// Blessing: a row that asserts nothing yet loads as pending (its
    /// expectations are written from what it does) instead of an error.
    pub bless: bool,
    /// The configured roots (see [`crate::base::confine`]): a matrix's
    /// paths stay inside the longest root holding it, else inside its own
    /// directory.
    pub roots: Vec<PathBuf>,
    /// Where validated files are kept for the next run (`None`: nothing is
    /// kept; see [`crate::load::stored`]).
    pub cache: Option<Arc<ModelCache>>,
}

impl Loader {
    /// A loader for these systems, with an empty registry cache; paths are
    /// shown as given.
    pub fn new(systems: Systems) -> Self {
        Self::in_dir(systems, PathBuf::new())
    }

    /// A loader for a run in this working directory (the entry points use
    /// their captured environment's).
    pub fn in_dir(systems: Systems, cwd: PathBuf) -> Self {
        Self {
            systems,
            registries: RegistryCache::in_dir(cwd.clone()),
            cwd,
            bless: false,
            roots: Vec::new(),
            cache: None,
        }
    }

    /// Adds the roots a matrix's paths must stay inside (the directories a
    /// run was given).
    pub fn with_roots(mut self, roots: impl IntoIterator<Item = PathBuf>) -> Self {
        self.roots.extend(roots);
        self
    }

    /// Keeps validated files in `cache` and reads them back from it when
    /// nothing they were loaded from changed.
    pub fn with_cache(mut self, cache: Arc<ModelCache>) -> Self {
        self.cache = Some(cache);
        self
    }

    /// What the model cache checks and rebuilds a stored file with.
    fn using(&self) -> Using<'_> {
        Using {
            systems: &self.systems,
            registries: &self.registries,
            roots: &self.roots,
            bless: self.bless,
        }
    }

    /// Loads and validates one matrix file. `display` is the name shown in
    /// messages and test ids.
    pub fn load_file(&self, path: &Path, display: &str) -> Result<Matrix, FileErrors> {
        let unreadable = |pos: Pos, why: String| FileErrors {
            kind: LoadErrorKind::Unreadable,
            file: display.to_string(),
            source: None,
            diagnostics: vec![Diagnostic::new(
                display,
                pos,
                format!("cannot read the file: {why}"),
            )],
        };
        let start = Pos { line: 1, col: 1 };
        if let Err(why) = confine::matrix_file(&self.roots, path) {
            return Err(unreadable(start, why));
        }
        match confine::read_text(path, confine::MAX_FILE_BYTES) {
            Ok(text) => self.load_text_at(display, &text, path),
            Err(e @ confine::ReadError::NotUtf8 { line, col }) => {
                Err(unreadable(Pos { line, col }, e.to_string()))
            }
            Err(e) => Err(unreadable(start, e.to_string())),
        }
    }

    /// Validates matrix text. `dir` resolves a relative `registry:` path.
    pub fn load_text(
        &self,
        display: &str,
        text: &str,
        dir: Option<&Path>,
    ) -> Result<Matrix, FileErrors> {
        let mut cx = Ctx::new(display, text);
        cx.pending_ok = self.bless;
        let result = load_inner(&mut cx, text, dir, None, self, None);
        cx.finish(result)
    }

    /// Validates the text of the matrix file at `path` (its directory
    /// resolves relative paths; no tape may be the file itself).
    pub fn load_text_at(
        &self,
        display: &str,
        text: &str,
        path: &Path,
    ) -> Result<Matrix, FileErrors> {
        self.load_at(display, text, path, self.cache.as_ref())
    }

    /// [`Self::load_text_at`] for a part of the file at `path` (a chunk of
    /// a large file's rows under its header): never read from or kept in
    /// the model cache, whose entry is the whole file's.
    pub fn load_part_at(
        &self,
        display: &str,
        text: &str,
        path: &Path,
    ) -> Result<Matrix, FileErrors> {
        self.load_at(display, text, path, None)
    }

    fn load_at(
        &self,
        display: &str,
        text: &str,
        path: &Path,
        cache: Option<&Arc<ModelCache>>,
    ) -> Result<Matrix, FileErrors> {
        if let Some(cache) = cache {
            if let Some(m) = cache.get(&self.using(), display, text, path) {
                return Ok(m);
            }
        }
        let mut cx = Ctx::new(display, text);
        cx.pending_ok = self.bless;
        let mut recipe = cache.map(|_| Recipe::default());
        let result = load_inner(
            &mut cx,
            text,
            path.parent(),
            Some(path),
            self,
            recipe.as_mut(),
        );
        let result = cx.finish(result);
        if let (Some(cache), Some(recipe), Ok(m)) = (cache, recipe, &result) {
            cache.put(&self.using(), display, text, path, m, recipe);
        }
        result
    }
}

/// Loads and validates one matrix file with its own loader (registries are
/// parsed afresh: a run uses one [`Loader`] for all its files).
pub fn load_file(path: &Path, display: &str, systems: &Systems) -> Result<Matrix, FileErrors> {
    Loader::new(systems.clone()).load_file(path, display)
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
    #[serde(default)]
    clock: Option<super::clock::RawClock>,
    #[serde(default)]
    codes: Option<super::codes::RawCodes>,
    /// Boxed: a row's raw form is a kilobyte, and a growing `Vec` of them
    /// copied 1.7 KB a row (1,750 instructions of a row's load), where
    /// boxes cost one allocation each (clippy's `vec_box` assumes small
    /// values).
    #[allow(clippy::vec_box)]
    rows: Vec<Box<RawRow>>,
}

impl FastMatrix {
    #[allow(clippy::vec_box)]
    fn split(self) -> (RawMatrix, Option<Vec<Box<RawRow>>>) {
        let raw = RawMatrix {
            title: self.title,
            system: self.system,
            policy: self.policy,
            registry: self.registry,
            defaults: self.defaults,
            tapes: self.tapes,
            clock: self.clock,
            codes: self.codes,
            rows: Vec::new(),
        };
        (raw, Some(self.rows))
    }
}

/// What rows are checked against: the system's routes, body paths and
/// deadline (a command declares only its routes, and builds no system).
struct Checked {
    system: Option<Arc<dyn System>>,
    routes: Option<Vec<String>>,
    body_paths: Vec<String>,
    deadline: Option<Duration>,
}

/// Validates matrix text with its own loader. `dir` resolves a relative
/// `registry:` path.
pub fn load_text(
    display: &str,
    text: &str,
    dir: Option<&Path>,
    systems: &Systems,
) -> Result<Matrix, FileErrors> {
    Loader::new(systems.clone()).load_text(display, text, dir)
}

fn load_inner(
    cx: &mut Ctx<'_>,
    text: &str,
    dir: Option<&Path>,
    file: Option<&Path>,
    loader: &Loader,
    mut recipe: Option<&mut Recipe>,
) -> Option<Matrix> {
    let systems = &loader.systems;
    // Every path the matrix names stays inside this root.
    let Some(root) = confine::root_for(&loader.roots, dir) else {
        cx.error(&[], "the matrix file's folder cannot be resolved");
        return None;
    };
    let here = dir.unwrap_or(Path::new(""));
    // Fast path: a well-formed file goes straight into typed rows, without
    // an intermediate `Value` tree. Any shape error falls back to the slow
    // path below, which collects every error of the file with its position.
    let mut row_name_positions = None;
    let (raw, mut typed_rows) = match yaml::from_str_noting_row_names::<FastMatrix>(text) {
        Ok((f, noted)) => {
            row_name_positions = noted;
            f.split()
        }
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
        None => super::registry::builtin(),
        Some(rel) => {
            let path = dir.map_or_else(|| Path::new(rel).to_path_buf(), |d| d.join(rel));
            if let Err(why) = confine::resolve(&root, here, rel, confine::Want::ExistingFile) {
                let pos = cx.pos(&[key("registry")]);
                cx.error_at(
                    pos,
                    format!("registry {why}"),
                    Some(
                        "give a registry file inside the matrices' tree, relative to this file"
                            .into(),
                    ),
                    None,
                );
                return None;
            }
            match loader.registries.load_with_text(&path) {
                Ok((r, read)) => {
                    if let Some(recipe) = recipe.as_deref_mut() {
                        recipe.registry = Some((rel.clone(), read));
                    }
                    r
                }
                Err(e) => {
                    registry_load_error(cx, &loader.registries.display(&path), e);
                    return None;
                }
            }
        }
    };

    // The file's `codes:`: limits over the registry's, for the system.
    let file_limits = match &raw.codes {
        Some(c) => super::codes::validate(cx, c, &[key("codes")], &registry),
        None => Vec::new(),
    };
    if let Some(recipe) = recipe.as_deref_mut() {
        recipe.file_limits = file_limits.clone();
        recipe.policy = raw.policy.clone();
    }
    let sys_registry = registry.limited(&file_limits);

    // System.
    let (sut_name, command) = match &raw.system {
        None => ("reference".to_string(), None),
        Some(Value::String(s)) => (s.clone(), None),
        Some(v @ Value::Mapping(_)) => match super::command::parse_system(v, dir) {
            Ok(spec) => {
                if let Some(written) = v.get("cwd").and_then(Value::as_str) {
                    if let Err(why) = confine::resolve(&root, here, written, confine::Want::Dir) {
                        cx.error(&[key("system"), key("cwd")], format!("`cwd`: {why}"));
                        return None;
                    }
                }
                ("command".to_string(), Some(Arc::new(spec)))
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
    // What the rows are checked against: the system's routes, body paths
    // and deadline (a command declares only its routes).
    let built: Option<Checked> = match &command {
        Some(spec) => Some(Checked {
            system: None,
            routes: spec.routes.clone(),
            body_paths: Vec::new(),
            deadline: None,
        }),
        None => {
            let Some(factory) = systems.get(&sut_name) else {
                let names: Vec<&str> = systems.names().collect();
                let pos = cx.pos(&[key("system")]);
                cx.error_at(
                    pos,
                    format!("unknown system `{sut_name}`"),
                    Some(format!("expected one of: {}", names.join(", "))),
                    did_you_mean(&sut_name, names.iter().copied()),
                );
                return None;
            };
            let policy = raw.policy.clone().unwrap_or(Value::Null);
            match factory(&policy, &sys_registry) {
                Ok(b) => Some(Checked {
                    system: Some(b.system),
                    routes: b.routes,
                    body_paths: b.body_paths,
                    deadline: b.deadline,
                }),
                Err(errors) => {
                    for e in errors {
                        cx.yaml_error(e);
                    }
                    None
                }
            }
        }
    };

    if let Some(names) = built.as_ref().and_then(|b| b.routes.as_deref()) {
        let place = if command.is_some() {
            RoutesAt::Command
        } else if sut_name == "reference" {
            RoutesAt::Policy
        } else {
            RoutesAt::System
        };
        check_route_names(cx, names, place);
    }

    if command.is_some() && raw.codes.is_some() {
        cx.error(
            &[key("codes")],
            "`codes` sets the limits of an in-process system; a command system has its own retry configuration (set `env` in `system:`)",
        );
    }

    // Defaults.
    let mut base = Settings {
        codes: file_limits,
        ..Settings::default()
    };
    let reference = command.is_none() && sut_name == "reference";
    if let (true, Some(p)) = (reference, &raw.policy) {
        base.attempts = Arc::from(crate::model::row::WrittenAttempts::of(p, &[key("policy")]));
    }
    if let Some(d) = &raw.defaults {
        apply_settings(cx, &mut base, d, &[key("defaults")]);
    }
    if let Some(wall) = raw.clock.as_ref().and_then(|c| c.wall.as_deref()) {
        match super::clock::parse_wall(wall) {
            Ok(at) => base.wall = Some(at),
            Err(e) => cx.error(&[key("clock"), key("wall")], e),
        }
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
    let check_stops = sut_name == "reference";
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
    let count = typed_rows.as_ref().map_or(raw.rows.len(), Vec::len);
    cx.row_names = match &typed_rows {
        Some(rows) => rows.iter().map(|r| Some(r.name.clone())).collect(),
        None => raw
            .rows
            .iter()
            .map(|r| r.get("name").and_then(Value::as_str).map(str::to_string))
            .collect(),
    };
    // The row each name was first given to (the names were just read:
    // they are hashed borrowed, not copied again).
    let first_named: Vec<Option<usize>> = {
        let mut seen: HashMap<&str, usize> = HashMap::with_capacity(count);
        (cx.row_names.iter().enumerate())
            .map(|(i, n)| {
                let n = n.as_deref()?;
                match seen.entry(n) {
                    std::collections::hash_map::Entry::Occupied(e) => Some(*e.get()),
                    std::collections::hash_map::Entry::Vacant(e) => {
                        e.insert(i);
                        None
                    }
                }
            })
            .collect()
    };
    let mut typed = typed_rows.take().map(Vec::into_iter);
    for i in 0..count {
        let path = vec![key("rows"), Seg::Index(i)];
        let mut rr: RawRow = match typed.as_mut().and_then(Iterator::next) {
            Some(r) => *r,
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
        if let Some(first) = first_named.get(i).copied().flatten() {
            let first_line = cx.pos(&[key("rows"), Seg::Index(first), key("name")]).line;
            cx.error(
                &child(&path, key("name")),
                format!("duplicate row name `{}`: row names are unique in a file (first used on line {first_line})", crate::base::label::escape(&rr.name)),
            );
        }
        let (tape, record) = (rr.tape.take(), rr.record.take());
        let has_inject = rr.inject.is_some();
        // A row's own policy keys build its own system.
        // The file's routes, unless the row's own policy declares others.
        let mut own_routes: Option<Vec<String>> = None;
        let mut row_system = None;
        // A row's own `codes` build its own system too, on the registry
        // with the file's limits and then the row's.
        let row_limits = match rr.codes.take() {
            Some(_) if command.is_some() => {
                cx.error(
                    &child(&path, key("codes")),
                    "`codes` sets the limits of an in-process system; a command system has its own retry configuration (set `env` per row)",
                );
                Vec::new()
            }
            Some(c) => super::codes::validate(cx, &c, &child(&path, key("codes")), &registry),
            None => Vec::new(),
        };
        let row_registry = sys_registry.limited(&row_limits);
        let row_attempts = match &rr.policy {
            Some(p) if reference && p.get("routes").is_some() => {
                let at = child(&path, key("policy"));
                Some(Arc::from(crate::model::row::WrittenAttempts::of(p, &at)))
            }
            _ => None,
        };
        let over = match rr.policy.take() {
            Some(p) => Some(p),
            None if !row_limits.is_empty() => Some(Value::Mapping(Default::default())),
            None => None,
        };
        let mut row_recipe = None;
        if let Some(over) = over {
            match (&command, systems.get(&sut_name)) {
                (None, Some(factory)) => {
                    match super::row_policy::build(
                        cx,
                        factory,
                        raw.policy.as_ref(),
                        &over,
                        &path,
                        &row_registry,
                    ) {
                        Some((s, r, merged)) => {
                            own_routes = r;
                            row_system = Some(s);
                            if recipe.is_some() {
                                row_recipe = Some((merged, row_limits.clone()));
                            }
                        }
                        None => continue,
                    }
                }
                (Some(_), _) => cx.error(
                    &child(&path, key("policy")),
                    "a command system has no `policy`: its configuration is its own (set `env` in `system:`)",
                ),
                (None, None) => {}
            }
        }
        let row_clock = rr.clock.take();
        let row_env: Vec<(String, String)> = match rr.env.take() {
            Some(_) if command.is_none() => {
                cx.error(
                    &child(&path, key("env")),
                    "`env` is for a command system (`system: { command: [...] }`); an in-process system takes `policy` keys per row",
                );
                Vec::new()
            }
            Some(env) => env.into_iter().collect(),
            None => Vec::new(),
        };
        if let Some(mut row) = validate_row(
            cx,
            rr,
            path.clone(),
            &base,
            own_routes.as_deref().or(routes.as_deref()),
            &registry,
            check_stops,
        ) {
            if let Some(spec) = &command {
                refuse_refused_over_the_wire(cx, &row, &path, spec.clock);
            }
            row.settings.system = row_system;
            row.settings.env = row_env;
            row.settings.codes.extend(row_limits);
            if let Some(a) = row_attempts {
                row.settings.attempts = a;
            }
            if let Some(wall) = row_clock.as_ref().and_then(|c| c.wall.as_deref()) {
                match super::clock::parse_wall(wall) {
                    Ok(at) => row.settings.wall = Some(at),
                    Err(e) => cx.error(&child(&path, key("clock")), e),
                }
            }
            let place = TapePlace {
                dir,
                config: &tape_config,
                cwd: &loader.cwd,
                root: &root,
                matrix: file,
            };
            if let Some(t) = row_tape(cx, tape, record, has_inject, &path, &place) {
                row.script = Script::Tape(Box::new(t));
            }
            if let Some(recipe) = recipe.as_deref_mut() {
                recipe.rows.push(row_recipe);
            }
            rows.push(row);
        }
    }
    // Snapshot rows need distinct snapshot names.
    let mut snaps: HashMap<String, usize> = HashMap::new();
    for row in rows.iter().filter(|r| r.expect.snapshot) {
        let name = crate::base::label::snapshot_name(cx.file, &row.name);
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
    let Checked {
        system: built_system,
        body_paths,
        deadline,
        ..
    } = built;
    let system = match (command, built_system) {
        (Some(spec), _) => SystemUnderTest::Command(spec),
        (None, Some(system)) => SystemUnderTest::InProcess {
            name: sut_name,
            system,
        },
        (None, None) => {
            cx.error(
                &[key("system")],
                format!("system `{sut_name}` built nothing"),
            );
            return None;
        }
    };
    if let SystemUnderTest::InProcess { system, name } = &system {
        refuse_keyed_scripts_in_process(cx, &rows, system.as_ref(), name);
        if !cx.diags.is_empty() {
            return None;
        }
    }
    let mut matrix = Matrix::new(
        cx.file.to_string(),
        Arc::from(text),
        raw.title,
        system,
        registry,
        rows,
        body_paths,
    );
    matrix.deadline = deadline;
    if let Some(at) = row_name_positions.filter(|at| at.len() == count) {
        matrix.note_row_name_positions(at);
    }
    Some(matrix)
}

/// Where a matrix declares its routes, for positions.
#[derive(Clone, Copy)]
enum RoutesAt {
    Policy,
    Command,
    System,
}

/// Every route name can be written in a trace line (`A1`, `gpt4#1`) and
/// gets its own `FAULTMATRIX_URL_<ROUTE>` variable: `a-b` and `a_b` (or `a`
/// and `A`) would share one, and a failure over HTTP would be blamed on the
/// wrong route.
fn check_route_names(cx: &mut Ctx<'_>, names: &[String], at: RoutesAt) {
    let path = |i: usize| match at {
        RoutesAt::Policy => vec![key("policy"), key("routes"), Seg::Index(i), key("name")],
        RoutesAt::Command => vec![key("system"), key("routes"), Seg::Index(i)],
        RoutesAt::System => vec![key("system")],
    };
    let mut vars: HashMap<String, &str> = HashMap::with_capacity(names.len());
    for (i, name) in names.iter().enumerate() {
        let writable = !name.is_empty()
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
        if !writable {
            let shown = crate::base::label::escape(name);
            cx.error(
                &path(i),
                format!("route name `{shown}` cannot be written in a trace line: use ASCII letters, digits, `-`, `_` and `.`"),
            );
            continue;
        }
        let var = crate::base::label::route_var("FAULTMATRIX_URL_", name);
        if let Some(first) = vars.get(&var) {
            if *first != name.as_str() {
                cx.error(
                    &path(i),
                    format!("routes `{first}` and `{name}` would share the variable {var} over HTTP: rename one"),
                );
            }
        } else {
            vars.insert(var, name);
        }
    }
}

/// One diagnostic on the `registry:` key of a matrix whose registry does
/// not load; the registry's own errors are reported for its file (by
/// `faultmatrix check` or as a failing test named after it).
fn registry_load_error(cx: &mut Ctx<'_>, shown: &str, e: RegistryError) {
    let pos = cx.pos(&[key("registry")]);
    match e.kind {
        RegistryErrorKind::Read(why) => cx.error_at(
            pos,
            format!("cannot read registry `{shown}`: {why}"),
            Some("the path is relative to this file".into()),
            None,
        ),
        RegistryErrorKind::Invalid(errors) => {
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

/// A command system is served over sockets. On the virtual clock the
/// client's shim asks the runner before each connection to a fixture
/// route, so a `refused` entry refuses exactly that connection. On the
/// real clock nothing asks: a listener cannot refuse one connection and
/// accept the next, and closing it meanwhile would hide the call from the
/// trace, so such rows are refused when the file loads. A keyed script
/// (`A GET /v1/models`) cannot say `refused` over the wire either: the
/// connection comes before the request that carries the method and path.
fn refuse_refused_over_the_wire(
    cx: &mut Ctx<'_>,
    row: &crate::model::Row,
    path: &[Seg],
    clock: crate::model::command::Clock,
) {
    for script in row.inject() {
        if !script
            .entries
            .iter()
            .any(|e| matches!(e.answer, crate::model::Answer::Refused))
        {
            continue;
        }
        let at = child(&child(path, key("inject")), dyn_key(&script.route));
        if script.key().1.is_some() {
            cx.error(
                &at,
                format!(
                    "script `{}` answers `refused`, but a connection is refused before its request says its method and path; put `refused` in route {}'s own script (see docs/over-the-wire.md#refused-connections)",
                    script.route,
                    script.key().0
                ),
            );
        } else if clock == crate::model::command::Clock::Real {
            cx.error(
                &at,
                format!(
                    "route {} answers `refused`, which a command system on the real clock cannot be given: a listener cannot refuse one connection and accept the next, so the call could not be both refused and observed; write `clock: virtual` in `system:` (a Python or Node client: its shim asks the runner before each connection) or run the row in process (see docs/over-the-wire.md#refused-connections)",
                    script.route
                ),
            );
        }
    }
}

/// Keyed scripts (`A GET /v1/models`) need calls that carry a method and a
/// path: a command over the wire or the HTTP seam. An in-process system
/// calls the transport without either, so its rows cannot have them.
fn refuse_keyed_scripts_in_process(
    cx: &mut Ctx,
    rows: &[crate::model::Row],
    file_system: &dyn System,
    name: &str,
) {
    for row in rows {
        let system = row
            .settings
            .system
            .as_ref()
            .map_or(file_system, |s| s.system.as_ref());
        if system.sees_requests() {
            continue;
        }
        for s in row.inject().iter().filter(|s| s.key().1.is_some()) {
            let at = child(&child(&row.path, key("inject")), dyn_key(&s.route));
            let pos = cx.key_pos(&at);
            cx.error_at(
                pos,
                format!(
                    "keyed script `{}` in row `{}`: system `{name}` runs in process, where calls have no method or path to match",
                    s.route, row.name
                ),
                Some("keyed scripts need a command system (over the wire) or an HTTP-seam system".into()),
                Some("script the route's calls in order under its plain name (`A:`)".into()),
            );
        }
    }
}
