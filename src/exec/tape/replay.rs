//! Replay: a tape as one global, ordered sequence of answers across routes.
//!
//! [`Replay`] checks each call against the tape's next interaction (host,
//! model, stream flag, routing block) and hands matching calls to the
//! row's [`Scripted`] transport, built from the tape's interactions split by
//! route. Because every call has matched the global order before it reaches
//! the scripted transport, each route's cursor serves exactly the
//! interaction the tape recorded; the scripted transport keeps doing what
//! it does for every row: virtual timing, call records, streams, the abort.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use super::format::{self, Fault, Interaction, Tape, TapeRequest, TapeResponse};
use crate::contracts::transport::{BoxFuture, Request, Response, Transport, TransportError};
use crate::exec::scripted::{ScriptReport, Scripted};
use crate::model::{Answer, Entry, Repeat, RouteScript, ScriptedResponse, SseItem, StreamSpec};

/// The part of a request that selects a recorded answer.
#[derive(Debug, Clone, PartialEq)]
pub struct MatchKey {
    /// The route (host).
    pub route: String,
    /// Model.
    pub model: Option<String>,
    /// Stream flag.
    pub stream: bool,
    /// Routing block, canonical (sorted keys).
    pub routing: Option<String>,
}

pub use crate::base::json::canonical;

impl MatchKey {
    /// The key of a call.
    pub fn of_request(r: &Request) -> Self {
        Self {
            route: r.route.clone(),
            model: r.model.clone(),
            stream: r.stream,
            routing: r.routing.clone(),
        }
    }

    /// The key of a recorded request.
    pub fn of_tape(r: &TapeRequest) -> Self {
        Self {
            route: r.route.clone(),
            model: r.model.clone(),
            stream: r.stream,
            routing: r.routing.as_ref().map(canonical),
        }
    }

    /// Each part that differs, as `part differs: the tape has X, the call sent Y`.
    pub fn differences(&self, call: &MatchKey) -> Vec<String> {
        let opt = |o: &Option<String>| o.clone().unwrap_or_else(|| "none".to_string());
        let mut out = Vec::new();
        if self.route != call.route {
            out.push(format!(
                "host differs: the tape has route {}, the call went to route {}",
                self.route, call.route
            ));
        }
        if self.model != call.model {
            out.push(format!(
                "model differs: the tape has {}, the call sent {}",
                opt(&self.model),
                opt(&call.model)
            ));
        }
        if self.stream != call.stream {
            out.push(format!(
                "stream differs: the tape has stream={}, the call sent stream={}",
                self.stream, call.stream
            ));
        }
        if self.routing != call.routing {
            out.push(format!(
                "routing differs: the tape has {}, the call sent {}",
                opt(&self.routing),
                opt(&call.routing)
            ));
        }
        out
    }
}

/// A tape's response as a script entry (served once).
pub fn entry(r: &TapeResponse) -> Entry {
    let answer = match (r.fault, r.status) {
        (Some(Fault::Timeout), _) => Answer::Timeout,
        (Some(Fault::Reset), _) => Answer::Reset,
        (Some(Fault::Malformed), _) | (None, None) => Answer::Malformed,
        (None, Some(status)) => Answer::Response(ScriptedResponse {
            status,
            headers: r
                .headers
                .iter()
                .map(|h| (h.0.clone(), h.1.clone()))
                .collect(),
            body: r.body.clone(),
            stream: r.stream.as_ref().map(|s| StreamSpec {
                items: s
                    .events
                    .iter()
                    .map(|e| match &e.comment {
                        Some(c) => SseItem::Comment(c.clone()),
                        None => SseItem::Event {
                            event: e.event.clone(),
                            data: e.data.clone().unwrap_or_default(),
                            id: e.id.clone(),
                        },
                    })
                    .collect(),
                breaks: s.breaks,
                pauses: Vec::new(),
            }),
            dates: Vec::new(),
        }),
    };
    Entry {
        answer,
        latency: std::time::Duration::ZERO,
        repeat: Repeat::Times(1),
        committed: false,
        label: format::response_label(r),
    }
}

/// The tape split into per-route scripts, routes in order of first use.
pub fn scripts(interactions: &[Interaction]) -> Vec<RouteScript> {
    let mut out: Vec<RouteScript> = Vec::new();
    for it in interactions {
        let route = &it.request.route;
        let e = entry(&it.response);
        match out.iter_mut().find(|s| &s.route == route) {
            Some(s) => s.entries.push(e),
            None => out.push(RouteScript {
                route: route.clone(),
                entries: vec![e],
            }),
        }
    }
    out
}

struct State {
    keys: Vec<MatchKey>,
    labels: Vec<String>,
    cursor: usize,
    per_route: HashMap<String, u32>,
    stopped: bool,
    problem: Option<String>,
}

/// The replay transport of one row. Cloning shares the row's state.
#[derive(Clone)]
pub struct Replay {
    inner: Scripted,
    file: String,
    state: Arc<Mutex<State>>,
}

use crate::base::lock;

impl Replay {
    /// A replay of `tape` (shown as `file`) with its scripted transport.
    pub fn new(tape: &Tape, file: &str, max_calls: u32) -> Self {
        let inner = Scripted::new(&scripts(&tape.interactions), max_calls);
        Self {
            inner,
            file: file.to_string(),
            state: Arc::new(Mutex::new(State {
                keys: tape
                    .interactions
                    .iter()
                    .map(|i| MatchKey::of_tape(&i.request))
                    .collect(),
                labels: tape
                    .interactions
                    .iter()
                    .map(|i| {
                        format!(
                            "{} {}",
                            i.request.route,
                            format::response_label(&i.response)
                        )
                    })
                    .collect(),
                cursor: 0,
                per_route: HashMap::new(),
                stopped: false,
                problem: None,
            })),
        }
    }

    /// The scripted transport underneath (clock, call records, abort).
    pub fn scripted(&self) -> &Scripted {
        &self.inner
    }

    /// The tape failure that stopped the replay (mismatch, extra call).
    pub fn problem(&self) -> Option<String> {
        lock(&self.state).problem.clone()
    }

    /// Ends the row: the scripted report plus a failure for every recorded
    /// answer never requested.
    pub fn finish(&self) -> ScriptReport {
        // Unused answers are reported here, for the whole tape, in tape
        // terms; the per-route check of the scripted transport would say
        // the same thing route by route.
        let mut report = self.inner.finish(&[]);
        let st = lock(&self.state);
        let left = st.keys.len() - st.cursor;
        if left > 0 && !st.stopped {
            let unused: Vec<String> = (st.cursor..st.keys.len())
                .map(|i| format!("interaction {} ({})", i + 1, st.labels[i]))
                .collect();
            report.failures.push(format!(
                "tape {}: {left} recorded answer{} never requested: {}; the system made {} call{} (every recorded answer must be used)",
                self.file,
                if left == 1 { " was" } else { "s were" },
                unused.join(", "),
                st.cursor,
                if st.cursor == 1 { "" } else { "s" },
            ));
        }
        report
    }

    fn stop(
        &self,
        st: &mut State,
        message: String,
    ) -> BoxFuture<'static, Result<Response, TransportError>> {
        st.stopped = true;
        st.problem = Some(message.clone());
        self.inner.fail(message);
        self.inner.abort_signal().notify_one();
        Box::pin(std::future::pending())
    }
}

impl Transport for Replay {
    fn call(&self, request: Request) -> BoxFuture<'static, Result<Response, TransportError>> {
        let mut guard = lock(&self.state);
        let st = &mut *guard;
        if st.stopped {
            return Box::pin(std::future::pending());
        }
        let attempt = {
            let n = st.per_route.entry(request.route.clone()).or_insert(0);
            *n += 1;
            *n
        };
        let label = crate::exec::trace::call_label(&request.route, attempt);
        let n = st.cursor;
        if n >= st.keys.len() {
            let held = st.keys.len();
            let msg = format!(
                "tape {}: call {} ({label}) but the tape holds {held} interaction{}: more calls than the tape holds",
                self.file,
                n + 1,
                if held == 1 { "" } else { "s" }
            );
            return self.stop(st, msg);
        }
        let diffs = st.keys[n].differences(&MatchKey::of_request(&request));
        if !diffs.is_empty() {
            let msg = format!(
                "tape {}: call {} ({label}) does not match the tape's interaction {} ({}): {}",
                self.file,
                n + 1,
                n + 1,
                st.labels[n],
                diffs.join("; ")
            );
            return self.stop(st, msg);
        }
        st.cursor += 1;
        drop(guard);
        self.inner.call(request)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn routing_key_order_is_ignored() {
        let a = canonical(&json!({"provider": {"order": ["x"], "allow_fallbacks": false}}));
        let b = canonical(&json!({"provider": {"allow_fallbacks": false, "order": ["x"]}}));
        assert_eq!(a, b);
        assert_ne!(
            a,
            canonical(&json!({"provider": {"order": ["y"], "allow_fallbacks": false}}))
        );
    }

    #[test]
    fn every_differing_part_is_named() {
        let tape = MatchKey {
            route: "A".into(),
            model: Some("m1".into()),
            stream: false,
            routing: None,
        };
        let call = MatchKey {
            route: "B".into(),
            model: Some("m2".into()),
            stream: true,
            routing: Some("{}".into()),
        };
        let d = tape.differences(&call);
        assert_eq!(d.len(), 4);
        assert!(d[0].starts_with("host differs"));
        assert!(d[1].starts_with("model differs"));
        assert!(d[2].starts_with("stream differs"));
        assert!(d[3].starts_with("routing differs"));
        assert!(tape.differences(&tape).is_empty());
    }

    #[test]
    fn a_stream_opening_with_keep_alive_comments_replays_exactly_so() {
        use crate::exec::tape::format::{TapeEvent, TapeStream};
        let comment = |c: &str| TapeEvent {
            comment: Some(c.into()),
            ..TapeEvent::default()
        };
        let data = |d: &str| TapeEvent {
            data: Some(d.into()),
            ..TapeEvent::default()
        };
        let tape = Tape::new(vec![Interaction {
            request: TapeRequest {
                route: "A".into(),
                model: None,
                stream: true,
                routing: None,
                summary: None,
            },
            response: TapeResponse {
                status: Some(200),
                fault: None,
                headers: Vec::new(),
                body: None,
                stream: Some(TapeStream {
                    events: vec![
                        comment("keep-alive"),
                        comment("keep-alive"),
                        data("{\"a\":1}"),
                    ],
                    breaks: true,
                }),
            },
        }]);
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .start_paused(true)
            .build()
            .unwrap();
        let items = rt.block_on(async {
            let replay = Replay::new(&tape, "t.yaml", 10);
            let request = Request {
                route: "A".into(),
                stream: true,
                ..Request::default()
            };
            let response = replay.call(request).await.unwrap();
            let crate::contracts::transport::Body::Stream(mut stream) = response.body else {
                panic!("not a stream");
            };
            let mut items = Vec::new();
            while let Some(item) = stream.next().await {
                items.push(item);
            }
            items
        });
        assert_eq!(
            items,
            vec![
                Ok(SseItem::Comment("keep-alive".into())),
                Ok(SseItem::Comment("keep-alive".into())),
                Ok(SseItem::Event {
                    event: None,
                    data: "{\"a\":1}".into(),
                    id: None
                }),
                Err(crate::contracts::transport::StreamBroken),
            ]
        );
    }
}
