//! One row of a matrix: its script, settings and expectations.

use std::time::Duration;

use crate::base::yaml::Seg;
use crate::model::expect::Expect;
use crate::model::script::RouteScript;
use crate::model::tape::TapeRow;
use crate::model::tolerance::Tolerance;

pub use faultmatrix_controller::{JitterInput, RequestSpec};

/// One row: a test.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Row {
    /// Unique within the file.
    pub name: String,
    /// Path of the row node (`rows[3]`).
    pub path: Vec<Seg>,
    /// Why the row is ignored, if it is.
    pub ignore: Option<String>,
    /// Free-form tags for selection.
    pub tags: Vec<String>,
    /// Where the row's answers come from.
    pub script: Script,
    /// Run settings after defaults were applied.
    pub settings: Settings,
    /// What must be observed.
    pub expect: Expect,
}

/// Where a row's answers come from: written `inject`, or a recorded tape.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub enum Script {
    /// What each route answers, in declaration order.
    Inject(Vec<RouteScript>),
    /// A recorded tape, replayed (or recorded) in order. Not stored by the
    /// model cache (a tape is a file of its own; a tape row loads cold).
    #[serde(skip)]
    Tape(Box<TapeRow>),
}

impl Row {
    /// The written scripts (none for a tape row).
    pub fn inject(&self) -> &[RouteScript] {
        match &self.script {
            Script::Inject(s) => s,
            Script::Tape(_) => &[],
        }
    }

    /// The routes the row scripts, in order, each once (a keyed side
    /// script `A GET /v1/models` counts as its route `A`).
    pub fn scripted_routes(&self) -> Vec<String> {
        let mut routes: Vec<String> = Vec::new();
        for s in self.inject() {
            let route = s.key().0;
            if !routes.iter().any(|r| r == route) {
                routes.push(route.to_string());
            }
        }
        routes
    }

    /// The row's tape, when it has one.
    pub fn tape(&self) -> Option<&TapeRow> {
        match &self.script {
            Script::Tape(t) => Some(t),
            Script::Inject(_) => None,
        }
    }
}

/// Run settings of a row (row overrides file defaults).
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Settings {
    /// Overrides the system's deadline.
    pub deadline: Option<Duration>,
    /// Jitter input.
    pub jitter: JitterInput,
    /// The request the system sends.
    pub request: RequestSpec,
    /// How long the clock keeps running after the system returns.
    pub horizon: Duration,
    /// Virtual time the system may run before the row fails as hung.
    pub budget: Duration,
    /// Calls after which the runaway guard stops the row.
    pub max_calls: u32,
    /// How far real waits may be from expected ones (over the wire only).
    pub tolerance: Tolerance,
    /// The system built from the row's own `policy` keys merged over the
    /// file's, when the row has some. The model cache stores how to build
    /// it again, not the system (`load::stored`).
    #[serde(skip)]
    pub system: Option<RowSystem>,
    /// A command system's environment for this row, added after the
    /// file's `system.env`.
    pub env: Vec<(String, String)>,
    /// Where the row's wall clock starts (`clock.wall`); default RFC
    /// 9110's example date.
    pub wall: Option<std::time::SystemTime>,
    /// Codes whose `max_attempts` the file's or the row's `codes:` sets,
    /// in the order applied (the row's after the file's).
    pub codes: Vec<crate::model::registry::CodeLimit>,
    /// The reference policy's routes whose `attempts` is written, with
    /// where (the row's `policy` when it sets `routes`, else the file's),
    /// shared by the rows that use the same: a failing row explains a
    /// route cut short by a code's `max_attempts` without reading the file
    /// again. The model cache stores each distinct list once.
    #[serde(skip)]
    pub attempts: std::sync::Arc<[WrittenAttempts]>,
}

/// A route's `attempts` as written in a reference policy.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct WrittenAttempts {
    /// The route.
    pub route: String,
    /// Its `attempts`.
    pub attempts: u64,
    /// Where the value is written.
    pub path: Vec<Seg>,
}

impl WrittenAttempts {
    /// The routes of a reference `policy` value at `policy_path` whose
    /// `attempts` is written.
    pub fn of(policy: &crate::base::yaml::Value, policy_path: &[Seg]) -> Vec<Self> {
        use crate::base::yaml::Value;
        let Some(routes) = policy.get("routes").and_then(Value::as_sequence) else {
            return Vec::new();
        };
        routes
            .iter()
            .enumerate()
            .filter_map(|(i, r)| {
                let route = r.get("name").and_then(Value::as_str)?.to_string();
                let attempts = r.get("attempts").and_then(Value::as_u64)?;
                let mut path = policy_path.to_vec();
                path.extend([
                    Seg::Key("routes".into()),
                    Seg::Index(i),
                    Seg::Key("attempts".into()),
                ]);
                Some(Self {
                    route,
                    attempts,
                    path,
                })
            })
            .collect()
    }
}

/// A system built for one row (its `policy` merged over the file's).
#[derive(Clone)]
pub struct RowSystem {
    /// The system.
    pub system: std::sync::Arc<dyn crate::contracts::system::System>,
    /// The deadline it applies, when it has one.
    pub deadline: Option<Duration>,
}

impl std::fmt::Debug for RowSystem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RowSystem")
            .field("deadline", &self.deadline)
            .finish_non_exhaustive()
    }
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            deadline: None,
            jitter: JitterInput::Seed(0),
            request: RequestSpec {
                size: 1000,
                ..RequestSpec::default()
            },
            horizon: Duration::from_secs(3600),
            budget: Duration::from_secs(3600),
            max_calls: 100,
            tolerance: Tolerance::default(),
            system: None,
            env: Vec::new(),
            wall: None,
            codes: Vec::new(),
            attempts: std::sync::Arc::from(Vec::new()),
        }
    }
}
