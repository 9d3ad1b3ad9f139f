//! How a run ends, as the caller and faultmatrix see it: a [`Success`], or a
//! bounded, sanitized [`FinalError`]; the escalation events of a failed run;
//! the jitter draws a run consumes.

use std::collections::VecDeque;
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard};

/// Locks a mutex, carrying on after a panic elsewhere poisoned it (the data
/// guarded here is always left consistent).
pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// `A1`, or `gpt4#1` when the route name ends in a digit: how traces and
/// errors name one call.
pub fn call_label(route: &str, attempt: u32) -> String {
    if route.ends_with(|c: char| c.is_ascii_digit()) {
        format!("{route}#{attempt}")
    } else {
        format!("{route}{attempt}")
    }
}

/// Jitter input for a run.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum JitterInput {
    /// A deterministic generator from a seed.
    Seed(u64),
    /// Exactly these draws in [0, 1), in order.
    Draws(Vec<f64>),
}

/// How a run ended.
pub type SystemResult = Result<Success, FinalError>;

/// A successful run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Success {
    /// The route that answered.
    pub route: Option<String>,
    /// Output delivered to the caller (stream data concatenated), if any.
    pub output: Option<String>,
}

/// One attempt as the final error recounts it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttemptNote {
    /// Route.
    pub route: String,
    /// Attempt on the route, 1-based.
    pub attempt: u32,
    /// Reason code.
    pub code: String,
}

impl fmt::Display for AttemptNote {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", call_label(&self.route, self.attempt), self.code)
    }
}

/// The error a caller receives: bounded, sanitized, inspectable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FinalError {
    /// Why the run stopped (`terminal`, `exhausted`, `deadline`, ...).
    pub stop: String,
    /// The code that ended the run.
    pub code: Option<String>,
    /// The initial request id.
    pub request_id: Option<String>,
    /// Attempts made (bounded: at most [`FinalError::MAX_ATTEMPTS`] kept).
    pub attempts: Vec<AttemptNote>,
    /// Attempts left out of `attempts` because of the bound.
    pub omitted: usize,
    /// Output delivered to the caller before the failure (the data of a
    /// stream that broke or stalled part-way), if any. A `Box<str>` keeps
    /// the error small (`Some(text.into())`).
    pub output: Option<Box<str>>,
}

impl FinalError {
    /// Most attempts an error recounts.
    pub const MAX_ATTEMPTS: usize = 16;

    /// Adds an attempt, keeping the bound.
    pub fn push_attempt(&mut self, note: AttemptNote) {
        if self.attempts.len() < Self::MAX_ATTEMPTS {
            self.attempts.push(note);
        } else {
            self.omitted += 1;
        }
    }
}

impl fmt::Display for FinalError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "request {} stopped: {}",
            self.request_id.as_deref().unwrap_or("-"),
            self.stop
        )?;
        if let Some(code) = &self.code {
            write!(f, " ({code})")?;
        }
        if !self.attempts.is_empty() {
            f.write_str("; attempts: ")?;
            for (i, a) in self.attempts.iter().enumerate() {
                if i > 0 {
                    f.write_str(", ")?;
                }
                write!(f, "{a}")?;
            }
            if self.omitted > 0 {
                write!(f, " and {} more", self.omitted)?;
            }
        }
        Ok(())
    }
}

impl std::error::Error for FinalError {}

/// One escalation event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Escalation {
    /// Reason code.
    pub code: String,
    /// Target (`escalate_to`).
    pub to: Option<String>,
}

/// Where a system reports escalations. Cloning shares the sink.
#[derive(Debug, Clone, Default)]
pub struct EscalationSink(Arc<Mutex<Vec<Escalation>>>);

impl EscalationSink {
    /// Records an event.
    pub fn escalate(&self, event: Escalation) {
        lock(&self.0).push(event);
    }

    /// Events so far.
    pub fn events(&self) -> Vec<Escalation> {
        lock(&self.0).clone()
    }
}

/// Deterministic jitter draws in [0, 1). Cloning shares the source.
#[derive(Debug, Clone)]
pub struct JitterSource(Arc<Mutex<JitterState>>);

#[derive(Debug)]
struct JitterState {
    seed: Option<u64>,
    draws: VecDeque<f64>,
    scripted: usize,
    overrun: bool,
}

impl JitterSource {
    /// A source for a row's jitter input.
    pub fn new(input: &JitterInput) -> Self {
        let state = match input {
            JitterInput::Seed(s) => JitterState {
                seed: Some(*s),
                draws: VecDeque::new(),
                scripted: 0,
                overrun: false,
            },
            JitterInput::Draws(d) => JitterState {
                seed: None,
                draws: d.iter().copied().collect(),
                scripted: d.len(),
                overrun: false,
            },
        };
        Self(Arc::new(Mutex::new(state)))
    }

    /// The next draw in [0, 1).
    pub fn next_unit(&self) -> f64 {
        let mut s = lock(&self.0);
        if let Some(seed) = s.seed.as_mut() {
            // splitmix64
            *seed = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = *seed;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^= z >> 31;
            return (z >> 11) as f64 / (1u64 << 53) as f64;
        }
        match s.draws.pop_front() {
            Some(d) => d,
            None => {
                s.overrun = true;
                0.0
            }
        }
    }

    /// When explicit draws ran out: how many were scripted.
    pub fn overrun(&self) -> Option<usize> {
        let s = lock(&self.0);
        s.overrun.then_some(s.scripted)
    }
}
