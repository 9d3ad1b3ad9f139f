//! Recording: the row's calls go to live upstreams, each exchange is
//! scrubbed and appended to the tape, and the system is served the
//! scrubbed answer (so a recording sees what its replay will see). At the
//! end the tape is written next to its final place and moved in only when
//! the upstream answered in the shape the row asked for and the row passed.
//!
//! Time: the system keeps running on the paused virtual clock. Each real
//! call runs on tokio's blocking pool; while a blocking task runs, a paused
//! clock does not auto-advance, so per-attempt timeouts do not fire during
//! the real call and backoff waits between calls cost no real time. The
//! recording row's trace therefore equals its replay's, waits included.
//! (A real-time recording would sleep through every backoff and give waits
//! that differ from run to run.) A call that takes longer than the
//! `tapes.timeout` in real time is recorded as a `timeout` fault.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use super::format::{
    self, Header, Interaction, Summary, Tape, TapeEvent, TapeRequest, TapeResponse, TapeStream,
};
use super::http::{self, BaseUrl, Received, ReceivedBody};
use super::interrupt;
use super::replay::{self, Replay};
use super::{upstream_env, Mode, RecordOptions, TapeErrorKind, TapeRow};
use crate::base::env::Env;
use crate::base::redact::Scrubber;
use crate::contracts::transport::{BoxFuture, Request, Response, Transport, TransportError};
use crate::exec::scripted::{ScriptReport, Scripted};
use crate::model::SseItem;

/// The path every recorded call is sent to, below the upstream's base URL.
pub const CALL_PATH: &str = "/v1/chat/completions";

/// What became of a row's tape.
#[derive(Debug, Clone)]
pub enum TapeOutcome {
    /// The tape was replayed; the failure that stopped it, if one did.
    Replayed(Option<String>),
    /// The tape could not be used (missing, edited, invalid): the message.
    Unavailable(String),
    /// A recording, waiting for the row's verdict.
    Recorded(Recording),
}

/// A finished recording, written to a temporary file.
#[derive(Debug, Clone)]
pub struct Recording {
    /// The temporary file (absent when writing it failed).
    pub tmp: Option<PathBuf>,
    /// The tape's final place.
    pub target: PathBuf,
    /// The root the tape stays inside (see [`crate::base::confine`]).
    pub root: PathBuf,
    /// The tape as shown in messages.
    pub file: String,
    /// The outcome token of every recorded answer, in order.
    pub got: Vec<String>,
    /// Why the temporary file could not be written.
    pub write_error: Option<String>,
    /// Why recording stopped early (an upstream that cannot be reached).
    pub problem: Option<String>,
}

impl Recording {
    /// Moves the tape into place (atomic rename).
    pub fn commit(&self) -> Result<(), String> {
        if let Some(e) = &self.write_error {
            return Err(e.clone());
        }
        let tmp = self.tmp.as_ref().expect("written when there is no error");
        if let Err(why) = writable(&self.root, &self.target) {
            let _ = std::fs::remove_file(tmp);
            interrupt::unlist(tmp);
            return Err(format!(
                "recording {}: refused to write the tape: {why}",
                self.file
            ));
        }
        let moved = std::fs::rename(tmp, &self.target).map_err(|e| {
            let _ = std::fs::remove_file(tmp);
            format!(
                "recording {}: cannot move the tape into place: {e}",
                self.file
            )
        });
        interrupt::unlist(tmp);
        moved
    }

    /// Drops the temporary file; the old tape stays as it was.
    pub fn discard(&self) {
        if let Some(tmp) = &self.tmp {
            let _ = std::fs::remove_file(tmp);
            interrupt::unlist(tmp);
        }
    }
}

/// Where a route's calls go while recording.
#[derive(Debug, Clone)]
struct Target {
    url: String,
    base: BaseUrl,
    key: Option<(String, String)>,
}

struct Setup {
    row: TapeRow,
    options: RecordOptions,
    vars: Arc<Env>,
    scrub: Scrubber,
    max_calls: u32,
}

impl Setup {
    fn env(&self, name: &str) -> Option<String> {
        if self.options.env {
            self.vars.non_empty(name).map(str::to_string)
        } else {
            None
        }
    }

    fn target(&self, route: &str) -> Result<Target, String> {
        let cfg = self.row.config.upstreams.get(route);
        let url = self
            .options
            .upstreams
            .get(route)
            .cloned()
            .or_else(|| self.env(&upstream_env(route)))
            .or_else(|| cfg.map(|u| u.url.clone()))
            .ok_or_else(|| {
                format!(
                    "recording {}: no upstream for route {route}: give `tapes: {{ upstreams: {{ {route}: http://host:port }} }}` in the matrix or set {}",
                    self.row.file,
                    upstream_env(route)
                )
            })?;
        let base = BaseUrl::parse(&url)
            .map_err(|e| format!("recording {}: route {route}: {e}", self.row.file))?;
        let key = self.key(route).map(|k| {
            let header = cfg
                .and_then(|u| u.key_header.clone())
                .unwrap_or_else(|| "authorization".to_string());
            let value = if header.eq_ignore_ascii_case("authorization") {
                format!("Bearer {k}")
            } else {
                k
            };
            (header, value)
        });
        Ok(Target { url, base, key })
    }

    fn key(&self, route: &str) -> Option<String> {
        self.options
            .keys
            .get(route)
            .cloned()
            .or_else(|| {
                let cfg = self.row.config.upstreams.get(route)?;
                // A key named by the matrix is read even without `env`.
                self.vars.var(cfg.key_env.as_ref()?).map(str::to_string)
            })
            .or_else(|| self.env(&format!("{}_KEY", upstream_env(route))))
    }
}

/// The recording transport of one row. Cloning shares the row's state.
#[derive(Clone)]
pub struct Recorder {
    inner: Scripted,
    setup: Arc<Setup>,
    tape: Arc<Mutex<Vec<Interaction>>>,
    problem: Arc<Mutex<Option<String>>>,
}

use crate::base::lock;

impl Recorder {
    /// A recorder for a row's tape.
    pub fn new(row: &TapeRow, options: &RecordOptions, env: &Arc<Env>, max_calls: u32) -> Self {
        let mut setup = Setup {
            row: row.clone(),
            options: options.clone(),
            vars: env.clone(),
            scrub: row.config.scrub.clone(),
            max_calls,
        };
        // Every credential the recorder may send is a secret everywhere.
        let mut routes: Vec<String> = row.config.upstreams.keys().cloned().collect();
        routes.extend(options.upstreams.keys().cloned());
        routes.extend(options.keys.keys().cloned());
        for r in routes {
            if let Some(k) = setup.key(&r) {
                setup.scrub.secret(&k);
            }
        }
        Self {
            inner: Scripted::new(&[], max_calls),
            setup: Arc::new(setup),
            tape: Arc::new(Mutex::new(Vec::new())),
            problem: Arc::new(Mutex::new(None)),
        }
    }

    /// The scripted transport underneath.
    pub fn scripted(&self) -> &Scripted {
        &self.inner
    }

    fn stop(&self, message: String) -> BoxFuture<'static, Result<Response, TransportError>> {
        lock(&self.problem).get_or_insert_with(|| message.clone());
        self.inner.fail(message);
        self.inner.abort_signal().notify_one();
        Box::pin(std::future::pending())
    }

    /// Ends the row: the scripted report, and the tape written to a
    /// temporary file next to its final place.
    pub fn finish(&self) -> (ScriptReport, Recording) {
        let report = self.inner.finish(&[]);
        let interactions = std::mem::take(&mut *lock(&self.tape));
        let got = interactions
            .iter()
            .map(|i| format::outcome_token(&i.response))
            .collect();
        let row = &self.setup.row;
        let mut rec = Recording {
            tmp: None,
            target: row.path.clone(),
            root: row.root.clone(),
            file: row.file.clone(),
            got,
            write_error: None,
            problem: lock(&self.problem).clone(),
        };
        let text = Tape::new(interactions).to_text();
        if let Err(why) = writable(&row.root, &row.path) {
            rec.write_error = Some(format!(
                "recording {}: refused to write the tape: {why}",
                row.file
            ));
            return (report, rec);
        }
        match write_tmp(&row.path, &text) {
            Ok(p) => {
                rec.tmp = Some(p);
                if let Some(flag) = self.setup.vars.non_empty(HOLD_ENV) {
                    hold(Path::new(flag));
                }
            }
            Err(e) => {
                rec.write_error = Some(format!(
                    "recording {}: cannot write the tape: {e}",
                    row.file
                ))
            }
        }
        (report, rec)
    }
}

/// Test-only: a path; when set, a recording stops right after writing its
/// temporary file, creates the path, and waits there (at most
/// [`HOLD_LIMIT`]) so a test can interrupt the process while the file
/// exists. Not for users; see docs/tapes.md.
pub const HOLD_ENV: &str = "FAULTMATRIX_TEST_HOLD_RECORDING";

/// How long [`HOLD_ENV`] holds a recording before it goes on.
pub const HOLD_LIMIT: std::time::Duration = std::time::Duration::from_secs(30);

/// The [`HOLD_ENV`] hold: real time, bounded, on this thread.
fn hold(flag: &Path) {
    let _ = std::fs::write(flag, b"holding\n");
    let start = std::time::Instant::now();
    while start.elapsed() < HOLD_LIMIT {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// Whether a recording may write `target`: it stays inside `root` (no
/// symlink followed, checked again right before the write) and is either
/// new or already a tape (its first lines carry `version:` and
/// `digest: sha256:`), so a recording never replaces another kind of file,
/// the matrix included.
fn writable(root: &Path, target: &Path) -> Result<(), String> {
    if root.as_os_str().is_empty() {
        return Err("the tape has no root to stay inside".into());
    }
    crate::base::confine::check_write(root, target)?;
    if target.exists() && !is_tape(target) {
        return Err(
            "the file there is not a faultmatrix tape (no `version:` and `digest: sha256:` lines): a recording only replaces a tape"
                .into(),
        );
    }
    Ok(())
}

/// Whether the file's first 4 KiB look like a tape's head.
fn is_tape(path: &Path) -> bool {
    use std::io::Read;
    let mut head = Vec::new();
    let Ok(f) = std::fs::File::open(path) else {
        return false;
    };
    if f.take(4096).read_to_end(&mut head).is_err() {
        return false;
    }
    let head = String::from_utf8_lossy(&head);
    let has = |p: &str| head.lines().any(|l| l.starts_with(p));
    has("version:") && has("digest: sha256:")
}

static TMP_SEQ: AtomicU64 = AtomicU64::new(0);

/// Removes `.NAME.recording-PID-N` files in `dir` left by a recording
/// whose process is gone (killed before it could clean up). A file of a
/// live process, this one included, is never touched. Only where process
/// liveness can be told (`/proc`); elsewhere nothing is removed.
fn remove_stale(dir: &Path, name: &str) {
    let prefix = format!(".{name}.recording-");
    if !Path::new("/proc/self").exists() {
        return;
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let file = entry.file_name();
        let Some(rest) = file.to_str().and_then(|f| f.strip_prefix(&prefix)) else {
            continue;
        };
        let Some((pid, seq)) = rest.split_once('-') else {
            continue;
        };
        let (Ok(pid), true) = (pid.parse::<u32>(), seq.bytes().all(|b| b.is_ascii_digit())) else {
            continue;
        };
        let regular = entry.file_type().is_ok_and(|t| t.is_file());
        if regular && pid != std::process::id() && !Path::new(&format!("/proc/{pid}")).exists() {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// Writes `text` to a fresh temporary file in `target`'s directory (same
/// file system, so the final rename is atomic).
fn write_tmp(target: &Path, text: &str) -> std::io::Result<PathBuf> {
    let dir = target.parent().filter(|d| !d.as_os_str().is_empty());
    if let Some(d) = dir {
        std::fs::create_dir_all(d)?;
    }
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "tape".into());
    let tmp_name = format!(
        ".{name}.recording-{}-{}",
        std::process::id(),
        TMP_SEQ.fetch_add(1, Ordering::Relaxed)
    );
    remove_stale(dir.unwrap_or(Path::new(".")), &name);
    let tmp = match dir {
        Some(d) => d.join(tmp_name),
        None => PathBuf::from(tmp_name),
    };
    let write = || -> std::io::Result<()> {
        use std::io::Write;
        // `create_new`: never follows a symlink planted under the name.
        let mut f = interrupt::create_listed(&tmp, |p| {
            std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(p)
        })?;
        f.write_all(text.as_bytes())?;
        f.sync_all()
    };
    if let Err(e) = write() {
        let _ = std::fs::remove_file(&tmp);
        interrupt::unlist(&tmp);
        return Err(e);
    }
    Ok(tmp)
}

/// The request as sent on the wire: headers and a JSON body. The routing
/// block's keys go at the top level of the body (`"provider": {...}`).
pub fn wire_request(
    r: &Request,
    key: Option<&(String, String)>,
) -> (Vec<(String, String)>, String) {
    let mut body = serde_json::Map::new();
    if let Some(m) = &r.model {
        body.insert("model".into(), m.clone().into());
    }
    body.insert("stream".into(), r.stream.into());
    body.insert(
        "messages".into(),
        serde_json::json!([{ "role": "user", "content": "faultmatrix recording" }]),
    );
    let routing: Option<serde_json::Value> = r
        .routing
        .as_deref()
        .and_then(|t| serde_json::from_str(t).ok());
    match &routing {
        Some(serde_json::Value::Object(m)) => {
            for (k, v) in m {
                body.insert(k.clone(), v.clone());
            }
        }
        Some(other) => {
            body.insert("routing".into(), other.clone());
        }
        None => {}
    }
    let mut headers = vec![
        ("content-type".to_string(), "application/json".to_string()),
        (
            "accept".to_string(),
            if r.stream {
                "text/event-stream"
            } else {
                "application/json"
            }
            .to_string(),
        ),
    ];
    if let Some(id) = &r.request_id {
        headers.push(("x-request-id".into(), id.clone()));
    }
    if let Some(k) = &r.idempotency_key {
        headers.push(("idempotency-key".into(), k.clone()));
    }
    headers.extend(r.headers.iter().map(|(k, v)| (k.to_string(), v.clone())));
    if let Some((h, v)) = key {
        headers.push((h.clone(), v.clone()));
    }
    (headers, serde_json::Value::Object(body).to_string())
}

/// Headers left out of a tape's request summary: they vary from run to run
/// (or file to file) and would make re-recording an unchanged exchange
/// produce a different tape.
const UNSTABLE: [&str; 2] = ["x-request-id", "idempotency-key"];

/// A received answer as the tape stores it, scrubbed.
pub fn tape_response(received: &Received, scrub: &Scrubber) -> TapeResponse {
    match received {
        Received::Fault(f) => TapeResponse {
            status: None,
            fault: Some(*f),
            headers: Vec::new(),
            body: None,
            stream: None,
        },
        Received::Response {
            status,
            headers,
            body,
        } => {
            let headers = headers
                .iter()
                .map(|(k, v)| Header(k.clone(), scrub.header(k, v)))
                .collect();
            let (body, stream) = match body {
                ReceivedBody::Full(t) if t.is_empty() => (None, None),
                ReceivedBody::Full(t) => (Some(scrub.body(t)), None),
                ReceivedBody::Stream { items, breaks } => (
                    None,
                    Some(TapeStream {
                        events: items
                            .iter()
                            .map(|it| match it {
                                SseItem::Comment(c) => TapeEvent {
                                    comment: Some(scrub.text(c)),
                                    ..TapeEvent::default()
                                },
                                SseItem::Event { event, data, id } => TapeEvent {
                                    comment: None,
                                    event: event.as_deref().map(|e| scrub.text(e)),
                                    data: Some(scrub.body(data)),
                                    id: id.as_deref().map(|i| scrub.text(i)),
                                },
                            })
                            .collect(),
                        breaks: *breaks,
                    }),
                ),
            };
            TapeResponse {
                status: Some(*status),
                fault: None,
                headers,
                body,
                stream,
            }
        }
    }
}

impl Transport for Recorder {
    fn call(&self, request: Request) -> BoxFuture<'static, Result<Response, TransportError>> {
        let this = self.clone();
        if lock(&self.tape).len() as u32 >= self.setup.max_calls {
            // The scripted transport's runaway guard reports it; no more
            // real calls.
            return self.inner.call(request);
        }
        let target = match self.setup.target(&request.route) {
            Ok(t) => t,
            Err(msg) => return self.stop(msg),
        };
        Box::pin(async move {
            let mut scrub = this.setup.scrub.clone();
            if let Some((_, v)) = &target.key {
                scrub.secret(v);
                if let Some(bare) = v.strip_prefix("Bearer ") {
                    scrub.secret(bare);
                }
            }
            let (headers, body) = wire_request(&request, target.key.as_ref());
            let timeout = this.setup.row.config.timeout;
            let base = target.base.clone();
            let ca_file = http::ca_file(&this.setup.vars);
            let (h, b) = (headers.clone(), body.clone());
            let sent = tokio::task::spawn_blocking(move || {
                http::send(
                    &base,
                    CALL_PATH,
                    &h,
                    b.as_bytes(),
                    timeout,
                    ca_file.as_deref(),
                )
            })
            .await;
            let received = match sent {
                Ok(Ok(r)) => r,
                Ok(Err(e)) => {
                    return this
                        .stop(format!(
                            "recording {}: cannot reach the upstream of route {} at {}: {e}",
                            this.setup.row.file, request.route, target.url
                        ))
                        .await
                }
                Err(e) => {
                    return this
                        .stop(format!(
                            "recording {}: the call failed: {e}",
                            this.setup.row.file
                        ))
                        .await
                }
            };
            let response = tape_response(&received, &scrub);
            let summary = Summary {
                method: "POST".into(),
                path: CALL_PATH.into(),
                headers: headers
                    .iter()
                    .filter(|(k, _)| !UNSTABLE.contains(&k.as_str()))
                    .map(|(k, v)| Header(k.clone(), scrub.header(k, v)))
                    .collect(),
                body: Some(scrub.body(&body)),
            };
            let interaction = Interaction {
                request: TapeRequest {
                    route: request.route.clone(),
                    model: request.model.clone(),
                    stream: request.stream,
                    routing: request
                        .routing
                        .as_deref()
                        .and_then(|t| serde_json::from_str(t).ok()),
                    summary: Some(summary),
                },
                response: response.clone(),
            };
            let served = {
                let mut tape = lock(&this.tape);
                tape.push(interaction);
                this.inner
                    .push_entry(&request.route, replay::entry(&response));
                this.inner.call(request)
            };
            served.await
        })
    }
}

/// A row's transport wiring when it has a tape.
pub(crate) enum Session {
    Replay(Replay),
    Record(Recorder),
}

impl Session {
    /// Opens a row's tape in the given mode: the scripted transport (for
    /// the clock and the abort signal), the transport the system calls, and
    /// the session to finish with.
    pub(crate) fn open(
        row: &TapeRow,
        mode: &Mode,
        env: &Arc<Env>,
        max_calls: u32,
    ) -> Result<(Scripted, Arc<dyn Transport>, Session), String> {
        match mode {
            Mode::Replay => {
                let tape = Tape::read(&row.path, &row.file).map_err(|e| match e.kind {
                    TapeErrorKind::Missing => {
                        format!("{} (the row says `tape: {}`)", e.message, row.written)
                    }
                    _ => e.message,
                })?;
                let r = Replay::new(&tape, &row.file, max_calls);
                Ok((
                    r.scripted().clone(),
                    Arc::new(r.clone()),
                    Session::Replay(r),
                ))
            }
            Mode::Record(opts) => {
                let r = Recorder::new(row, opts, env, max_calls);
                Ok((
                    r.scripted().clone(),
                    Arc::new(r.clone()),
                    Session::Record(r),
                ))
            }
        }
    }

    /// Ends the row.
    pub(crate) fn finish(&self) -> (ScriptReport, TapeOutcome) {
        match self {
            Session::Replay(r) => (r.finish(), TapeOutcome::Replayed(r.problem())),
            Session::Record(r) => {
                let (report, rec) = r.finish();
                (report, TapeOutcome::Recorded(rec))
            }
        }
    }
}
