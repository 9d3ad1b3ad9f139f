//! Run settings: `defaults` of a file and a row's own (deadline, jitter,
//! request, horizon, budget, max_calls, tolerance).

use std::time::Duration;

use super::ctx::{child, key, Ctx};
use super::raw::{RawRequest, RawSettings};
use crate::base::yaml::{self, Seg};
use crate::model::{JitterInput, Settings};

pub(crate) fn apply_settings(cx: &mut Ctx<'_>, s: &mut Settings, raw: &RawSettings, path: &[Seg]) {
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

pub(crate) struct Overrides<'r> {
    pub(crate) deadline: Option<Duration>,
    pub(crate) jitter: Option<&'r [f64]>,
    pub(crate) jitter_seed: Option<u64>,
    pub(crate) request: Option<&'r RawRequest>,
    pub(crate) horizon: Option<Duration>,
    pub(crate) budget: Option<Duration>,
    pub(crate) max_calls: Option<u32>,
    pub(crate) tolerance: Option<&'r super::raw::RawTolerance>,
}

pub(crate) fn apply(cx: &mut Ctx<'_>, s: &mut Settings, path: &[Seg], o: Overrides<'_>) {
    if let Some(d) = o.deadline {
        if let Some(why) = crate::base::duration::sub_millisecond(d) {
            cx.error(&child(path, key("deadline")), format!("`deadline`: {why}"));
        }
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
                Ok(j) => q.routing = Some(crate::base::json::canonical(&j)),
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
