//! Invariants for explore mode: rules that must hold for every run of a
//! system, whatever its upstreams answer ("calls per route never exceed
//! the route's budget"). `faultmatrix explore` generates answer sequences,
//! runs them and checks each run against an [`InvariantSet`]; the first
//! violation is shrunk to a minimal row.
//!
//! The built-in invariants ([`Builtin`]) read the observed trace and the
//! file's declared policy; a team adds its own rules in YAML ([`Rule`]).
//! Loading lives in `load::invariants`; checking in the engine.

use std::time::Duration;

/// The built-in invariants, in the order they are checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Builtin {
    /// Calls per route within the route's budget, the total within the sum.
    Budget,
    /// Nothing is called after a success.
    NoCallAfterSuccess,
    /// A terminal code: one call, one escalation, no timer, no jitter draw.
    Terminal,
    /// The shared deadline: no call starts or runs past it, the run returns by it.
    Deadline,
    /// Server guidance is honoured, and above the cap refused or clamped as configured.
    Guidance,
    /// Waits lie within the declared backoff (exact for explicit jitter draws).
    Backoff,
    /// No call runs past the attempt timeout (capped by what is left of the deadline).
    AttemptTimeout,
    /// Nothing is called after the system returned.
    NeverCalledAgain,
    /// The system returns: it neither hangs nor runs into the runaway guard.
    Returns,
    /// Exactly one escalation per failed run, none for a success.
    OneEscalation,
    /// Output delivered by a stream is never replayed.
    NoReplay,
    /// A create without an idempotency key is never retried after an unknown outcome.
    CreateKey,
    /// The stop reason matches what happened.
    HonestStop,
    /// The final error keeps the initial request id.
    RequestId,
    /// The final error stays bounded.
    BoundedError,
    /// Every attempt resends the same request.
    SameRequest,
    /// Jitter is drawn only for a backoff.
    JitterDraws,
}

impl Builtin {
    /// Every built-in invariant, in checking order.
    pub const ALL: [Builtin; 17] = [
        Builtin::Budget,
        Builtin::NoCallAfterSuccess,
        Builtin::Terminal,
        Builtin::Deadline,
        Builtin::Guidance,
        Builtin::Backoff,
        Builtin::AttemptTimeout,
        Builtin::NeverCalledAgain,
        Builtin::Returns,
        Builtin::OneEscalation,
        Builtin::NoReplay,
        Builtin::CreateKey,
        Builtin::HonestStop,
        Builtin::RequestId,
        Builtin::BoundedError,
        Builtin::SameRequest,
        Builtin::JitterDraws,
    ];

    /// The name used in YAML and messages (`budget`).
    pub fn name(self) -> &'static str {
        match self {
            Builtin::Budget => "budget",
            Builtin::NoCallAfterSuccess => "no-call-after-success",
            Builtin::Terminal => "terminal",
            Builtin::Deadline => "deadline",
            Builtin::Guidance => "guidance",
            Builtin::Backoff => "backoff",
            Builtin::AttemptTimeout => "attempt-timeout",
            Builtin::NeverCalledAgain => "never-called-again",
            Builtin::Returns => "returns",
            Builtin::OneEscalation => "one-escalation",
            Builtin::NoReplay => "no-replay",
            Builtin::CreateKey => "create-key",
            Builtin::HonestStop => "honest-stop",
            Builtin::RequestId => "request-id",
            Builtin::BoundedError => "bounded-error",
            Builtin::SameRequest => "same-request",
            Builtin::JitterDraws => "jitter-draws",
        }
    }

    /// One line: what must hold.
    pub fn meaning(self) -> &'static str {
        match self {
            Builtin::Budget => "calls per route never exceed the route's budget, and the total never exceeds the sum of the budgets",
            Builtin::NoCallAfterSuccess => "once an answer succeeded, nothing is called again",
            Builtin::Terminal => "a terminal code gets exactly one call and one escalation, and no timer or jitter draw after it",
            Builtin::Deadline => "total virtual time never exceeds the deadline, and no call starts (no wait ends) at or past it",
            Builtin::Guidance => "a retry never waits less than the server's guidance when it is honoured; guidance above the cap is refused or clamped as configured",
            Builtin::Backoff => "every wait lies within the backoff bounds of the declared policy (exact for explicit jitter draws), and a switch waits the switch delay",
            Builtin::AttemptTimeout => "no call runs longer than the attempt timeout, capped by what is left of the deadline",
            Builtin::NeverCalledAgain => "once the system returned, nothing is called again",
            Builtin::Returns => "the system returns: it neither hangs past the row's budget nor runs into the runaway guard",
            Builtin::OneEscalation => "a failed run escalates exactly once, a successful one never",
            Builtin::NoReplay => "once a stream delivered output, the request is never sent again (on any route)",
            Builtin::CreateKey => "a create without an idempotency key is never retried after a timeout, reset, malformed answer or broken stream",
            Builtin::HonestStop => "the stop reason matches the trace: success after a success, terminal after a terminal code, partial-output after output, deadline only with a deadline",
            Builtin::RequestId => "the final error keeps the initial request id",
            Builtin::BoundedError => "the final error lists at most 16 attempts (the rest are counted)",
            Builtin::SameRequest => "every attempt resends the same request: same request id, size, model and stream flag",
            Builtin::JitterDraws => "jitter is drawn only to compute a backoff: at most one draw per jittered retry, plus one refused at the end",
        }
    }

    /// The invariant with this name.
    pub fn from_name(name: &str) -> Option<Builtin> {
        Builtin::ALL.into_iter().find(|b| b.name() == name)
    }
}

/// What an invariant checks.
#[derive(Debug, Clone, PartialEq)]
pub enum Rule {
    /// A built-in invariant.
    Builtin(Builtin),
    /// At most `calls` calls on `route` (every route together when `None`).
    MaxCalls {
        /// The route, or all.
        route: Option<String>,
        /// The most calls allowed.
        calls: u32,
    },
    /// The system returns within this much virtual time.
    MaxElapsed(Duration),
    /// Nothing is called after an answer classified as this code.
    NeverAfter(String),
}

/// One invariant: a name, a one-line meaning, and its rule.
#[derive(Debug, Clone, PartialEq)]
pub struct Invariant {
    /// Unique in its set (`budget`, or a team's own name).
    pub name: String,
    /// One line: what must hold.
    pub meaning: String,
    /// What is checked.
    pub rule: Rule,
}

impl Invariant {
    /// A built-in invariant with its own name and meaning.
    pub fn builtin(b: Builtin) -> Self {
        Self {
            name: b.name().into(),
            meaning: b.meaning().into(),
            rule: Rule::Builtin(b),
        }
    }
}

/// How often each kind of answer is generated (relative weights; 0 turns
/// a kind off).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Weights {
    /// `ok`.
    pub ok: u32,
    /// A bare status from [`Generate::statuses`].
    pub status: u32,
    /// A registry code's fixture.
    pub code: u32,
    /// A status with another code's error body (the body decides).
    pub mixed: u32,
    /// A status with `Retry-After` or `retry-after-ms`, in every form and range.
    pub retry_after: u32,
    /// No answer: the client must time out.
    pub timeout: u32,
    /// A connection reset.
    pub reset: u32,
    /// A response that is not HTTP.
    pub malformed: u32,
    /// A body cut short.
    pub truncated: u32,
    /// A stream: complete, or breaking before or after output.
    pub stream: u32,
    /// An answer delayed around the attempt timeout.
    pub slow: u32,
}

impl Default for Weights {
    fn default() -> Self {
        Self {
            ok: 3,
            status: 2,
            code: 4,
            mixed: 1,
            retry_after: 3,
            timeout: 1,
            reset: 1,
            malformed: 1,
            truncated: 1,
            stream: 2,
            slow: 1,
        }
    }
}

/// What explore generates.
#[derive(Debug, Clone, PartialEq)]
pub struct Generate {
    /// Most answers scripted per route (the last repeats for further calls).
    pub calls: u32,
    /// Most explicit jitter draws per case.
    pub draws: u32,
    /// Answer weights.
    pub weights: Weights,
    /// Statuses a bare status is drawn from.
    pub statuses: Vec<u16>,
    /// Probability that a case sets its own deadline.
    pub deadline: f64,
    /// Probability that the request is a create.
    pub create: f64,
    /// Probability that it carries an idempotency key.
    pub key: f64,
    /// Probability that it is streamed.
    pub stream: f64,
    /// Probability that the virtual wall clock starts somewhere other than
    /// the default (HTTP-dates are drawn relative to it).
    pub wall: f64,
    /// The runaway guard of generated rows (most calls per case).
    pub max_calls: u32,
}

impl Default for Generate {
    fn default() -> Self {
        Self {
            calls: 5,
            draws: 4,
            weights: Weights::default(),
            statuses: vec![200, 400, 401, 404, 408, 409, 429, 500, 502, 503, 504, 529],
            deadline: 0.3,
            create: 0.25,
            key: 0.5,
            stream: 0.25,
            wall: 0.5,
            max_calls: 100,
        }
    }
}

/// The invariants of a matrix file (or of every file of a system), and
/// what explore generates for it.
#[derive(Debug, Clone, PartialEq)]
pub struct InvariantSet {
    /// Where it was declared (`built-in` for the defaults).
    pub origin: String,
    /// In checking order.
    pub invariants: Vec<Invariant>,
    /// The generator's settings.
    pub generate: Generate,
}

impl Default for InvariantSet {
    /// Every built-in invariant, the default generator.
    fn default() -> Self {
        Self {
            origin: "built-in".into(),
            invariants: Builtin::ALL.into_iter().map(Invariant::builtin).collect(),
            generate: Generate::default(),
        }
    }
}

impl InvariantSet {
    /// An invariant by name.
    pub fn get(&self, name: &str) -> Option<&Invariant> {
        self.invariants.iter().find(|i| i.name == name)
    }
}
