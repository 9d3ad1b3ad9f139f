//! The one HTTP client for real upstreams: recording a tape from a
//! provider ([`crate::exec::tape`]) and `faultmatrix client`
//! ([`crate::exec::wire::client`]). reqwest over rustls with the `ring`
//! provider: `http://` and `https://`, HTTP/1.1, the system's roots plus
//! the certificates of [`CA_FILE_VAR`], and bounded answers.
//!
//! | limit | value | when exceeded |
//! |---|---|---|
//! | response head (status line and headers) | [`MAX_HEAD`] (64 KiB) | [`Failed::TooLarge`] |
//! | response body | [`MAX_BODY`] (16 MiB) | [`Failed::TooLarge`] |
//!
//! (hyper refuses a head of more than about 400 KiB before it is read
//! whole, so memory stays bounded below the check.)

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

/// Most bytes of a response head: the status line and every header line.
pub const MAX_HEAD: usize = 64 * 1024;
/// Most bytes of a response body.
pub const MAX_BODY: usize = 16 * 1024 * 1024;
pub use crate::exec::tape::http::CA_FILE_VAR;

/// An answer, its headers in order with names lower-cased.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    /// Status.
    pub status: u16,
    /// Headers in order (names lower-cased).
    pub headers: Vec<(String, String)>,
    /// The body as received.
    pub body: Vec<u8>,
    /// Whether the body arrived whole (false: the connection broke or went
    /// silent part-way).
    pub complete: bool,
}

impl Answer {
    /// The first value of a header (`name` lower-case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Why there is no answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failed {
    /// No connection: a bad URL, an unknown host, refused, or a TLS
    /// handshake that failed (an untrusted certificate). A configuration
    /// problem, not an answer.
    Unreachable(String),
    /// The connection broke before a whole head arrived.
    Reset,
    /// Nothing arrived within the timeout.
    Timeout,
    /// The bytes were not an HTTP response.
    Malformed,
    /// The head or the body is over its limit.
    TooLarge(String),
}

impl std::fmt::Display for Failed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failed::Unreachable(e) | Failed::TooLarge(e) => f.write_str(e),
            Failed::Reset => f.write_str("the connection was reset"),
            Failed::Timeout => f.write_str("no answer within the timeout"),
            Failed::Malformed => f.write_str("the answer is not HTTP"),
        }
    }
}

/// A client for this timeout (connect, and each read) and the CA file in
/// `ca_file` (see [`CA_FILE_VAR`]); clients are kept and shared per pair.
pub fn client(timeout: Duration, ca_file: Option<&Path>) -> Result<reqwest::Client, String> {
    static CLIENTS: OnceLock<
        Mutex<HashMap<(Duration, Option<std::path::PathBuf>), reqwest::Client>>,
    > = OnceLock::new();
    // ring, installed once for the process unless the embedding program
    // installed a provider of its own (then that one is used).
    let _ = rustls::crypto::ring::default_provider().install_default();
    let key = (timeout, ca_file.map(Path::to_path_buf));
    let mut clients = crate::base::lock(CLIENTS.get_or_init(Default::default));
    if let Some(c) = clients.get(&key) {
        return Ok(c.clone());
    }
    let mut b = reqwest::Client::builder()
        .connect_timeout(timeout)
        .read_timeout(timeout)
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        // One runtime per recorded call: no connection outlives it.
        .pool_max_idle_per_host(0)
        .http1_max_headers(512);
    if let Some(path) = ca_file {
        let pem = std::fs::read(path)
            .map_err(|e| format!("{CA_FILE_VAR}={}: cannot read it: {e}", path.display()))?;
        let certs = reqwest::Certificate::from_pem_bundle(&pem).map_err(|e| {
            format!(
                "{CA_FILE_VAR}={}: not PEM certificates: {e}",
                path.display()
            )
        })?;
        if certs.is_empty() {
            return Err(format!(
                "{CA_FILE_VAR}={}: no certificate in it (expected PEM `BEGIN CERTIFICATE` blocks)",
                path.display()
            ));
        }
        b = b.tls_certs_merge(certs);
    }
    let c = b
        .build()
        .map_err(|e| format!("cannot set up the HTTP client: {}", chain(&e)))?;
    clients.insert(key, c.clone());
    Ok(c)
}

/// The CA file named by [`CA_FILE_VAR`] in `env`, if set.
pub fn ca_file(env: &crate::base::env::Env) -> Option<std::path::PathBuf> {
    env.non_empty(CA_FILE_VAR).map(std::path::PathBuf::from)
}

/// An error and its causes, one sentence (`error sending request: …:
/// invalid peer certificate: UnknownIssuer`).
fn chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        let t = c.to_string();
        if !s.contains(&t) {
            s.push_str(": ");
            s.push_str(&t);
        }
        cur = c.source();
    }
    s
}

fn failed(e: &reqwest::Error, url: &str) -> Failed {
    let text = chain(e);
    if e.is_timeout() {
        Failed::Timeout
    } else if e.is_connect() || e.is_builder() {
        let hint = if text.contains("certificate") {
            format!(
                " (a certificate the system does not trust: give its CA in a PEM file with {CA_FILE_VAR}=FILE)"
            )
        } else {
            String::new()
        };
        Failed::Unreachable(format!("cannot connect to {url}: {text}{hint}"))
    } else if text.contains("message head is too large") || text.contains("too many headers") {
        Failed::TooLarge(format!(
            "the response head from {url} is larger than the recorder takes ({MAX_HEAD} bytes, 512 headers)"
        ))
    } else if text.contains("invalid HTTP") || text.contains("parse") {
        Failed::Malformed
    } else {
        Failed::Reset
    }
}

/// Sends one request to `url` and reads the whole answer (at most
/// [`MAX_HEAD`] and [`MAX_BODY`] bytes). A body that breaks or stalls
/// part-way is an [`Answer`] with `complete: false`.
pub async fn send(
    client: &reqwest::Client,
    method: &str,
    url: &str,
    headers: &[(String, String)],
    body: Vec<u8>,
) -> Result<Answer, Failed> {
    let method = reqwest::Method::from_bytes(method.as_bytes())
        .map_err(|_| Failed::Unreachable(format!("`{method}` is not an HTTP method")))?;
    let mut req = client.request(method, url);
    for (k, v) in headers {
        req = req.header(k.as_str(), v.as_str());
    }
    let mut resp = req.body(body).send().await.map_err(|e| failed(&e, url))?;
    let status = resp.status().as_u16();
    let mut head = format!("HTTP/1.1 {status}\r\n").len() + 2;
    let mut hs = Vec::new();
    for (k, v) in resp.headers() {
        let v = String::from_utf8_lossy(v.as_bytes()).into_owned();
        head += k.as_str().len() + v.len() + 4;
        hs.push((k.as_str().to_string(), v));
    }
    if head > MAX_HEAD {
        return Err(Failed::TooLarge(format!(
            "the response head from {url} is {head} bytes, more than the {MAX_HEAD} the recorder takes"
        )));
    }
    let mut data = Vec::new();
    let complete = loop {
        match resp.chunk().await {
            Ok(Some(c)) => {
                if data.len() + c.len() > MAX_BODY {
                    return Err(Failed::TooLarge(format!(
                        "the response body from {url} is more than {MAX_BODY} bytes, the most the recorder takes"
                    )));
                }
                data.extend_from_slice(&c);
            }
            Ok(None) => break true,
            Err(_) => break false,
        }
    };
    Ok(Answer {
        status,
        headers: hs,
        body: data,
        complete,
    })
}

/// [`send`] from blocking code: on a current-thread runtime of its own
/// (the recorder calls it from tokio's blocking pool, so a paused virtual
/// clock does not advance while the real call is in flight).
pub fn send_blocking(
    client: &reqwest::Client,
    method: &str,
    url: &str,
    headers: &[(String, String)],
    body: Vec<u8>,
) -> Result<Answer, Failed> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Failed::Unreachable(format!("cannot start a runtime: {e}")))?;
    rt.block_on(send(client, method, url, headers, body))
}
