//! Runs the same three-call row N times, one of six ways, and checks
//! every run (a row that did not produce its trace aborts the benchmark):
//!
//! - `seam N`: a reqwest client in-process through faultmatrix's HTTP seam
//!   (`faultmatrix::http::HttpSystem`), loaded once, run and judged N times;
//! - `reference N`: the same row against faultmatrix's reference system;
//! - `floor N`: reqwest's own floor, nothing of faultmatrix: per row a new
//!   client (built as the seam row builds it) and two loopback listeners
//!   answering canned bytes (503, 503 on A; 200 on B), the same client loop,
//!   on one paused runtime with the I/O driver built once;
//! - `wiremock N`: the wiremock-rs way: per row two `MockServer`s (routes A
//!   and B), mocks mounted for 503, 503 on A and 200 on B, the same reqwest
//!   client and retry loop with zero backoff, on the real clock;
//! - `seam-wait N`, `wiremock-wait N`: the same with a 100 ms backoff
//!   between A1 and A2 (the row then says `wait=100ms`).
//!
//! The row: `A: [503, 503], B: [200]`, trace `A1 503 retry, A2 503 switch,
//! B1 200 return`. `bench/seam.sh` counts instructions per row with
//! callgrind (issue 11; issue 15 reuses the wiremock peer).
//!
//! `faultmatrix-bench-peer MODE N` runs N rows. With `time` after N, it
//! first runs 10 rows unmeasured, then N rows, and prints the wall time and
//! the process's CPU time (every thread, user and system) per row.

use std::time::Duration;

use faultmatrix::http::{HttpRow, HttpSystem};

/// The client: up to two calls per route, in order, waiting `backoff`
/// between the two calls of a route; a 2xx ends it. The same code for the
/// seam and the wiremock way.
async fn client_loop(
    client: &reqwest::Client,
    routes: &[(&str, String)],
    backoff: Duration,
) -> Result<String, String> {
    for (route, base) in routes {
        for attempt in 0..2 {
            if attempt > 0 && !backoff.is_zero() {
                tokio::time::sleep(backoff).await;
            }
            let resp = client
                .post(format!("{base}/v1/chat/completions"))
                .body(r#"{"model":"m"}"#)
                .send()
                .await
                .map_err(|e| e.to_string())?;
            if resp.status().is_success() {
                resp.text().await.map_err(|e| e.to_string())?;
                return Ok(route.to_string());
            }
        }
    }
    Err("exhausted".into())
}

/// The backoff of the `-wait` ways: one wait between A1 and A2, virtual
/// through the seam, real the wiremock way.
const WAIT: Duration = Duration::from_millis(100);

const ROW: &str = "title: bench
system: SYSTEM
rows:
  - name: two 503s on A then B
    inject: { A: [503, 503], B: [200] }
    expect:
      trace: |
        A1 503 UPSTREAM_UNAVAILABLE retry
        A2 503 UPSTREAM_UNAVAILABLE switch
        B1 200 return
";

const REFERENCE: &str = "title: bench
policy:
  routes: [{ name: A, attempts: 2 }, { name: B, attempts: 2 }]
  backoff: { initial: 0s }
rows:
  - name: two 503s on A then B
    inject: { A: [503, 503], B: [200] }
    expect:
      trace: |
        A1 503 UPSTREAM_UNAVAILABLE retry
        A2 503 UPSTREAM_UNAVAILABLE switch
        B1 200 return
";

/// One row, run and checked; the benchmark calls it again and again.
type Row = Box<dyn FnMut()>;

fn matrix_row(text: &str, systems: &faultmatrix::Systems) -> Row {
    let m = faultmatrix::load_text("bench.yaml", text, None, systems)
        .unwrap_or_else(|e| panic!("the bench row does not load:\n{e}"));
    let opts = faultmatrix::RunOptions::default();
    Box::new(move || {
        if let Err(f) = faultmatrix::run_row(&m, &m.rows[0], &opts).0 {
            panic!("the bench row failed:\n{}", f.render());
        }
    })
}

fn seam(backoff: Duration) -> Row {
    let client = HttpSystem::new(["A", "B"], move |row: HttpRow| async move {
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(5))
            .build()
            .map_err(|e| e.to_string())?;
        let routes = [("A", row.base_url("A")), ("B", row.base_url("B"))];
        client_loop(&http, &routes, backoff).await
    });
    let mut systems = faultmatrix::Systems::new();
    systems.register("loop", client.factory());
    let row = if backoff.is_zero() {
        ROW.to_string()
    } else {
        ROW.replace(
            "A1 503 UPSTREAM_UNAVAILABLE retry",
            &format!(
                "A1 503 UPSTREAM_UNAVAILABLE retry wait={}ms",
                backoff.as_millis()
            ),
        )
    };
    matrix_row(&row.replace("SYSTEM", "loop"), &systems)
}

fn reference() -> Row {
    matrix_row(REFERENCE, &faultmatrix::Systems::new())
}

async fn wiremock_row(backoff: Duration) {
    use wiremock::matchers::method;
    use wiremock::{Mock, MockServer, ResponseTemplate};
    let a = MockServer::start().await;
    let b = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(503))
        .up_to_n_times(2)
        .expect(2)
        .mount(&a)
        .await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_string(r#"{"ok":true}"#))
        .expect(1)
        .mount(&b)
        .await;
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(5))
        .build()
        .expect("a plain-HTTP client builds");
    let got = client_loop(&http, &[("A", a.uri()), ("B", b.uri())], backoff).await;
    assert_eq!(got.as_deref(), Ok("B"), "the wiremock row did not end on B");
    // Dropping the servers verifies the `expect` counts (it panics otherwise).
    drop(a);
    drop(b);
}

/// A canned responder on a loopback listener: reads each request (head,
/// then a `content-length` body) and writes the next canned answer. The
/// least any server can do for reqwest; no parsing beyond framing.
async fn canned(answers: &'static [&'static [u8]]) -> (String, tokio::task::JoinHandle<()>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a loopback port");
    let addr = listener.local_addr().expect("a bound address");
    let task = tokio::spawn(async move {
        let mut next = 0;
        while let Ok((mut sock, _)) = listener.accept().await {
            let mut buf = Vec::with_capacity(1024);
            loop {
                let end = loop {
                    if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                        break Some(i + 4);
                    }
                    let mut chunk = [0u8; 1024];
                    match sock.read(&mut chunk).await {
                        Ok(0) | Err(_) => break None,
                        Ok(k) => buf.extend_from_slice(&chunk[..k]),
                    }
                };
                let Some(end) = end else { break };
                let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
                let len: usize = head
                    .split("content-length:")
                    .nth(1)
                    .and_then(|v| v.lines().next())
                    .and_then(|v| v.trim().parse().ok())
                    .unwrap_or(0);
                while buf.len() < end + len {
                    let mut chunk = [0u8; 1024];
                    match sock.read(&mut chunk).await {
                        Ok(0) | Err(_) => return,
                        Ok(k) => buf.extend_from_slice(&chunk[..k]),
                    }
                }
                buf.drain(..end + len);
                let Some(answer) = answers.get(next) else {
                    return;
                };
                next += 1;
                if sock.write_all(answer).await.is_err() {
                    break;
                }
            }
        }
    });
    (format!("http://{addr}"), task)
}

const CANNED_503: &[u8] = b"HTTP/1.1 503 Service Unavailable\r\ncontent-length: 0\r\n\r\n";
const CANNED_200: &[u8] =
    b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 11\r\n\r\n{\"ok\":true}";

fn floor() -> Row {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .enable_time()
        .start_paused(true)
        .build()
        .expect("a runtime builds");
    Box::new(move || {
        let got = rt.block_on(async {
            let (a, a_task) = canned(&[CANNED_503, CANNED_503]).await;
            let (b, b_task) = canned(&[CANNED_200]).await;
            let http = reqwest::Client::builder()
                .timeout(Duration::from_secs(5))
                .build()
                .map_err(|e| e.to_string())?;
            let got = client_loop(&http, &[("A", a), ("B", b)], Duration::ZERO).await;
            a_task.abort();
            b_task.abort();
            got
        });
        assert_eq!(got.as_deref(), Ok("B"), "the floor row did not end on B");
    })
}

fn wiremock(backoff: Duration) -> Row {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime builds");
    Box::new(move || rt.block_on(wiremock_row(backoff)))
}

/// CPU time of the whole process (every thread, user and system).
fn cpu_time() -> Duration {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `t` is a valid timespec the call writes into.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut t) };
    assert_eq!(rc, 0, "clock_gettime(CLOCK_PROCESS_CPUTIME_ID) failed");
    Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let n: usize = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(100);
    let timed = args.get(2).map(String::as_str) == Some("time");
    let mut row = match args.first().map(String::as_str) {
        Some("seam") => seam(Duration::ZERO),
        Some("reference") => reference(),
        Some("floor") => floor(),
        Some("wiremock") => wiremock(Duration::ZERO),
        Some("seam-wait") => seam(WAIT),
        Some("wiremock-wait") => wiremock(WAIT),
        _ => {
            eprintln!(
                "usage: faultmatrix-bench-peer \
                 seam|reference|floor|wiremock|seam-wait|wiremock-wait N [time]"
            );
            std::process::exit(2);
        }
    };
    if !timed {
        for _ in 0..n {
            row();
        }
        return;
    }
    for _ in 0..10 {
        row();
    }
    let (wall0, cpu0) = (std::time::Instant::now(), cpu_time());
    for _ in 0..n {
        row();
    }
    let (wall, cpu) = (wall0.elapsed(), cpu_time() - cpu0);
    let n = n.max(1) as f64;
    println!(
        "{:.1} {:.1}",
        wall.as_secs_f64() * 1e6 / n,
        cpu.as_secs_f64() * 1e6 / n
    );
}
