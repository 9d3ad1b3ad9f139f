//! A real-HTTP [`Transport`]: each route is a base URL (`http://host:port`,
//! plain HTTP/1.1), a request is a `POST {base}{path}` with a small JSON
//! body, and the answer comes back as a [`Response`] or a
//! [`TransportError`]. One connection per call (`connection: close`), so
//! a dropped call future closes its socket, which is how a client-side
//! timeout shows on the server.
//!
//! This is what `faultmatrix client` runs the reference controller over,
//! and it is usable on its own to put any [`crate::System`] on the wire.
//! The JSON body carries `model` and `stream` and is padded with trailing
//! whitespace to the request's `size`, so the server measures it.

use std::collections::HashMap;
use std::sync::Arc;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::http::{self, Chunked, Framing};
use crate::contracts::transport::{
    Body, BoxFuture, EventStream, Request, Response, Transport, TransportError,
};

/// Most bytes a response may take.
const MAX_RESPONSE: usize = 8 * 1024 * 1024;

/// Sends each route's requests to its base URL.
#[derive(Debug, Clone)]
pub struct HttpTransport {
    bases: Arc<HashMap<String, (String, u16, String)>>,
    path: Arc<str>,
}

/// Splits `http://host:port/prefix` into host, port and path prefix.
pub fn parse_base(url: &str) -> Result<(String, u16, String), String> {
    let rest = url
        .strip_prefix("http://")
        .ok_or_else(|| format!("`{url}` is not an http:// URL (only plain HTTP is supported)"))?;
    let (authority, prefix) = match rest.find('/') {
        Some(i) => (&rest[..i], rest[i..].trim_end_matches('/')),
        None => (rest, ""),
    };
    let (host, port) = match authority.rsplit_once(':') {
        Some((h, p)) => (
            h,
            p.parse::<u16>()
                .map_err(|_| format!("`{url}`: `{p}` is not a port"))?,
        ),
        None => (authority, 80),
    };
    if host.is_empty() {
        return Err(format!("`{url}` has no host"));
    }
    Ok((host.to_string(), port, prefix.to_string()))
}

impl HttpTransport {
    /// A transport for these `(route, base URL)` pairs; requests go to
    /// `path` below each base (for example `/v1/chat/completions`).
    pub fn new(routes: &[(String, String)], path: &str) -> Result<Self, String> {
        let mut bases = HashMap::new();
        for (route, url) in routes {
            bases.insert(route.clone(), parse_base(url)?);
        }
        Ok(Self {
            bases: Arc::new(bases),
            path: Arc::from(path),
        })
    }
}

fn io_error(e: std::io::Error) -> TransportError {
    use std::io::ErrorKind::*;
    match e.kind() {
        ConnectionReset | ConnectionAborted | BrokenPipe | UnexpectedEof => TransportError::Reset,
        _ => TransportError::Other(e.to_string()),
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
    host: String,
    port: u16,
    target: String,
    req: Request,
) -> Result<Response, TransportError> {
    let mut sock = TcpStream::connect((host.as_str(), port))
        .await
        .map_err(io_error)?;
    let _ = sock.set_nodelay(true);
    let body = body_json(&req);
    let mut head = format!(
        "POST {target} HTTP/1.1\r\nhost: {host}:{port}\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream\r\nconnection: close\r\ncontent-length: {}\r\n",
        body.len()
    );
    if let Some(id) = &req.request_id {
        head.push_str(&format!("x-request-id: {id}\r\n"));
    }
    if let Some(k) = &req.idempotency_key {
        head.push_str(&format!("idempotency-key: {k}\r\n"));
    }
    for (k, v) in &req.headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    sock.write_all(head.as_bytes()).await.map_err(io_error)?;
    sock.write_all(body.as_bytes()).await.map_err(io_error)?;
    let mut buf = Vec::with_capacity(4096);
    let (head, used) = loop {
        match http::parse_response_head(&buf) {
            Ok(Some(h)) => break h,
            Ok(None) => {}
            Err(_) => return Err(TransportError::Malformed),
        }
        let mut chunk = [0u8; 4096];
        match sock.read(&mut chunk).await {
            Ok(0) if buf.is_empty() => return Err(TransportError::Reset),
            Ok(0) => return Err(TransportError::Malformed),
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(e) => return Err(io_error(e)),
        }
    };
    buf.drain(..used);
    let is_stream = head
        .header("content-type")
        .is_some_and(|t| t.starts_with("text/event-stream"));
    let framing = head.framing().map_err(|_| TransportError::Malformed)?;
    // Read the body; `complete` is false when the connection ended early.
    let (data, complete) = match framing {
        Framing::Length(n) => {
            let n = n as usize;
            if n > MAX_RESPONSE {
                return Err(TransportError::Malformed);
            }
            while buf.len() < n {
                let mut chunk = [0u8; 8192];
                match sock.read(&mut chunk).await {
                    Ok(0) | Err(_) => break,
                    Ok(k) => buf.extend_from_slice(&chunk[..k]),
                }
            }
            let complete = buf.len() >= n;
            buf.truncate(n);
            (buf, complete)
        }
        Framing::Chunked => {
            let mut dec = Chunked::default();
            let mut complete = false;
            loop {
                match dec.feed(&buf, MAX_RESPONSE) {
                    Err(_) => break,
                    Ok((used, done)) => {
                        buf.drain(..used);
                        if done {
                            complete = true;
                            break;
                        }
                    }
                }
                let mut chunk = [0u8; 8192];
                match sock.read(&mut chunk).await {
                    Ok(0) | Err(_) => break,
                    Ok(k) => buf.extend_from_slice(&chunk[..k]),
                }
            }
            (dec.data, complete)
        }
        Framing::None => {
            // Delimited by close.
            let _ = sock.read_to_end(&mut buf).await;
            (buf, true)
        }
    };
    let text = String::from_utf8_lossy(&data).into_owned();
    if is_stream {
        let (items, _) = crate::base::sse::parse(&text);
        return Ok(Response {
            status: head.status,
            headers: head.headers,
            body: Body::Stream(EventStream::new(items, !complete)),
        });
    }
    if !complete {
        return Err(TransportError::Malformed);
    }
    Ok(Response {
        status: head.status,
        headers: head.headers,
        body: Body::Full(text),
    })
}

impl Transport for HttpTransport {
    fn call(&self, request: Request) -> BoxFuture<'static, Result<Response, TransportError>> {
        let base = self.bases.get(&request.route).cloned();
        let path = self.path.clone();
        Box::pin(async move {
            let Some((host, port, prefix)) = base else {
                return Err(TransportError::Other(format!(
                    "no base URL for route {}",
                    request.route
                )));
            };
            exchange(host, port, format!("{prefix}{path}"), request).await
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
            ("127.0.0.1".into(), 8080, String::new())
        );
        assert_eq!(
            parse_base("http://localhost:1/v1/").unwrap(),
            ("localhost".into(), 1, "/v1".into())
        );
        assert!(parse_base("https://x").is_err());
        assert!(parse_base("http://x:notaport").is_err());
    }
}
