//! A scripted upstream on 127.0.0.1 for record-mode tests: it answers each
//! connection with the next scripted reply (a JSON response, an event
//! stream that may break part-way, or a dropped connection) and keeps the
//! raw requests it received. Loopback only, one thread, stopped on drop.
//!
//! ```
//! use faultmatrix::exec::tape::upstream::{Reply, Upstream};
//! let up = Upstream::start(vec![
//!     Reply::json(429, r#"{"error":{"code":"rate_limit_exceeded"}}"#).header("retry-after", "1"),
//!     Reply::json(200, r#"{"ok":true}"#),
//! ]).unwrap();
//! assert!(up.url().starts_with("http://127.0.0.1:"));
//! ```

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// One scripted reply.
#[derive(Debug, Clone)]
pub struct Reply {
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
    stream: bool,
    breaks: bool,
    drop_connection: bool,
    delay: Duration,
}

impl Reply {
    /// A JSON response.
    pub fn json(status: u16, body: &str) -> Self {
        Self {
            status,
            headers: vec![("content-type".into(), "application/json".into())],
            body: body.to_string(),
            stream: false,
            breaks: false,
            drop_connection: false,
            delay: Duration::ZERO,
        }
    }

    /// An event stream with this raw text (`: keep-alive\n\ndata: x\n\n`),
    /// sent with chunked transfer coding.
    pub fn sse(status: u16, text: &str) -> Self {
        Self {
            status,
            headers: vec![("content-type".into(), "text/event-stream".into())],
            body: text.to_string(),
            stream: true,
            breaks: false,
            drop_connection: false,
            delay: Duration::ZERO,
        }
    }

    /// The connection closes without a response.
    pub fn reset() -> Self {
        Self {
            status: 0,
            headers: Vec::new(),
            body: String::new(),
            stream: false,
            breaks: false,
            drop_connection: true,
            delay: Duration::ZERO,
        }
    }

    /// Adds a response header.
    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.to_string(), value.to_string()));
        self
    }

    /// Waits this long (real time) before answering: longer than the
    /// recorder's `tapes.timeout`, the call is recorded as a timeout.
    pub fn delay(mut self, delay: Duration) -> Self {
        self.delay = delay;
        self
    }

    /// For a stream: the connection drops after the text, without the last
    /// chunk.
    pub fn breaks(mut self) -> Self {
        self.breaks = true;
        self
    }

    fn write(&self, s: &mut TcpStream) -> std::io::Result<()> {
        if self.drop_connection {
            return Ok(());
        }
        std::thread::sleep(self.delay);
        let mut head = format!("HTTP/1.1 {} Scripted\r\nconnection: close\r\n", self.status);
        for (k, v) in &self.headers {
            head.push_str(&format!("{k}: {v}\r\n"));
        }
        if self.stream {
            head.push_str("transfer-encoding: chunked\r\n\r\n");
            s.write_all(head.as_bytes())?;
            // One chunk per event, so boundaries survive any buffering.
            for part in self.body.split_inclusive("\n\n") {
                s.write_all(format!("{:x}\r\n{part}\r\n", part.len()).as_bytes())?;
            }
            if !self.breaks {
                s.write_all(b"0\r\n\r\n")?;
            }
        } else {
            head.push_str(&format!("content-length: {}\r\n\r\n", self.body.len()));
            s.write_all(head.as_bytes())?;
            s.write_all(self.body.as_bytes())?;
        }
        s.flush()
    }
}

/// A running scripted upstream.
pub struct Upstream {
    addr: String,
    stop: Arc<AtomicBool>,
    seen: Arc<Mutex<Vec<String>>>,
    handle: Option<JoinHandle<()>>,
}

fn read_request(s: &mut TcpStream) -> std::io::Result<String> {
    let mut r = BufReader::new(s.try_clone()?);
    let mut text = String::new();
    let mut length = 0usize;
    loop {
        let mut line = String::new();
        if r.read_line(&mut line)? == 0 {
            break;
        }
        if let Some((k, v)) = line.split_once(':') {
            if k.trim().eq_ignore_ascii_case("content-length") {
                length = v.trim().parse().unwrap_or(0);
            }
        }
        text.push_str(&line);
        if line == "\r\n" || line == "\n" {
            break;
        }
    }
    // Content-Length is the client's word, never an allocation.
    let mut body = Vec::new();
    r.take(length as u64).read_to_end(&mut body)?;
    text.push_str(&String::from_utf8_lossy(&body));
    Ok(text)
}

impl Upstream {
    /// Starts serving `replies` in order, one per connection. Calls beyond
    /// the script get a 500 saying so.
    pub fn start(replies: Vec<Reply>) -> std::io::Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let addr = listener.local_addr()?.to_string();
        let stop = Arc::new(AtomicBool::new(false));
        let seen = Arc::new(Mutex::new(Vec::new()));
        let (stop2, seen2) = (stop.clone(), seen.clone());
        let handle = std::thread::spawn(move || {
            let mut replies = replies.into_iter();
            for conn in listener.incoming() {
                if stop2.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(mut s) = conn else { continue };
                let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
                let Ok(req) = read_request(&mut s) else {
                    continue;
                };
                seen2.lock().unwrap_or_else(|e| e.into_inner()).push(req);
                let reply = replies.next().unwrap_or_else(|| {
                    Reply::json(
                        500,
                        r#"{"error":"the test upstream's script is exhausted"}"#,
                    )
                });
                // A slow reply must not hold up the next connection.
                std::thread::spawn(move || {
                    let _ = reply.write(&mut s);
                    let _ = s.shutdown(std::net::Shutdown::Both);
                });
            }
        });
        Ok(Self {
            addr,
            stop,
            seen,
            handle: Some(handle),
        })
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The raw requests received so far (request line, headers, body).
    pub fn requests(&self) -> Vec<String> {
        self.seen.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

impl Drop for Upstream {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the accept loop.
        let _ = TcpStream::connect(&self.addr);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}
