//! The upstream of a row: each route's script served once, in order; the
//! runaway guard; records created at create endpoints, and the idempotent
//! replay of a committed create. One state machine, used by the
//! in-process transport ([`crate::exec::scripted`]), tape replay and the
//! HTTP fixture server ([`crate::exec::wire::server`]), so the three can
//! never disagree on what a call gets.

use std::collections::HashMap;

use crate::base::label::call_label;
use crate::model::{match_path, split_key, Entry, Repeat, RouteScript};

/// One route's script being served: each entry once, in order (an entry
/// with `repeat` as often as it says). Shared by the in-process transport
/// and the HTTP fixture server.
#[derive(Debug, Clone)]
pub struct RouteCursor {
    /// The entries; one the cursor has passed is never read again, so its
    /// last serving moves it out (`None`) instead of cloning it.
    entries: Vec<Option<Entry>>,
    cursor: usize,
    served_current: u32,
    served_total: usize,
    /// Calls made on the route, served or refused (its attempt numbers:
    /// kept here, a scripted route's count needs no name of its own).
    calls: u32,
}

impl RouteCursor {
    /// A cursor at the start of a route's entries.
    pub fn new(entries: Vec<Entry>) -> Self {
        Self::at_start(entries.into_iter().map(Some).collect())
    }

    /// A cursor at the start of a copy of a route's entries (copied
    /// straight into the cursor's slots: a `Vec` clone then `new` built
    /// the vector twice).
    pub fn from_slice(entries: &[Entry]) -> Self {
        Self::at_start(entries.iter().cloned().map(Some).collect())
    }

    fn at_start(entries: Vec<Option<Entry>>) -> Self {
        Self {
            entries,
            cursor: 0,
            served_current: 0,
            served_total: 0,
            calls: 0,
        }
    }

    /// A cursor per scripted route.
    pub fn for_scripts(scripts: &[RouteScript]) -> HashMap<String, RouteCursor> {
        scripts
            .iter()
            .map(|s| (s.route.clone(), RouteCursor::from_slice(&s.entries)))
            .collect()
    }

    /// Appends an entry at the end of the script.
    pub fn push(&mut self, entry: Entry) {
        self.entries.push(Some(entry));
    }

    /// The entry for call `attempt` on `route`, or the failure message of a
    /// call beyond the script.
    pub fn serve(&mut self, route: &str, attempt: u32) -> Result<Entry, String> {
        let Some(Some(current)) = self.entries.get(self.cursor) else {
            let n = self.served_total;
            return Err(format!(
                "route {route}: call {attempt} but {n} answer{} scripted",
                if n == 1 { " was" } else { "s were" }
            ));
        };
        self.served_current += 1;
        self.served_total += 1;
        if let Repeat::Times(n) = current.repeat {
            if self.served_current >= n {
                // Served for the last time: the cursor moves past it.
                let entry = self.entries[self.cursor].take();
                self.cursor += 1;
                self.served_current = 0;
                return entry.ok_or_else(|| unreachable_entry(route));
            }
        }
        Ok(current.clone())
    }

    /// The entry the next call gets, without serving it.
    pub fn peek(&self) -> Option<&Entry> {
        self.entries.get(self.cursor)?.as_ref()
    }

    /// The failure message when scripted answers were never requested.
    pub fn unused(&self, route: &str) -> Option<String> {
        let mut unused = Vec::new();
        for (i, e) in self.entries.iter().enumerate().skip(self.cursor) {
            let Some(e) = e else { continue };
            let left = match e.repeat {
                Repeat::Forever if i == self.cursor && self.served_current > 0 => 0,
                Repeat::Forever => 1,
                Repeat::Times(n) if i == self.cursor => n - self.served_current,
                Repeat::Times(n) => n,
            };
            if left == 0 {
                continue;
            }
            // One item per entry with the count left: `503 x3`, never the
            // entry's own `503 x5` label repeated five times.
            let base = match e.repeat {
                Repeat::Times(n) => e
                    .label
                    .rsplit_once(" x")
                    .filter(|(_, k)| !k.starts_with(['+', '0']) && k.parse::<u32>() == Ok(n))
                    .map_or(e.label.as_str(), |(b, _)| b),
                Repeat::Forever => &e.label,
            };
            match left {
                0 => {}
                1 => unused.push((1, base.to_string())),
                k => unused.push((k, format!("{base} x{k}"))),
            }
        }
        if unused.is_empty() {
            return None;
        }
        let n: u32 = unused.iter().map(|(k, _)| *k).sum();
        let unused: Vec<String> = unused.into_iter().map(|(_, l)| l).collect();
        let t = self.served_total;
        Some(format!(
            "route {route}: {n} scripted answer{} never requested ({}); {t} call{} made",
            if n == 1 { " was" } else { "s were" },
            unused.join(", "),
            if t == 1 { " was" } else { "s were" },
        ))
    }
}

/// The message for an entry taken twice (a broken invariant, never a panic
/// in a row: the row fails with it).
fn unreachable_entry(route: &str) -> String {
    format!("route {route}: internal error: a script entry was served after its last serving")
}

/// Writes an entry's relative header dates (`{ http-date: now+20s }`)
/// against `now`, the row's wall clock as the answer is sent. Every server
/// of a script calls it at that moment: the in-process transport, the
/// fixture server (real clock) and the virtual-clock server.
pub fn render_dates(entry: &mut Entry, now: std::time::SystemTime) {
    if let crate::model::Answer::Response(r) = &mut entry.answer {
        r.render_dates(now);
    }
}

/// A committed create's answer (status, headers, body), replayed for the
/// same idempotency key.
pub type Stored = (u16, Vec<(String, String)>, String);

/// What a call gets.
#[derive(Debug, Clone)]
pub enum Pick {
    /// The next scripted entry (its label moved out: the call's label is
    /// returned beside it).
    Entry(Entry),
    /// The committed answer of an earlier create with the same idempotency key.
    Stored(Stored),
    /// Nothing: beyond the script, an unscripted route, or the runaway
    /// guard (a failure is recorded; the row is aborted).
    Refused,
}

/// One row's upstream state. A row scripts a few routes: they and their
/// attempt counts are small vectors searched in order, not hash maps built
/// (and hashed with SipHash) for every row.
#[derive(Debug, Default)]
pub struct Upstream {
    routes: Vec<(String, RouteCursor)>,
    /// Calls made on routes without a script (a scripted route counts
    /// its own: [`RouteCursor`]).
    attempts: Vec<(String, u32)>,
    total: u32,
    max_calls: u32,
    failures: Vec<String>,
    records: u32,
    committed: HashMap<String, Stored>,
    /// Method and path of each call served by a route's main script, for
    /// the near-miss note of a keyed script never requested.
    to_main: Vec<(String, String, String)>,
    /// Some route's script is keyed by method and path (`A GET /v1`): only
    /// then is a call's script looked for among the keys (most rows have
    /// none, and a call would split every route's name to learn it).
    sided: bool,
}

impl Upstream {
    /// An upstream serving these scripts, stopping a run after `max_calls`.
    pub fn new(scripts: &[RouteScript], max_calls: u32) -> Self {
        let mut up = Self {
            routes: Vec::with_capacity(scripts.len()),
            max_calls,
            ..Self::default()
        };
        for s in scripts {
            // A name written twice keeps its last script, as a map would.
            let cursor = RouteCursor::from_slice(&s.entries);
            match up.route_mut(&s.route) {
                Some(c) => *c = cursor,
                None => {
                    up.sided |= split_key(&s.route).1.is_some();
                    up.routes.push((s.route.clone(), cursor));
                }
            }
        }
        up
    }

    fn route(&self, name: &str) -> Option<&RouteCursor> {
        self.routes.iter().find(|(k, _)| k == name).map(|(_, c)| c)
    }

    fn route_mut(&mut self, name: &str) -> Option<&mut RouteCursor> {
        self.routes
            .iter_mut()
            .find(|(k, _)| k == name)
            .map(|(_, c)| c)
    }

    fn route_names(&self) -> impl Iterator<Item = &String> {
        self.routes.iter().map(|(k, _)| k)
    }

    /// The next attempt number on `route` (1-based), counted.
    fn next_attempt(&mut self, route: &str) -> u32 {
        if let Some(c) = self.route_mut(route) {
            c.calls += 1;
            return c.calls;
        }
        match self.attempts.iter_mut().find(|(k, _)| k == route) {
            Some((_, n)) => {
                *n += 1;
                *n
            }
            None => {
                self.attempts.push((route.to_string(), 1));
                1
            }
        }
    }

    /// Appends an entry to a route's script (the recorder scripts each
    /// answer as it arrives from the live upstream).
    pub fn push_entry(&mut self, route: &str, entry: Entry) {
        match self.route_mut(route) {
            Some(c) => c.push(entry),
            None => {
                self.sided |= split_key(route).1.is_some();
                let mut cursor = RouteCursor::new(vec![entry]);
                // Calls made before the route had a script keep counting.
                if let Some(i) = self.attempts.iter().position(|(k, _)| k == route) {
                    cursor.calls = self.attempts.swap_remove(i).1;
                }
                self.routes.push((route.to_string(), cursor));
            }
        }
    }

    /// The next call on `route` made with `target` (method and path; `None`
    /// in process): the script it is served from (`A`, or a keyed side
    /// script `A GET /v1/models`, numbered on its own), its attempt number,
    /// label and what it gets. A call matching no keyed script goes to the
    /// route's main script; when the route has none, it fails with a
    /// near-miss report (see [`near_miss`]).
    pub fn call_at(
        &mut self,
        route: &str,
        target: Option<(&str, &str)>,
        create: bool,
        idempotency_key: Option<&str>,
    ) -> (String, u32, String, Pick) {
        match self.script_for(route, target) {
            Ok(name) => {
                if let (Some((m, t)), true) = (target, name == route) {
                    self.to_main.push((
                        route.to_string(),
                        m.to_string(),
                        match_path(t).to_string(),
                    ));
                }
                let (attempt, label, pick) = self.call(&name, create, idempotency_key);
                (name, attempt, label, pick)
            }
            Err(msg) => {
                let attempt = self.next_attempt(route);
                self.total += 1;
                self.failures.push(msg);
                (route.to_string(), attempt, "-".into(), Pick::Refused)
            }
        }
    }

    /// Which script serves a call on `route` made with `target`.
    fn script_for(&self, route: &str, target: Option<(&str, &str)>) -> Result<String, String> {
        if !self.sided {
            return Ok(route.to_string());
        }
        let mut sides: Vec<(&str, &str, &str)> = self
            .route_names()
            .filter_map(|k| match split_key(k) {
                (r, Some((m, p))) if r == route => Some((k.as_str(), m, p)),
                _ => None,
            })
            .collect();
        if sides.is_empty() {
            return Ok(route.to_string());
        }
        sides.sort_unstable();
        if let Some((method, target)) = target {
            let path = match_path(target);
            if let Some((k, _, _)) = sides.iter().find(|(_, m, p)| *m == method && *p == path) {
                return Ok((*k).to_string());
            }
        }
        if self.route(route).is_some() {
            return Ok(route.to_string());
        }
        Err(near_miss(route, target, &sides))
    }

    /// The next call on `route`: its attempt number (1-based, per route),
    /// the label of what it gets (`503`, `-` when refused) and what it
    /// gets. A create carrying an idempotency key already committed gets
    /// the committed answer.
    pub fn call(
        &mut self,
        route: &str,
        create: bool,
        idempotency_key: Option<&str>,
    ) -> (u32, String, Pick) {
        let attempt = self.next_attempt(route);
        let total = self.total;
        self.total += 1;
        if total >= self.max_calls {
            self.failures.push(format!(
                "runaway guard: the system made more than {} calls (max_calls); it was stopped at {}",
                self.max_calls,
                call_label(route, attempt)
            ));
            return (attempt, "-".into(), Pick::Refused);
        }
        let Some(rs) = self.route_mut(route) else {
            let mut known: Vec<&str> = self.route_names().map(String::as_str).collect();
            known.sort_unstable();
            self.failures.push(format!(
                "route {route}: call {attempt} but no answers were scripted for route {route} (scripted routes: {})",
                if known.is_empty() { "none".to_string() } else { known.join(", ") }
            ));
            return (attempt, "-".into(), Pick::Refused);
        };
        match rs.serve(route, attempt) {
            Err(msg) => {
                self.failures.push(msg);
                (attempt, "-".into(), Pick::Refused)
            }
            Ok(mut entry) => {
                // The label goes to the call's record; no server of the
                // entry reads it (a copy cost an allocation a call).
                let label = std::mem::take(&mut entry.label);
                let stored = idempotency_key
                    .filter(|_| create)
                    .and_then(|k| self.committed.get(k))
                    .cloned();
                match stored {
                    Some(s) => (attempt, label, Pick::Stored(s)),
                    None => (attempt, label, Pick::Entry(entry)),
                }
            }
        }
    }

    /// Whether the next call on `route`'s main script is scripted
    /// `refused`: a connection to the route is refused then (over the
    /// wire, the decision is taken at connect time, before any request).
    pub fn next_refused(&self, route: &str) -> bool {
        self.route(route)
            .and_then(RouteCursor::peek)
            .is_some_and(|e| matches!(e.answer, crate::model::Answer::Refused))
    }

    /// A connection to `route` attempted while its next entry is
    /// `refused` (see [`Upstream::next_refused`]): the entry is served as
    /// that call. Returns the call's attempt number and label, or `None`
    /// when the next entry is not `refused` (the connection goes ahead and
    /// nothing is consumed).
    pub fn refuse_connect(&mut self, route: &str) -> Option<(u32, String)> {
        if !self.next_refused(route) {
            return None;
        }
        let (attempt, label, pick) = self.call(route, false, None);
        // The runaway guard may have stopped the run instead: the label is
        // `-` then and the failure is recorded; it is still this call.
        let _ = pick;
        Some((attempt, label))
    }

    /// A create answered with success: one record, committed for its key.
    pub fn created(&mut self, idempotency_key: Option<&str>, answer: Stored) {
        self.records += 1;
        if let Some(k) = idempotency_key {
            self.committed.insert(k.to_string(), answer);
        }
    }

    /// A create that timed out after the upstream committed it
    /// (`committed: true`): one record, replayed as `201 {"id":"rec-N"}`.
    pub fn committed_before_timeout(&mut self, idempotency_key: Option<&str>) {
        self.records += 1;
        let body = format!("{{\"id\":\"rec-{}\"}}", self.records);
        if let Some(k) = idempotency_key {
            self.committed
                .insert(k.to_string(), (201, Vec::new(), body));
        }
    }

    /// Records a harness failure from outside the upstream.
    pub fn fail(&mut self, message: String) {
        self.failures.push(message);
    }

    /// Whether a harness failure has been recorded.
    pub fn has_failures(&self) -> bool {
        !self.failures.is_empty()
    }

    /// The scripted routes' names.
    pub fn routes(&self) -> impl Iterator<Item = &str> {
        self.route_names().map(String::as_str)
    }

    /// For a keyed script never requested: the closest call its route's
    /// main script served instead, and why it did not match.
    fn closest_call(&self, key: &str) -> Option<String> {
        let (route, Some((m, p))) = split_key(key) else {
            return None;
        };
        let prefix = |q: &str| q.bytes().zip(p.bytes()).take_while(|(a, b)| a == b).count();
        let (_, method, path) = self
            .to_main
            .iter()
            .filter(|(r, _, _)| r == route)
            .max_by_key(|(_, cm, cp)| (cp == p, cm == m, prefix(cp)))?;
        let why = match (method == m, path == p) {
            (false, true) => format!("method differs: `{m}` scripted"),
            (true, false) => format!("path differs: `{p}` scripted"),
            _ => format!("method and path differ: `{m} {p}` scripted"),
        };
        Some(format!(
            "; closest call: `{method} {path}` ({why}), served by route {route}'s main script"
        ))
    }

    /// Ends the row: the harness failures, each route's unused entries (in
    /// `route_order`) among them, and the records created.
    pub fn finish(&mut self, route_order: &[&str]) -> (Vec<String>, u32) {
        let mut failures = std::mem::take(&mut self.failures);
        for (i, &name) in route_order.iter().enumerate() {
            // A keyed script is checked with its route, after the main one.
            let route = split_key(name).0;
            if route_order[..i].iter().any(|n| split_key(n).0 == route) {
                continue; // seen (a few routes: no set to allocate)
            }
            if let Some(msg) = self.route(route).and_then(|rs| rs.unused(route)) {
                failures.push(msg);
            }
            if !self.sided {
                continue; // no keyed script to look for (most rows)
            }
            let mut sides: Vec<&String> = self
                .route_names()
                .filter(|k| matches!(split_key(k), (r, Some(_)) if r == route))
                .collect();
            sides.sort_unstable();
            for k in sides {
                if let Some(mut msg) = self.route(k).and_then(|rs| rs.unused(k)) {
                    if let Some(note) = self.closest_call(k) {
                        msg.push_str(&note);
                    }
                    failures.push(msg);
                }
            }
        }
        (failures, self.records)
    }
}

/// The failure of a call on a route that has only keyed scripts and
/// matched none of them: the closest script and why it did not match, with
/// the observed method and path (as WireMock's near-miss report does).
/// Closest: the same path (the method differs), else the same method with
/// the longest common path prefix, else the longest common path prefix.
pub fn near_miss(
    route: &str,
    target: Option<(&str, &str)>,
    sides: &[(&str, &str, &str)],
) -> String {
    let keys: Vec<&str> = sides.iter().map(|(k, _, _)| *k).collect();
    let Some((method, target)) = target else {
        return format!(
            "route {route}: a call without a method and path (in process) matched no script; route {route} has only keyed scripts ({})",
            keys.join(", ")
        );
    };
    let path = match_path(target);
    let prefix = |p: &str| {
        p.bytes()
            .zip(path.bytes())
            .take_while(|(a, b)| a == b)
            .count()
    };
    let best = sides
        .iter()
        .max_by_key(|(_, m, p)| (*p == path, *m == method, prefix(p), std::cmp::Reverse(*p)))
        .copied();
    let Some((key, m, p)) = best else {
        return format!("route {route}: `{method} {target}` matched no script");
    };
    let why = match (m == method, p == path) {
        (false, true) => format!("method differs: `{m}` scripted, `{method}` observed"),
        (true, false) => format!("path differs: `{p}` scripted, `{path}` observed"),
        _ => format!("method and path differ: `{m} {p}` scripted, `{method} {path}` observed"),
    };
    format!(
        "route {route}: the call `{method} {target}` matched no script and route {route} has no main script; closest was `{key}` ({why})"
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::side_key;

    fn script(name: &str, n: usize) -> RouteScript {
        RouteScript {
            route: name.into(),
            entries: (0..n).map(|_| Entry::ok()).collect(),
        }
    }

    /// Attempts are numbered per route: a scripted route counts its own
    /// calls, an unscripted one is counted by name, and a route scripted
    /// after calls were made (the recorder) goes on from them.
    #[test]
    fn attempts_are_numbered_per_route_across_a_script_added_later() {
        let mut up = Upstream::new(&[script("A", 2)], 10);
        let (_, a1, label, pick) = up.call_at("A", None, false, None);
        assert!(a1 == 1 && label == "ok" && matches!(&pick, Pick::Entry(e) if e.label.is_empty()));
        let (_, b1, label, pick) = up.call_at("B", None, false, None);
        assert!(b1 == 1 && label == "-" && matches!(pick, Pick::Refused));
        let (_, b2, _, _) = up.call_at("B", None, false, None);
        assert_eq!(b2, 2);
        up.push_entry("B", Entry::ok());
        let (_, b3, label, pick) = up.call_at("B", None, false, None);
        assert!(b3 == 3 && label == "ok" && matches!(pick, Pick::Entry(_)));
        let (_, a2, _, _) = up.call_at("A", None, false, None);
        assert_eq!(a2, 2);
    }

    #[test]
    fn a_connect_consumes_only_a_refused_entry_and_numbers_it_as_the_routes_call() {
        let refused = Entry {
            answer: crate::model::Answer::Refused,
            label: "refused".into(),
            ..Entry::ok()
        };
        let mut up = Upstream::new(
            &[RouteScript {
                route: "A".into(),
                entries: vec![Entry::ok(), refused, Entry::ok()],
            }],
            10,
        );
        // The next entry is a 200: the connection goes ahead, nothing consumed.
        assert!(!up.next_refused("A") && up.refuse_connect("A").is_none());
        assert!(!up.next_refused("B") && up.refuse_connect("B").is_none());
        let (_, n, _, _) = up.call_at("A", None, false, None);
        assert_eq!(n, 1);
        assert!(up.next_refused("A"));
        assert_eq!(up.refuse_connect("A"), Some((2, "refused".to_string())));
        assert!(up.refuse_connect("A").is_none());
        let (_, n, _, pick) = up.call_at("A", None, false, None);
        assert!(n == 3 && matches!(pick, Pick::Entry(_)));
        let (failures, _) = up.finish(&["A"]);
        assert!(failures.is_empty(), "{failures:?}");
    }

    #[test]
    fn a_cursor_serves_each_entry_its_count_then_reports_what_is_left() {
        let twice = Entry {
            repeat: Repeat::Times(2),
            label: "503 x2".into(),
            ..Entry::ok()
        };
        let third = Entry {
            label: "third".into(),
            ..Entry::ok()
        };
        let mut c = RouteCursor::new(vec![twice, third, Entry::ok()]);
        let served: Vec<String> = (1..=3)
            .map(|n| c.serve("A", n).expect("scripted").label)
            .collect();
        assert_eq!(served, ["503 x2", "503 x2", "third"]);
        // What was served (moved out at its last serving) is never reported.
        assert_eq!(
            c.unused("A").as_deref(),
            Some("route A: 1 scripted answer was never requested (ok); 3 calls were made")
        );
        assert_eq!(c.peek().map(|e| e.label.as_str()), Some("ok"));
        assert_eq!(c.serve("A", 4).expect("scripted").label, "ok");
        assert!(c.peek().is_none() && c.unused("A").is_none());
        assert_eq!(
            c.serve("A", 5).unwrap_err(),
            "route A: call 5 but 4 answers were scripted"
        );
    }

    #[test]
    fn a_matching_call_is_served_by_its_keyed_script_and_numbered_apart() {
        let mut up = Upstream::new(
            &[
                script("A", 1),
                script(&side_key("A", "GET", "/v1/models"), 1),
            ],
            10,
        );
        let (s, n, _, _) = up.call_at("A", Some(("GET", "/v1/models?limit=5")), false, None);
        assert_eq!((s.as_str(), n), ("A GET /v1/models", 1));
        let (s, n, _, _) = up.call_at("A", Some(("POST", "/v1/chat/completions")), false, None);
        assert_eq!((s.as_str(), n), ("A", 1));
        let (failures, _) = up.finish(&["A"]);
        assert!(failures.is_empty(), "{failures:?}");
    }

    #[test]
    fn the_near_miss_prefers_the_same_path_and_says_the_method_differs() {
        let mut up = Upstream::new(
            &[
                script(&side_key("A", "GET", "/v1/models"), 1),
                script(&side_key("A", "POST", "/v1/chat/completions"), 1),
            ],
            10,
        );
        let (_, _, _, pick) = up.call_at("A", Some(("POST", "/v1/models")), false, None);
        assert!(matches!(pick, Pick::Refused));
        let (failures, _) = up.finish(&["A GET /v1/models"]);
        assert!(
            failures[0].contains(
                "closest was `A GET /v1/models` (method differs: `GET` scripted, `POST` observed)"
            ),
            "{failures:?}"
        );
    }

    #[test]
    fn an_unused_keyed_script_names_the_closest_call_the_main_script_took() {
        let mut up = Upstream::new(
            &[
                script("A", 2),
                script(&side_key("A", "GET", "/v1/model"), 1),
            ],
            10,
        );
        up.call_at("A", Some(("GET", "/v1/models")), false, None);
        up.call_at("A", Some(("POST", "/v1/chat/completions")), false, None);
        let (failures, _) = up.finish(&["A"]);
        assert_eq!(failures.len(), 1, "{failures:?}");
        assert!(
            failures[0].ends_with("closest call: `GET /v1/models` (path differs: `/v1/model` scripted), served by route A's main script"),
            "{failures:?}"
        );
    }
}
