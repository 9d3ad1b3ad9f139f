//! Explore mode: generated failure sequences run against a file's system
//! and checked against invariants; the first violation is shrunk to a
//! minimal case and printed as a YAML row a QA engineer can commit.
//!
//! A generated case is a row (an `inject` script per route, jitter draws,
//! a deadline, a request) run by the same executor as hand-written rows,
//! on the row's paused clock; invariants read the observed run. Case `i`
//! of seed `s` is generated from `(s, i)` alone, so the same seed gives
//! the same cases, and the same first violation, on any thread count.
//!
//! | module | what it owns |
//! |---|---|
//! | [`prng`] | the deterministic generator |
//! | [`case`] | a case: steps per route, draws, deadline, request; as a row |
//! | [`generate`] | drawing cases from what routes can answer |
//! | [`check`] | the invariants, checked on an observed run |
//! | [`shrink`] | shrinking a failing case |
//! | [`render`] | a case as a YAML row |
//!
//! The guide is `docs/explore.md`.

pub mod case;
pub mod check;
pub mod generate;
pub mod prng;
pub mod render;
pub mod shrink;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::base::yaml;
use crate::engine::run::RunOptions;
use crate::exec::run::{ExecOptions, Observation};
use crate::load::policy::{Jitter, Policy};
use crate::load::systems::Systems;
use crate::model::invariants::{Invariant, InvariantSet};
use crate::model::{Matrix, SystemUnderTest};

pub use case::Case;
pub use check::{Declared, Violation};

/// How an exploration runs.
#[derive(Debug, Clone)]
pub struct Options {
    /// The seed cases are generated from.
    pub seed: u64,
    /// Most cases to run.
    pub cases: u64,
    /// Worker threads.
    pub threads: usize,
    /// Stop starting new cases after this instant (`--time`).
    pub until: Option<Instant>,
    /// Most runs spent shrinking one violation.
    pub shrink_runs: u32,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            seed: 1,
            cases: 10_000,
            threads: crate::engine::pool::default_threads(),
            until: None,
            shrink_runs: 4000,
        }
    }
}

/// A violation found and shrunk.
#[derive(Debug, Clone)]
pub struct Found {
    /// The seed of the run.
    pub seed: u64,
    /// The index of the first case that broke the invariant.
    pub index: u64,
    /// The violation of the shrunk case.
    pub violation: Violation,
    /// The invariant's one-line meaning.
    pub meaning: String,
    /// Calls of the first failing run.
    pub original_calls: usize,
    /// The shrunk case.
    pub case: Case,
    /// Calls of the shrunk case's run.
    pub calls: usize,
    /// Runs spent shrinking.
    pub shrink_runs: u32,
    /// The printed row.
    pub row: String,
    /// The printed row's name.
    pub row_name: String,
}

/// What an exploration did.
#[derive(Debug, Clone)]
pub struct Report {
    /// Cases run (all of them passed every invariant when nothing was found).
    pub cases: u64,
    /// Invariants checked.
    pub checked: Vec<String>,
    /// Invariants that could not be checked, and why.
    pub unchecked: Vec<(String, String)>,
    /// The first violation, shrunk.
    pub found: Option<Found>,
    /// Real time spent generating and running cases (shrinking excluded).
    pub elapsed: Duration,
}

/// A file's system, ready to explore.
pub struct Explorer {
    /// The matrix whose system is explored.
    pub matrix: Arc<Matrix>,
    /// The same file with the reference system, when its policy is a
    /// reference policy: printed rows expect what it does.
    pub oracle: Option<Arc<Matrix>>,
    /// What the file declares.
    pub declared: Declared,
    /// The invariants and generator settings.
    pub set: InvariantSet,
    /// What cases are drawn from.
    pub space: generate::Space,
    /// How rows run.
    pub exec: ExecOptions,
    text: String,
    dir: Option<std::path::PathBuf>,
    systems: Systems,
}

/// The file's `policy:` block read as the reference policy: when the block
/// is there or the system is `reference`, and it parses.
fn declared_policy(text: &str, system: &str) -> Option<Policy> {
    let v = yaml::parse_value(text).ok()?;
    match v.get("policy") {
        Some(p) => crate::load::policy::from_value(p).ok(),
        None if system == "reference" => Some(Policy::default()),
        None => None,
    }
}

/// `text` with its `rows:` replaced by `rows:` and `row` (a row as
/// [`render::row_yaml`] prints it); with `keep`, the file's rows stay and
/// `row` is appended after them.
pub fn with_row(text: &str, row: &str, keep: bool) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let top = |l: &str| !l.is_empty() && !l.starts_with([' ', '\t', '#', '-']);
    let start = lines.iter().position(|l| l.starts_with("rows:"));
    let Some(start) = start else {
        return format!("{}\nrows:\n{row}", text.trim_end());
    };
    let end = (start + 1..lines.len())
        .find(|&i| top(lines[i]))
        .unwrap_or(lines.len());
    let mut out: Vec<String> = lines[..start].iter().map(|s| s.to_string()).collect();
    out.push("rows:".into());
    if keep {
        let inline = lines[start].trim_start_matches("rows:").trim();
        if inline == "[]" || inline.is_empty() {
            out.extend(lines[start + 1..end].iter().map(|s| s.to_string()));
        }
        while out.last().is_some_and(|l| l.trim().is_empty()) {
            out.pop();
        }
        out.push(String::new());
    }
    out.push(row.trim_end().to_string());
    out.extend(lines[end..].iter().map(|s| s.to_string()));
    let mut s = out.join("\n");
    s.push('\n');
    s
}

impl Explorer {
    /// An explorer for a matrix loaded from `text` (in `dir`) with
    /// `systems`, checking `set`.
    pub fn new(
        matrix: Matrix,
        text: &str,
        dir: Option<&Path>,
        systems: &Systems,
        set: InvariantSet,
        exec: ExecOptions,
    ) -> Self {
        let name = matrix.system_name().to_string();
        let policy = declared_policy(text, &name);
        let oracle = match (&policy, &matrix.system) {
            (Some(_), SystemUnderTest::InProcess { .. }) => {
                let mut s = systems.clone();
                s.register(&name, Arc::new(crate::load::policy::build_reference));
                crate::load::load_text(&matrix.file, text, dir, &s)
                    .ok()
                    .map(Arc::new)
            }
            _ => None,
        };
        let mut routes: Vec<String> = match &policy {
            Some(p) => p.routes.iter().map(|r| r.name.clone()).collect(),
            None => Vec::new(),
        };
        if let (true, SystemUnderTest::Command(spec)) = (routes.is_empty(), &matrix.system) {
            routes = spec.routes.clone().unwrap_or_default();
        }
        if routes.is_empty() {
            for r in &matrix.rows {
                for s in r.inject() {
                    if !routes.contains(&s.route) {
                        routes.push(s.route.clone());
                    }
                }
            }
        }
        if routes.is_empty() {
            routes.push("A".into());
        }
        let body_paths = match &policy {
            Some(p) => p.body_paths.clone(),
            None => matrix.body_paths.clone(),
        };
        let attempt_timeout = policy
            .as_ref()
            .map_or(Duration::from_secs(60), |p| p.attempt_timeout);
        let declared = Declared {
            policy,
            routes: routes.clone(),
            registry: matrix.registry.clone(),
            lines_classify: body_paths == matrix.body_paths(),
            body_paths,
            wall_start: crate::load::policy::retry_after::default_wall_start(),
        };
        let space = generate::Space::new(
            routes,
            &matrix.registry,
            attempt_timeout,
            set.generate.clone(),
        );
        Self {
            matrix: Arc::new(matrix),
            oracle,
            declared,
            set,
            space,
            exec,
            text: text.to_string(),
            dir: dir.map(Path::to_path_buf),
            systems: systems.clone(),
        }
    }

    /// Case `index` of `seed`.
    pub fn case(&self, seed: u64, index: u64) -> Case {
        generate::case(&self.space, seed, index)
    }

    /// Runs a case against a matrix's system.
    pub fn run_on(&self, m: &Matrix, case: &Case) -> Observation {
        let row = case.to_row(&m.registry, self.set.generate.max_calls);
        crate::exec::run::run_row_with(m, &row, &self.exec)
    }

    /// Runs a case against the file's system.
    pub fn run(&self, case: &Case) -> Observation {
        self.run_on(&self.matrix, case)
    }

    /// The invariants that are checked, and why the others are not.
    pub fn checked(&self) -> (Vec<&Invariant>, Vec<(String, String)>) {
        let mut yes = Vec::new();
        let mut no = Vec::new();
        for inv in &self.set.invariants {
            match self.declared.unchecked(inv) {
                None => yes.push(inv),
                Some(why) => no.push((inv.name.clone(), why.to_string())),
            }
        }
        (yes, no)
    }

    /// The violations of one case, in checking order.
    pub fn violations(&self, case: &Case) -> (Vec<Violation>, Observation) {
        let obs = self.run(case);
        let v = check::check_all(&self.set.invariants, &self.declared, case, &obs);
        (v, obs)
    }

    /// Runs cases `0..opts.cases` (or until `opts.until`) and returns the
    /// first violating case of every invariant (all of them when `all`,
    /// else only the earliest case's), and the number of cases run.
    ///
    /// Workers take batches of consecutive cases in order from a shared
    /// counter (no wave barrier: a worker slowed by the machine's load
    /// holds up no other). Without `all`, a batch that starts after the
    /// earliest violation found so far is not started, and every batch
    /// before it runs to its own first violation, so the earliest
    /// violation is the same on any thread count.
    pub fn scan(&self, opts: &Options, all: bool) -> (BTreeMap<String, (u64, Violation)>, u64) {
        use std::sync::atomic::{AtomicU64, Ordering};
        const BATCH: u64 = 256;
        let threads = opts.threads.max(1);
        let batches = opts.cases.div_ceil(BATCH);
        let next = AtomicU64::new(0);
        let earliest = AtomicU64::new(u64::MAX);
        let ran = AtomicU64::new(0);
        let first: std::sync::Mutex<BTreeMap<String, (u64, Violation)>> =
            std::sync::Mutex::new(BTreeMap::new());
        let work = || loop {
            if opts.until.is_some_and(|u| Instant::now() >= u) {
                break;
            }
            let b = next.fetch_add(1, Ordering::Relaxed);
            let start = b * BATCH;
            if b >= batches || (!all && start > earliest.load(Ordering::Relaxed)) {
                break;
            }
            let end = (start + BATCH).min(opts.cases);
            let mut found: BTreeMap<String, (u64, Violation)> = BTreeMap::new();
            let mut done = 0;
            for i in start..end {
                let case = self.case(opts.seed, i);
                let (vs, _) = self.violations(&case);
                done += 1;
                for v in vs {
                    found.entry(v.invariant.clone()).or_insert((i, v));
                }
                if !all && !found.is_empty() {
                    earliest.fetch_min(i, Ordering::Relaxed);
                    break;
                }
            }
            ran.fetch_add(done, Ordering::Relaxed);
            let mut first = crate::base::lock(&first);
            for (k, v) in found {
                match first.get(&k) {
                    Some((i, _)) if *i <= v.0 => {}
                    _ => {
                        first.insert(k, v);
                    }
                }
            }
        };
        if threads == 1 {
            work();
        } else {
            std::thread::scope(|s| {
                for _ in 0..threads {
                    s.spawn(work);
                }
            });
        }
        let mut first = first.into_inner().unwrap_or_else(|e| e.into_inner());
        if !all && !first.is_empty() {
            // Keep only the earliest case's violations.
            let min = first.values().map(|(i, _)| *i).min().unwrap_or(0);
            first.retain(|_, (i, _)| *i == min);
        }
        (first, ran.into_inner())
    }

    /// Explores: runs cases until the first violation, shrinks it and
    /// prints it as a row.
    pub fn explore(&self, opts: &Options) -> Report {
        let started = Instant::now();
        let (first, cases) = self.scan(opts, false);
        let elapsed = started.elapsed();
        let (checked, unchecked) = self.checked();
        // Every invariant the earliest case breaks, in checking order: the
        // case is shrunk while it still breaks one of them.
        let targets: Vec<Invariant> = self
            .set
            .invariants
            .iter()
            .filter(|inv| first.contains_key(&inv.name))
            .cloned()
            .collect();
        let found = first.values().next().map(|(index, seen)| {
            self.shrink_any(&targets, opts.seed, *index, opts.shrink_runs, Some(seen))
        });
        Report {
            cases,
            checked: checked.iter().map(|i| i.name.clone()).collect(),
            unchecked,
            found,
            elapsed,
        }
    }

    /// Shrinks case `index` of `seed`, which breaks `inv` (`seen`: what the
    /// scan saw, said if no run breaks it again), and prints it.
    pub fn shrink_found(
        &self,
        inv: &Invariant,
        seed: u64,
        index: u64,
        budget: u32,
        seen: Option<&Violation>,
    ) -> Found {
        self.shrink_any(std::slice::from_ref(inv), seed, index, budget, seen)
    }

    /// The first of `targets` a run breaks.
    fn first_broken(
        &self,
        targets: &[Invariant],
        case: &Case,
        obs: &Observation,
    ) -> Option<(usize, Violation)> {
        targets
            .iter()
            .enumerate()
            .find_map(|(i, inv)| check::check(inv, &self.declared, case, obs).map(|v| (i, v)))
    }

    /// Shrinks case `index` of `seed`, which breaks one of `targets`, while
    /// it still breaks one of them, and prints it with the first it breaks.
    /// `seen`: the violation the scan saw; when the case no longer breaks
    /// anything (a run that is not deterministic, such as a real process
    /// on a loaded machine), the message says what that first run did.
    pub fn shrink_any(
        &self,
        targets: &[Invariant],
        seed: u64,
        index: u64,
        budget: u32,
        seen: Option<&Violation>,
    ) -> Found {
        let case = self.case(seed, index);
        let obs = self.run(&case);
        let original_calls = obs.calls.len();
        let (case, shrink_runs) = shrink::shrink(case, original_calls, budget, |c| {
            let obs = self.run(c);
            self.first_broken(targets, c, &obs).map(|_| obs.calls.len())
        });
        let obs = self.run(&case);
        let (i, violation) = self.first_broken(targets, &case, &obs).unwrap_or_else(|| {
            let first = seen.map_or(String::new(), |v| format!("; the first run: {}", v.message));
            (
                0,
                Violation {
                    invariant: targets.first().map_or(String::new(), |t| t.name.clone()),
                    message: format!(
                        "(the shrunk case no longer breaks it: a run is not deterministic{first})"
                    ),
                },
            )
        });
        let inv = &targets[i.min(targets.len().saturating_sub(1))];
        let row_name = format!("explore {} seed {seed} case {index}", inv.name);
        let row = self.print_row(
            &row_name,
            inv,
            &violation,
            seed,
            index,
            &case,
            &obs,
            original_calls,
            shrink_runs,
        );
        Found {
            seed,
            index,
            violation,
            meaning: inv.meaning.clone(),
            original_calls,
            calls: obs.calls.len(),
            case,
            shrink_runs,
            row,
            row_name,
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn print_row(
        &self,
        name: &str,
        inv: &Invariant,
        v: &Violation,
        seed: u64,
        index: u64,
        case: &Case,
        obs: &Observation,
        original_calls: usize,
        shrink_runs: u32,
    ) -> String {
        let expected = self.oracle.as_ref().map(|o| (o, self.run_on(o, case)));
        let basis = expected.as_ref().map_or(obs, |(_, o)| o);
        let served: Vec<(String, Vec<case::Step>)> = case
            .routes
            .iter()
            .enumerate()
            .filter_map(|(ri, (route, _))| {
                let n = basis
                    .calls
                    .iter()
                    .filter(|c| c.route == *route && c.started <= basis.returned_at)
                    .count() as u32;
                (n > 0).then(|| {
                    (
                        route.clone(),
                        (1..=n).filter_map(|a| case.step(ri, a).cloned()).collect(),
                    )
                })
            })
            .collect();
        let mut draws = case.draws.clone();
        if let Some(p) = &self.declared.policy {
            let jittered = |route: &str| {
                p.routes
                    .iter()
                    .find(|r| r.name == route)
                    .is_some_and(|r| p.backoff_for(r).jitter != Jitter::None)
            };
            let run: Vec<_> = basis
                .calls
                .iter()
                .filter(|c| c.started <= basis.returned_at)
                .collect();
            let retries = run
                .windows(2)
                .filter(|w| w[0].route == w[1].route && jittered(&w[0].route))
                .count();
            let at_end = matches!(basis.stop(), "deadline" | "guidance-refused")
                && run.last().is_some_and(|c| jittered(&c.route));
            let need = retries + at_end as usize;
            while draws.len() < need {
                draws.push(0.0);
            }
        }
        let observed: Vec<String> = obs.lines.iter().map(|l| l.render(None)).collect();
        let mut comments = vec![
            format!("explore: invariant `{}` broken: {}", inv.name, inv.meaning),
            format!("  {}", v.message),
            format!(
                "seed {seed}, case {index}; shrunk from {original_calls} to {} call{} in {shrink_runs} runs",
                obs.calls.len(),
                if obs.calls.len() == 1 { "" } else { "s" }
            ),
            format!("observed with system `{}` (stop: {}):", self.matrix.system_name(), obs.stop()),
        ];
        comments.extend(observed.iter().map(|l| format!("  {l}")));
        if observed.is_empty() {
            comments.push("  (no call)".into());
        }
        comments.push(if expected.is_some() {
            "expect: what the reference system does under this file's policy".into()
        } else {
            "expect: the observed run (no reference policy to compare with): edit it to what must happen".into()
        });
        // What the invariant is about, asserted so that the row fails
        // where the trace alone would not show it.
        let mut trace: Vec<String> = basis.lines.iter().map(|l| l.render(None)).collect();
        let mut extra = Vec::new();
        use crate::model::invariants::{Builtin, Rule};
        match inv.rule {
            Rule::Builtin(Builtin::SameRequest) => {
                for (line, l) in trace.iter_mut().zip(&basis.lines) {
                    line.push_str(&format!(" size={}", l.size));
                }
            }
            Rule::Builtin(Builtin::CreateKey) if case.request.create => {
                let key = if case.request.key { "$same" } else { "$absent" };
                extra.push(format!(
                    "requests: {{ \"*\": {{ headers: {{ idempotency-key: {key} }} }} }}"
                ));
            }
            // Time is what these are about, and trace lines show waits,
            // not how long a call ran: assert when the run returned.
            Rule::Builtin(Builtin::AttemptTimeout | Builtin::Deadline)
                if matches!(basis.end, crate::exec::run::RunEnd::Returned(_)) =>
            {
                extra.push(format!(
                    "elapsed: {}",
                    crate::base::duration::format(basis.returned_at)
                ));
            }
            Rule::Builtin(Builtin::RequestId) => {
                extra.push("error: { request_id: $request_id }".into());
            }
            Rule::Builtin(Builtin::BoundedError) => {
                if let crate::exec::run::RunEnd::Returned(Err(e)) = &basis.end {
                    let attempts: Vec<String> = e
                        .attempts
                        .iter()
                        .map(|a| {
                            format!(
                                "{} {}",
                                crate::base::label::call_label(&a.route, a.attempt),
                                a.code
                            )
                        })
                        .collect();
                    extra.push(format!("error: {{ attempts: [{}] }}", attempts.join(", ")));
                }
            }
            _ => {}
        }
        let text = render::RowText {
            name: name.to_string(),
            comments,
            served,
            draws,
            case,
            max_calls: (self.set.generate.max_calls != 100).then_some(self.set.generate.max_calls),
            trace,
            stop: Some(basis.stop().to_string()),
            extra,
        };
        render::row_yaml(&text, &self.matrix.registry)
    }

    /// Loads the file with `row` as its only row and runs it against the
    /// file's system and, when there is one, the reference: `Err` holds
    /// the failure message.
    pub fn verify(&self, row: &str, name: &str) -> Verified {
        let text = with_row(&self.text, row, false);
        let run = |systems: &Systems| -> Result<(), String> {
            let m = crate::load::load_text(&self.matrix.file, &text, self.dir.as_deref(), systems)
                .map_err(|e| e.to_string())?;
            let r = m
                .rows
                .iter()
                .find(|r| r.name == name)
                .ok_or_else(|| format!("no row `{name}` in the printed text"))?;
            let opts = RunOptions {
                exec: self.exec.clone(),
                ..RunOptions::default()
            };
            crate::engine::run::run_row(&m, r, &opts)
                .0
                .map_err(|f| f.render())
        };
        let reference = self.oracle.as_ref().map(|_| {
            let mut s = self.systems.clone();
            s.register(
                self.matrix.system_name(),
                Arc::new(crate::load::policy::build_reference),
            );
            run(&s)
        });
        Verified {
            system: run(&self.systems),
            reference,
        }
    }
}

/// A printed row run back: against the file's system (it should fail) and
/// the reference (it should pass).
#[derive(Debug, Clone)]
pub struct Verified {
    /// Against the file's system.
    pub system: Result<(), String>,
    /// Against the reference system, when the policy is a reference policy.
    pub reference: Option<Result<(), String>>,
}

/// An invariants file's text, parsed (re-exported for entry points).
pub fn invariants_from_text(
    file: &str,
    text: &str,
) -> Result<InvariantSet, crate::base::diag::FileErrors> {
    crate::load::invariants::load_invariants(file, text)
}

/// The invariants file beside a matrix: `x.yaml` → `x.invariants.yaml`.
pub fn sibling_invariants(matrix: &Path) -> std::path::PathBuf {
    let stem = matrix
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    matrix.with_file_name(format!("{stem}.invariants.yaml"))
}

impl Explorer {
    /// Opens a matrix file to explore: loads it with `systems`, and its
    /// invariants from `invariants` (or the sibling `<stem>.invariants.yaml`,
    /// else every built-in invariant). `display` names the file in messages.
    /// Errors are rendered diagnostics.
    pub fn open(
        path: &Path,
        display: &str,
        invariants: Option<(&Path, &str)>,
        systems: &Systems,
        exec: ExecOptions,
    ) -> Result<Self, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("error: cannot read `{display}`: {e}"))?;
        if crate::load::invariants::is_invariants(&text) {
            return Err(format!(
                "error: `{display}` is an invariants file: explore a matrix file (its invariants are read from `--invariants` or `<matrix>.invariants.yaml`)"
            ));
        }
        let dir = path.parent();
        let matrix =
            crate::load::load_text(display, &text, dir, systems).map_err(|e| e.to_string())?;
        let sibling = sibling_invariants(path);
        let sibling_display = sibling_invariants(Path::new(display));
        let inv_file = match invariants {
            Some((p, d)) => Some((p.to_path_buf(), d.to_string())),
            None if sibling.is_file() => {
                Some((sibling, sibling_display.to_string_lossy().into_owned()))
            }
            None => None,
        };
        let set = match inv_file {
            None => InvariantSet::default(),
            Some((p, d)) => {
                let t = std::fs::read_to_string(&p)
                    .map_err(|e| format!("error: cannot read `{d}`: {e}"))?;
                invariants_from_text(&d, &t).map_err(|e| e.to_string())?
            }
        };
        Ok(Self::new(matrix, &text, dir, systems, set, exec))
    }
}
