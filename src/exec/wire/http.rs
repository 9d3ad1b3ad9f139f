//! A small, strict HTTP/1.1 codec: request heads and bodies as the fixture
//! server reads them, response heads as the HTTP transport reads them, and
//! the bytes a scripted answer is written as. Pure functions over byte
//! buffers, so malformed input is tested without sockets.
//!
//! Strict on purpose: a request the server cannot read unambiguously gets a
//! 400 (or 413/431/501) and the connection is closed; nothing here panics on
//! any input.

use std::fmt::Write as _;

use crate::model::SseItem;

/// Most bytes a request head (request line and headers) may take.
pub const MAX_HEAD: usize = 16 * 1024;
/// Most bytes a request body may take.
pub const MAX_BODY: usize = 1024 * 1024;
/// Most header lines in a head.
pub const MAX_HEADERS: usize = 100;

/// A parsed request or response head.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Head {
    /// Request: method. Response: empty.
    pub method: String,
    /// Request: target (path and query). Response: empty.
    pub target: String,
    /// Response: status code. Request: 0.
    pub status: u16,
    /// `1` for HTTP/1.1, `0` for HTTP/1.0.
    pub minor: u8,
    /// Header lines, names as sent.
    pub headers: Vec<(String, String)>,
}

impl Head {
    /// A header value by case-insensitive name (the first one).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// How the body is delimited.
    pub fn framing(&self) -> Result<Framing, HttpError> {
        let te: Vec<&str> = self
            .headers
            .iter()
            .filter(|(k, _)| k.eq_ignore_ascii_case("transfer-encoding"))
            .map(|(_, v)| v.as_str())
            .collect();
        let cl: Vec<&str> = self
            .headers
            .iter()
            .filter(|(k, _)| k.eq_ignore_ascii_case("content-length"))
            .map(|(_, v)| v.trim())
            .collect();
        if !te.is_empty() {
            if !cl.is_empty() {
                return Err(HttpError::bad(
                    "both Content-Length and Transfer-Encoding are set",
                ));
            }
            let last = te
                .last()
                .and_then(|v| v.rsplit(',').next())
                .map(str::trim)
                .unwrap_or("");
            if !last.eq_ignore_ascii_case("chunked") {
                return Err(HttpError {
                    status: 501,
                    message: "only the chunked transfer coding is understood",
                });
            }
            return Ok(Framing::Chunked);
        }
        match cl.as_slice() {
            [] => Ok(Framing::None),
            [first, rest @ ..] => {
                if rest.iter().any(|v| v != first) {
                    return Err(HttpError::bad("conflicting Content-Length headers"));
                }
                if first.is_empty() || !first.bytes().all(|b| b.is_ascii_digit()) {
                    return Err(HttpError::bad("Content-Length is not a number"));
                }
                first
                    .parse::<u64>()
                    .map(Framing::Length)
                    .map_err(|_| HttpError::bad("Content-Length is too large"))
            }
        }
    }
}

/// How a message body is delimited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    /// No body.
    None,
    /// Exactly this many bytes.
    Length(u64),
    /// Chunked transfer coding.
    Chunked,
}

/// Why a request could not be read: the status to answer with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HttpError {
    /// 400, 413, 431 or 501.
    pub status: u16,
    /// Short reason (goes into the error body).
    pub message: &'static str,
}

impl HttpError {
    fn bad(message: &'static str) -> Self {
        Self {
            status: 400,
            message,
        }
    }
}

fn is_token(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

fn find_end(buf: &[u8]) -> Option<usize> {
    buf.windows(4).position(|w| w == b"\r\n\r\n").map(|i| i + 4)
}

/// Longest method accepted (the longest registered ones are 17 bytes).
pub const MAX_METHOD: usize = 20;

fn too_large() -> HttpError {
    HttpError {
        status: 431,
        message: "request head too large",
    }
}

/// Reads one request head incrementally: every byte from the start of the
/// request (blank lines before it included) is looked at once and counted
/// toward [`MAX_HEAD`], so feeding a growing buffer read by read costs
/// linear time. Framing problems are reported as soon as the byte that
/// shows them arrives: a bare LF, a CR not followed by LF, a method that is
/// not a token, a request line that is not `METHOD target HTTP/1.x`
/// (`GET /\r\n` included). The complete head is then parsed by `httparse`.
#[derive(Debug, Default, Clone)]
pub struct HeadScan {
    /// Bytes of the buffer already looked at.
    scanned: usize,
    /// Start of the line being read.
    line_start: usize,
    /// Where the request line starts (after blank lines), once known.
    request_start: Option<usize>,
    /// Whether the request line is complete (and was checked).
    line_checked: bool,
    /// Whether the method has ended (a space was seen on the request line).
    method_done: bool,
    /// Header lines seen so far.
    headers: usize,
}

impl HeadScan {
    /// A scanner for a request starting at the beginning of the buffer.
    pub fn new() -> Self {
        Self::default()
    }

    /// Bytes of the head seen so far (0 before the request's first byte).
    pub fn seen(&self) -> usize {
        self.scanned
    }

    /// Looks at the bytes of `buf` not yet seen (`buf` holds the request
    /// from its first byte and only grows between calls). `Ok(None)`: more
    /// bytes are needed. On success returns the head and the bytes it took;
    /// the scanner is then spent (make a new one for the next request).
    pub fn scan(&mut self, buf: &[u8]) -> Result<Option<(Head, usize)>, HttpError> {
        while self.scanned < buf.len() {
            let i = self.scanned;
            if i >= MAX_HEAD {
                return Err(too_large());
            }
            self.scanned += 1;
            let b = buf[i];
            let after_cr = i > 0 && buf[i - 1] == b'\r';
            if after_cr && b != b'\n' {
                return Err(HttpError::bad("CR not followed by LF in the head"));
            }
            if b == b'\n' {
                if !after_cr {
                    return Err(HttpError::bad("bare LF in the head: lines end with CRLF"));
                }
                let line = &buf[self.line_start..i - 1];
                let Some(request_start) = self.request_start else {
                    // A blank line before the request (RFC 9112 §2.2);
                    // `line` is empty, a CR at the line start would have
                    // started the request line otherwise.
                    self.line_start = i + 1;
                    continue;
                };
                if !self.line_checked {
                    check_request_line(&buf[request_start..=i])?;
                    self.line_checked = true;
                } else if line.is_empty() {
                    return parse_complete(&buf[request_start..=i], i + 1).map(Some);
                } else {
                    self.headers += 1;
                    if self.headers > MAX_HEADERS {
                        return Err(HttpError {
                            status: 431,
                            message: "too many header lines",
                        });
                    }
                }
                self.line_start = i + 1;
                continue;
            }
            if b == b'\r' {
                continue;
            }
            let start = *self.request_start.get_or_insert(i);
            if !self.line_checked && !self.method_done {
                if b == b' ' {
                    if i == start {
                        return Err(HttpError::bad("request line starts with a space"));
                    }
                    self.method_done = true;
                } else if !is_token(b) {
                    return Err(HttpError::bad("method is not a token"));
                } else if i - start >= MAX_METHOD {
                    return Err(HttpError::bad("no request line"));
                }
            }
        }
        Ok(None)
    }
}

/// Checks a complete request line (with its CRLF) as soon as it arrives,
/// so `GET /\r\n` is answered at once instead of waiting for a blank line.
fn check_request_line(line: &[u8]) -> Result<(), HttpError> {
    let text = line
        .strip_suffix(b"\r\n")
        .and_then(|l| std::str::from_utf8(l).ok())
        .ok_or(HttpError::bad("request target is not a path"))?;
    let mut parts = text.split(' ');
    let (Some(_method), Some(target), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(HttpError::bad(
            "request line is not `METHOD target HTTP/1.1`",
        ));
    };
    if version != "HTTP/1.1" && version != "HTTP/1.0" {
        return Err(if version.starts_with("HTTP/") {
            HttpError {
                status: 505,
                message: "only HTTP/1.0 and HTTP/1.1 are served",
            }
        } else {
            HttpError::bad("request line is not `METHOD target HTTP/1.1`")
        });
    }
    if target.is_empty()
        || !(target.starts_with('/') || target == "*" || target.starts_with("http://"))
        || !target.bytes().all(|b| b.is_ascii_graphic())
    {
        return Err(HttpError::bad("request target is not a path"));
    }
    // httparse has the last word on the line's grammar.
    match httparse::Request::new(&mut []).parse(line) {
        Ok(_) | Err(httparse::Error::TooManyHeaders) => Ok(()),
        Err(e) => Err(httparse_error(e)),
    }
}

fn httparse_error(e: httparse::Error) -> HttpError {
    match e {
        httparse::Error::TooManyHeaders => HttpError {
            status: 431,
            message: "too many header lines",
        },
        httparse::Error::Version => HttpError {
            status: 505,
            message: "only HTTP/1.0 and HTTP/1.1 are served",
        },
        httparse::Error::HeaderName => HttpError::bad("header name is not a token"),
        httparse::Error::HeaderValue => HttpError::bad("control character in a header value"),
        httparse::Error::NewLine => HttpError::bad("bad line ending in the head"),
        httparse::Error::Token => HttpError::bad("method is not a token"),
        _ => HttpError::bad("request line is not `METHOD target HTTP/1.1`"),
    }
}

/// Parses a complete head (request line to blank line) with `httparse`.
/// `used` is how many bytes of the connection's buffer the head took.
fn parse_complete(text: &[u8], used: usize) -> Result<(Head, usize), HttpError> {
    let mut slots = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut req = httparse::Request::new(&mut slots);
    match req.parse(text) {
        Ok(httparse::Status::Complete(n)) if n == text.len() => {}
        Ok(_) => return Err(HttpError::bad("head is not complete")),
        Err(e) => return Err(httparse_error(e)),
    }
    let (Some(method), Some(target), Some(version)) = (req.method, req.path, req.version) else {
        return Err(HttpError::bad(
            "request line is not `METHOD target HTTP/1.1`",
        ));
    };
    let mut headers = Vec::with_capacity(req.headers.len());
    for h in req.headers.iter() {
        if h.name.is_empty() {
            return Err(HttpError::bad("header name is not a token"));
        }
        let value =
            std::str::from_utf8(h.value).map_err(|_| HttpError::bad("head is not UTF-8"))?;
        if value.bytes().any(|b| (b < 0x20 && b != b'\t') || b == 0x7f) {
            return Err(HttpError::bad("control character in a header value"));
        }
        headers.push((h.name.to_string(), value.trim().to_string()));
    }
    let head = Head {
        method: method.to_string(),
        target: target.to_string(),
        status: 0,
        minor: version,
        headers,
    };
    if head.minor == 1 && head.header("host").is_none() {
        return Err(HttpError::bad("HTTP/1.1 request without Host"));
    }
    Ok((head, used))
}

/// Parses a request head from the start of `buf` in one go (a fresh
/// [`HeadScan`]). `Ok(None)`: more bytes are needed. On success returns the
/// head and the bytes it took. A reader that calls this after every read
/// rescans the buffer; keep a [`HeadScan`] instead.
pub fn parse_request_head(buf: &[u8]) -> Result<Option<(Head, usize)>, HttpError> {
    HeadScan::new().scan(buf)
}

fn parse_header_lines<'a>(
    lines: impl Iterator<Item = &'a str>,
) -> Result<Vec<(String, String)>, HttpError> {
    let mut headers = Vec::new();
    for l in lines {
        if headers.len() >= MAX_HEADERS {
            return Err(HttpError {
                status: 431,
                message: "too many header lines",
            });
        }
        let (name, value) = l
            .split_once(':')
            .ok_or(HttpError::bad("header line without `:`"))?;
        if name.is_empty() || !name.bytes().all(is_token) {
            return Err(HttpError::bad("header name is not a token"));
        }
        if value.bytes().any(|b| (b < 0x20 && b != b'\t') || b == 0x7f) {
            return Err(HttpError::bad("control character in a header value"));
        }
        headers.push((name.to_string(), value.trim().to_string()));
    }
    Ok(headers)
}

/// Parses a response head (for the HTTP transport). `Ok(None)`: need more.
pub fn parse_response_head(buf: &[u8]) -> Result<Option<(Head, usize)>, &'static str> {
    let Some(end) = find_end(buf) else {
        if buf.len() > MAX_HEAD {
            return Err("response head too large");
        }
        if buf.len() >= 5 && !buf.starts_with(b"HTTP/") {
            return Err("not an HTTP response");
        }
        return Ok(None);
    };
    let text = std::str::from_utf8(&buf[..end - 4]).map_err(|_| "head is not UTF-8")?;
    let mut lines = text.split("\r\n");
    let line = lines.next().unwrap_or("");
    let mut parts = line.splitn(3, ' ');
    let version = parts.next().unwrap_or("");
    let code = parts.next().unwrap_or("");
    let minor = match version {
        "HTTP/1.1" => 1,
        "HTTP/1.0" => 0,
        _ => return Err("bad status line"),
    };
    if code.len() != 3 || !code.bytes().all(|b| b.is_ascii_digit()) {
        return Err("bad status code");
    }
    let status: u16 = code.parse().map_err(|_| "bad status code")?;
    if !(100..=599).contains(&status) {
        return Err("bad status code");
    }
    let headers = parse_header_lines(lines).map_err(|e| e.message)?;
    Ok(Some((
        Head {
            method: String::new(),
            target: String::new(),
            status,
            minor,
            headers,
        },
        end,
    )))
}

/// Incremental chunked-body decoder.
#[derive(Debug, Default)]
pub struct Chunked {
    /// Decoded bytes so far.
    pub data: Vec<u8>,
    done: bool,
}

impl Chunked {
    /// Feeds bytes from `buf` (from its start); returns how many were
    /// consumed. `Ok(true)` in the pair when the body is complete.
    pub fn feed(&mut self, buf: &[u8], limit: usize) -> Result<(usize, bool), HttpError> {
        let mut pos = 0;
        while !self.done {
            let rest = &buf[pos..];
            let Some(nl) = rest.windows(2).position(|w| w == b"\r\n") else {
                if rest.len() > 1024 {
                    return Err(HttpError::bad("chunk size line too long"));
                }
                return Ok((pos, false));
            };
            let line = std::str::from_utf8(&rest[..nl])
                .map_err(|_| HttpError::bad("chunk size is not text"))?;
            let size_text = line.split(';').next().unwrap_or("").trim();
            if size_text.is_empty()
                || size_text.len() > 8
                || !size_text.bytes().all(|b| b.is_ascii_hexdigit())
            {
                return Err(HttpError::bad("bad chunk size"));
            }
            let size = usize::from_str_radix(size_text, 16)
                .map_err(|_| HttpError::bad("bad chunk size"))?;
            if size == 0 {
                // Trailers: skip lines up to the blank one.
                let after = &rest[nl + 2..];
                let Some(end) = after.windows(2).position(|w| w == b"\r\n") else {
                    if after.len() > MAX_HEAD {
                        return Err(HttpError {
                            status: 431,
                            message: "chunked trailers too large",
                        });
                    }
                    return Ok((pos, false));
                };
                if end == 0 {
                    pos += nl + 2 + 2;
                    self.done = true;
                    break;
                }
                let Some(t_end) = find_end(after) else {
                    // Trailers are a head: bounded like one, or a client
                    // could keep the server buffering forever.
                    if after.len() > MAX_HEAD {
                        return Err(HttpError {
                            status: 431,
                            message: "chunked trailers too large",
                        });
                    }
                    return Ok((pos, false));
                };
                if t_end > MAX_HEAD {
                    return Err(HttpError {
                        status: 431,
                        message: "chunked trailers too large",
                    });
                }
                pos += nl + 2 + t_end;
                self.done = true;
                break;
            }
            if self.data.len() + size > limit {
                return Err(HttpError {
                    status: 413,
                    message: "request body too large",
                });
            }
            if rest.len() < nl + 2 + size + 2 {
                return Ok((pos, false));
            }
            let body = &rest[nl + 2..nl + 2 + size];
            if &rest[nl + 2 + size..nl + 2 + size + 2] != b"\r\n" {
                return Err(HttpError::bad("chunk not followed by CRLF"));
            }
            self.data.extend_from_slice(body);
            pos += nl + 2 + size + 2;
        }
        Ok((pos, true))
    }
}

/// The usual reason phrase of a status.
pub fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        201 => "Created",
        204 => "No Content",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        408 => "Request Timeout",
        409 => "Conflict",
        413 => "Content Too Large",
        422 => "Unprocessable Content",
        429 => "Too Many Requests",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        505 => "HTTP Version Not Supported",
        _ => "Status",
    }
}

/// Headers a scripted answer may not set because the server frames the body.
fn framing_header(name: &str) -> bool {
    ["content-length", "transfer-encoding", "connection"]
        .iter()
        .any(|h| name.eq_ignore_ascii_case(h))
}

/// Writes scripted headers (framing headers are ours to write); returns
/// whether a content type was among them.
fn write_headers(head: &mut String, headers: &[(String, String)]) -> bool {
    let mut has_type = false;
    for (k, v) in headers {
        if framing_header(k) {
            continue;
        }
        has_type |= k.eq_ignore_ascii_case("content-type");
        let _ = write!(head, "{k}: {}\r\n", sanitize(v));
    }
    has_type
}

/// The bytes of a complete response with a body.
pub fn response_bytes(
    status: u16,
    headers: &[(String, String)],
    body: &[u8],
    close: bool,
) -> Vec<u8> {
    let mut head = format!("HTTP/1.1 {status} {}\r\n", reason(status));
    let has_type = write_headers(&mut head, headers);
    if !has_type && !body.is_empty() {
        let t = if body.first() == Some(&b'{') || body.first() == Some(&b'[') {
            "application/json"
        } else {
            "text/plain; charset=utf-8"
        };
        let _ = write!(head, "content-type: {t}\r\n");
    }
    let _ = write!(head, "content-length: {}\r\n", body.len());
    if close {
        head.push_str("connection: close\r\n");
    }
    head.push_str("\r\n");
    let mut out = head.into_bytes();
    out.extend_from_slice(body);
    out
}

/// The head of an event-stream response (chunked, so a break is visible).
pub fn stream_head(status: u16, headers: &[(String, String)]) -> Vec<u8> {
    let mut head = format!("HTTP/1.1 {status} {}\r\n", reason(status));
    let has_type = write_headers(&mut head, headers);
    if !has_type {
        head.push_str("content-type: text/event-stream\r\n");
    }
    head.push_str("cache-control: no-cache\r\ntransfer-encoding: chunked\r\n\r\n");
    head.into_bytes()
}

/// One stream item as a chunk of the chunked body.
pub fn sse_chunk(item: &SseItem) -> Vec<u8> {
    let text = crate::base::sse::item_text(item);
    let mut out = format!("{:x}\r\n", text.len()).into_bytes();
    out.extend_from_slice(text.as_bytes());
    out.extend_from_slice(b"\r\n");
    out
}

/// The last chunk of a chunked body.
pub const LAST_CHUNK: &[u8] = b"0\r\n\r\n";

fn sanitize(v: &str) -> String {
    v.chars().filter(|c| !c.is_control()).collect()
}

/// How many bytes of a header value an observation keeps.
pub const MAX_OBSERVED_VALUE: usize = 200;

/// A request's headers as observations keep them: credentials dropped,
/// names lower-cased, values cut at [`MAX_OBSERVED_VALUE`] bytes (on a character
/// boundary). Shared by the fixture server and the in-process HTTP seam.
pub fn observed_headers(head: &Head) -> Vec<(String, String)> {
    head.headers
        .iter()
        .filter(|(k, _)| !crate::base::redact::is_credential_header(k))
        .map(|(k, v)| {
            let mut v = v.clone();
            if v.len() > MAX_OBSERVED_VALUE {
                let mut cut = MAX_OBSERVED_VALUE;
                while !v.is_char_boundary(cut) {
                    cut -= 1;
                }
                v.truncate(cut);
            }
            (k.to_ascii_lowercase(), v)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(s: &str) -> Result<Option<(Head, usize)>, HttpError> {
        parse_request_head(s.as_bytes())
    }

    #[test]
    fn parses_a_request_head() {
        let (h, n) = req("POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nX-Stainless-Retry-Count: 1\r\n\r\n{}")
            .unwrap()
            .unwrap();
        assert_eq!(h.method, "POST");
        assert_eq!(h.target, "/v1/chat/completions");
        assert_eq!(h.header("x-stainless-retry-count"), Some("1"));
        assert_eq!(h.framing().unwrap(), Framing::Length(2));
        assert_eq!(n, "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nX-Stainless-Retry-Count: 1\r\n\r\n".len());
        assert_eq!(req("GET / HTTP/1.1\r\nHost: x\r\n").unwrap(), None);
    }

    #[test]
    fn rejects_garbage_with_the_right_status() {
        let cases: &[(&str, u16)] = &[
            ("\x00\x01\x02\x03 garbage\r\n\r\n", 400),
            ("GET\r\n\r\n", 400),
            ("GET / HTTP/2.0\r\nHost: x\r\n\r\n", 505),
            ("GET / HTTP/1.1\r\n\r\n", 400),
            ("GET noslash HTTP/1.1\r\nHost: x\r\n\r\n", 400),
            ("GET / HTTP/1.1\r\nHost: x\r\nBad Header: y\r\n\r\n", 400),
            ("GET / HTTP/1.1\r\nHost: x\r\nNoColon\r\n\r\n", 400),
            ("G(T / HTTP/1.1\r\nHost: x\r\n\r\n", 400),
            (" GET / HTTP/1.1\r\nHost: x\r\n\r\n", 400),
            ("GET / HTTP/1.1 extra\r\nHost: x\r\n\r\n", 400),
            ("GET / HTTP/1.1\r\nHost: \x01\r\n\r\n", 400),
        ];
        for (input, status) in cases {
            let got = req(input).map_err(|e| e.status);
            assert_eq!(got.err(), Some(*status), "{input:?}");
        }
        let huge = format!("GET / HTTP/1.1\r\nX: {}\r\n\r\n", "a".repeat(MAX_HEAD));
        assert_eq!(req(&huge).unwrap_err().status, 431);
        let no_end = "a".repeat(MAX_HEAD + 10);
        assert_eq!(req(&no_end).unwrap_err().status, 400);
    }

    #[test]
    fn bare_lf_and_short_request_lines_are_refused_before_the_blank_line() {
        // Each is refused on the bytes shown: no blank line needed.
        for input in [
            "GET /\r\n",
            "GET / HTTP/1.1\n",
            "\nGET / HTTP/1.1\r\n",
            "GET / HTTP/1.1\r\nHost: x\n",
            "GET / HTTP/1.1\rX",
            "GET / HTTP/0.9\r\n",
        ] {
            let got = req(input).map_err(|e| e.status);
            assert!(matches!(got, Err(400) | Err(505)), "{input:?}: {got:?}");
        }
        assert_eq!(req("GET / HTTP/0.9\r\n").unwrap_err().status, 505);
        assert_eq!(req("GET /\r\n").unwrap_err().status, 400);
    }

    #[test]
    fn blank_lines_before_a_request_count_toward_the_head_limit() {
        let ok = format!("{}GET / HTTP/1.1\r\nHost: x\r\n\r\n", "\r\n".repeat(10));
        let (h, n) = req(&ok).unwrap().unwrap();
        assert_eq!((h.method.as_str(), n), ("GET", ok.len()));
        let crlf = "\r\n".repeat(MAX_HEAD);
        assert_eq!(req(&crlf).unwrap_err().status, 431);
        let late = format!(
            "{}GET / HTTP/1.1\r\nHost: x\r\n\r\n",
            "\r\n".repeat(MAX_HEAD / 2)
        );
        assert_eq!(req(&late).unwrap_err().status, 431);
    }

    #[test]
    fn a_head_fed_a_byte_at_a_time_is_scanned_once() {
        let text = b"POST /v1/x HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\n\r\n";
        let mut scan = HeadScan::new();
        let mut got = None;
        for end in 1..=text.len() {
            let before = scan.seen();
            got = scan.scan(&text[..end]).unwrap();
            // Only the new byte was looked at.
            assert_eq!(scan.seen(), before + 1);
            if got.is_some() {
                assert_eq!(end, text.len());
            }
        }
        let (h, n) = got.unwrap();
        assert_eq!(
            (h.method.as_str(), h.header("host"), n),
            ("POST", Some("a"), text.len())
        );
        assert_eq!(parse_request_head(text).unwrap().unwrap().0, h);
    }

    #[test]
    fn framing_rules() {
        let head = |h: &[(&str, &str)]| Head {
            method: "POST".into(),
            target: "/".into(),
            status: 0,
            minor: 1,
            headers: h
                .iter()
                .map(|(a, b)| (a.to_string(), b.to_string()))
                .collect(),
        };
        assert_eq!(head(&[]).framing().unwrap(), Framing::None);
        assert_eq!(
            head(&[("Transfer-Encoding", "chunked")]).framing().unwrap(),
            Framing::Chunked
        );
        for bad in [
            vec![("Content-Length", "1"), ("Transfer-Encoding", "chunked")],
            vec![("Content-Length", "1"), ("Content-Length", "2")],
            vec![("Content-Length", "-1")],
            vec![("Content-Length", "99999999999999999999999")],
        ] {
            assert_eq!(head(&bad).framing().unwrap_err().status, 400, "{bad:?}");
        }
        assert_eq!(
            head(&[("Transfer-Encoding", "gzip")])
                .framing()
                .unwrap_err()
                .status,
            501
        );
    }

    #[test]
    fn decodes_chunked_bodies_incrementally() {
        let body = b"4\r\nWiki\r\n5;ext=1\r\npedia\r\n0\r\n\r\n";
        let mut c = Chunked::default();
        let (n, done) = c.feed(&body[..7], MAX_BODY).unwrap();
        assert!(!done);
        let (m, done) = c.feed(&body[n..], MAX_BODY).unwrap();
        assert!(done);
        assert_eq!(n + m, body.len());
        assert_eq!(c.data, b"Wikipedia");
        let mut c = Chunked::default();
        assert_eq!(c.feed(b"zz\r\n", MAX_BODY).unwrap_err().status, 400);
        let mut c = Chunked::default();
        assert_eq!(c.feed(b"10\r\n", 4).unwrap_err().status, 413);
        let mut c = Chunked::default();
        assert_eq!(c.feed(b"2\r\nabXY", 100).unwrap_err().status, 400);
        // Trailers without an end are bounded like a head.
        let mut endless = b"0\r\nX-Trailer: ".to_vec();
        endless.extend(std::iter::repeat_n(b'a', MAX_HEAD + 1));
        let mut c = Chunked::default();
        assert_eq!(c.feed(&endless, MAX_BODY).unwrap_err().status, 431);
    }

    #[test]
    fn random_bytes_never_panic() {
        // A small deterministic fuzz: random bytes, and random mutations of
        // a valid request, through every parser.
        let valid = b"POST /v1/x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nabcd\r\n0\r\n\r\n";
        let mut seed: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for i in 0..3000 {
            let mut buf: Vec<u8> = if i % 2 == 0 {
                (0..(next() % 200)).map(|_| next() as u8).collect()
            } else {
                let mut v = valid.to_vec();
                for _ in 0..(1 + next() % 4) {
                    let at = (next() as usize) % v.len();
                    v[at] = next() as u8;
                }
                v
            };
            if i % 7 == 0 {
                buf.truncate((next() as usize) % (buf.len() + 1));
            }
            if let Ok(Some((head, n))) = parse_request_head(&buf) {
                if let Ok(Framing::Chunked) = head.framing() {
                    let _ = Chunked::default().feed(&buf[n..], 64);
                }
            }
            let _ = parse_response_head(&buf);
            let _ = Chunked::default().feed(&buf, 64);
            let _ = crate::base::sse::parse(&String::from_utf8_lossy(&buf));
        }
    }

    #[test]
    fn response_heads() {
        let bytes = response_bytes(
            503,
            &[
                ("Retry-After".into(), "1".into()),
                ("Content-Length".into(), "99".into()),
            ],
            b"{}",
            false,
        );
        let (h, n) = parse_response_head(&bytes).unwrap().unwrap();
        assert_eq!(h.status, 503);
        assert_eq!(h.header("retry-after"), Some("1"));
        assert_eq!(h.header("content-length"), Some("2"));
        assert_eq!(&bytes[n..], b"{}");
        assert!(parse_response_head(b"\x00garbage\r\n\r\n").is_err());
        assert!(parse_response_head(b"HTTP/1.1 99x Nope\r\n\r\n").is_err());
    }
}
