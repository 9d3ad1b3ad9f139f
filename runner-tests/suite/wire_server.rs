//! The fixture server and the HTTP transport on real sockets: garbage in
//! never panics and gets a 4xx, nothing listens beyond 127.0.0.1, rows
//! never share counters, every script entry means the same on the wire,
//! a hung command is killed at its budget, and bad wire settings get
//! diagnostics.

use std::time::{Duration, Instant};

use faultmatrix::exec::scripted::Outcome;
use faultmatrix::exec::wire::client::HttpTransport;
use faultmatrix::exec::wire::FixtureServer;
use faultmatrix::model::{
    Answer, Entry, Repeat, RouteScript, ScriptedResponse, SseItem, StreamSpec,
};
use faultmatrix::transport::{Body, Request, Transport, TransportError};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

fn entry(answer: Answer) -> Entry {
    Entry {
        answer,
        latency: Duration::ZERO,
        repeat: Repeat::Times(1),
        committed: false,
        label: "x".into(),
    }
}

fn status(s: u16, body: &str) -> Entry {
    entry(Answer::Response(ScriptedResponse {
        status: s,
        headers: vec![("Retry-After".into(), "1".into())],
        body: Some(body.into()),
        stream: None,
        dates: Vec::new(),
    }))
}

fn script(route: &str, entries: Vec<Entry>) -> Vec<RouteScript> {
    vec![RouteScript {
        route: route.into(),
        entries,
    }]
}

fn transport(server: &FixtureServer) -> HttpTransport {
    let routes: Vec<(String, String)> = server
        .listeners()
        .iter()
        .map(|l| (l.route.clone(), l.url()))
        .collect();
    HttpTransport::new(&routes, "/v1/chat/completions").unwrap()
}

fn req(route: &str) -> Request {
    Request {
        route: route.into(),
        request_id: Some("req-1".into()),
        model: Some("gpt-x".into()),
        stream: true,
        size: 5000,
        ..Request::default()
    }
}

async fn raw(addr: std::net::SocketAddr, bytes: &[u8]) -> String {
    let mut s = TcpStream::connect(addr).await.unwrap();
    let _ = s.write_all(bytes).await;
    // Done sending: a half request then meets EOF instead of a wait.
    let _ = s.shutdown().await;
    let mut out = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(2), s.read_to_end(&mut out)).await;
    String::from_utf8_lossy(&out).into_owned()
}

#[tokio::test]
async fn garbage_requests_get_4xx_and_the_server_keeps_serving() {
    let server = FixtureServer::start(&script("A", vec![status(200, "{}")]), 100)
        .await
        .unwrap();
    let addr = server.listeners()[0].addr;
    let big_body = "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 2000000\r\n\r\n".to_string();
    let huge_head = format!(
        "GET / HTTP/1.1\r\nHost: x\r\nX: {}\r\n\r\n",
        "a".repeat(20_000)
    );
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (b"\x00\x01\x02\xff\xfe garbage\r\n\r\n".to_vec(), "HTTP/1.1 400"),
        (b"GET\r\n\r\n".to_vec(), "HTTP/1.1 400"),
        (b"GET / HTTP/1.1\r\n\r\n".to_vec(), "HTTP/1.1 400"),
        (b"GET / HTTP/9.9\r\nHost: x\r\n\r\n".to_vec(), "HTTP/1.1 505"),
        (b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n".to_vec(), "HTTP/1.1 400"),
        (b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec(), "HTTP/1.1 400"),
        (b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n".to_vec(), "HTTP/1.1 400"),
        (b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n".to_vec(), "HTTP/1.1 501"),
        (big_body.into_bytes(), "HTTP/1.1 413"),
        (huge_head.into_bytes(), "HTTP/1.1 431"),
        (vec![b'A'; 100_000], "HTTP/1.1 400"),
        ("GET /\u{e9} HTTP/1.1\r\nHost: x\r\n\r\n".as_bytes().to_vec(), "HTTP/1.1 400"),
    ];
    for (input, want) in &cases {
        let got = raw(addr, input).await;
        assert!(
            got.starts_with(want),
            "{:?}: expected {want}, got {got:?}",
            String::from_utf8_lossy(&input[..input.len().min(60)])
        );
    }
    // Half a request, then the client goes away: no answer, no call.
    let _ = raw(addr, b"POST / HTTP/1.1\r\nHost: x\r\nContent-Le").await;
    // The script is untouched: the first real call gets the first entry.
    let t = transport(&server);
    let r = t.call(req("A")).await.unwrap();
    assert_eq!(r.status, 200);
    let report = server.finish(&["A"]);
    assert_eq!(report.calls.len(), 1);
    assert_eq!(report.rejected as usize, cases.len());
    assert!(report.failures.is_empty(), "{:?}", report.failures);
}

#[tokio::test]
async fn listens_on_loopback_only_and_rows_never_share_counters() {
    let s = script("A", vec![status(503, "{}"), status(200, "{}")]);
    let one = FixtureServer::start(&s, 100).await.unwrap();
    let two = FixtureServer::start(&s, 100).await.unwrap();
    for l in one.listeners().iter().chain(two.listeners()) {
        assert!(l.addr.ip().is_loopback(), "{}", l.addr);
        assert_eq!(l.addr.ip().to_string(), "127.0.0.1");
    }
    assert_ne!(one.listeners()[0].addr, two.listeners()[0].addr);
    // A non-loopback address of this machine, if it has one, is refused.
    if let Ok(sock) = std::net::UdpSocket::bind("0.0.0.0:0") {
        if sock.connect("10.255.255.255:9").is_ok() {
            if let Ok(local) = sock.local_addr() {
                if !local.ip().is_loopback() && !local.ip().is_unspecified() {
                    let port = one.listeners()[0].addr.port();
                    let r = TcpStream::connect((local.ip(), port)).await;
                    assert!(r.is_err(), "reachable on {}:{port}", local.ip());
                }
            }
        }
    }
    let (t1, t2) = (transport(&one), transport(&two));
    assert_eq!(t1.call(req("A")).await.unwrap().status, 503);
    assert_eq!(t2.call(req("A")).await.unwrap().status, 503);
    assert_eq!(t1.call(req("A")).await.unwrap().status, 200);
    assert_eq!(t2.call(req("A")).await.unwrap().status, 200);
}

#[tokio::test]
async fn every_entry_means_the_same_on_the_wire() {
    let stream = entry(Answer::Response(ScriptedResponse {
        status: 200,
        headers: Vec::new(),
        body: None,
        stream: Some(StreamSpec {
            items: vec![
                SseItem::Comment("keep-alive".into()),
                SseItem::Event {
                    event: None,
                    data: "one".into(),
                    id: None,
                },
            ],
            breaks: true,
            pauses: Vec::new(),
        }),
        dates: Vec::new(),
    }));
    let mut slow = status(200, r#"{"ok":true}"#);
    slow.latency = Duration::from_millis(150);
    let entries = vec![
        entry(Answer::Reset),
        entry(Answer::Malformed),
        entry(Answer::Truncated),
        stream,
        slow,
        entry(Answer::Timeout),
        status(429, r#"{"error":{"code":"rate_limit_exceeded"}}"#),
    ];
    let server = FixtureServer::start(&script("A", entries), 100)
        .await
        .unwrap();
    let t = transport(&server);
    assert_eq!(t.call(req("A")).await.unwrap_err(), TransportError::Reset);
    assert_eq!(
        t.call(req("A")).await.unwrap_err(),
        TransportError::Malformed
    );
    // Truncated: the body ends before its promised length.
    assert_eq!(
        t.call(req("A")).await.unwrap_err(),
        TransportError::Malformed
    );
    let r = t.call(req("A")).await.unwrap();
    let Body::Stream(mut s) = r.body else {
        panic!("expected a stream")
    };
    assert_eq!(
        s.next().await,
        Some(Ok(SseItem::Comment("keep-alive".into())))
    );
    assert!(matches!(s.next().await, Some(Ok(SseItem::Event { .. }))));
    assert!(matches!(s.next().await, Some(Err(_))), "the stream breaks");
    let started = Instant::now();
    let r = t.call(req("A")).await.unwrap();
    assert!(
        started.elapsed() >= Duration::from_millis(150),
        "latency is served"
    );
    assert_eq!(r.text(), Some(r#"{"ok":true}"#));
    let hung = tokio::time::timeout(Duration::from_millis(200), t.call(req("A"))).await;
    assert!(hung.is_err(), "a timeout entry never answers");
    let r = t.call(req("A")).await.unwrap();
    assert_eq!((r.status, r.header("retry-after")), (429, Some("1")));
    tokio::time::sleep(Duration::from_millis(50)).await;
    let report = server.finish(&["A"]);
    let outcomes: Vec<Outcome> = report.calls.iter().map(|c| c.outcome.clone()).collect();
    assert_eq!(
        outcomes,
        vec![
            Outcome::Reset,
            Outcome::Malformed,
            Outcome::Malformed,
            Outcome::Broken { data_events: 1 },
            Outcome::Status(200),
            Outcome::Timeout,
            Outcome::Status(429),
        ]
    );
    // What was observed about the requests, and what was not kept.
    let c = &report.calls[0];
    assert_eq!(
        (c.method.as_str(), c.path.as_str()),
        ("POST", "/v1/chat/completions")
    );
    assert_eq!(c.model.as_deref(), Some("gpt-x"));
    assert!(c.stream);
    assert_eq!(
        c.body_size, 5000,
        "the body is padded to the request's size"
    );
    assert_eq!(c.header("x-request-id"), Some("req-1"));
    let attempts: Vec<u32> = report.calls.iter().map(|c| c.attempt).collect();
    assert_eq!(attempts, vec![1, 2, 3, 4, 5, 6, 7]);
}

#[tokio::test]
async fn credentials_are_never_recorded_and_extra_calls_are_refused() {
    let server = FixtureServer::start(&script("A", vec![status(200, "{}")]), 100)
        .await
        .unwrap();
    let addr = server.listeners()[0].addr;
    let body = r#"{"model":"m","stream":false}"#;
    let head = format!(
        "POST /v1/x HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer sk-secret\r\nX-Api-Key: k\r\nCookie: c\r\nIdempotency-Key: idem-1\r\nX-Stainless-Retry-Count: 0\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    // Keep-alive: two requests on one connection, answered in order.
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.write_all(head.as_bytes()).await.unwrap();
    s.write_all(head.as_bytes()).await.unwrap();
    let mut out = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(2), s.read_to_end(&mut out)).await;
    let text = String::from_utf8_lossy(&out);
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
    assert!(
        text.contains("HTTP/1.1 500"),
        "the extra call is refused: {text}"
    );
    assert!(text.contains("x-should-retry: false"), "{text}");
    let report = server.finish(&["A"]);
    assert_eq!(report.calls.len(), 2);
    let c = &report.calls[0];
    assert_eq!(c.header("idempotency-key"), Some("idem-1"));
    assert_eq!(c.header("x-stainless-retry-count"), Some("0"));
    for secret in ["authorization", "x-api-key", "cookie"] {
        assert_eq!(c.header(secret), None, "{secret} was recorded");
    }
    assert_eq!(
        report.failures,
        vec!["route A: call 2 but 1 answer was scripted".to_string()]
    );
}

fn load(text: &str) -> Result<faultmatrix::model::Matrix, String> {
    faultmatrix::load::load_text("t.yaml", text, None, &faultmatrix::Systems::new())
        .map_err(|e| e.to_string())
}

#[test]
fn a_hung_command_is_killed_at_its_budget() {
    let m = load(
        "title: t\nsystem: { command: [sleep, '30'], timeout: 1s }\nrows:\n  - name: hangs\n    inject: { A: [200] }\n    expect: { stop: success }\n",
    )
    .unwrap();
    let started = Instant::now();
    let obs = faultmatrix::exec::run::run_row(&m, &m.rows[0]);
    let took = started.elapsed();
    // Killed, not waited for: `sleep 30` would take 30s. The bound is far
    // from both the 1s budget (a loaded machine adds start-up and the
    // runner's 2s grace for the pipes) and the 30s of a command left to
    // run, so load cannot make it miss.
    assert!(took < Duration::from_secs(15), "took {took:?}");
    let msg = faultmatrix::verdict::check(&m, &m.rows[0], &obs)
        .unwrap_err()
        .render();
    assert!(
        msg.contains("the command was still running after 1s (the row's budget) and was killed"),
        "{msg}"
    );
    assert!(
        msg.contains("stop: expected `success`, observed `hung`"),
        "{msg}"
    );
}

#[test]
fn a_command_that_cannot_start_fails_clearly() {
    let m = load(
        "title: t\nsystem: { command: [/nonexistent/client] }\nrows:\n  - name: r\n    inject: { A: [200] }\n    expect: { stop: success }\n",
    )
    .unwrap();
    let obs = faultmatrix::exec::run::run_row(&m, &m.rows[0]);
    let msg = faultmatrix::verdict::check(&m, &m.rows[0], &obs)
        .unwrap_err()
        .render();
    assert!(
        msg.contains("cannot start the command `/nonexistent/client`"),
        "{msg}"
    );
}

#[test]
fn a_shell_client_with_curl_less_http_passes() {
    // Any language: a POSIX shell client speaking HTTP through bash's /dev/tcp.
    if !std::path::Path::new("/bin/bash").exists() {
        return;
    }
    let m = load(concat!(
        "title: t\n",
        "system:\n",
        "  command: [bash, -c, 'exec 3<>/dev/tcp/127.0.0.1/${FAULTMATRIX_URL_A##*:}; printf \"POST /go HTTP/1.1\\r\\nHost: x\\r\\nx-request-id: $FAULTMATRIX_REQUEST_ID\\r\\nConnection: close\\r\\nContent-Length: 2\\r\\n\\r\\n{}\" >&3; head -c 12 <&3; echo; echo \"{\\\"outcome\\\": \\\"error\\\", \\\"stop\\\": \\\"gave-up\\\"}\"']\n",
        "rows:\n",
        "  - name: r\n",
        "    inject: { A: [503] }\n",
        "    expect:\n",
        "      trace: 'A1 503 UPSTREAM_UNAVAILABLE fail'\n",
        "      stop: gave-up\n",
        "      requests: { A1: { method: POST, path: /go, headers: { x-request-id: $present } } }\n",
    ))
    .unwrap();
    let obs = faultmatrix::exec::run::run_row(&m, &m.rows[0]);
    faultmatrix::verdict::check(&m, &m.rows[0], &obs).unwrap();
    assert_eq!(
        obs.calls[0].request.request_id.as_deref(),
        Some(obs.request_id.as_str())
    );
}

#[test]
fn bad_wire_settings_get_diagnostics() {
    let cases: [(&str, &str); 5] = [
        (
            "system: { command: [] }",
            "`command` is the program and its arguments",
        ),
        (
            "system: { command: [x], timout: 1s }",
            "unknown key `timout`",
        ),
        (
            "system: { command: [x] }\ndefaults: { tolerance: { rel: ten } }",
            "`rel: ten` is not a percentage",
        ),
        (
            "system: { command: [x] }\ndefaults: { tolerance: { abs: 5 } }",
            "has no unit",
        ),
        (
            "system: { command: [x] }\ndefaults: { tolerance: { abs: 5ms, rel: 5% } }\nrowz: []",
            "unknown key `rowz`",
        ),
    ];
    for (head, want) in cases {
        let text = format!(
            "title: t\n{head}\nrows:\n  - name: r\n    inject: {{ A: [200] }}\n    expect: {{ stop: success }}\n"
        );
        let err = load(&text).map(|_| ()).unwrap_err();
        assert!(err.contains(want), "{head}: expected {want:?} in\n{err}");
        assert!(err.contains("t.yaml:"), "{err}");
    }
    let err = load("title: t\nsystem: { command: [x] }\nrows:\n  - name: r\n    inject: { A: [200] }\n    expect:\n      requests: { A1: { headers: { Authorization: $present } } }\n")
        .map(|_| ())
        .unwrap_err();
    assert!(
        err.contains("`Authorization` is a credential header"),
        "{err}"
    );
    assert!(err.contains("t.yaml:7:"), "{err}");
}

#[test]
fn truncated_and_request_assertions_hold_in_process_too() {
    let text = "title: t\npolicy: { routes: [{ name: A, attempts: 3 }] }\nrows:\n  - name: r\n    request: { idempotency_key: true, create: true }\n    inject: { A: [truncated, 200] }\n    expect:\n      trace: |\n        A1 malformed MALFORMED_RESPONSE retry wait=1s\n        A2 200 return\n      requests:\n        \"*\": { headers: { idempotency-key: $same, x-retry-count: $retries } }\n        A2: { headers: { x-retry-count: \"0\" } }\n";
    let m = load(text).unwrap();
    assert!(m.command().is_none());
    let obs = faultmatrix::exec::run::run_row(&m, &m.rows[0]);
    let msg = faultmatrix::verdict::check(&m, &m.rows[0], &obs)
        .unwrap_err()
        .render();
    // Only the deliberately wrong assertion fails, naming the call.
    assert_eq!(
        msg,
        "row `r` failed\n  --> t.yaml:4:5\nrequest A2: header `x-retry-count`: expected `0`, observed `1`\n"
    );
}

#[test]
fn a_hung_command_is_killed_with_its_children() {
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("pid");
    let text = format!(
        "title: t\nsystem: {{ command: [sh, -c, 'sleep 30 & echo $! > {}; wait'], timeout: 500ms }}\nrows:\n  - name: hangs\n    inject: {{ A: [200] }}\n    expect: {{ stop: success }}\n",
        pidfile.display()
    );
    let m = load(&text).unwrap();
    let obs = faultmatrix::exec::run::run_row(&m, &m.rows[0]);
    assert!(obs
        .failures
        .iter()
        .any(|f| f.contains("still running after 500ms")));
    let pid = std::fs::read_to_string(&pidfile).unwrap();
    let proc_dir = format!("/proc/{}", pid.trim());
    let mut gone = false;
    for _ in 0..100 {
        // A zombie (reaped by init later) counts as gone.
        let state = std::fs::read_to_string(format!("{proc_dir}/stat")).unwrap_or_default();
        if state.is_empty() || state.contains(") Z") {
            gone = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(gone, "the command's child {pid} survived");
}

#[test]
fn a_call_to_a_declared_but_unscripted_route_is_observed() {
    let m = load(concat!(
        "title: t\n",
        "system:\n",
        "  routes: [A, B]\n",
        "  command: [bash, -c, 'exec 3<>/dev/tcp/127.0.0.1/${FAULTMATRIX_URL_B##*:}; printf \"GET / HTTP/1.1\\r\\nHost: x\\r\\nConnection: close\\r\\n\\r\\n\" >&3; cat <&3 >/dev/null; echo $FAULTMATRIX_ROUTES >&2']\n",
        "rows:\n",
        "  - name: r\n",
        "    inject: { A: [200] }\n",
        "    expect: { stop: success }\n",
    ))
    .unwrap();
    let obs = faultmatrix::exec::run::run_row(&m, &m.rows[0]);
    let msg = faultmatrix::verdict::check(&m, &m.rows[0], &obs)
        .unwrap_err()
        .render();
    assert!(
        msg.contains("route B: call 1 but 0 answers were scripted"),
        "{msg}"
    );
    assert!(
        msg.contains("route A: 1 scripted answer was never requested"),
        "{msg}"
    );
}

#[tokio::test]
async fn creates_count_records_and_replay_the_committed_answer() {
    use faultmatrix::exec::wire::server::ServerOptions;
    let mut committed = entry(Answer::Timeout);
    committed.committed = true;
    let entries = vec![committed, status(500, "{}"), status(201, r#"{"id":"x"}"#)];
    let options = ServerOptions {
        max_calls: 100,
        log: false,
        create: true,
        ..ServerOptions::default()
    };
    let server = FixtureServer::start_with(&script("A", entries), options)
        .await
        .unwrap();
    let t = transport(&server);
    let keyed = || Request {
        idempotency_key: Some("idem-1".into()),
        ..req("A")
    };
    let first = tokio::time::timeout(Duration::from_millis(200), t.call(keyed())).await;
    assert!(first.is_err(), "the committed timeout never answers");
    // Same key: the committed record's answer, not the scripted 500.
    let r = t.call(keyed()).await.unwrap();
    assert_eq!((r.status, r.text()), (201, Some(r#"{"id":"rec-1"}"#)));
    // Another key: a new record.
    let r = t.call(req("A")).await.unwrap();
    assert_eq!(r.status, 201);
    tokio::time::sleep(Duration::from_millis(50)).await;
    let report = server.finish(&["A"]);
    assert_eq!(report.records, 2);
    assert!(report.failures.is_empty(), "{:?}", report.failures);
}

#[tokio::test]
async fn expect_100_continue_is_answered_at_once() {
    let server = FixtureServer::start(&script("A", vec![status(200, "{}")]), 100)
        .await
        .unwrap();
    let mut s = TcpStream::connect(server.listeners()[0].addr)
        .await
        .unwrap();
    s.write_all(b"POST / HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n")
        .await
        .unwrap();
    let mut buf = [0u8; 64];
    let n = tokio::time::timeout(Duration::from_millis(500), s.read(&mut buf))
        .await
        .expect("the interim answer comes before the body is sent")
        .unwrap();
    assert!(buf[..n].starts_with(b"HTTP/1.1 100 Continue\r\n\r\n"));
    s.write_all(b"{}").await.unwrap();
    let mut out = Vec::new();
    let _ = tokio::time::timeout(Duration::from_millis(500), s.read_buf(&mut out)).await;
    assert!(
        out.starts_with(b"HTTP/1.1 200"),
        "{}",
        String::from_utf8_lossy(&out)
    );
}

#[test]
fn a_tape_row_is_refused_over_the_wire() {
    let path = &crate::common::workspace().join("matrices/tapes.yaml");
    let mut m =
        faultmatrix::load::load_file(path, "matrices/tapes.yaml", &faultmatrix::Systems::new())
            .unwrap();
    faultmatrix::cli::wire::over_http(&mut m);
    let row = &m.rows[0];
    assert!(row.tape().is_some());
    let obs = faultmatrix::exec::run::run_row(&m, row);
    assert_eq!(
        obs.failures,
        vec![
            "a row with a tape cannot run over the wire: tapes replay in process only".to_string()
        ]
    );
}

/// `run --over-http`: the reference system in process over real HTTP,
/// judged from what the server observed. A row's own `policy` is the one
/// that runs, and a trace that does not match fails the row.
#[test]
fn over_http_runs_a_rows_own_policy_and_fails_a_wrong_trace() {
    let text = "title: t\npolicy:\n  routes: [{ name: A, attempts: 2 }, { name: B, attempts: 2 }]\n  backoff: { initial: 0s, factor: 2, cap: 0s }\nrows:\n  - name: own policy\n    policy: { routes: [{ name: A, attempts: 1 }, { name: B, attempts: 1 }] }\n    inject: { A: [503], B: [200] }\n    expect:\n      trace: |\n        A1 503 UPSTREAM_UNAVAILABLE switch\n        B1 200 return\n      stop: success\n  - name: file policy\n    inject: { A: [503, 503], B: [200] }\n    expect:\n      trace: |\n        A1 503 UPSTREAM_UNAVAILABLE switch\n        B1 200 return\n      stop: success\n";
    let mut m = faultmatrix::load::load_text("m.yaml", text, None, &faultmatrix::Systems::new())
        .unwrap_or_else(|e| panic!("{e}"));
    faultmatrix::cli::wire::over_http(&mut m);
    assert_eq!(m.system_name(), "reference");
    assert!(m.real_clock());
    let own = faultmatrix::exec::run::run_row(&m, &m.rows[0]);
    assert_eq!(own.calls.len(), 2, "{:?}", own.failures);
    faultmatrix::verdict::check(&m, &m.rows[0], &own).unwrap_or_else(|f| panic!("{}", f.render()));
    // The file's policy retries A: the row's trace, written as if it did
    // not, fails with the call that differs.
    let file = faultmatrix::exec::run::run_row(&m, &m.rows[1]);
    assert_eq!(file.calls.len(), 3, "{:?}", file.failures);
    let failure = faultmatrix::verdict::check(&m, &m.rows[1], &file)
        .expect_err("a wrong trace over HTTP fails")
        .render();
    assert!(failure.contains("A2 503"), "{failure}");
}

/// `run --over-http` with `refused`: the runner owns the client, so the
/// transport asks the fixture server's gate before each call; a refused
/// call never connects, is recorded as that route's call at once, and the
/// trace is the in-process one. The answer before it closes nothing: the
/// gate is asked per call, whatever the pool holds.
#[test]
fn over_http_refuses_exactly_the_scripted_attempt() {
    let text = "title: t\npolicy:\n  routes: [{ name: A, attempts: 3 }, { name: B, attempts: 2 }]\n  backoff: { initial: 0s, factor: 2, cap: 0s }\nrows:\n  - name: refused between two answers\n    inject: { A: [503, refused, 200] }\n    expect:\n      trace: |\n        A1 503 UPSTREAM_UNAVAILABLE retry\n        A2 refused CONNECTION_REFUSED retry\n        A3 200 return\n      stop: success\n  - name: refused to the end switches\n    inject: { A: [refused, { fault: refused }, refused], B: [refused, 200] }\n    expect:\n      trace: |\n        A1 refused CONNECTION_REFUSED retry\n        A2 refused CONNECTION_REFUSED retry\n        A3 refused CONNECTION_REFUSED switch\n        B1 refused CONNECTION_REFUSED retry\n        B2 200 return\n      stop: success\n  - name: a wrong expectation\n    inject: { A: [refused, 200] }\n    expect:\n      trace: |\n        A1 503 UPSTREAM_UNAVAILABLE retry\n        A2 200 return\n";
    let mut m = faultmatrix::load::load_text("m.yaml", text, None, &faultmatrix::Systems::new())
        .unwrap_or_else(|e| panic!("{e}"));
    // In process first: the over-HTTP traces must be the same.
    for row in &m.rows[..2] {
        let obs = faultmatrix::exec::run::run_row(&m, row);
        faultmatrix::verdict::check(&m, row, &obs).unwrap_or_else(|f| panic!("{}", f.render()));
    }
    faultmatrix::cli::wire::over_http(&mut m);
    assert!(m.real_clock());
    let obs = faultmatrix::exec::run::run_row(&m, &m.rows[0]);
    assert!(obs.failures.is_empty(), "{:?}", obs.failures);
    faultmatrix::verdict::check(&m, &m.rows[0], &obs).unwrap_or_else(|f| panic!("{}", f.render()));
    let obs = faultmatrix::exec::run::run_row(&m, &m.rows[1]);
    assert_eq!(obs.calls.len(), 5, "{:?}", obs.failures);
    faultmatrix::verdict::check(&m, &m.rows[1], &obs).unwrap_or_else(|f| panic!("{}", f.render()));
    let obs = faultmatrix::exec::run::run_row(&m, &m.rows[2]);
    let failure = faultmatrix::verdict::check(&m, &m.rows[2], &obs)
        .expect_err("a refused call is not a 503")
        .render();
    assert!(
        failure.contains("- A1 503 UPSTREAM_UNAVAILABLE retry")
            && failure.contains("+ A1 refused CONNECTION_REFUSED retry"),
        "{failure}"
    );
}

/// Plain HTTP needs no certificate: the system's roots are read at the
/// first TLS handshake, so `run --over-http` works on a machine with none
/// (here: `SSL_CERT_FILE` and `SSL_CERT_DIR` name nothing, which
/// rustls-native-certs reads instead of the system's). It failed with
/// "No CA certificates were loaded from the system" when every client
/// read them as it was built.
#[test]
fn over_http_needs_no_certificate_roots() {
    let dir = tempfile::tempdir().unwrap();
    crate::common::write(
        dir.path(),
        "m.yaml",
        "title: t\npolicy:\n  routes: [{ name: A, attempts: 2 }]\n  backoff: { initial: 0s, factor: 2, cap: 0s }\nrows:\n  - name: retried\n    inject: { A: [503, 200] }\n    expect:\n      trace: |\n        A1 503 UPSTREAM_UNAVAILABLE retry\n        A2 200 return\n      stop: success\n",
    );
    let none = dir.path().join("no-roots");
    let none = none.to_str().unwrap();
    let (code, out, err) = crate::common::cli_env(
        dir.path(),
        &["run", "--over-http", "m.yaml"],
        &[("SSL_CERT_FILE", none), ("SSL_CERT_DIR", none)],
    );
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("1 passed, 0 failed"), "{out}");
}

#[test]
fn wire_matrices_validate_against_the_shipped_schema() {
    use faultmatrix::load::schema::{render, Kind};
    let schema: serde_json::Value = serde_json::from_str(&render(Kind::Matrix)).unwrap();
    let v = jsonschema::validator_for(&schema).unwrap();
    let mut files = Vec::new();
    let mut dirs = vec![
        std::path::PathBuf::from("runner-tests/wire"),
        std::path::PathBuf::from("runner-tests/wire-wrong"),
    ];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.extension().is_some_and(|x| x == "yaml") {
                files.push(p);
            }
        }
    }
    assert!(files.len() >= 7, "{files:?}");
    for f in files {
        let y: serde_yaml::Value =
            serde_yaml::from_str(&std::fs::read_to_string(&f).unwrap()).unwrap();
        let doc = serde_json::to_value(y).unwrap();
        let errors: Vec<String> = v.iter_errors(&doc).map(|e| e.to_string()).collect();
        assert!(errors.is_empty(), "{}: {errors:?}", f.display());
    }
    // And the schema refuses what the loader refuses.
    let bad = serde_json::json!({
        "title": "t",
        "system": { "command": [], "timout": "1s" },
        "rows": []
    });
    assert!(!v.is_valid(&bad));
}

#[tokio::test]
async fn the_fixture_server_writes_relative_dates_against_the_real_wall_clock() {
    use faultmatrix::model::script::RelativeDate;
    use faultmatrix_controller::policy::retry_after::{parse_http_date, DateForm};
    let mut e = status(429, "{}");
    if let Answer::Response(r) = &mut e.answer {
        r.headers = vec![("Retry-After".into(), String::new())];
        r.dates = vec![RelativeDate {
            header: 0,
            past: false,
            offset: Duration::from_secs(3600),
            form: DateForm::Rfc850,
        }];
    }
    let server = FixtureServer::start(&script("A", vec![e]), 100)
        .await
        .unwrap();
    let t = transport(&server);
    let before = std::time::SystemTime::now();
    let r = t.call(req("A")).await.unwrap();
    let value = r
        .headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case("retry-after"))
        .map(|(_, v)| v.clone())
        .unwrap();
    // An RFC 850 date an hour after the real now (whole seconds).
    assert!(value.contains('-') && value.ends_with(" GMT"), "{value}");
    let at = parse_http_date(&value, before).unwrap();
    let ahead = at.duration_since(before).unwrap();
    assert!(
        ahead > Duration::from_secs(3590) && ahead <= Duration::from_secs(3600),
        "{value}: {ahead:?}"
    );
}

fn paused_stream(pause: Duration) -> Entry {
    let event = |data: &str| SseItem::Event {
        event: None,
        data: data.into(),
        id: None,
    };
    entry(Answer::Response(ScriptedResponse {
        status: 200,
        headers: Vec::new(),
        body: None,
        stream: Some(StreamSpec {
            items: vec![event("one"), event("two")],
            breaks: false,
            pauses: vec![Duration::ZERO, pause],
        }),
        dates: Vec::new(),
    }))
}

/// Reads from a raw connection until `needle` has arrived; what came.
async fn read_until(s: &mut TcpStream, needle: &str) -> String {
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    while !String::from_utf8_lossy(&out).contains(needle) {
        let n = tokio::time::timeout(Duration::from_secs(5), s.read(&mut buf))
            .await
            .expect("the server sends within 5s")
            .unwrap();
        assert!(
            n > 0,
            "closed before `{needle}`: {}",
            String::from_utf8_lossy(&out)
        );
        out.extend_from_slice(&buf[..n]);
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[tokio::test]
async fn a_stream_pause_holds_the_next_event_and_a_client_that_gives_up_timed_out() {
    let server = FixtureServer::start(
        &script(
            "A",
            vec![
                paused_stream(Duration::from_millis(150)),
                paused_stream(Duration::from_secs(30)),
            ],
        ),
        10,
    )
    .await
    .unwrap();
    let addr = server.listeners()[0].addr;
    let request = b"POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-length: 2\r\n\r\n{}";
    // A pause shorter than the client's patience: the event comes after it.
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.write_all(request).await.unwrap();
    read_until(&mut s, "data: one").await;
    let first = Instant::now();
    let rest = read_until(&mut s, "data: two").await;
    assert!(
        first.elapsed() >= Duration::from_millis(140),
        "the second event waits for the pause (came after {:?})",
        first.elapsed()
    );
    assert!(!rest.contains("data: one"), "{rest}");
    drop(s);
    // A client that gives up during the pause: the call is a timeout.
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.write_all(request).await.unwrap();
    read_until(&mut s, "data: one").await;
    drop(s);
    tokio::time::sleep(Duration::from_millis(100)).await;
    let report = server.finish(&["A"]);
    let outcomes: Vec<Outcome> = report.calls.iter().map(|c| c.outcome.clone()).collect();
    assert_eq!(outcomes, vec![Outcome::Status(200), Outcome::Timeout]);
}

/// Sends `bytes` and keeps the connection open (no half-close): an answer
/// that comes must come from what was sent, not from the end of input.
async fn answer_while_open(addr: std::net::SocketAddr, bytes: &[u8]) -> String {
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.write_all(bytes).await.unwrap();
    let mut out = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(5), s.read_to_end(&mut out)).await;
    String::from_utf8_lossy(&out).into_owned()
}

fn limited(
    head_timeout: Duration,
    max_connections: usize,
) -> faultmatrix::exec::wire::server::Limits {
    faultmatrix::exec::wire::server::Limits {
        head_timeout,
        max_connections,
    }
}

#[tokio::test]
async fn bare_lf_and_http09_requests_get_400_at_once() {
    let server = FixtureServer::start(&script("A", vec![status(200, "{}")]), 100)
        .await
        .unwrap();
    let addr = server.listeners()[0].addr;
    // None of these ends its head with CRLF CRLF: each is refused on the
    // line that shows the problem, with the connection still open.
    for input in [
        &b"GET /\r\n"[..],
        b"GET / HTTP/1.1\nHost: x\n\n",
        b"GET / HTTP/1.1\r\nHost: x\n",
        b"\nGET / HTTP/1.1\r\n",
        b"GET / HTTP/1.1\rHost: x",
    ] {
        let got = answer_while_open(addr, input).await;
        assert!(
            got.starts_with("HTTP/1.1 400"),
            "{:?}: {got:?}",
            String::from_utf8_lossy(input)
        );
    }
    let report = server.finish(&[]);
    assert_eq!(report.rejected, 5);
    assert!(report.calls.is_empty());
}

#[tokio::test]
async fn blank_lines_before_a_request_count_toward_the_head_limit() {
    let server = FixtureServer::start(&script("A", vec![status(200, "{}")]), 100)
        .await
        .unwrap();
    let addr = server.listeners()[0].addr;
    // 18,000 bytes of blank lines and then a valid request: over 16 KiB.
    let mut input = "\r\n".repeat(9000).into_bytes();
    input.extend_from_slice(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n");
    let got = answer_while_open(addr, &input).await;
    assert!(got.starts_with("HTTP/1.1 431"), "{got:?}");
    // A few blank lines before a request are tolerated (RFC 9112 §2.2).
    let got = raw(addr, b"\r\n\r\nGET / HTTP/1.1\r\nHost: x\r\n\r\n").await;
    assert!(got.starts_with("HTTP/1.1 200"), "{got:?}");
}

#[tokio::test]
async fn a_head_not_complete_in_time_gets_408_and_idle_sockets_are_closed() {
    use faultmatrix::exec::wire::server::ServerOptions;
    let options = ServerOptions {
        max_calls: 100,
        ..ServerOptions::default()
    };
    let entries = vec![status(200, "{}"), status(201, "{}")];
    let server = FixtureServer::start_limited(
        &script("A", entries),
        options,
        limited(Duration::from_millis(300), 16),
    )
    .await
    .unwrap();
    let addr = server.listeners()[0].addr;
    // Half a head, then nothing: 408 once the head timeout passes.
    let got = answer_while_open(addr, b"GET / HTTP/1.1\r\nHost: x\r\n").await;
    assert!(got.starts_with("HTTP/1.1 408"), "{got:?}");
    // A connection that sends nothing is closed without an answer.
    let got = answer_while_open(addr, b"").await;
    assert_eq!(got, "");
    // A kept-alive connection idle between requests is not timed: the
    // second request, sent after more than the head timeout, is answered.
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .unwrap();
    let mut buf = vec![0u8; 4096];
    let n = tokio::time::timeout(Duration::from_secs(5), s.read(&mut buf))
        .await
        .unwrap()
        .unwrap();
    assert!(buf[..n].starts_with(b"HTTP/1.1 200"));
    tokio::time::sleep(Duration::from_millis(500)).await;
    s.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .unwrap();
    let n = tokio::time::timeout(Duration::from_secs(5), s.read(&mut buf))
        .await
        .unwrap()
        .unwrap();
    assert!(
        buf[..n].starts_with(b"HTTP/1.1 201"),
        "{:?}",
        String::from_utf8_lossy(&buf[..n])
    );
    let report = server.finish(&["A"]);
    assert_eq!(
        report.rejected, 1,
        "only the half head was a rejected request"
    );
    assert_eq!(report.calls.len(), 2);
    assert!(report.failures.is_empty(), "{:?}", report.failures);
}

#[tokio::test]
async fn connections_beyond_the_cap_get_503_until_one_closes() {
    use faultmatrix::exec::wire::server::ServerOptions;
    let options = ServerOptions {
        max_calls: 100,
        ..ServerOptions::default()
    };
    let server = FixtureServer::start_limited(
        &script("A", vec![status(200, "{}")]),
        options,
        limited(Duration::from_secs(30), 3),
    )
    .await
    .unwrap();
    let addr = server.listeners()[0].addr;
    let mut open = Vec::new();
    for _ in 0..3 {
        open.push(TcpStream::connect(addr).await.unwrap());
    }
    let got = raw(addr, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n").await;
    assert!(got.starts_with("HTTP/1.1 503"), "{got:?}");
    assert!(got.contains("too many open connections"), "{got:?}");
    // One closes: a new connection is served (the permit comes back as
    // soon as the server sees the close; bounded retries).
    drop(open.pop());
    let mut served = None;
    for _ in 0..100 {
        let got = raw(addr, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n").await;
        if !got.starts_with("HTTP/1.1 503") {
            served = Some(got);
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let served = served.expect("a connection is served after one closed");
    assert!(served.starts_with("HTTP/1.1 200"), "{served:?}");
    let report = server.finish(&["A"]);
    assert_eq!(report.calls.len(), 1);
    assert!(report.rejected >= 1);
}

#[tokio::test]
async fn all_ended_waits_for_a_call_to_end_and_gives_up_at_its_bound() {
    let mut slow = status(200, "{}");
    slow.latency = Duration::from_secs(60);
    let server = FixtureServer::start(&script("A", vec![slow]), 100)
        .await
        .unwrap();
    assert!(server.all_ended(Duration::ZERO).await, "no call yet");
    let addr = server.listeners()[0].addr;
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.write_all(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}")
        .await
        .unwrap();
    // The server has the call and holds it for its latency.
    for _ in 0..200 {
        if !server.calls().is_empty() {
            break;
        }
        tokio::task::yield_now().await;
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(server.calls().len(), 1);
    assert!(
        !server.all_ended(Duration::from_millis(50)).await,
        "a call still waiting on its answer has not ended"
    );
    // The client goes away: the call ends (abandoned), and all_ended sees it.
    drop(s);
    assert!(server.all_ended(Duration::from_secs(10)).await);
    let report = server.finish(&["A"]);
    assert_eq!(report.calls.len(), 1);
    assert!(report.calls[0].ended.is_some());
}
