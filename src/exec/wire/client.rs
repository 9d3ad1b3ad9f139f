//! A real-HTTP [`Transport`]: each route is a base URL (`http://` or
//! `https://`), a request is a `POST {base}{path}` with a small JSON body,
//! and the answer comes back as a [`Response`] or a [`TransportError`].
//! It sends through [`crate::exec::net`], the client the recorder uses
//! (hyper over rustls); a dropped call future closes its connection,
//! which is how a client-side timeout shows on the server.
//!
//! This is what `faultmatrix client` runs the reference controller over,
//! and it is usable on its own to put any [`crate::System`] on the wire.
//! The JSON body carries `model` and `stream` and is padded with trailing
//! whitespace to the request's `size`, so the server measures it.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use crate::contracts::transport::{
    Body, BoxFuture, EventStream, Request, Response, Transport, TransportError,
};
use crate::exec::net::{self, Failed};
use crate::exec::wire::server::ConnectGate;

/// Sends each route's requests to its base URL.
#[derive(Debug, Clone)]
pub struct HttpTransport {
    bases: Arc<HashMap<String, String>>,
    path: Arc<str>,
    client: net::Client,
    gate: Option<ConnectGate>,
}

/// Checks `http://host:port/prefix` (or `https://…`) and returns it
/// without a trailing `/`.
pub fn parse_base(url: &str) -> Result<String, String> {
    let rest = url
        .strip_prefix("http://")
        .or_else(|| url.strip_prefix("https://"))
        .ok_or_else(|| format!("`{url}` is not an http:// or https:// URL"))?;
    let authority = rest.split('/').next().unwrap_or("");
    let host = match authority.rsplit_once(':') {
        Some((h, p)) => {
            p.parse::<u16>()
                .map_err(|_| format!("`{url}`: `{p}` is not a port"))?;
            h
        }
        None => authority,
    };
    if host.is_empty() {
        return Err(format!("`{url}` has no host"));
    }
    Ok(url.trim_end_matches('/').to_string())
}

impl HttpTransport {
    /// A transport for these `(route, base URL)` pairs; requests go to
    /// `path` below each base (for example `/v1/chat/completions`). Trusts
    /// the system's roots and the certificates in `ca_file` (see
    /// [`net::CA_FILE_VAR`]); waits at most `timeout` to connect and for
    /// each read.
    pub fn with_options(
        routes: &[(String, String)],
        path: &str,
        timeout: Duration,
        ca_file: Option<&std::path::Path>,
    ) -> Result<Self, String> {
        let mut bases = HashMap::new();
        for (route, url) in routes {
            bases.insert(route.clone(), parse_base(url)?);
        }
        Ok(Self {
            bases: Arc::new(bases),
            path: Arc::from(path),
            client: net::client(timeout, ca_file)?,
            gate: None,
        })
    }

    /// Asks `gate` before each call: a call the gate refuses fails with
    /// [`TransportError::Refused`] without connecting (the fixture server
    /// has recorded it as a refused call).
    pub fn with_gate(mut self, gate: ConnectGate) -> Self {
        self.gate = Some(gate);
        self
    }

    /// [`HttpTransport::with_options`] with no CA file and a 60 s timeout
    /// (the system under test keeps its own attempt timeouts).
    pub fn new(routes: &[(String, String)], path: &str) -> Result<Self, String> {
        Self::with_options(routes, path, Duration::from_secs(60), None)
    }
}

fn body_json(req: &Request) -> String {
    let mut j = serde_json::json!({
        "model": req.model.clone().unwrap_or_else(|| "faultmatrix-model".into()),
        "stream": req.stream,
        "messages": [{"role": "user", "content": "ping"}],
    });
    if let Some(r) = req
        .routing
        .as_deref()
        .and_then(|t| serde_json::from_str(t).ok())
    {
        j["provider"] = r;
    }
    let mut body = j.to_string();
    // The request's declared size, so amplification is observable on the
    // wire: JSON allows trailing whitespace.
    let size = usize::try_from(req.size)
        .unwrap_or(usize::MAX)
        .min(super::http::MAX_BODY);
    if body.len() < size {
        body.extend(std::iter::repeat_n(' ', size - body.len()));
    }
    body
}

async fn exchange(
    client: net::Client,
    url: String,
    req: Request,
) -> Result<Response, TransportError> {
    let body = body_json(&req);
    let mut headers: Vec<(String, String)> = vec![
        ("content-type".into(), "application/json".into()),
        (
            "accept".into(),
            "application/json, text/event-stream".into(),
        ),
    ];
    if let Some(id) = &req.request_id {
        headers.push(("x-request-id".into(), id.clone()));
    }
    if let Some(k) = &req.idempotency_key {
        headers.push(("idempotency-key".into(), k.clone()));
    }
    headers.extend(req.headers.iter().map(|(k, v)| (k.to_string(), v.clone())));
    let answer = match net::send(&client, "POST", &url, &headers, body.into_bytes()).await {
        Ok(a) => a,
        Err(Failed::Reset | Failed::Timeout) => return Err(TransportError::Reset),
        Err(Failed::Malformed) => return Err(TransportError::Malformed),
        Err(e @ (Failed::Unreachable(_) | Failed::TooLarge(_))) => {
            return Err(TransportError::Other(e.to_string()))
        }
    };
    let is_stream = answer
        .header("content-type")
        .is_some_and(|t| t.starts_with("text/event-stream"));
    let text = String::from_utf8_lossy(&answer.body).into_owned();
    if is_stream {
        let (items, _) = crate::base::sse::parse(&text);
        return Ok(Response {
            status: answer.status,
            headers: answer.headers,
            body: Body::Stream(EventStream::new(items, !answer.complete)),
        });
    }
    if !answer.complete {
        return Err(TransportError::Malformed);
    }
    Ok(Response {
        status: answer.status,
        headers: answer.headers,
        body: Body::Full(text),
    })
}

impl Transport for HttpTransport {
    fn call(&self, request: Request) -> BoxFuture<'static, Result<Response, TransportError>> {
        let base = self.bases.get(&request.route).cloned();
        let path = self.path.clone();
        let client = self.client.clone();
        // Asked now, as the call starts: a refusal takes no time and the
        // call never reaches a socket.
        let refused =
            base.is_some() && self.gate.as_ref().is_some_and(|g| g.refuse(&request.route));
        Box::pin(async move {
            if refused {
                return Err(TransportError::Refused);
            }
            let Some(base) = base else {
                return Err(TransportError::Other(format!(
                    "no base URL for route {}",
                    request.route
                )));
            };
            exchange(client, format!("{base}{path}"), request).await
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_base_urls() {
        assert_eq!(
            parse_base("http://127.0.0.1:8080").unwrap(),
            "http://127.0.0.1:8080"
        );
        assert_eq!(
            parse_base("https://localhost:1/v1/").unwrap(),
            "https://localhost:1/v1"
        );
        assert!(parse_base("ftp://x").is_err());
        assert!(parse_base("http://x:notaport").is_err());
        assert!(parse_base("http:///v1").is_err());
    }
}
