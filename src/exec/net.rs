//! The one HTTP client for real upstreams: recording a tape from a
//! provider ([`crate::exec::tape`]) and `faultmatrix client`
//! ([`crate::exec::wire::client`]). hyper's client over rustls with the
//! `ring` provider (set on the connection, never installed for the
//! process, and no TLS feature switched on in anyone's reqwest):
//! `http://` and `https://`, HTTP/1.1, the system's roots (the platform
//! verifier, read at the first TLS handshake) plus the certificates of
//! [`CA_FILE_VAR`], and bounded answers.
//!
//! | limit | value | when exceeded |
//! |---|---|---|
//! | response head (status line and headers) | [`MAX_HEAD`] (64 KiB), [`MAX_HEADERS`] headers | [`Failed::TooLarge`] |
//! | response body | [`MAX_BODY`] (16 MiB) | [`Failed::TooLarge`] |
//! | time to connect and get the head, then between body chunks | the caller's timeout | [`Failed::Timeout`], or an incomplete body |

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper_util::client::legacy::connect::HttpConnector;

/// Most bytes of a response head: the status line and every header line.
pub const MAX_HEAD: usize = 64 * 1024;
/// Most headers in a response.
pub const MAX_HEADERS: usize = 512;
/// Most bytes of a response body.
pub const MAX_BODY: usize = 16 * 1024 * 1024;
/// A PEM file of certificates trusted besides the system's roots (a
/// corporate proxy's CA, a local upstream's generated one), for recording
/// and `faultmatrix client`.
pub const CA_FILE_VAR: &str = "FAULTMATRIX_CA_FILE";

type Inner =
    hyper_util::client::legacy::Client<hyper_rustls::HttpsConnector<HttpConnector>, Full<Bytes>>;

/// A client: connections, trust and a timeout. Cheap to clone.
#[derive(Clone, Debug)]
pub struct Client {
    inner: Inner,
    timeout: Duration,
}

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

/// A client for this timeout (to connect and get the head, then between
/// body chunks) trusting the system's roots and the certificates in
/// `ca_file` (see [`CA_FILE_VAR`]); clients are kept and shared per pair.
pub fn client(timeout: Duration, ca_file: Option<&Path>) -> Result<Client, String> {
    type Clients = HashMap<(Duration, Option<PathBuf>), Client>;
    static CLIENTS: OnceLock<Mutex<Clients>> = OnceLock::new();
    let key = (timeout, ca_file.map(Path::to_path_buf));
    let mut clients = crate::base::lock(CLIENTS.get_or_init(Default::default));
    if let Some(c) = clients.get(&key) {
        return Ok(c.clone());
    }
    let mut extra = Vec::new();
    if let Some(path) = ca_file {
        use rustls::pki_types::pem::PemObject;
        let pem = std::fs::read(path)
            .map_err(|e| format!("{CA_FILE_VAR}={}: cannot read it: {e}", path.display()))?;
        for cert in rustls::pki_types::CertificateDer::pem_slice_iter(&pem) {
            extra.push(cert.map_err(|e| {
                format!(
                    "{CA_FILE_VAR}={}: not PEM certificates: {e}",
                    path.display()
                )
            })?);
        }
        if extra.is_empty() {
            return Err(format!(
                "{CA_FILE_VAR}={}: no certificate in it (expected PEM `BEGIN CERTIFICATE` blocks)",
                path.display()
            ));
        }
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let verifier = LazyRoots {
        extra,
        provider: provider.clone(),
        verifier: OnceLock::new(),
    };
    let tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("cannot set up TLS: {e}"))?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(verifier))
        .with_no_client_auth();
    let mut http = HttpConnector::new();
    http.enforce_http(false);
    http.set_connect_timeout(Some(timeout));
    http.set_nodelay(true);
    let https = hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(tls)
        .https_or_http()
        .enable_http1()
        .wrap_connector(http);
    let inner = hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
        // One runtime per recorded call: no connection outlives it.
        .pool_max_idle_per_host(0)
        .http1_max_headers(MAX_HEADERS)
        .build(https);
    let c = Client { inner, timeout };
    clients.insert(key, c.clone());
    Ok(c)
}

/// The platform verifier, built at the first TLS handshake: building it
/// reads and parses every system root (150 files here, about 3 ms), which
/// a client that only speaks plain HTTP to 127.0.0.1 (`run --over-http`,
/// `faultmatrix client` against a fixture server) never needs, and which
/// fails on a machine with no roots at all.
#[derive(Debug)]
struct LazyRoots {
    extra: Vec<rustls::pki_types::CertificateDer<'static>>,
    provider: Arc<rustls::crypto::CryptoProvider>,
    verifier: OnceLock<Result<rustls_platform_verifier::Verifier, String>>,
}

impl LazyRoots {
    fn get(&self) -> Result<&rustls_platform_verifier::Verifier, rustls::Error> {
        self.verifier
            .get_or_init(|| {
                rustls_platform_verifier::Verifier::new_with_extra_roots(
                    self.extra.iter().cloned(),
                    self.provider.clone(),
                )
                .map_err(|e| format!("cannot set up certificate verification: {e}"))
            })
            .as_ref()
            .map_err(|e| rustls::Error::General(e.clone()))
    }
}

impl rustls::client::danger::ServerCertVerifier for LazyRoots {
    fn verify_server_cert(
        &self,
        end_entity: &rustls::pki_types::CertificateDer<'_>,
        intermediates: &[rustls::pki_types::CertificateDer<'_>],
        server_name: &rustls::pki_types::ServerName<'_>,
        ocsp_response: &[u8],
        now: rustls::pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        self.get()?
            .verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
    }

    // The signatures are checked as the platform verifier checks them on
    // Linux (webpki with the provider's algorithms), without its roots.
    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

/// The CA file named by [`CA_FILE_VAR`] in `env`, if set.
pub fn ca_file(env: &crate::base::env::Env) -> Option<PathBuf> {
    env.non_empty(CA_FILE_VAR).map(PathBuf::from)
}

/// An error and its causes, one sentence (`client error (Connect): invalid
/// peer certificate: UnknownIssuer`).
fn chain(e: &(dyn std::error::Error + 'static)) -> String {
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

/// hyper's own error in a chain, if any.
fn hyper_error<'a>(e: &'a (dyn std::error::Error + 'static)) -> Option<&'a hyper::Error> {
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(c) = cur {
        if let Some(h) = c.downcast_ref::<hyper::Error>() {
            return Some(h);
        }
        cur = c.source();
    }
    None
}

fn failed(e: &hyper_util::client::legacy::Error, url: &str) -> Failed {
    let text = chain(e);
    if e.is_connect() {
        let hint = if text.contains("certificate") {
            format!(
                " (a certificate the system does not trust: give its CA in a PEM file with {CA_FILE_VAR}=FILE)"
            )
        } else {
            String::new()
        };
        return Failed::Unreachable(format!("cannot connect to {url}: {text}{hint}"));
    }
    match hyper_error(e) {
        // (hyper names "too large" only with its server feature.)
        Some(h) if h.is_parse() && h.to_string().contains("too large") => Failed::TooLarge(format!(
            "the response head from {url} is larger than the recorder takes ({MAX_HEAD} bytes, {MAX_HEADERS} headers)"
        )),
        Some(h) if h.is_parse() || h.is_parse_status() => Failed::Malformed,
        _ => Failed::Reset,
    }
}

/// Sends one request to `url` and reads the whole answer (at most
/// [`MAX_HEAD`] and [`MAX_BODY`] bytes). A body that breaks or stalls
/// part-way is an [`Answer`] with `complete: false`.
pub async fn send(
    client: &Client,
    method: &str,
    url: &str,
    headers: &[(String, String)],
    body: Vec<u8>,
) -> Result<Answer, Failed> {
    let uri: hyper::Uri = url
        .parse()
        .map_err(|e| Failed::Unreachable(format!("`{url}` is not a URL: {e}")))?;
    let mut req = hyper::Request::builder().method(method).uri(uri);
    for (k, v) in headers {
        req = req.header(k.as_str(), v.as_str());
    }
    let req = req
        .body(Full::new(Bytes::from(body)))
        .map_err(|e| Failed::Unreachable(format!("cannot send to {url}: {e}")))?;
    let resp = match tokio::time::timeout(client.timeout, client.inner.request(req)).await {
        Err(_) => return Err(Failed::Timeout),
        Ok(Err(e)) => return Err(failed(&e, url)),
        Ok(Ok(r)) => r,
    };
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
    let mut body = resp.into_body();
    let mut data = Vec::new();
    let complete = loop {
        match tokio::time::timeout(client.timeout, body.frame()).await {
            Err(_) | Ok(Some(Err(_))) => break false,
            Ok(None) => break true,
            Ok(Some(Ok(frame))) => {
                let Ok(chunk) = frame.into_data() else {
                    continue;
                };
                if data.len() + chunk.len() > MAX_BODY {
                    return Err(Failed::TooLarge(format!(
                        "the response body from {url} is more than {MAX_BODY} bytes, the most the recorder takes"
                    )));
                }
                data.extend_from_slice(&chunk);
            }
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
    client: &Client,
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
