//! The in-process HTTP seam (`faultmatrix::http`): every script entry as a
//! reqwest client and a hyper client see it, exact virtual timeouts, and the
//! default final error built from what was observed.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use faultmatrix::http::{HttpRow, HttpSystem};
use faultmatrix::{load_text, Matrix, Systems};

fn run_rows(yaml: &str, systems: &Systems) -> Vec<Result<(), String>> {
    let m: Matrix =
        load_text("t.yaml", yaml, None, systems).unwrap_or_else(|e| panic!("load failed:\n{e}"));
    m.rows
        .iter()
        .map(|r| {
            let opts = faultmatrix::RunOptions::default();
            faultmatrix::run_row(&m, r, &opts).0.map_err(|f| f.render())
        })
        .collect()
}

type Log = Arc<Mutex<Vec<String>>>;

/// A probe: calls route A `n` times with reqwest (timeout 5s) and writes
/// down what reqwest handed back each time.
fn probe(n: usize, log: Log) -> Systems {
    let client = HttpSystem::new(["A"], move |row: HttpRow| {
        let log = log.clone();
        async move {
            let http = reqwest::Client::builder()
                .timeout(Duration::from_secs(5))
                .build()
                .map_err(|e| e.to_string())?;
            let base = row.base_url("A");
            for _ in 0..n {
                let start = tokio::time::Instant::now();
                let line = match http.get(format!("{base}/v1/x")).send().await {
                    Err(e) => format!("send error: timeout={} {}", e.is_timeout(), kind(&e)),
                    Ok(resp) => {
                        let status = resp.status().as_u16();
                        let ra = resp
                            .headers()
                            .get("retry-after")
                            .and_then(|v| v.to_str().ok())
                            .unwrap_or("-")
                            .to_string();
                        match resp.text().await {
                            Ok(body) => format!("{status} retry-after={ra} body={body:?}"),
                            Err(e) => format!("{status} body error: {}", kind(&e)),
                        }
                    }
                };
                let at = start.elapsed();
                log.lock().unwrap().push(format!("{line} after={at:?}"));
            }
            Ok::<(), String>(())
        }
    });
    let mut s = Systems::new();
    s.register("probe", client.factory());
    s
}

fn kind(e: &reqwest::Error) -> &'static str {
    if e.is_timeout() {
        "timeout"
    } else if e.is_body() || e.is_decode() {
        "body"
    } else if e.is_request() || e.is_connect() {
        "request"
    } else {
        "other"
    }
}

#[test]
fn every_script_entry_reaches_reqwest_as_http() {
    let log: Log = Arc::default();
    let yaml = r#"title: t
system: probe
rows:
  - name: all entries
    inject:
      A:
        - { status: 429, headers: { Retry-After: "3" }, body: '{"error":{"type":"rate_limit_error"}}' }
        - timeout
        - reset
        - malformed
        - truncated
        - { status: 200, latency: 2s }
        - { status: 200, stream: { events: [{ data: one }, { comment: keep-alive }, { data: two }], break: true } }
        - { status: 200, stream: { events: [{ comment: keep-alive }, { data: a }, { data: b }] } }
    expect:
      trace: |
        A1 429 RATE_LIMITED retry
        A2 timeout TIMEOUT retry
        A3 reset CONNECTION_RESET retry
        A4 malformed MALFORMED_RESPONSE retry
        A5 malformed MALFORMED_RESPONSE retry
        A6 200 retry
        A7 broken STREAM_BROKEN retry
        A8 200 return
      stop: success
"#;
    let v = run_rows(yaml, &probe(8, log.clone()));
    assert_eq!(v[0], Ok(()), "{}", v[0].clone().unwrap_err());
    let seen = log.lock().unwrap().clone();
    let want = [
        r#"429 retry-after=3 body="{\"error\":{\"type\":\"rate_limit_error\"}}" after=0ns"#,
        "send error: timeout=true timeout after=5s",
        "send error: timeout=false request after=0ns",
        "send error: timeout=false request after=0ns",
        "200 body error: body after=0ns",
        r#"200 retry-after=- body="" after=2s"#,
        "200 body error: body after=0ns",
        "200 retry-after=- body=\": keep-alive\\n\\ndata: a\\n\\ndata: b\\n\\n\" after=0ns",
    ];
    assert_eq!(seen, want);
}

/// A client with a 1s timeout, calling A until it gets an answer.
fn timed(log: Log) -> Systems {
    let client = HttpSystem::new(["A"], move |row: HttpRow| {
        let log = log.clone();
        async move {
            let http = reqwest::Client::builder()
                .timeout(Duration::from_secs(1))
                .build()
                .map_err(|e| e.to_string())?;
            let base = row.base_url("A");
            loop {
                let start = tokio::time::Instant::now();
                match http.get(format!("{base}/")).send().await {
                    Ok(r) => {
                        log.lock().unwrap().push(format!(
                            "{} after {:?}",
                            r.status(),
                            start.elapsed()
                        ));
                        return Ok::<(), String>(());
                    }
                    Err(e) => log.lock().unwrap().push(format!(
                        "timeout={} after {:?}",
                        e.is_timeout(),
                        start.elapsed()
                    )),
                }
            }
        }
    });
    let mut s = Systems::new();
    s.register("timed", client.factory());
    s
}

#[test]
fn an_answer_on_its_way_never_loses_to_auto_advanced_time() {
    // The client's timeout is 1s. An answer 1ms under it arrives; 1ms over
    // it times out at exactly 1s, and the retry gets the next answer.
    let log: Log = Arc::default();
    let yaml = "title: t
system: timed
rows:
  - name: just under
    inject:
      A: [{ status: 200, latency: 999ms }]
    expect:
      trace: |
        A1 200 return at=0s
  - name: just over
    inject:
      A: [{ status: 200, latency: 1001ms }, { status: 200, latency: 999ms }]
    expect:
      trace: |
        A1 timeout TIMEOUT retry at=0s
        A2 200 return at=1s
      elapsed: 1999ms
";
    // Many times over: a race would show as a flaky mismatch.
    for _ in 0..50 {
        log.lock().unwrap().clear();
        let v = run_rows(yaml, &timed(log.clone()));
        assert_eq!(v[0], Ok(()), "{}", v[0].clone().unwrap_err());
        assert_eq!(v[1], Ok(()), "{}", v[1].clone().unwrap_err());
        assert_eq!(
            *log.lock().unwrap(),
            [
                "200 OK after 999ms",
                "timeout=true after 1s",
                "200 OK after 999ms"
            ]
        );
    }
}

/// hyper clients: the legacy pooled client over the base URL, and the
/// low-level connection over an in-memory stream.
fn hyper_systems(log: Log) -> Systems {
    use http_body_util::{BodyExt, Empty};
    use hyper::body::Bytes;
    use hyper_util::client::legacy::Client;
    use hyper_util::rt::{TokioExecutor, TokioIo};

    let pooled = {
        let log = log.clone();
        HttpSystem::new(["A"], move |row: HttpRow| {
            let log = log.clone();
            async move {
                let client: Client<_, Empty<Bytes>> =
                    Client::builder(TokioExecutor::new()).build_http();
                let uri: hyper::Uri = format!("{}/v1/models", row.base_url("A"))
                    .parse()
                    .map_err(|e| format!("{e}"))?;
                for _ in 0..2 {
                    let call = client.get(uri.clone());
                    match tokio::time::timeout(Duration::from_secs(2), call).await {
                        Err(_) => log.lock().unwrap().push("timeout".into()),
                        Ok(Err(e)) => log.lock().unwrap().push(format!("error {e}")),
                        Ok(Ok(resp)) => {
                            let status = resp.status().as_u16();
                            let body = resp
                                .into_body()
                                .collect()
                                .await
                                .map_err(|e| e.to_string())?;
                            let text = String::from_utf8_lossy(&body.to_bytes()).into_owned();
                            log.lock().unwrap().push(format!("{status} {text}"));
                        }
                    }
                }
                Ok::<(), String>(())
            }
        })
    };
    let in_memory = HttpSystem::new(["A"], move |row: HttpRow| {
        let log = log.clone();
        async move {
            let io = TokioIo::new(row.connect("A"));
            let (mut send, conn) = hyper::client::conn::http1::handshake(io)
                .await
                .map_err(|e| e.to_string())?;
            tokio::spawn(conn);
            let req = hyper::Request::get("/v1/models")
                .header("host", "a")
                .body(Empty::<Bytes>::new())
                .map_err(|e| e.to_string())?;
            let resp = send.send_request(req).await.map_err(|e| e.to_string())?;
            let status = resp.status().as_u16();
            let body = resp
                .into_body()
                .collect()
                .await
                .map_err(|e| e.to_string())?;
            log.lock().unwrap().push(format!(
                "{status} {}",
                String::from_utf8_lossy(&body.to_bytes())
            ));
            if status >= 300 {
                return Err(format!("status {status}"));
            }
            Ok(())
        }
    });
    let mut s = Systems::new();
    s.register("hyper-pooled", pooled.factory());
    s.register("hyper-conn", in_memory.factory());
    s
}

#[test]
fn hyper_clients_over_the_base_url_and_in_memory() {
    let log: Log = Arc::default();
    let yaml = r#"title: t
system: hyper-pooled
rows:
  - name: pooled
    inject:
      A: [{ status: 200, latency: 3s }, { status: 201, body: '{"n":2}' }]
    expect:
      trace: |
        A1 timeout TIMEOUT retry
        A2 201 return at=2s
"#;
    let v = run_rows(yaml, &hyper_systems(log.clone()));
    assert_eq!(v[0], Ok(()), "{}", v[0].clone().unwrap_err());
    assert_eq!(*log.lock().unwrap(), ["timeout", r#"201 {"n":2}"#]);

    log.lock().unwrap().clear();
    let yaml = r#"title: t
system: hyper-conn
rows:
  - name: in memory, with latency
    inject:
      A: [{ status: 404, latency: 250ms, body: '{"error":{"code":"model_not_found"}}' }]
    expect:
      trace: |
        A1 404 MODEL_UNAVAILABLE fail
      elapsed: 250ms
"#;
    let v = run_rows(yaml, &hyper_systems(log.clone()));
    assert_eq!(v[0], Ok(()), "{}", v[0].clone().unwrap_err());
    assert_eq!(
        *log.lock().unwrap(),
        [r#"404 {"error":{"code":"model_not_found"}}"#]
    );
}

/// Calls A until a 2xx, at most 3 times, one second apart; gives up with
/// its own error, which the default turns into the final error.
fn plain() -> Systems {
    let client = HttpSystem::new(["A"], |row: HttpRow| async move {
        let http = reqwest::Client::new();
        let url = format!("{}/v1/x", row.base_url("A"));
        let mut last = 0;
        for n in 0..3 {
            if n > 0 {
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
            let status = http
                .post(&url)
                .header("x-request-id", row.request_id())
                .send()
                .await
                .map_err(|e| e.to_string())?
                .status();
            if status.is_success() {
                return Ok(());
            }
            last = status.as_u16();
            if status.is_client_error() {
                break;
            }
        }
        Err(format!("gave up on {last}"))
    });
    let mut s = Systems::new();
    s.register("plain", client.factory());
    s
}

#[test]
fn the_default_final_error_comes_from_what_was_observed() {
    let yaml = "title: t
system: plain
rows:
  - name: exhausted
    inject:
      A: [503, 502, 500]
    expect:
      trace: |
        A1 503 UPSTREAM_UNAVAILABLE retry wait=1s
        A2 502 BAD_GATEWAY retry wait=1s
        A3 500 SERVER_ERROR fail
      stop: exhausted
      error:
        code: SERVER_ERROR
        request_id: $request_id
        attempts: [A1 UPSTREAM_UNAVAILABLE, A2 BAD_GATEWAY, A3 SERVER_ERROR]
      escalations: [{ code: SERVER_ERROR }]
      requests:
        '*':
          method: POST
          path: /v1/x
          headers: { x-request-id: $same }
  - name: terminal
    inject:
      A: [401]
    expect:
      trace: |
        A1 401 AUTH_FAILED fail
      stop: terminal
      error: { code: AUTH_FAILED, attempts: [A1 AUTH_FAILED] }
      escalations: [{ code: AUTH_FAILED, to: security-oncall }]
";
    let v = run_rows(yaml, &plain());
    for r in &v {
        assert_eq!(*r, Ok(()), "{}", r.clone().unwrap_err());
    }
}

#[test]
fn a_call_beyond_the_script_fails_the_row_as_in_process() {
    let yaml = "title: t
system: plain
rows:
  - name: one answer short
    inject:
      A: [503, 503]
    expect:
      stop: exhausted
";
    let v = run_rows(yaml, &plain());
    let msg = v[0].clone().expect_err("an unscripted call must fail");
    assert!(
        msg.contains("route A: call 3 but 2 answers were scripted"),
        "{msg}"
    );
}

#[test]
fn a_stream_pause_reaches_reqwest_on_the_virtual_clock() {
    // reqwest's timeout (5s) covers the body: a 2s stall is waited out, a
    // 30s stall trips it; the seam sees the client go away mid-pause.
    let log: Log = Arc::default();
    let yaml = r#"title: t
system: probe
rows:
  - name: stalls
    inject:
      A:
        - { status: 200, stream: { events: [{ data: a }, { data: b, delay: 2s }] } }
        - { status: 200, stream: { events: [{ data: a }, { data: b, delay: 30s }] } }
    expect:
      trace: |
        A1 200 retry at=0s
        A2 timeout TIMEOUT return at=2s
      elapsed: 7s
"#;
    let v = run_rows(yaml, &probe(2, log.clone()));
    assert_eq!(v[0], Ok(()), "{}", v[0].clone().unwrap_err());
    let seen = log.lock().unwrap().clone();
    let want = [
        "200 retry-after=- body=\"data: a\\n\\ndata: b\\n\\n\" after=2s",
        "200 body error: timeout after=5s",
    ];
    assert_eq!(seen, want);
}

/// Posts a chat body to A until a 2xx (at most 3 calls); the `user` field
/// carries the attempt number, so it differs between calls.
fn chat() -> Systems {
    let client = HttpSystem::new(["A"], |row: HttpRow| async move {
        let http = reqwest::Client::new();
        let url = format!("{}/v1/chat/completions", row.base_url("A"));
        for n in 0..3 {
            let body = format!(
                r#"{{"model":"m","messages":[{{"role":"user","content":"hi"}}],"max_tokens":100,"user":"try-{n}"}}"#
            );
            let status = http
                .post(&url)
                .header("content-type", "application/json")
                .body(body)
                .send()
                .await
                .map_err(|e| e.to_string())?
                .status();
            if status.is_success() {
                return Ok(());
            }
        }
        Err("gave up".to_string())
    });
    let mut s = Systems::new();
    s.register("chat", client.factory());
    s
}

#[test]
fn request_body_paths_are_asserted_through_the_seam() {
    let rows = |user: &str, tokens: &str| {
        format!(
            r#"title: t
system: chat
rows:
  - name: body
    inject:
      A: [503, 200]
    expect:
      trace: |
        A1 503 UPSTREAM_UNAVAILABLE retry
        A2 200 return
      requests:
        "*": {{ body: {{ "$.messages[0].role": user, "$.max_tokens": {tokens}, "$.temperature": $absent, "$.user": {user} }} }}
"#
        )
    };
    let v = run_rows(&rows("$present", "100"), &chat());
    assert_eq!(v[0], Ok(()), "{}", v[0].clone().unwrap_err());
    let v = run_rows(&rows("$same", "100.0"), &chat());
    let err = v[0].clone().unwrap_err();
    assert!(
        err.contains(r#"request A2: body `$.user`: expected the same value as A1 (`"try-0"`), observed `"try-1"`"#),
        "{err}"
    );
    assert!(!err.contains("max_tokens"), "100.0 is the value 100: {err}");
}

#[test]
fn a_refused_answer_is_not_faked_through_the_seam() {
    // The seam's connection is accepted before the script is consulted, so
    // it cannot refuse it: the run ends with stop `seam-error` saying why.
    let yaml = |stop: &str| {
        format!(
            "title: t
system: probe
rows:
  - name: refused
    inject:
      A: [refused]
    expect:
      stop: {stop}
"
        )
    };
    let v = run_rows(&yaml("seam-error"), &probe(1, Arc::default()));
    assert_eq!(v[0], Ok(()), "{}", v[0].clone().unwrap_err());
    let m: Matrix = load_text(
        "t.yaml",
        &yaml("seam-error"),
        None,
        &probe(1, Arc::default()),
    )
    .unwrap_or_else(|e| panic!("load failed:\n{e}"));
    let obs = faultmatrix::exec::run::run_row(&m, &m.rows[0]);
    let code = match &obs.end {
        faultmatrix::exec::run::RunEnd::Returned(Err(e)) => e.code.clone().unwrap_or_default(),
        other => panic!("expected a seam error, got {other:?}"),
    };
    assert!(
        code.contains("route A: a `refused` answer cannot be served through the HTTP seam"),
        "{code}"
    );
}
