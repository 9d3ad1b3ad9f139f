//! A minimal blocking HTTP/1.1 client for recording, and the
//! server-sent-event parser that keeps event boundaries.
//!
//! One request per connection (`Connection: close`), `http://` only. Bodies
//! are read by `Content-Length`, chunked transfer coding, or to the end of
//! the connection. A `text/event-stream` body is parsed into items:
//! comments (`: keep-alive`) and events (`event:`, `data:`, `id:`), split
//! at blank lines; a connection that ends inside an event, inside a chunk,
//! or short of its `Content-Length` is a stream that broke part-way.
//!
//! It is blocking on purpose: the recorder runs it on tokio's blocking pool,
//! which keeps a paused virtual clock from auto-advancing while the real
//! call is in flight (see `record.rs`).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

use crate::exec::tape::format::Fault;
use crate::model::SseItem;

pub use crate::base::url::BaseUrl;

/// What a recorded call got.
#[derive(Debug, Clone, PartialEq)]
pub enum Received {
    /// An HTTP response.
    Response {
        /// Status.
        status: u16,
        /// Headers in order, names lowercased, hop-by-hop headers left out.
        headers: Vec<(String, String)>,
        /// The body.
        body: ReceivedBody,
    },
    /// No usable response.
    Fault(Fault),
}

/// A received body.
#[derive(Debug, Clone, PartialEq)]
pub enum ReceivedBody {
    /// Complete text.
    Full(String),
    /// An event stream.
    Stream {
        /// Items in order.
        items: Vec<SseItem>,
        /// Whether the connection broke part-way.
        breaks: bool,
    },
}

/// Headers that describe the connection, not the answer.
const HOP_BY_HOP: [&str; 6] = [
    "connection",
    "keep-alive",
    "transfer-encoding",
    "content-length",
    "date",
    "server",
];

/// Sends one request. `Err` means the upstream could not be reached at all
/// (a configuration problem, not an answer worth recording).
pub fn send(
    base: &BaseUrl,
    method: &str,
    path: &str,
    headers: &[(String, String)],
    body: &[u8],
    timeout: Duration,
) -> Result<Received, String> {
    let addr = base
        .authority
        .to_socket_addrs()
        .map_err(|e| format!("cannot resolve {}: {e}", base.authority))?
        .next()
        .ok_or_else(|| format!("cannot resolve {}", base.authority))?;
    let mut stream = TcpStream::connect_timeout(&addr, timeout)
        .map_err(|e| format!("cannot connect to {}: {e}", base.authority))?;
    let _ = stream.set_read_timeout(Some(timeout));
    let _ = stream.set_write_timeout(Some(timeout));
    let mut head = format!(
        "{method} {}{path} HTTP/1.1\r\nhost: {}\r\nconnection: close\r\ncontent-length: {}\r\n",
        base.prefix,
        base.host,
        body.len()
    );
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    if stream.write_all(head.as_bytes()).is_err() || stream.write_all(body).is_err() {
        return Ok(Received::Fault(Fault::Reset));
    }
    let _ = stream.flush();
    Ok(read_response(BufReader::new(stream)))
}

fn io_fault(e: &std::io::Error) -> Fault {
    match e.kind() {
        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut => Fault::Timeout,
        _ => Fault::Reset,
    }
}

/// Reads one response from a connection.
pub fn read_response<R: Read>(mut r: BufReader<R>) -> Received {
    let mut line = String::new();
    match r.read_line(&mut line) {
        Ok(0) => return Received::Fault(Fault::Reset),
        Ok(_) => {}
        Err(e) => return Received::Fault(io_fault(&e)),
    }
    let mut parts = line.trim_end().splitn(3, ' ');
    let status = match (parts.next(), parts.next().map(str::parse::<u16>)) {
        (Some(v), Some(Ok(s))) if v.starts_with("HTTP/1.") && (100..=599).contains(&s) => s,
        _ => return Received::Fault(Fault::Malformed),
    };
    let mut headers = Vec::new();
    let mut length: Option<usize> = None;
    let mut chunked = false;
    let mut sse = false;
    loop {
        line.clear();
        match r.read_line(&mut line) {
            Ok(0) => return Received::Fault(Fault::Reset),
            Ok(_) => {}
            Err(e) => return Received::Fault(io_fault(&e)),
        }
        let l = line.trim_end_matches(['\r', '\n']);
        if l.is_empty() {
            break;
        }
        let Some((k, v)) = l.split_once(':') else {
            return Received::Fault(Fault::Malformed);
        };
        let k = k.trim().to_ascii_lowercase();
        let v = v.trim().to_string();
        match k.as_str() {
            "content-length" => length = v.parse().ok(),
            "transfer-encoding" => chunked = v.to_ascii_lowercase().contains("chunked"),
            "content-type" => sse = v.to_ascii_lowercase().starts_with("text/event-stream"),
            _ => {}
        }
        if !HOP_BY_HOP.contains(&k.as_str()) {
            headers.push((k, v));
        }
    }
    let (bytes, complete) = if chunked {
        read_chunked(&mut r)
    } else if let Some(n) = length {
        let mut buf = Vec::with_capacity(n.min(1 << 20));
        let _ = r.by_ref().take(n as u64).read_to_end(&mut buf);
        let ok = buf.len() == n;
        (buf, ok)
    } else {
        let mut buf = Vec::new();
        let ok = r.read_to_end(&mut buf).is_ok();
        (buf, ok)
    };
    let text = String::from_utf8_lossy(&bytes).into_owned();
    // An error answer is read as a body even if it claims to be a stream.
    let sse = sse && (200..300).contains(&status);
    let body = if sse {
        let (items, partial) = crate::base::sse::parse(&text);
        ReceivedBody::Stream {
            items,
            breaks: partial || !complete,
        }
    } else {
        ReceivedBody::Full(text)
    };
    if !complete && !sse {
        // A plain body cut short: the client would see a broken response.
        return Received::Fault(Fault::Reset);
    }
    Received::Response {
        status,
        headers,
        body,
    }
}

/// Reads a chunked body; `false` when the connection ended before the last
/// chunk.
fn read_chunked<R: Read>(r: &mut BufReader<R>) -> (Vec<u8>, bool) {
    let mut out = Vec::new();
    let mut line = String::new();
    loop {
        line.clear();
        match r.read_line(&mut line) {
            Ok(0) | Err(_) => return (out, false),
            Ok(_) => {}
        }
        let size_text = line.trim().split(';').next().unwrap_or("");
        let Ok(size) = u64::from_str_radix(size_text, 16) else {
            return (out, false);
        };
        if size == 0 {
            // Trailers until the blank line.
            loop {
                line.clear();
                match r.read_line(&mut line) {
                    Ok(0) => return (out, true),
                    Ok(_) if line.trim().is_empty() => return (out, true),
                    Ok(_) => {}
                    Err(_) => return (out, true),
                }
            }
        }
        // The size is the upstream's word, never an allocation: read what
        // actually arrives.
        let want = size;
        match r.by_ref().take(want).read_to_end(&mut out) {
            Ok(n) if n as u64 == want => {}
            _ => return (out, false),
        }
        let mut crlf = [0u8; 2];
        if r.read_exact(&mut crlf).is_err() {
            return (out, false);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_chunked_and_sized_bodies() {
        let raw = "HTTP/1.1 429 Too Many Requests\r\nRetry-After: 1\r\nContent-Length: 2\r\nDate: x\r\n\r\n{}";
        assert_eq!(
            read_response(BufReader::new(raw.as_bytes())),
            Received::Response {
                status: 429,
                headers: vec![("retry-after".into(), "1".into())],
                body: ReceivedBody::Full("{}".into())
            }
        );
        let raw = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\nd\r\n: keep-alive\n\r\n";
        match read_response(BufReader::new(raw.as_bytes())) {
            Received::Response {
                body: ReceivedBody::Stream { items, breaks },
                ..
            } => {
                assert_eq!(items, vec![SseItem::Comment("keep-alive".into())]);
                assert!(breaks, "no last chunk: the stream broke");
            }
            other => panic!("{other:?}"),
        }
        let raw = "HTTP/1.1 503 Busy\r\ncontent-type: text/event-stream\r\ncontent-length: 9\r\n\r\n{\"e\":\"x\"}";
        assert!(matches!(
            read_response(BufReader::new(raw.as_bytes())),
            Received::Response {
                status: 503,
                body: ReceivedBody::Full(_),
                ..
            }
        ));
        assert_eq!(
            read_response(BufReader::new("garbage\r\n\r\n".as_bytes())),
            Received::Fault(Fault::Malformed)
        );
        assert_eq!(
            read_response(BufReader::new("".as_bytes())),
            Received::Fault(Fault::Reset)
        );
    }

    #[test]
    fn a_chunk_size_is_never_allocated_up_front() {
        // Once a capacity overflow panic; then a 2 GiB allocation.
        for size in ["ffffffffffffffff", "7fffffff", "fffffffffff"] {
            let raw = format!("HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n{size}\r\nabc");
            assert_eq!(
                read_response(BufReader::new(raw.as_bytes())),
                Received::Fault(Fault::Reset),
                "{size}"
            );
        }
        // A chunk size beyond u64 is not a size: the body ends there.
        let raw = "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n1ffffffffffffffff\r\nabc";
        assert_eq!(
            read_response(BufReader::new(raw.as_bytes())),
            Received::Fault(Fault::Reset)
        );
    }

    #[test]
    fn base_urls() {
        let b = BaseUrl::parse("http://127.0.0.1:9/v1/").unwrap();
        assert_eq!(b.authority, "127.0.0.1:9");
        assert_eq!(b.prefix, "/v1");
        assert!(BaseUrl::parse("https://api.example.com")
            .unwrap_err()
            .contains("https is not supported"));
    }
}
