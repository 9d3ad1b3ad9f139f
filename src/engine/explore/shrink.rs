//! Shrinking a failing case to a minimal one: fewer calls, fewer and
//! simpler answers, fewer draws, smaller values. A candidate is kept when
//! the same invariant still breaks and the run is smaller (fewer observed
//! calls, then a smaller case); shrinking stops at a fixed point or after
//! a budget of runs.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::engine::explore::case::{Answer, Case, Header, Step};

/// Simpler versions of one answer, simplest first.
fn simpler(a: &Answer) -> Vec<Answer> {
    let mut out = vec![Answer::Ok];
    match a {
        Answer::Ok => return Vec::new(),
        Answer::Status(s) => {
            if *s != 503 {
                out.push(Answer::Status(503));
            }
        }
        Answer::Code(_) | Answer::Timeout | Answer::Reset => out.push(Answer::Status(503)),
        Answer::Malformed | Answer::Truncated => {
            out.push(Answer::Status(503));
            out.push(Answer::Reset);
        }
        Answer::Mixed { status, code } => {
            out.push(Answer::Status(*status));
            out.push(Answer::Code(code.clone()));
        }
        Answer::Guidance {
            status,
            header,
            value,
        } => {
            out.push(Answer::Status(*status));
            if *header == Header::RetryAfterMs {
                if let Ok(ms) = value.parse::<u64>() {
                    out.push(Answer::Guidance {
                        status: *status,
                        header: Header::RetryAfter,
                        value: ms.div_ceil(1000).to_string(),
                    });
                }
            }
            if let Ok(n) = value.parse::<u128>() {
                for smaller in [0u128, 1, 2, 5, 61, 120] {
                    if smaller < n {
                        out.push(Answer::Guidance {
                            status: *status,
                            header: *header,
                            value: smaller.to_string(),
                        });
                    }
                }
            }
        }
        Answer::Stream {
            data,
            comment,
            breaks,
        } => {
            out.push(Answer::Status(503));
            if *comment {
                out.push(Answer::Stream {
                    data: *data,
                    comment: false,
                    breaks: *breaks,
                });
            }
            if *data > 0 {
                out.push(Answer::Stream {
                    data: data - 1,
                    comment: *comment,
                    breaks: *breaks,
                });
            }
            if *breaks {
                out.push(Answer::Stream {
                    data: *data,
                    comment: *comment,
                    breaks: false,
                });
            }
        }
    }
    out.retain(|x| x != a);
    out
}

/// Moves every `Retry-After` HTTP-date of `case` from wall `from` to wall
/// `to`: the same whole-second offset, the same form.
fn rebase_dates(case: &mut Case, from: SystemTime, to: SystemTime) {
    use crate::load::policy::retry_after::{format_http_date, parse_http_date};
    let whole = |t: SystemTime| {
        t.duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() as i64)
    };
    for (_, steps) in &mut case.routes {
        for s in steps {
            let Answer::Guidance {
                header: Header::RetryAfter,
                value,
                ..
            } = &mut s.answer
            else {
                continue;
            };
            let Some(at) = parse_http_date(value, from) else {
                continue;
            };
            let Some(form) = (0..3u8).find(|f| format_http_date(at, *f) == *value) else {
                continue;
            };
            let offset = whole(at) - whole(from);
            *value = crate::engine::explore::generate::http_date(to, offset, form as u64);
        }
    }
}

/// Every one-step simplification of a case, the biggest cuts first.
pub fn candidates(case: &Case) -> Vec<Case> {
    let mut out = Vec::new();
    for (ri, (_, steps)) in case.routes.iter().enumerate() {
        // Keep only the first step, then drop steps from the end.
        if steps.len() > 1 {
            let mut c = case.clone();
            c.routes[ri].1.truncate(1);
            out.push(c);
        }
        for j in (0..steps.len()).rev() {
            if steps.len() > 1 {
                let mut c = case.clone();
                c.routes[ri].1.remove(j);
                out.push(c);
            }
        }
    }
    // The last answer repeats for every further call: end the repetition
    // with a success one to four calls later, which may cut the calls
    // after it (a budget overrun of one call ends there instead of
    // switching to the next route).
    for (ri, (_, steps)) in case.routes.iter().enumerate() {
        let Some(last) = steps.last().filter(|s| s.answer != Answer::Ok) else {
            continue;
        };
        for repeats in 0..4 {
            let mut c = case.clone();
            let route = &mut c.routes[ri].1;
            route.extend(std::iter::repeat_n(last.clone(), repeats));
            route.push(Step {
                answer: Answer::Ok,
                latency: Duration::ZERO,
            });
            out.push(c);
        }
    }
    if !case.draws.is_empty() {
        let mut c = case.clone();
        c.draws.clear();
        out.push(c);
        let mut c = case.clone();
        c.draws.pop();
        out.push(c);
        for i in 0..case.draws.len() {
            if case.draws[i] != 0.0 {
                let mut c = case.clone();
                c.draws[i] = 0.0;
                out.push(c);
            }
        }
    }
    if let Some(dl) = case.deadline {
        let mut c = case.clone();
        c.deadline = None;
        out.push(c);
        for ms in [500u64, 1000, 2000, 3000, 5000, 10_000] {
            let d = Duration::from_millis(ms);
            if d < dl {
                let mut c = case.clone();
                c.deadline = Some(d);
                out.push(c);
            }
        }
    }
    if let Some(wall) = case.wall {
        // The default wall with every HTTP-date moved along (the same
        // offset from the wall, the same form), then as they are.
        let mut c = case.clone();
        c.wall = None;
        rebase_dates(
            &mut c,
            wall,
            crate::engine::explore::generate::wall_or_default(None),
        );
        out.push(c);
        let mut c = case.clone();
        c.wall = None;
        out.push(c);
    }
    for flag in 0..3 {
        let mut c = case.clone();
        let f = match flag {
            0 => &mut c.request.create,
            1 => &mut c.request.key,
            _ => &mut c.request.stream,
        };
        if *f {
            *f = false;
            out.push(c);
        }
    }
    for (ri, (_, steps)) in case.routes.iter().enumerate() {
        for (j, s) in steps.iter().enumerate() {
            if !s.latency.is_zero() {
                let mut c = case.clone();
                c.routes[ri].1[j].latency = Duration::ZERO;
                out.push(c);
            }
            for a in simpler(&s.answer) {
                let mut c = case.clone();
                c.routes[ri].1[j] = Step {
                    answer: a,
                    latency: s.latency,
                };
                out.push(c);
            }
        }
    }
    out
}

/// Shrinks `case` while `fails` says a candidate still breaks the
/// invariant, returning its observed call count. `calls` is the count of
/// the original run. At most `budget` candidates are run. Returns the
/// smallest case and the number of runs spent.
pub fn shrink(
    case: Case,
    calls: usize,
    budget: u32,
    mut fails: impl FnMut(&Case) -> Option<usize>,
) -> (Case, u32) {
    let mut best = case;
    let mut best_key = (calls, best.size());
    let mut runs = 0u32;
    'outer: loop {
        for c in candidates(&best) {
            if runs >= budget {
                break 'outer;
            }
            let key_size = c.size();
            runs += 1;
            if let Some(n) = fails(&c) {
                let key = (n, key_size);
                if key < best_key {
                    best = c;
                    best_key = key;
                    continue 'outer;
                }
            }
        }
        break;
    }
    (best, runs)
}
