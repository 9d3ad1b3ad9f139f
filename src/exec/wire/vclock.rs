//! Command systems on the row's virtual clock: the runner side of the
//! clock-shim control protocol, version 1 (`shims/PROTOCOL.md`).
//!
//! The row's clock lives here. The client process runs with a shim
//! (`shims/python` on `PYTHONPATH`, `shims/node/preload.cjs` in
//! `NODE_OPTIONS`) that connects to a control listener on 127.0.0.1 and
//! routes every clock read, sleep, timed socket read, event-loop wait and
//! random draw through the row's clock. The fixture server is driven by the
//! same clock: it never sends an answer before its virtual time (the time
//! the request was complete plus its `latency`), and no real timer is
//! involved. Virtual time moves only when the client is blocked and no byte
//! is in flight between it and the server (PROTOCOL.md §5).
//!
//! | piece | here |
//! |---|---|
//! | control listener, handshake (`hello` → `welcome` / `refuse`) | [`RowRun::on_message`] |
//! | the fixture server on virtual time (non-blocking sockets) | [`FixConn`], [`RowRun::drain_fixtures`], [`RowRun::fire`] |
//! | byte accounting (the five rules of §5) | [`RowRun::mismatch`] |
//! | the advance loop (§5.1) | [`RowRun::on_block`] |
//! | real-time guards (§7) | [`RowRun::check_real_time`] |
//!
//! The reference implementation of this side is
//! `shims/testing/fake_runner.py`; both give the same traces.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};
use std::io::{ErrorKind, Read, Write};
use std::net::{Ipv4Addr, Shutdown, TcpListener, TcpStream};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt};
use tokio::sync::mpsc;

use super::command::{self, Ended, Ran};
use super::http::{self, Chunked, Framing, Head, HttpError};
use super::server::{observe, WireCall};
use crate::base::env::Env;
use crate::exec::observation::Observation;
use crate::exec::scripted::Outcome;
use crate::exec::trace::{self, Ending};
use crate::exec::upstream::{Pick, Upstream};
use crate::model::command::CommandSpec;
use crate::model::{Answer, Entry, JitterInput, Matrix, ScriptedResponse, SseItem};

/// Protocol versions this runner speaks: 2 adds `connect` (a connection
/// to a fixture route is refused when the route's next entry is `refused`).
pub const VERSIONS: &[u64] = &[1, 2];
/// Real time a shim may be blocked outside the clock, or bytes may stay in
/// flight, before the row fails (PROTOCOL.md §7).
pub const STALL_MS: u64 = 2000;
/// How often a running shim sends `heartbeat`.
pub const HEARTBEAT_MS: u64 = 250;
/// What monotonic clocks read at virtual time 0 (1000 s, so code that
/// treats 0 as "unset" works).
pub const MONOTONIC_ORIGIN_NS: u64 = 1_000_000_000_000;
/// Real time the shim has to say hello after the process started (an
/// interpreter on a loaded machine; the imports come after the hello).
pub const CONNECT_BOUND: Duration = Duration::from_secs(30);
/// The harness guard on a row's real time after the hello (imports of a
/// large SDK on a loaded machine included).
pub const REAL_GUARD: Duration = Duration::from_secs(120);
/// Longest control message.
const MAX_LINE: u64 = 16 * 1024 * 1024;
/// Output kept per stream.
const KEEP_OUT: usize = 1024 * 1024;
/// Real-time period of the runner's housekeeping (flushes, guards).
const TICK: Duration = Duration::from_millis(5);
/// A housekeeping tick this late means the runner's thread did not run
/// (a loaded machine): the stall bounds restart rather than blame the client.
const RUNNER_ABSENT: Duration = Duration::from_millis(250);

/// Where the shims are: `FAULTMATRIX_SHIMS`, else a `shims/` directory next
/// to an ancestor of the running binary (a checkout's `target/…`, an
/// archive's `bin/`), else of the working directory, else the source tree
/// this binary was built from.
pub fn shims_dir(env: &Env) -> Result<PathBuf, String> {
    let complete = |d: &Path| {
        d.join("python/sitecustomize.py").is_file() && d.join("node/preload.cjs").is_file()
    };
    let absolute = |p: PathBuf| {
        let p = if p.is_absolute() { p } else { env.cwd.join(p) };
        std::fs::canonicalize(&p).unwrap_or(p)
    };
    if let Some(d) = env.non_empty("FAULTMATRIX_SHIMS") {
        let p = absolute(PathBuf::from(d));
        if complete(&p) {
            return Ok(p);
        }
        return Err(format!(
            "FAULTMATRIX_SHIMS is {d}, which has no python/sitecustomize.py and node/preload.cjs: \
             point it at the shims/ directory of a faultmatrix checkout or archive"
        ));
    }
    let mut starts: Vec<PathBuf> = Vec::new();
    if let Ok(exe) = std::env::current_exe() {
        starts.push(exe);
    }
    starts.push(absolute(env.cwd.clone()));
    for s in &starts {
        for a in s.ancestors() {
            let d = a.join("shims");
            if complete(&d) {
                return Ok(absolute(d));
            }
        }
    }
    let built = Path::new(env!("CARGO_MANIFEST_DIR")).join("shims");
    if complete(&built) {
        return Ok(built);
    }
    Err(
        "cannot find the clock shims (shims/python, shims/node) near the faultmatrix binary: \
         set FAULTMATRIX_SHIMS to the shims/ directory of a faultmatrix checkout or archive, \
         or run the system on `clock: real`"
            .into(),
    )
}

/// The environment a virtual-clock command gets on top of the row's:
/// the control channel, its token, both shims, `TZ=UTC` unless the system
/// sets `TZ`.
pub fn clock_env(
    shims: &Path,
    addr: &str,
    token: &str,
    spec: &CommandSpec,
    env: &Env,
) -> Vec<(String, String)> {
    let own = |k: &str| {
        spec.env
            .iter()
            .find(|(n, _)| n == k)
            .and_then(|(_, v)| command::expand(v, env).ok())
            .or_else(|| env.non_empty(k).map(str::to_string))
            .filter(|v| !v.is_empty())
    };
    let python = shims.join("python").display().to_string();
    let pythonpath = match own("PYTHONPATH") {
        Some(p) => format!("{python}:{p}"),
        None => python,
    };
    let preload = shims.join("node/preload.cjs").display().to_string();
    let preload = if preload.contains([' ', '"', '\\']) {
        format!("\"{}\"", preload.replace('\\', "\\\\").replace('"', "\\\""))
    } else {
        preload
    };
    let node_options = match own("NODE_OPTIONS") {
        Some(o) => format!("--require {preload} {o}"),
        None => format!("--require {preload}"),
    };
    let mut out = vec![
        ("FAULTMATRIX_CLOCK".to_string(), addr.to_string()),
        ("FAULTMATRIX_CLOCK_TOKEN".to_string(), token.to_string()),
        ("PYTHONPATH".to_string(), pythonpath),
        ("NODE_OPTIONS".to_string(), node_options),
    ];
    if !spec.env.iter().any(|(k, _)| k == "TZ") {
        out.push(("TZ".into(), "UTC".into()));
    }
    out
}

fn token() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    let n = N.fetch_add(1, Ordering::Relaxed);
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    format!("fm-{:x}-{n:x}-{t:x}", std::process::id())
}

/// The row's wall clock at virtual time 0 as epoch nanoseconds, signed (a
/// date before 1970 is negative): `welcome.wall_start_ns`, a decimal string.
fn wall_start_ns(at: std::time::SystemTime) -> i128 {
    match at.duration_since(std::time::UNIX_EPOCH) {
        Ok(d) => d.as_nanos() as i128,
        Err(e) => -(e.duration().as_nanos() as i128),
    }
}

fn fmt_ns(ns: u64) -> String {
    crate::base::duration::format(Duration::from_nanos(ns))
}

/// A scripted answer waiting for its virtual time.
struct Pending {
    entry: Entry,
    idx: usize,
    close: bool,
    key: Option<String>,
    seq: u64,
    /// A stream resumed after a pause: its head and items before this one
    /// were sent, and the pause before this one has passed.
    stream_at: Option<usize>,
}

/// One fixture connection, by the client's port.
struct FixConn {
    sock: Option<TcpStream>,
    route: String,
    inbuf: Vec<u8>,
    /// Bytes read from the client.
    received: u64,
    /// Bytes handed to the kernel for the client.
    sent: u64,
    outbuf: Vec<u8>,
    /// The client closed (EOF or an error seen).
    client_eof: bool,
    /// We sent FIN (shutdown) or RST.
    server_closed: bool,
    reset: bool,
    close_after_flush: bool,
    continued: bool,
    /// The answer due, if any.
    pending: Option<Pending>,
    /// A `timeout` entry's call: never answered, ends when the client closes.
    hanging: Option<usize>,
    unreported_since: Option<Instant>,
}

/// One control-channel event, from a connection's reader task.
enum Event {
    Connected(u64, tokio::net::tcp::OwnedWriteHalf),
    Message(u64, Value),
    Bad(u64, String),
    Closed(u64),
    /// Raw bytes of an `attach` connection (a warm child's stdout/stderr).
    Raw(u64, Vec<u8>),
}

struct Output {
    /// The child's stream (one process per row); a warm child's comes as
    /// [`Event::Raw`] from its `attach` connection.
    sock: Option<UnixStream>,
    buf: Vec<u8>,
    dropped: usize,
    open: bool,
    /// (end offset in the stream, virtual time it was read).
    times: Vec<(usize, u64)>,
}

impl Output {
    fn new(sock: Option<UnixStream>) -> Self {
        Self {
            sock,
            buf: Vec::new(),
            dropped: 0,
            open: true,
            times: Vec::new(),
        }
    }

    fn push(&mut self, bytes: &[u8], now: u64) {
        self.buf.extend_from_slice(bytes);
        self.times.push((self.dropped + self.buf.len(), now));
        if self.buf.len() > 2 * KEEP_OUT {
            let cut = self.buf.len() - KEEP_OUT;
            self.buf.drain(..cut);
            self.dropped += cut;
            let dropped = self.dropped;
            self.times.retain(|(end, _)| *end > dropped);
        }
    }

    fn drain(&mut self, now: u64) {
        let mut chunk = [0u8; 16384];
        while self.open {
            let Some(sock) = self.sock.as_mut() else {
                return;
            };
            match sock.read(&mut chunk) {
                Ok(0) => self.open = false,
                Ok(n) => self.push(&chunk[..n], now),
                Err(e) if e.kind() == ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(_) => self.open = false,
            }
        }
    }

    /// The virtual time the byte at `offset` (in the kept buffer) was read.
    fn time_of(&self, offset: usize) -> Option<u64> {
        let abs = self.dropped + offset;
        self.times
            .iter()
            .find(|(end, _)| *end >= abs)
            .map(|(_, t)| *t)
    }
}

/// One row's clock, fixture server and client.
struct RowRun<'a> {
    row: &'a crate::model::Row,
    token: String,
    now: u64,
    limit: (u64, &'static str),
    fixtures: Vec<(TcpListener, String)>,
    fixture_addrs: Vec<String>,
    conns: BTreeMap<u16, FixConn>,
    calls: Vec<WireCall>,
    upstream: Upstream,
    create: bool,
    events: BinaryHeap<Reverse<(u64, u64, u16)>>,
    seq: u64,
    dirty: Vec<u16>,
    writers: BTreeMap<u64, tokio::net::tcp::OwnedWriteHalf>,
    client: Option<u64>,
    spawn_real: Instant,
    hello_real: Option<Instant>,
    last_message_real: Option<Instant>,
    first_request_real: Option<Instant>,
    block_outstanding: bool,
    mismatch_since: Option<Instant>,
    failures: Vec<String>,
    ending: Option<Ending>,
    draws: u64,
    exit_now: Option<u64>,
    exited: bool,
    stdout: Output,
    stderr: Output,
    pid: Option<u32>,
    rounds: u64,
    busy: u64,
    /// `attach` connections: true for stdout.
    attached: BTreeMap<u64, bool>,
    /// Modules the row's process imported (its `exit.imported`): a warm
    /// parent preloads them for later rows.
    imported: Vec<String>,
    exit_real: Option<Instant>,
    /// What the client process was doing when last looked at.
    machine: ProcState,
    /// The last message sent to a shim and the client's last `block`
    /// (op and seq), for the silence message.
    last_sent: String,
    last_block: String,
    /// The protocol version chosen at the hello.
    proto: u64,
}

/// A control message's op and seq, for messages.
fn short(msg: &Value) -> String {
    let op = msg.get("op").and_then(Value::as_str).unwrap_or("?");
    match msg.get("seq") {
        Some(seq) => format!("{op} {seq}"),
        None => op.to_string(),
    }
}

/// Whether a silent client process is busy rather than blocked: on
/// Linux, from `/proc/PID/task/*/stat`. A Node event loop that runs
/// JavaScript cannot send on the clock channel, and a process waiting for a
/// CPU or the disk sends nothing either; neither is blocked outside the shim.
#[derive(Default)]
struct ProcState {
    /// The process's CPU time (clock ticks) at the last look.
    cpu: Option<u64>,
    /// What the last look saw, for the failure message.
    seen: String,
}

impl ProcState {
    /// True when a thread of `pid` is running, runnable or in disk sleep,
    /// or the process used CPU since the last look. False when all its
    /// threads sleep in the kernel and it used none, or when it cannot be
    /// seen (not Linux, gone).
    fn busy(&mut self, pid: u32) -> bool {
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
            return false;
        };
        let mut runnable = false;
        let mut cpu = 0u64;
        let mut states = String::new();
        for t in tasks.flatten() {
            let Ok(stat) = std::fs::read_to_string(t.path().join("stat")) else {
                continue;
            };
            // pid (comm) state ... utime stime: comm may hold spaces.
            let Some(after) = stat.rfind(')').map(|i| &stat[i + 1..]) else {
                continue;
            };
            let fields: Vec<&str> = after.split_whitespace().collect();
            runnable |= matches!(fields.first(), Some(&"R") | Some(&"D"));
            states.push_str(fields.first().copied().unwrap_or("?"));
            for i in [11, 12] {
                cpu += fields
                    .get(i)
                    .and_then(|f| f.parse::<u64>().ok())
                    .unwrap_or(0);
            }
        }
        let used = self.cpu.is_some_and(|before| cpu > before);
        self.cpu = Some(cpu);
        // Where its main thread sleeps (a kernel function, and the system
        // call with its first argument): an event loop's wait and a
        // blocking write read differently.
        let read = |f: &str| {
            std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/{f}"))
                .map(|t| t.split_whitespace().take(5).collect::<Vec<_>>().join(" "))
                .unwrap_or_default()
        };
        let (wchan, syscall) = (read("wchan"), read("syscall"));
        let main = if wchan.is_empty() && syscall.is_empty() {
            String::new()
        } else {
            format!(", its main thread in {wchan} (system call {syscall})")
        };
        self.seen = format!("its threads' states were {states}, its CPU time {cpu} ticks{main}");
        runnable || used
    }
}

/// Counters of one virtual-clock row, for benchmarks and messages.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ClockStats {
    /// `advance` replies.
    pub rounds: u64,
    /// `busy` replies.
    pub busy: u64,
    /// Real time from the process's start to the shim's hello.
    pub start_up: Duration,
    /// Real time from the hello to the end of the row.
    pub after_hello: Duration,
    /// Real time from the first request to the shim's `exit` (else the
    /// end of the row): the row's own real time, the program's set-up
    /// before its first call (building a client) excluded.
    pub from_first_request: Duration,
    /// Real time from the hello to the first request: the program's own
    /// set-up (building its client).
    pub set_up: Duration,
    /// Real time from the shim's `exit` to the end of the row: the
    /// runner's wrap-up (the exit status, the last output, the fixture
    /// connections' close).
    pub wrap_up: Duration,
    /// Real time from the row's start (spawn, or the request to a warm
    /// parent) to its end: everything the row cost, start-up included.
    pub whole: Duration,
    /// Real time spent taking or starting a warm parent (0 when one was
    /// idle; the parent's imports when it had to be started).
    pub parent: Duration,
    /// Whether the row ran as a warm parent's child.
    pub warm: bool,
}

impl<'a> RowRun<'a> {
    fn fail(&mut self, message: String, ending: Ending) {
        if !self.failures.contains(&message) {
            self.failures.push(message);
        }
        if self.ending.is_none() {
            self.ending = Some(ending);
        }
        command::kill_group(self.pid);
    }

    fn stopped(&self) -> bool {
        self.ending.is_some()
    }

    async fn send(&mut self, conn: u64, msg: Value) {
        if let Some(w) = self.writers.get_mut(&conn) {
            let mut line = msg.to_string();
            line.push('\n');
            self.last_sent = short(&msg);
            if w.write_all(line.as_bytes()).await.is_err() {
                self.writers.remove(&conn);
                self.last_sent.push_str(" (the write failed)");
            }
        }
    }

    fn welcome(&self) -> Value {
        let jitter = match &self.row.settings.jitter {
            JitterInput::Draws(d) => json!({ "draws": d }),
            JitterInput::Seed(s) => json!({ "seed": s }),
        };
        let wall = wall_start_ns(
            self.row
                .settings
                .wall
                .unwrap_or_else(faultmatrix_controller::policy::retry_after::default_wall_start),
        );
        json!({
            "op": "welcome",
            "v": self.proto,
            "now_ns": 0,
            "wall_start_ns": wall.to_string(),
            "monotonic_origin_ns": MONOTONIC_ORIGIN_NS,
            "jitter": jitter,
            "fixtures": self.fixture_addrs,
            "stall_ms": STALL_MS,
            "heartbeat_ms": HEARTBEAT_MS,
        })
    }

    // -- the fixture server ------------------------------------------------

    fn drain_fixtures(&mut self) {
        for (l, route) in &self.fixtures {
            loop {
                match l.accept() {
                    Ok((s, peer)) => {
                        let _ = s.set_nonblocking(true);
                        let _ = s.set_nodelay(true);
                        self.conns.insert(
                            peer.port(),
                            FixConn {
                                sock: Some(s),
                                route: route.clone(),
                                inbuf: Vec::new(),
                                received: 0,
                                sent: 0,
                                outbuf: Vec::new(),
                                client_eof: false,
                                server_closed: false,
                                reset: false,
                                close_after_flush: false,
                                continued: false,
                                pending: None,
                                hanging: None,
                                unreported_since: None,
                            },
                        );
                    }
                    Err(e) if e.kind() == ErrorKind::Interrupted => {}
                    Err(_) => break,
                }
            }
        }
        let ports: Vec<u16> = self.conns.keys().copied().collect();
        for port in ports {
            self.read_conn(port);
            self.parse_requests(port);
            self.flush(port);
        }
    }

    fn read_conn(&mut self, port: u16) {
        let now = self.now;
        let Some(c) = self.conns.get_mut(&port) else {
            return;
        };
        let mut chunk = [0u8; 65536];
        let mut eof = false;
        while !c.client_eof && !c.reset {
            let Some(sock) = c.sock.as_mut() else { break };
            match sock.read(&mut chunk) {
                Ok(0) => eof = true,
                Ok(n) => {
                    c.received += n as u64;
                    if c.inbuf.len() < 2 * (http::MAX_HEAD + http::MAX_BODY) {
                        c.inbuf.extend_from_slice(&chunk[..n]);
                    }
                    continue;
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(_) => eof = true,
            }
            if eof {
                break;
            }
        }
        if !eof {
            return;
        }
        c.client_eof = true;
        // Gave up before its answer (or on a `timeout` entry): a timeout,
        // at the close's virtual time; the answer is cancelled.
        let ended = c.pending.take().map(|p| p.idx).or(c.hanging.take());
        if !c.server_closed {
            if let Some(s) = &c.sock {
                let _ = s.shutdown(Shutdown::Write);
            }
            c.server_closed = true;
            self.dirty.push(port);
        }
        if let Some(idx) = ended {
            end_call(&mut self.calls, idx, now, Outcome::Timeout);
        }
    }

    fn parse_requests(&mut self, port: u16) {
        loop {
            let Some(c) = self.conns.get_mut(&port) else {
                return;
            };
            if c.pending.is_some() || c.hanging.is_some() || c.server_closed || c.inbuf.is_empty() {
                return;
            }
            let (head, used) = match http::parse_request_head(&c.inbuf) {
                Ok(Some(h)) => h,
                Ok(None) => return,
                Err(e) => return self.reject(port, e),
            };
            let framing = match head.framing() {
                Ok(f) => f,
                Err(e) => return self.reject(port, e),
            };
            let body = match framing {
                Framing::None => Some((Vec::new(), used)),
                Framing::Length(n) if n > http::MAX_BODY as u64 => {
                    return self.reject(
                        port,
                        HttpError {
                            status: 413,
                            message: "request body too large",
                        },
                    )
                }
                Framing::Length(n) => {
                    let n = n as usize;
                    (c.inbuf.len() >= used + n)
                        .then(|| (c.inbuf[used..used + n].to_vec(), used + n))
                }
                Framing::Chunked => {
                    let mut dec = Chunked::default();
                    let mut at = used;
                    let mut done;
                    loop {
                        match dec.feed(&c.inbuf[at..], http::MAX_BODY) {
                            Err(e) => return self.reject(port, e),
                            Ok((k, d)) => {
                                at += k;
                                done = d;
                                if d || k == 0 {
                                    break;
                                }
                            }
                        }
                    }
                    done.then(|| (std::mem::take(&mut dec.data), at))
                }
            };
            let Some((body, consumed)) = body else {
                // A client that asks first (curl does above 1 KiB) is told to go on.
                let expects = head
                    .header("expect")
                    .is_some_and(|v| v.eq_ignore_ascii_case("100-continue"));
                if expects && !c.continued && c.inbuf.len() == used {
                    c.continued = true;
                    c.outbuf.extend_from_slice(b"HTTP/1.1 100 Continue\r\n\r\n");
                }
                return;
            };
            c.inbuf.drain(..consumed);
            c.continued = false;
            self.on_request(port, &head, &body);
        }
    }

    fn reject(&mut self, port: u16, e: HttpError) {
        let body = format!(
            "{{\"error\":{{\"message\":\"faultmatrix fixture server: {}\",\"type\":\"bad_request\"}}}}",
            e.message
        );
        let bytes = http::response_bytes(e.status, &[], body.as_bytes(), true);
        if let Some(c) = self.conns.get_mut(&port) {
            c.inbuf.clear();
            c.outbuf.extend_from_slice(&bytes);
            c.close_after_flush = true;
        }
    }

    fn on_request(&mut self, port: u16, head: &Head, body: &[u8]) {
        if self.client.is_none() {
            self.fail(
                "a request arrived before the client's clock shim said hello: the command is not \
                 running with the shim (PYTHONPATH=shims/python or NODE_OPTIONS=--require \
                 shims/node/preload.cjs); a virtual-clock row never runs on the real clock \
                 (write `clock: real` for a program without a shim)"
                    .into(),
                Ending::Aborted,
            );
            return;
        }
        if self.first_request_real.is_none() {
            self.first_request_real = Some(Instant::now());
        }
        let now = self.now;
        let route = self.conns[&port].route.clone();
        let (headers, model, stream) = observe(head, body);
        let call = WireCall {
            route: route.clone(),
            attempt: 0,
            started: Duration::from_nanos(now),
            ended: None,
            outcome: Outcome::Pending,
            method: head.method.clone(),
            path: head.target.chars().take(200).collect(),
            headers,
            body_size: body.len() as u64,
            model,
            stream,
            body_seen: crate::base::json_path::observe(
                body,
                &crate::model::requests::body_paths(&self.row.expect.requests),
            ),
            answer_body: None,
            entry: "-".into(),
        };
        let close = head
            .header("connection")
            .is_some_and(|v| v.eq_ignore_ascii_case("close"))
            || head.minor == 0;
        let key = call.header("idempotency-key").map(str::to_string);
        let target = Some((call.method.as_str(), call.path.as_str()));
        let (script, attempt, label, pick) =
            self.upstream
                .call_at(&route, target, self.create, key.as_deref());
        // The route's next call is refused at connect time: this answer
        // closes its connection, so the client has to connect again (a
        // pooled connection would be reused without a connect).
        let close = close || self.upstream.next_refused(&route);
        self.calls.push(WireCall {
            route: script,
            attempt,
            entry: label,
            ..call
        });
        let idx = self.calls.len() - 1;
        match pick {
            Pick::Refused => {
                let body = br#"{"error":{"message":"faultmatrix: no answer was scripted for this call","type":"fixture_exhausted"}}"#;
                let bytes = http::response_bytes(
                    500,
                    &[("x-should-retry".into(), "false".into())],
                    body,
                    true,
                );
                self.queue(port, &bytes, true);
                end_call(&mut self.calls, idx, now, Outcome::Unscripted);
                // The upstream recorded why; the row is stopped.
                if self.ending.is_none() {
                    self.ending = Some(Ending::Aborted);
                }
                command::kill_group(self.pid);
            }
            Pick::Stored((status, headers, body)) => {
                let bytes = http::response_bytes(status, &headers, body.as_bytes(), close);
                self.calls[idx].answer_body = Some(body);
                end_call(&mut self.calls, idx, now, Outcome::Status(status));
                self.queue(port, &bytes, close);
            }
            Pick::Entry(entry) => {
                if matches!(entry.answer, Answer::Timeout) {
                    if self.create && entry.committed {
                        self.upstream.committed_before_timeout(key.as_deref());
                    }
                    if let Some(c) = self.conns.get_mut(&port) {
                        c.hanging = Some(idx);
                    }
                    return;
                }
                let seq = self.seq;
                self.seq += 1;
                let due = now.saturating_add(entry.latency.as_nanos() as u64);
                self.events.push(Reverse((due, seq, port)));
                if let Some(c) = self.conns.get_mut(&port) {
                    c.pending = Some(Pending {
                        entry,
                        idx,
                        close,
                        key,
                        seq,
                        stream_at: None,
                    });
                }
            }
        }
    }

    fn queue(&mut self, port: u16, data: &[u8], close_after: bool) {
        if let Some(c) = self.conns.get_mut(&port) {
            c.outbuf.extend_from_slice(data);
            c.close_after_flush |= close_after;
        }
        self.flush(port);
    }

    fn flush(&mut self, port: u16) {
        let Some(c) = self.conns.get_mut(&port) else {
            return;
        };
        let mut changed = false;
        while !c.outbuf.is_empty() && !c.reset {
            let Some(sock) = c.sock.as_mut() else { break };
            match sock.write(&c.outbuf) {
                Ok(0) => break,
                Ok(n) => {
                    c.sent += n as u64;
                    c.outbuf.drain(..n);
                    changed = true;
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(_) => {
                    c.outbuf.clear();
                    break;
                }
            }
        }
        if c.outbuf.is_empty() && c.close_after_flush && !c.server_closed {
            if let Some(s) = &c.sock {
                let _ = s.shutdown(Shutdown::Write);
            }
            c.server_closed = true;
            changed = true;
        }
        if changed {
            self.dirty.push(port);
        }
    }

    fn reset(&mut self, port: u16) {
        if let Some(c) = self.conns.get_mut(&port) {
            c.reset = true;
            c.server_closed = true;
            c.outbuf.clear();
            if let Some(s) = c.sock.take() {
                // SO_LINGER 0 then close: the client sees a TCP RST.
                if let Ok(t) = tokio::net::TcpStream::from_std(s) {
                    let _ = t.set_zero_linger();
                    drop(t);
                }
            }
            self.dirty.push(port);
        }
    }

    /// A scripted answer's time has come: its bytes go out now.
    fn fire(&mut self, port: u16, seq: u64) -> bool {
        let now = self.now;
        let Some(c) = self.conns.get_mut(&port) else {
            return false;
        };
        if c.pending.as_ref().is_none_or(|p| p.seq != seq) {
            return false; // cancelled: the client closed first
        }
        let Some(p) = c.pending.take() else {
            return false;
        };
        let Pending {
            mut entry,
            idx,
            close,
            key,
            stream_at,
            ..
        } = p;
        // The shim's wall clock: the start it was given in the welcome
        // plus the row's virtual time.
        crate::exec::upstream::render_dates(
            &mut entry,
            self.row
                .settings
                .wall
                .unwrap_or_else(faultmatrix_controller::policy::retry_after::default_wall_start)
                + std::time::Duration::from_nanos(now),
        );
        if let (Answer::Response(r), None) = (&entry.answer, stream_at) {
            if self.create && (200..300).contains(&r.status) {
                let body = r.body.clone().unwrap_or_default();
                self.upstream
                    .created(key.as_deref(), (r.status, r.headers.clone(), body));
            }
        }
        match entry.answer {
            Answer::Timeout => {}
            Answer::Refused => {
                end_call(&mut self.calls, idx, now, Outcome::Unscripted);
                self.reset(port);
                let c = &self.calls[idx];
                let why = if self.proto < 2 {
                    "the client's clock shim speaks protocol v1, which cannot refuse a connection (update the shim)"
                } else {
                    "its request came on a connection that was already open: a refusal happens when the client connects, and the fixture server closes the connection after the answer before a `refused`, so the client opened another connection earlier (a pool of several) or reused one it kept"
                };
                let message = format!(
                    "{} is scripted `refused`, but {why} (docs/over-the-wire.md#refused-connections)",
                    crate::exec::trace::call_label(&c.route, c.attempt)
                );
                self.fail(message, Ending::Aborted);
            }
            Answer::Reset => {
                end_call(&mut self.calls, idx, now, Outcome::Reset);
                self.reset(port);
            }
            Answer::Malformed => {
                end_call(&mut self.calls, idx, now, Outcome::Malformed);
                self.queue(
                    port,
                    b"HTTP/1.1 2x0 \x00\x01 not a response\r\n\x7f\x7f garbage\r\n\r\n",
                    true,
                );
            }
            Answer::Truncated => {
                let body = br#"{"id":"chatcmpl-1","object":"chat.completion","choices":[{"#;
                let bytes = http::response_bytes(200, &[], body, true);
                let text = String::from_utf8_lossy(&bytes).replace(
                    &format!("content-length: {}", body.len()),
                    &format!("content-length: {}", body.len() * 2),
                );
                end_call(&mut self.calls, idx, now, Outcome::Malformed);
                self.queue(port, text.as_bytes(), true);
            }
            Answer::Response(r) => match r.stream {
                None => {
                    let body = r.body.unwrap_or_default();
                    let bytes = http::response_bytes(r.status, &r.headers, body.as_bytes(), close);
                    self.calls[idx].answer_body = Some(body);
                    end_call(&mut self.calls, idx, now, Outcome::Status(r.status));
                    self.queue(port, &bytes, close);
                }
                Some(spec) => {
                    let mut bytes = match stream_at {
                        None => http::stream_head(r.status, &r.headers),
                        Some(_) => Vec::new(),
                    };
                    let mut i = stream_at.unwrap_or(0);
                    loop {
                        let pause = spec.pause_before(i);
                        if !pause.is_zero() && stream_at != Some(i) {
                            // A stall: what came before goes out now, the
                            // rest when the pause has passed on the clock.
                            let seq = self.seq;
                            self.seq += 1;
                            let due = now.saturating_add(pause.as_nanos() as u64);
                            self.events.push(Reverse((due, seq, port)));
                            let entry = Entry {
                                answer: Answer::Response(ScriptedResponse {
                                    stream: Some(spec),
                                    ..r
                                }),
                                ..entry
                            };
                            if let Some(c) = self.conns.get_mut(&port) {
                                c.pending = Some(Pending {
                                    entry,
                                    idx,
                                    close,
                                    key,
                                    seq,
                                    stream_at: Some(i),
                                });
                            }
                            self.queue(port, &bytes, false);
                            return true;
                        }
                        let Some(item) = spec.items.get(i) else { break };
                        bytes.extend_from_slice(&http::sse_chunk(item));
                        i += 1;
                    }
                    let data_events = spec
                        .items
                        .iter()
                        .filter(|item| matches!(item, SseItem::Event { .. }))
                        .count();
                    if spec.breaks {
                        end_call(&mut self.calls, idx, now, Outcome::Broken { data_events });
                        self.queue(port, &bytes, true);
                    } else {
                        bytes.extend_from_slice(http::LAST_CHUNK);
                        end_call(&mut self.calls, idx, now, Outcome::Status(r.status));
                        self.queue(port, &bytes, close);
                    }
                }
            },
        }
        // The next request on a kept-alive connection may already be here.
        self.parse_requests(port);
        true
    }

    // -- the clock ------------------------------------------------------------

    /// None when every byte the client wrote has reached the server and
    /// every byte the server sent has reached the client (PROTOCOL.md §5);
    /// else what is still in flight.
    fn mismatch(&mut self, conns: &[Value]) -> Option<String> {
        let mut seen = Vec::new();
        for e in conns {
            let port = e.get("port").and_then(Value::as_u64).unwrap_or(0) as u16;
            let flag = |k: &str| e.get(k).and_then(Value::as_bool).unwrap_or(false);
            let num = |k: &str| e.get(k).and_then(Value::as_u64).unwrap_or(0);
            seen.push(port);
            let Some(c) = self.conns.get(&port) else {
                return Some(format!(
                    "the connection from port {port} is not accepted yet"
                ));
            };
            if !c.reset && c.received != num("written") {
                return Some(format!(
                    "port {port}: the client wrote {} bytes, the server has {}",
                    num("written"),
                    c.received
                ));
            }
            if flag("closed") && !c.client_eof && !c.reset {
                return Some(format!(
                    "port {port}: the client closed, the server has not seen it yet"
                ));
            }
            if flag("closed") || flag("paused") {
                continue;
            }
            if !c.outbuf.is_empty() {
                return Some(format!(
                    "port {port}: {} bytes not yet handed to the kernel",
                    c.outbuf.len()
                ));
            }
            if c.sent != num("arrived") {
                return Some(format!(
                    "port {port}: the server sent {} bytes, {} arrived",
                    c.sent,
                    num("arrived")
                ));
            }
            if c.server_closed && !flag("eof") {
                return Some(format!(
                    "port {port}: the server closed, the client has not seen it yet"
                ));
            }
        }
        let mut foreign = None;
        for (port, c) in self.conns.iter_mut() {
            if !seen.contains(port) && c.received > 0 && !c.client_eof {
                let since = *c.unreported_since.get_or_insert_with(Instant::now);
                if since.elapsed() > Duration::from_millis(STALL_MS) {
                    foreign = Some(*port);
                }
                if foreign.is_none() {
                    return Some(format!("port {port} is not accounted for by the shim"));
                }
                break;
            }
        }
        if let Some(port) = foreign {
            self.fail(
                format!(
                    "a connection from port {port} carried a request but the client's shim does not \
                     account for it (a socket outside the shim: another process, or a socket the \
                     shim cannot see); its timing cannot be virtual"
                ),
                Ending::Aborted,
            );
            return Some(format!("port {port} is not accounted for by the shim"));
        }
        None
    }

    fn waiting_on(&self) -> String {
        self.conns
            .values()
            .filter_map(|c| c.pending.as_ref().map(|p| p.idx).or(c.hanging))
            .filter(|&i| self.calls[i].ended.is_none())
            .min()
            .map(|i| {
                let c = &self.calls[i];
                format!(
                    " and was killed while waiting on {} (scripted: {})",
                    trace::call_label(&c.route, c.attempt),
                    c.entry
                )
            })
            .unwrap_or_default()
    }

    async fn on_block(&mut self, conn: u64, msg: &Value) {
        self.block_outstanding = true;
        self.draws = self.draws.max(num(msg, "draws"));
        let seq = msg.get("seq").cloned().unwrap_or(Value::Null);
        self.drain_fixtures();
        self.drain_output();
        let empty = Vec::new();
        let conns = msg.get("conns").and_then(Value::as_array).unwrap_or(&empty);
        let problem = self.mismatch(conns);
        if self.stopped() {
            return;
        }
        if let Some(problem) = problem {
            let since = *self.mismatch_since.get_or_insert_with(Instant::now);
            if since.elapsed() > Duration::from_millis(STALL_MS) {
                self.fail(
                    format!("bytes stayed in flight for {STALL_MS} ms of real time: {problem}"),
                    Ending::Aborted,
                );
                return;
            }
            self.busy += 1;
            self.block_outstanding = false;
            self.send(conn, json!({"op": "busy", "seq": seq, "detail": problem}))
                .await;
            return;
        }
        self.mismatch_since = None;
        let deadline = msg.get("deadline_ns").and_then(Value::as_u64);
        let wake_on: Vec<u64> = msg
            .get("wake_on")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_u64).collect())
            .unwrap_or_default();
        let (limit, key) = self.limit;
        loop {
            let next = self.events.peek().map(|Reverse((t, _, _))| *t);
            let t = [deadline, next, Some(limit)]
                .into_iter()
                .flatten()
                .min()
                .unwrap_or(limit);
            if t == limit && deadline.is_none_or(|d| limit < d) && next.is_none_or(|n| limit < n) {
                self.now = self.now.max(limit);
                let waiting = self.waiting_on();
                self.fail(
                    format!(
                        "the command was still running after {} of virtual time (the row's `{key}`){waiting}",
                        fmt_ns(limit)
                    ),
                    Ending::Hung,
                );
                return;
            }
            self.now = self.now.max(t);
            let mut touched = Vec::new();
            while let Some(Reverse((due, s, port))) = self.events.peek().copied() {
                if due > self.now {
                    break;
                }
                self.events.pop();
                if self.fire(port, s) {
                    touched.push(port as u64);
                }
            }
            let woke = if touched.iter().any(|p| wake_on.contains(p)) {
                "io"
            } else if deadline.is_some_and(|d| self.now >= d) {
                if touched.is_empty() {
                    "timer"
                } else {
                    "io"
                }
            } else {
                continue; // bytes for connections nobody waits on: keep going
            };
            let mut ports = std::mem::take(&mut self.dirty);
            ports.sort_unstable();
            ports.dedup();
            let changes: Vec<Value> = ports
                .iter()
                .filter_map(|p| self.conns.get(p).map(|c| (p, c)))
                .map(|(p, c)| json!({"port": p, "sent": c.sent, "closed": c.server_closed}))
                .collect();
            self.rounds += 1;
            self.block_outstanding = false;
            let now = self.now;
            self.send(
                conn,
                json!({"op": "advance", "seq": seq, "now_ns": now, "woke": woke, "conns": changes}),
            )
            .await;
            return;
        }
    }

    /// `connect` (v2): the client is about to connect to a fixture
    /// listener. When the route's next entry is `refused`, that entry is
    /// this call: it is recorded at `now`, takes no virtual time, and the
    /// shim raises the language's own refused error instead of connecting.
    /// Otherwise nothing is consumed and the connection goes ahead.
    async fn on_connect(&mut self, conn: u64, msg: &Value) {
        let seq = msg.get("seq").cloned().unwrap_or(Value::Null);
        let port = num(msg, "port");
        let route = self
            .fixture_addrs
            .iter()
            .position(|a| a.rsplit(':').next() == Some(port.to_string().as_str()))
            .map(|i| self.fixtures[i].1.clone());
        let refused = match route {
            Some(route) => self.refuse_connect(&route),
            None => false,
        };
        self.send(
            conn,
            json!({"op": "connect", "seq": seq, "refused": refused}),
        )
        .await;
    }

    /// Serves a refused connection on `route` when its next entry says so.
    fn refuse_connect(&mut self, route: &str) -> bool {
        if self.first_request_real.is_none() {
            self.first_request_real = Some(Instant::now());
        }
        let Some((attempt, label)) = self.upstream.refuse_connect(route) else {
            return false;
        };
        let now = Duration::from_nanos(self.now);
        self.calls
            .push(WireCall::refused(route, attempt, now, label));
        if self.upstream.has_failures() && self.ending.is_none() {
            // The runaway guard stopped the run at this call.
            self.ending = Some(Ending::Aborted);
            command::kill_group(self.pid);
        }
        true
    }

    fn drain_output(&mut self) {
        self.stdout.drain(self.now);
        self.stderr.drain(self.now);
    }

    async fn on_message(&mut self, conn: u64, msg: Value) {
        let op = msg
            .get("op")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        if op == "attach" && self.client != Some(conn) {
            if msg.get("token").and_then(Value::as_str) == Some(self.token.as_str()) {
                let stdout = msg.get("stream").and_then(Value::as_str) == Some("stdout");
                self.attached.insert(conn, stdout);
            }
            return;
        }
        if self.stopped() && !matches!(op.as_str(), "exit" | "error" | "heartbeat") {
            return;
        }
        if self.client != Some(conn) {
            if op != "hello" {
                self.fail(
                    format!(
                        "the clock channel's first message was `{op}`, not `hello`: the client's shim does not speak protocol v1"
                    ),
                    Ending::Aborted,
                );
                return;
            }
            let versions: Vec<u64> = msg
                .get("versions")
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(Value::as_u64).collect())
                .unwrap_or_default();
            let refuse = if !versions.iter().any(|v| VERSIONS.contains(v)) {
                Some(format!(
                    "no common protocol version: the shim speaks {versions:?}, the runner {VERSIONS:?}"
                ))
            } else if msg.get("token").and_then(Value::as_str) != Some(self.token.as_str()) {
                Some("unknown token".to_string())
            } else if self.client.is_some() {
                Some("a second process for the same row".to_string())
            } else if msg.get("role").and_then(Value::as_str) == Some("warm") {
                Some("this runner starts one process per row: no warm parent here".to_string())
            } else {
                None
            };
            if let Some(why) = refuse {
                self.send(
                    conn,
                    json!({"op": "refuse", "error": why, "versions": VERSIONS}),
                )
                .await;
                self.writers.remove(&conn);
                if why != "a second process for the same row" || self.client.is_none() {
                    self.fail(
                        format!("the runner refused the client's clock shim: {why}"),
                        Ending::Aborted,
                    );
                }
                return;
            }
            self.client = Some(conn);
            self.proto = versions
                .iter()
                .copied()
                .filter(|v| VERSIONS.contains(v))
                .max()
                .unwrap_or(1);
            self.hello_real = Some(Instant::now());
            self.last_message_real = self.hello_real;
            let w = self.welcome();
            self.send(conn, w).await;
            return;
        }
        self.last_message_real = Some(Instant::now());
        self.machine.cpu = None;
        match op.as_str() {
            "block" => {
                self.last_block = short(&msg);
                self.on_block(conn, &msg).await
            }
            "connect" if self.proto >= 2 => self.on_connect(conn, &msg).await,
            "heartbeat" => self.draws = self.draws.max(num(&msg, "draws")),
            "stalled" => {
                let text = |k: &str| match msg.get(k) {
                    Some(Value::String(s)) => s.clone(),
                    Some(Value::Array(a)) => a
                        .iter()
                        .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_string))
                        .collect::<Vec<_>>()
                        .join("; "),
                    Some(v) => v.to_string(),
                    None => "?".into(),
                };
                self.fail(
                    format!(
                        "the client blocked in real time for {} ms outside the virtual clock ({}); at {}",
                        text("real_ms"),
                        text("detail"),
                        text("where")
                    ),
                    Ending::Aborted,
                );
            }
            "error" => {
                self.draws = self.draws.max(num(&msg, "draws"));
                let code = msg.get("code").and_then(Value::as_str).unwrap_or("?");
                let message = msg.get("message").and_then(Value::as_str).unwrap_or("");
                if code == "draws_exhausted" {
                    // Said once, at the end, as in process.
                } else {
                    self.fail(
                        format!("the clock shim reported {code}: {message}"),
                        Ending::Aborted,
                    );
                }
            }
            "exit" => {
                self.draws = self.draws.max(num(&msg, "draws"));
                self.exit_now = Some(self.now);
                self.exit_real = Some(Instant::now());
                if let Some(m) = msg.get("imported").and_then(Value::as_array) {
                    self.imported = m
                        .iter()
                        .filter_map(|v| v.as_str().map(str::to_string))
                        .collect();
                }
            }
            other => self.fail(
                format!("the clock shim sent an unknown message `{other}` (protocol v1)"),
                Ending::Aborted,
            ),
        }
    }

    /// After the runner's own thread was kept from running: silence and
    /// bytes in flight are measured again from `now`, since what the client
    /// sent meanwhile may still be unread.
    fn runner_was_absent(&mut self, now: Instant) {
        if self.last_message_real.is_some() {
            self.last_message_real = Some(now);
        }
        if self.mismatch_since.is_some() {
            self.mismatch_since = Some(now);
        }
    }

    /// The bounds that catch a client blocked outside the shim.
    fn check_real_time(&mut self) {
        if self.stopped() || self.exited {
            return;
        }
        let Some(hello) = self.hello_real else {
            if self.spawn_real.elapsed() > CONNECT_BOUND {
                self.fail(
                    format!(
                        "the client never connected to the clock within {} s (is the shim installed \
                         through PYTHONPATH / NODE_OPTIONS? write `clock: real` for a program without a shim)",
                        CONNECT_BOUND.as_secs()
                    ),
                    Ending::Aborted,
                );
            }
            return;
        };
        let silent_for = |r: &Self, ms: u64| {
            r.first_request_real.is_some()
                && r.exit_now.is_none()
                && !r.block_outstanding
                && r.last_message_real
                    .is_some_and(|t| t.elapsed() > Duration::from_millis(ms))
        };
        let silent = |r: &Self| silent_for(r, STALL_MS);
        if silent_for(self, STALL_MS / 2) && self.machine.cpu.is_none() {
            // A first look half-way, so that the last one can tell whether
            // the process used CPU meanwhile.
            if let Some(pid) = self.pid {
                if self.machine.busy(pid) {
                    self.last_message_real = Some(Instant::now());
                    self.machine.cpu = None;
                }
            }
        }
        if silent(self) && self.pid.is_some_and(|pid| self.machine.busy(pid)) {
            // Computing (a synchronous compile, a long parse), or waiting
            // for a CPU or the disk on a loaded machine: not blocked.
            self.last_message_real = Some(Instant::now());
        }
        if silent(self) {
            let seen = if self.machine.seen.is_empty() {
                String::new()
            } else {
                format!(" ({})", self.machine.seen)
            };
            let seen = format!(
                "{seen}; the client's last block: {}, the runner's last message: {}",
                if self.last_block.is_empty() {
                    "none"
                } else {
                    &self.last_block
                },
                if self.last_sent.is_empty() {
                    "none"
                } else {
                    &self.last_sent
                },
            );
            self.fail(
                format!(
                    "the client sent nothing on the clock channel for {STALL_MS} ms of real time after its \
                     first request without waiting on the virtual clock: it is blocked outside the shim \
                     (a synchronous wait, a busy loop, or a wait the shim does not cover){seen}"
                ),
                Ending::Aborted,
            );
        }
        if hello.elapsed() > REAL_GUARD {
            self.fail(
                format!(
                    "the row took more than {} s of real time after the client started (harness guard)",
                    REAL_GUARD.as_secs()
                ),
                Ending::Aborted,
            );
        }
    }
}

fn num(msg: &Value, key: &str) -> u64 {
    msg.get(key).and_then(Value::as_u64).unwrap_or(0)
}

fn end_call(calls: &mut [WireCall], idx: usize, now: u64, outcome: Outcome) {
    let c = &mut calls[idx];
    if c.ended.is_none() {
        c.ended = Some(Duration::from_nanos(now));
        c.outcome = outcome;
    }
}

async fn read_control(id: u64, sock: tokio::net::TcpStream, tx: mpsc::UnboundedSender<Event>) {
    let (r, w) = sock.into_split();
    if tx.send(Event::Connected(id, w)).is_err() {
        return;
    }
    let mut r = tokio::io::BufReader::new(r);
    loop {
        let mut line = Vec::new();
        match (&mut r)
            .take(MAX_LINE + 1)
            .read_until(b'\n', &mut line)
            .await
        {
            Ok(0) | Err(_) => {
                let _ = tx.send(Event::Closed(id));
                return;
            }
            Ok(_) => {
                if line.last() != Some(&b'\n') {
                    let why = if line.len() as u64 > MAX_LINE {
                        "a control message longer than 16 MiB".to_string()
                    } else {
                        let _ = tx.send(Event::Closed(id));
                        return;
                    };
                    let _ = tx.send(Event::Bad(id, why));
                    return;
                }
                match serde_json::from_slice::<Value>(&line) {
                    Ok(v) if v.get("op").and_then(Value::as_str) == Some("attach") => {
                        // A warm child's stdout or stderr: raw bytes follow.
                        if tx.send(Event::Message(id, v)).is_err() {
                            return;
                        }
                        let ahead = r.buffer().to_vec();
                        r.consume(ahead.len());
                        if !ahead.is_empty() && tx.send(Event::Raw(id, ahead)).is_err() {
                            return;
                        }
                        let mut chunk = vec![0u8; 16384];
                        loop {
                            match r.get_mut().read(&mut chunk).await {
                                Ok(0) | Err(_) => {
                                    let _ = tx.send(Event::Closed(id));
                                    return;
                                }
                                Ok(n) => {
                                    if tx.send(Event::Raw(id, chunk[..n].to_vec())).is_err() {
                                        return;
                                    }
                                }
                            }
                        }
                    }
                    Ok(v) if v.is_object() => {
                        if tx.send(Event::Message(id, v)).is_err() {
                            return;
                        }
                    }
                    _ => {
                        let text = String::from_utf8_lossy(&line);
                        let _ = tx.send(Event::Bad(
                            id,
                            format!(
                                "a control message that is not a JSON object: {}",
                                text.trim().chars().take(120).collect::<String>()
                            ),
                        ));
                        return;
                    }
                }
            }
        }
    }
}

fn unix_pair() -> std::io::Result<(UnixStream, std::process::Stdio)> {
    let (ours, theirs) = UnixStream::pair()?;
    ours.set_nonblocking(true)?;
    let fd: std::os::fd::OwnedFd = theirs.into();
    Ok((ours, std::process::Stdio::from(fd)))
}

/// Runs one row of a command system on its virtual clock (one process per
/// row).
pub async fn run_row(
    matrix: &Matrix,
    row: &crate::model::Row,
    spec: &CommandSpec,
    env: &Env,
) -> Observation {
    run_row_stats(matrix, row, spec, env).await.0
}

/// As [`run_row`], with the clock's counters.
pub async fn run_row_stats(
    matrix: &Matrix,
    row: &crate::model::Row,
    spec: &CommandSpec,
    env: &Env,
) -> (Observation, ClockStats) {
    let row_start = Instant::now();
    let request_id = crate::exec::observation::request_id(&matrix.file, &row.name);
    let failed = |m: String| {
        (
            Observation::failed(request_id.clone(), m),
            ClockStats::default(),
        )
    };
    if row.tape().is_some() {
        return failed(
            "a row with a tape cannot run over the wire: tapes replay in process only".into(),
        );
    }
    let shims = match shims_dir(env) {
        Ok(d) => d,
        Err(e) => return failed(e),
    };
    let scripts = command::row_scripts(row, spec);
    let mut fixtures = Vec::new();
    let mut routes = Vec::new();
    let mut fixture_addrs = Vec::new();
    for s in &scripts {
        // One listener per route: keyed side scripts share their route's.
        let route = s.key().0;
        if routes.iter().any(|(r, _): &(String, String)| r == route) {
            continue;
        }
        let bound = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
            .and_then(|l| l.set_nonblocking(true).map(|()| l))
            .and_then(|l| l.local_addr().map(|a| (l, a)));
        let (l, addr) = match bound {
            Ok(x) => x,
            Err(e) => return failed(format!("cannot bind the fixture server on 127.0.0.1: {e}")),
        };
        routes.push((route.to_string(), format!("http://{addr}")));
        fixture_addrs.push(addr.to_string());
        fixtures.push((l, route.to_string()));
    }
    let control = match tokio::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await {
        Ok(l) => l,
        Err(e) => {
            return failed(format!(
                "cannot bind the clock's control listener on 127.0.0.1: {e}"
            ))
        }
    };
    let control_addr = match control.local_addr() {
        Ok(a) => a.to_string(),
        Err(e) => return failed(format!("cannot bind the clock's control listener: {e}")),
    };
    let token = token();
    let s = &row.settings;
    let limit = if spec.timeout <= s.budget {
        (spec.timeout.as_nanos() as u64, "system.timeout")
    } else {
        (s.budget.as_nanos() as u64, "budget")
    };
    let (tx, rx) = mpsc::unbounded_channel();
    let mut r = RowRun {
        row,
        token,
        now: 0,
        limit,
        fixtures,
        fixture_addrs,
        conns: BTreeMap::new(),
        calls: Vec::new(),
        upstream: Upstream::new(&scripts, s.max_calls),
        create: s.request.create,
        events: BinaryHeap::new(),
        seq: 0,
        dirty: Vec::new(),
        writers: BTreeMap::new(),
        client: None,
        spawn_real: Instant::now(),
        hello_real: None,
        last_message_real: None,
        first_request_real: None,
        block_outstanding: false,
        mismatch_since: None,
        failures: Vec::new(),
        ending: None,
        draws: 0,
        exit_now: None,
        exited: false,
        stdout: Output::new(None),
        stderr: Output::new(None),
        pid: None,
        rounds: 0,
        busy: 0,
        attached: BTreeMap::new(),
        imported: Vec::new(),
        exit_real: None,
        machine: ProcState::default(),
        last_sent: String::new(),
        last_block: String::new(),
        proto: 1,
    };
    let mut rx = rx;
    // A warm parent's child, else a process of its own.
    let mut warm_run: Option<WarmRun> = None;
    let mut own: Option<tokio::process::Child> = None;
    let mut parent_time = Duration::ZERO;
    // A Node spare: started ahead of the row, now the row's process.
    let mut spare_wait: Option<tokio::task::JoinHandle<std::io::Result<std::process::ExitStatus>>> =
        None;
    let mut spare_key = None;
    let mut next_spare: Option<NextSpare> = None;
    let node_spare = spec.warm
        && spec
            .argv
            .first()
            .is_some_and(|p| crate::model::command::is_node(p));
    if node_spare {
        let t0 = Instant::now();
        match take_spare(
            matrix,
            row,
            spec,
            env,
            &shims,
            &routes,
            &request_id,
            &control_addr,
            &r,
        )
        .await
        {
            Ok((taken, key, next)) => {
                next_spare = Some(next);
                parent_time = t0.elapsed();
                r.pid = Some(taken.child.id());
                r.stdout = Output::new(Some(taken.stdout));
                r.stderr = Output::new(Some(taken.stderr));
                let mut child = taken.child;
                spare_wait = Some(tokio::task::spawn_blocking(move || child.wait()));
                spare_key = Some(key);
            }
            Err(e) => {
                return failed(format!(
                    "{e} (the row runs in a spare process started ahead of it: `system.warm: \
                     false` starts one process per row instead)"
                ))
            }
        }
    } else if spec.warm {
        let t0 = Instant::now();
        match start_warm_child(
            matrix,
            row,
            spec,
            env,
            &shims,
            &routes,
            &request_id,
            &control_addr,
            &r,
        )
        .await
        {
            Ok(w) => {
                parent_time = t0.elapsed();
                warm_run = Some(w);
            }
            // Never a silent fallback to a process per row: a parent that
            // cannot start would cost its start-up again on every row, and
            // its reason would be lost.
            Err(e) => {
                return failed(format!(
                    "{e} (the row runs as a child of a warm parent: `system.warm: false` runs \
                     one process per row instead)"
                ))
            }
        }
    }
    if warm_run.is_none() && spare_wait.is_none() {
        let (mut cmd, argv) =
            match command::base_command(matrix, row, spec, env, &routes, &request_id) {
                Ok(c) => c,
                Err(e) => return failed(e),
            };
        for (k, v) in clock_env(&shims, &control_addr, &r.token, spec, env) {
            cmd.env(k, v);
        }
        cmd.env_remove("FAULTMATRIX_WARM");
        let (out, err) = match (unix_pair(), unix_pair()) {
            (Ok(o), Ok(e)) => (o, e),
            (Err(e), _) | (_, Err(e)) => {
                return failed(format!("cannot make the command's output pipes: {e}"))
            }
        };
        cmd.stdout(out.1).stderr(err.1);
        r.spawn_real = Instant::now();
        let child = match cmd.spawn() {
            Ok(c) => c,
            Err(e) => return failed(command::spawn_error(&argv, spec, &e)),
        };
        // The child's ends of the pipes are in the child only now.
        drop(cmd);
        r.pid = child.id();
        r.stdout = Output::new(Some(out.0));
        r.stderr = Output::new(Some(err.0));
        own = Some(child);
    }
    let is_warm = warm_run.is_some() || spare_wait.is_some();
    if is_warm {
        // The parent's own start-up (its imports) is not the row's.
        r.spawn_real = Instant::now();
    }
    let acceptor = tokio::spawn(async move {
        let mut id = 0u64;
        while let Ok((sock, _)) = control.accept().await {
            let _ = sock.set_nodelay(true);
            id += 1;
            tokio::spawn(read_control(id, sock, tx.clone()));
        }
    });
    let mut tick = tokio::time::interval(TICK);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut status: Option<std::process::ExitStatus> = None;
    let mut wait_error = None;
    let mut settle: Option<Instant> = None;
    let mut parent_gone = false;
    let mut last_tick = Instant::now();
    let mut chunk = vec![0u8; 8192];
    loop {
        tokio::select! {
            ev = rx.recv() => match ev {
                Some(Event::Connected(id, w)) => { r.writers.insert(id, w); }
                Some(Event::Message(id, v)) => r.on_message(id, v).await,
                Some(Event::Raw(id, bytes)) => {
                    let now = r.now;
                    match r.attached.get(&id) {
                        Some(true) => r.stdout.push(&bytes, now),
                        Some(false) => r.stderr.push(&bytes, now),
                        None => {}
                    }
                }
                Some(Event::Bad(id, why)) if r.client == Some(id) || r.client.is_none() => {
                    r.fail(format!("the clock channel broke: {why}"), Ending::Aborted);
                }
                Some(Event::Bad(..)) => {}
                Some(Event::Closed(id)) => {
                    r.writers.remove(&id);
                    match r.attached.remove(&id) {
                        Some(true) => r.stdout.open = false,
                        Some(false) => r.stderr.open = false,
                        None => {}
                    }
                }
                None => {}
            },
            st = maybe_join(spare_wait.as_mut()), if status.is_none() && wait_error.is_none() => {
                match st {
                    Ok(st) => status = Some(st),
                    Err(e) => wait_error = Some(e.to_string()),
                }
                r.exited = true;
            }
            st = maybe_wait(own.as_mut()), if status.is_none() && wait_error.is_none() => {
                match st {
                    Ok(st) => status = Some(st),
                    Err(e) => wait_error = Some(e.to_string()),
                }
                r.exited = true;
            }
            n = maybe_read(warm_run.as_mut(), &mut chunk), if warm_run.as_ref().is_some_and(|w| !w.broken) => {
                let w = warm_run.as_mut().expect("enabled only with a warm parent");
                match n {
                    Ok(0) | Err(_) => {
                        w.broken = true;
                        if status.is_none() {
                            parent_gone = true;
                            r.fail("the warm parent's channel closed while its child ran the row".into(), Ending::Aborted);
                        }
                    }
                    Ok(n) => {
                        w.buf.extend_from_slice(&chunk[..n]);
                        for msg in w.messages() {
                            let op = msg.get("op").and_then(Value::as_str).unwrap_or("");
                            if msg.get("id").and_then(Value::as_str) != Some(w.id.as_str()) {
                                continue;
                            }
                            match op {
                                "spawned" => {
                                    r.pid = msg.get("pid").and_then(Value::as_u64).map(|p| p as u32);
                                    if r.stopped() {
                                        command::kill_group(r.pid);
                                    }
                                }
                                "exited" => {
                                    use std::os::unix::process::ExitStatusExt;
                                    let code = msg.get("code").and_then(Value::as_i64);
                                    let sig = msg.get("signal").and_then(Value::as_i64);
                                    let raw = match (code, sig) {
                                        (Some(c), _) => ((c as i32) & 0xff) << 8,
                                        (None, Some(sg)) => (sg as i32) & 0x7f,
                                        (None, None) => 0xff << 8,
                                    };
                                    status = Some(std::process::ExitStatus::from_raw(raw));
                                    r.exited = true;
                                }
                                _ => {}
                            }
                        }
                    }
                }
            }
            _ = tick.tick() => {
                let now = Instant::now();
                let late = now.duration_since(last_tick) > RUNNER_ABSENT;
                last_tick = now;
                r.drain_fixtures();
                r.drain_output();
                if late {
                    // The runner itself did not run (a loaded machine): the
                    // client's messages may be queued unread, so real-time
                    // bounds count again from now.
                    r.runner_was_absent(now);
                } else {
                    r.check_real_time();
                }
            }
        }
        if settle.is_none() && (r.exited || r.stopped()) {
            settle = Some(Instant::now() + Duration::from_secs(2));
            if r.stopped() && !r.exited {
                command::kill_group(r.pid);
                if let Some(c) = own.as_mut() {
                    let _ = c.start_kill();
                }
                if let Some(w) = warm_run.as_mut() {
                    w.send_kill().await;
                }
            }
        }
        if let Some(deadline) = settle {
            // Late control messages (the shim's `exit`) and the last bytes:
            // the process is gone, its sockets close, its output ends.
            r.drain_fixtures();
            r.drain_output();
            let conns_done = r.conns.values().all(|c| c.client_eof || c.reset);
            let done = r.exited && !r.stdout.open && !r.stderr.open && conns_done;
            if done || Instant::now() > deadline {
                break;
            }
        }
    }
    let loop_end = Instant::now();
    if let Some(next) = next_spare.take() {
        next();
    }
    acceptor.abort();
    if let Some(p) = warm_run.as_ref().and_then(|w| w.parent.as_ref()) {
        // What the parent wrote while it served this row (a child's
        // traceback before it attached its own streams, the parent's own
        // last words): part of the row's stderr, so its failure shows it.
        // A child that reached the shim's `exit` had attached its own
        // streams and ran its program to the end (an error exit status
        // included): the parent has nothing more of it to say, so only
        // another ending waits (up to 100 ms of quiet) for its last lines.
        let clean = r.ending.is_none()
            && r.failures.is_empty()
            && (status.is_some_and(|s| s.success()) || r.exit_real.is_some());
        if !clean {
            p.said.settle(Duration::from_secs(1));
        }
        let mark = warm_run.as_ref().map_or(0, |w| w.said_mark);
        let said = p.said.since(mark);
        if !said.is_empty() {
            let pid = p.child.id();
            if !r.stderr.buf.is_empty() && !r.stderr.buf.ends_with(b"\n") {
                r.stderr.buf.push(b'\n');
            }
            r.stderr.buf.extend_from_slice(
                format!(
                    "[faultmatrix: the warm parent (pid {pid}) wrote, while it served this row:]\n"
                )
                .as_bytes(),
            );
            r.stderr.buf.extend_from_slice(&said);
        }
        if parent_gone {
            // All it wrote, its start included: why it went away may be
            // older than this row.
            let all = p.said.since(0);
            let text = if all.is_empty() {
                "it wrote nothing on stdout or stderr".to_string()
            } else {
                format!(
                    "its output ends with:\n{}",
                    super::warm::tail_text(&all, 20)
                )
            };
            for f in &mut r.failures {
                if f.starts_with("the warm parent's channel closed") {
                    f.push_str(&format!(" (parent pid {pid}); {text}", pid = p.child.id()));
                }
            }
        }
    }
    if let Some(key) = &spare_key {
        super::warm::learn(key, &r.imported);
    }
    if let Some(mut w) = warm_run.take() {
        if let Some(p) = w.parent.as_ref() {
            super::warm::learn(&p.key, &r.imported);
        }
        // What this row imported, the parent imports before the next spawn.
        let new: Vec<String> = r
            .imported
            .iter()
            .filter(|m| w.parent.as_ref().is_some_and(|p| !p.preloaded.contains(*m)))
            .cloned()
            .collect();
        if !new.is_empty() && !w.broken && w.send(json!({"op": "preload", "modules": new})).await {
            if let Some(p) = w.parent.as_mut() {
                p.preloaded.extend(new);
            }
        }
        w.give_back();
    }
    if status.is_none() && wait_error.is_none() {
        wait_error = Some("the command did not exit after SIGKILL".into());
    }
    // A call still waiting when the process went away: it was given up.
    let now = r.now;
    for c in r.conns.values_mut() {
        if let Some(i) = c.pending.take().map(|p| p.idx).or(c.hanging.take()) {
            end_call(&mut r.calls, i, now, Outcome::Timeout);
        }
    }
    let after_hello = r.hello_real.map_or(Duration::ZERO, |h| h.elapsed());
    let from_first_request = r.first_request_real.map_or(Duration::ZERO, |f| {
        r.exit_real
            .unwrap_or_else(Instant::now)
            .saturating_duration_since(f)
    });
    let start_up = r.hello_real.map_or(Duration::ZERO, |h| {
        h.saturating_duration_since(r.spawn_real)
    });
    let set_up = match (r.hello_real, r.first_request_real) {
        (Some(h), Some(f)) => f.saturating_duration_since(h),
        _ => Duration::ZERO,
    };
    let wrap_up = r
        .exit_real
        .map_or(Duration::ZERO, |e| loop_end.saturating_duration_since(e));
    if r.client.is_none() && r.ending.is_none() {
        r.failures.push(format!(
            "the command exited before its clock shim said hello: it did not run with the shim \
             (is the program Python or Node? write `clock: real` for anything else); stderr ends with:\n{}",
            last_lines(&r.stderr.buf, 12)
        ));
    }
    if let JitterInput::Draws(d) = &s.jitter {
        if r.draws > d.len() as u64 {
            r.failures.push(format!(
                "the row scripted {} jitter draw{} but the system asked for more",
                d.len(),
                if d.len() == 1 { "" } else { "s" }
            ));
        }
    }
    let route_order: Vec<&str> = row.inject().iter().map(|x| x.route.as_str()).collect();
    let (mut failures, records) = r.upstream.finish(&route_order);
    failures.splice(0..0, r.failures.drain(..));
    let mut calls = std::mem::take(&mut r.calls);
    calls.sort_by_key(|c| c.started);
    // The row returned when the runner read its JSON result line, else at
    // the shim's `exit`, else when the process was seen gone.
    let returned = json_time(&r.stdout).or(r.exit_now).unwrap_or(r.now);
    let ended = match (r.ending, status, wait_error) {
        (Some(e), _, _) => Ended::Stopped(e),
        (None, Some(st), _) => Ended::Exited(st),
        (None, None, Some(e)) => Ended::WaitFailed(e),
        (None, None, None) => Ended::Aborted,
    };
    let stats = ClockStats {
        rounds: r.rounds,
        busy: r.busy,
        start_up,
        after_hello,
        from_first_request,
        set_up,
        wrap_up,
        whole: row_start.elapsed(),
        parent: parent_time,
        warm: is_warm,
    };
    let ran = Ran {
        ended,
        calls: command::records_with(&calls, |d| d),
        failures,
        records,
        returned_at: Duration::from_nanos(returned),
        stdout: std::mem::take(&mut r.stdout.buf),
        stderr: std::mem::take(&mut r.stderr.buf),
        limit: Duration::from_nanos(limit.0),
        exact: true,
    };
    (command::observation(matrix, row, request_id, ran), stats)
}

async fn maybe_wait(
    child: Option<&mut tokio::process::Child>,
) -> std::io::Result<std::process::ExitStatus> {
    match child {
        Some(c) => c.wait().await,
        None => std::future::pending().await,
    }
}

async fn maybe_join(
    wait: Option<&mut tokio::task::JoinHandle<std::io::Result<std::process::ExitStatus>>>,
) -> std::io::Result<std::process::ExitStatus> {
    match wait {
        Some(h) => h
            .await
            .unwrap_or_else(|e| Err(std::io::Error::other(e.to_string()))),
        None => std::future::pending().await,
    }
}

async fn maybe_read(w: Option<&mut WarmRun>, buf: &mut [u8]) -> std::io::Result<usize> {
    match w {
        Some(w) => w.chan.read(buf).await,
        None => std::future::pending().await,
    }
}

/// A row's child of a warm parent: the parent's channel, lent to the row.
struct WarmRun {
    parent: Option<super::warm::Parent>,
    /// Where the parent's output was when it forked the row's child.
    said_mark: u64,
    chan: tokio::net::TcpStream,
    buf: Vec<u8>,
    id: String,
    broken: bool,
}

impl WarmRun {
    fn messages(&mut self) -> Vec<Value> {
        let mut out = Vec::new();
        while let Some(i) = self.buf.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = self.buf.drain(..=i).collect();
            if let Ok(v) = serde_json::from_slice::<Value>(&line) {
                out.push(v);
            }
        }
        out
    }

    async fn send(&mut self, msg: Value) -> bool {
        let mut line = msg.to_string();
        line.push('\n');
        let ok = self.chan.write_all(line.as_bytes()).await.is_ok();
        self.broken |= !ok;
        ok
    }

    async fn send_kill(&mut self) {
        let id = self.id.clone();
        self.send(json!({"op": "kill", "id": id, "signal": 9}))
            .await;
    }

    /// The parent goes back to the pool, unless its channel broke.
    fn give_back(mut self) {
        let Some(mut parent) = self.parent.take() else {
            return;
        };
        if self.broken {
            return; // dropped: killed
        }
        match self.chan.into_std() {
            Ok(std) => {
                let _ = std.set_nonblocking(false);
                parent.chan = std;
                parent.buf = self.buf;
                super::warm::give_back(parent);
            }
            Err(_) => drop(parent),
        }
    }
}

/// Takes (or starts) a warm parent for the command and asks it to fork the
/// row's child, with the complete environment a fresh process would get.
#[allow(clippy::too_many_arguments)]
async fn start_warm_child(
    matrix: &Matrix,
    row: &crate::model::Row,
    spec: &CommandSpec,
    env: &Env,
    shims: &Path,
    routes: &[(String, String)],
    request_id: &str,
    control_addr: &str,
    r: &RowRun<'_>,
) -> Result<WarmRun, String> {
    let key = super::warm::Key {
        argv: command::expand_argv(spec, env)?,
        cwd: spec.cwd.clone(),
        // What the interpreter reads before the shim runs, and the list of
        // modules the parent imports; the rest of the row's environment
        // reaches the child through `spawn.env`.
        env: command::system_env(spec, env)?
            .into_iter()
            .filter(|(k, _)| k.starts_with("PYTHON") || k == "FAULTMATRIX_WARM_IMPORTS")
            .collect(),
    };
    let parent = match super::warm::take(&key) {
        Some(p) => p,
        None => {
            let mut welcome = r.welcome();
            welcome["jitter"] = json!({ "seed": 0 });
            welcome["fixtures"] = json!([]);
            let shims = shims.to_path_buf();
            let spec2 = spec.clone();
            let env2 = env.clone();
            let token = self::token();
            let imports = command::system_env(spec, env)?
                .into_iter()
                .find(|(k, _)| k == "FAULTMATRIX_WARM_IMPORTS")
                .map(|(_, v)| v)
                .filter(|v| !v.is_empty());
            tokio::task::spawn_blocking(move || {
                super::warm::start(
                    key,
                    |addr, tok| clock_env(&shims, addr, tok, &spec2, &env2),
                    &welcome,
                    token,
                    imports,
                )
            })
            .await
            .map_err(|e| format!("starting a warm parent failed: {e}"))??
        }
    };
    let child_env = row_env(
        matrix,
        row,
        spec,
        env,
        shims,
        routes,
        request_id,
        control_addr,
        r,
    )?;
    let mut parent = parent;
    let chan = parent
        .chan
        .try_clone()
        .and_then(|c| c.set_nonblocking(true).map(|()| c))
        .and_then(tokio::net::TcpStream::from_std)
        .map_err(|e| format!("the warm parent's channel: {e}"))?;
    let buf = std::mem::take(&mut parent.buf);
    let said_mark = parent.said.mark();
    let mut w = WarmRun {
        said_mark,
        parent: Some(parent),
        chan,
        buf,
        id: r.token.clone(),
        broken: false,
    };
    let id = w.id.clone();
    // The parent already runs in the command's directory (part of its key).
    if !w
        .send(json!({"op": "spawn", "id": id, "env": child_env}))
        .await
    {
        return Err("the warm parent's channel is closed".into());
    }
    Ok(w)
}

/// The complete environment of a row's process that was started before
/// the row (a warm child, a spare): what a process started for the row
/// would get.
#[allow(clippy::too_many_arguments)]
fn row_env(
    matrix: &Matrix,
    row: &crate::model::Row,
    spec: &CommandSpec,
    env: &Env,
    shims: &Path,
    routes: &[(String, String)],
    request_id: &str,
    control_addr: &str,
    r: &RowRun<'_>,
) -> Result<BTreeMap<String, String>, String> {
    let mut child_env: BTreeMap<String, String> = env
        .vars()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    child_env.remove("FAULTMATRIX_WARM");
    child_env.remove("FAULTMATRIX_WARM_IMPORTS");
    for (k, v) in command::row_vars(matrix, row, spec, env, routes, request_id)? {
        child_env.insert(k, v);
    }
    for (k, v) in clock_env(shims, control_addr, &r.token, spec, env) {
        child_env.insert(k, v);
    }
    Ok(child_env)
}

/// Takes (or starts) a spare Node process for the command and hands the
/// row to it; the returned [`NextSpare`] starts the next one in the
/// background.
#[allow(clippy::too_many_arguments)]
async fn take_spare(
    matrix: &Matrix,
    row: &crate::model::Row,
    spec: &CommandSpec,
    env: &Env,
    shims: &Path,
    routes: &[(String, String)],
    request_id: &str,
    control_addr: &str,
    r: &RowRun<'_>,
) -> Result<(super::spare::Taken, super::warm::Key, NextSpare), String> {
    let key = super::warm::Key {
        argv: command::expand_argv(spec, env)?,
        cwd: spec.cwd.clone(),
        // What Node reads before the shim runs, and what the shim reads
        // before its row (FAULTMATRIX_NODE_WARM_UP, FAULTMATRIX_NODE_GC);
        // the rest of the row's environment reaches the spare through
        // `spawn.env`.
        env: command::system_env(spec, env)?
            .into_iter()
            .filter(|(k, _)| {
                k.starts_with("NODE_")
                    || k.starts_with("UV_")
                    || k.starts_with("FAULTMATRIX_NODE_")
                    || k == "FAULTMATRIX_WARM_IMPORTS"
            })
            .collect(),
    };
    let mut welcome = r.welcome();
    welcome["jitter"] = json!({ "seed": 0 });
    welcome["fixtures"] = json!([]);
    let vars = {
        let shims = shims.to_path_buf();
        let spec = spec.clone();
        let env = env.clone();
        move |addr: &str, tok: &str| clock_env(&shims, addr, tok, &spec, &env)
    };
    let spare = {
        let (key, vars, welcome) = (key.clone(), vars.clone(), welcome.clone());
        tokio::task::spawn_blocking(move || match super::spare::take_or_wait(&key) {
            Some(s) => Ok(s),
            None => super::spare::start(key, vars, &welcome, self::token()),
        })
        .await
        .map_err(|e| format!("starting a spare process failed: {e}"))??
    };
    // The next row's spare starts when this row's process is done (the
    // caller calls `next`): started now, its start-up (a Node process
    // compiling and requiring the SDK) would compete for the machine with
    // this row's own real time.
    let next: NextSpare = {
        let key = key.clone();
        Box::new(move || super::spare::start_in_background(key, vars, welcome, self::token()))
    };
    let child_env = row_env(
        matrix,
        row,
        spec,
        env,
        shims,
        routes,
        request_id,
        control_addr,
        r,
    )?;
    let id = r.token.clone();
    let taken =
        tokio::task::spawn_blocking(move || super::spare::hand_over(spare, &id, &child_env))
            .await
            .map_err(|e| format!("handing the row to a spare process failed: {e}"))??;
    Ok((taken, key, next))
}

/// Starts the spare for the command's next row (see [`take_spare`]).
type NextSpare = Box<dyn FnOnce() + Send>;

/// The virtual time the last JSON line on stdout was read.
fn json_time(out: &Output) -> Option<u64> {
    let text = &out.buf;
    let mut end = text.len();
    for line in text.split_inclusive(|b| *b == b'\n').rev() {
        let start = end - line.len();
        let t = String::from_utf8_lossy(line);
        if t.trim().starts_with('{') {
            return out.time_of(start + line.len().max(1) - 1);
        }
        end = start;
    }
    None
}

fn last_lines(bytes: &[u8], n: usize) -> String {
    let text = String::from_utf8_lossy(bytes);
    let lines: Vec<&str> = text.lines().collect();
    let start = lines.len().saturating_sub(n);
    lines[start..]
        .iter()
        .map(|l| format!("  | {l}"))
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wall_clock_is_signed_epoch_nanoseconds() {
        let epoch = std::time::UNIX_EPOCH;
        assert_eq!(
            wall_start_ns(epoch + Duration::from_secs(784_111_777)),
            784_111_777_000_000_000
        );
        assert_eq!(
            wall_start_ns(epoch - Duration::from_secs(1)),
            -1_000_000_000
        );
    }

    #[test]
    fn a_process_asleep_in_the_kernel_is_not_busy_and_one_computing_is() {
        if !Path::new("/proc/self/task").is_dir() {
            return; // Linux only: elsewhere nothing is ever called busy
        }
        let mut sleeper = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .expect("sleep runs");
        let mut asleep = ProcState::default();
        // It gets to its sleep (a loaded machine may take a while).
        let seen_asleep = (0..200).any(|_| {
            std::thread::sleep(Duration::from_millis(10));
            asleep.cpu = None;
            !asleep.busy(sleeper.id())
        });
        let _ = sleeper.kill();
        let _ = sleeper.wait();
        assert!(seen_asleep, "never seen asleep: {}", asleep.seen);
        // The message names where its main thread sleeps.
        assert!(
            asleep.seen.contains("its main thread in"),
            "{}",
            asleep.seen
        );
        // This process is running this test: a thread is running.
        let mut me = ProcState::default();
        assert!(me.busy(std::process::id()), "{}", me.seen);
        // A process that is gone is not busy.
        let mut gone = ProcState::default();
        assert!(!gone.busy(sleeper.id()));
    }
}
