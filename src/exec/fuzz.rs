//! The entry points of the fuzz targets in `fuzz/`, one per parser of
//! untrusted text, shared with the test that replays their corpus and every
//! crash found (`cargo test --test suite fuzz_regressions::`, on stable
//! Rust). Each takes arbitrary bytes, runs a parser the way faultmatrix
//! runs it, and panics only when an invariant breaks: a result larger than
//! its input allows, an incremental parse that disagrees with a one-shot
//! one, a write → parse round trip that loses something. A panic from the
//! parser itself is a bug by definition.
//!
//! | target | parser |
//! |---|---|
//! | `matrix` | a matrix file through the loader |
//! | `registry` | a registry file through its loader |
//! | `tape` | a tape file through its reader |
//! | `trace_line` | one expected trace line |
//! | `duration` | durations and wait ranges (`1.5s`, `0s..4s`), with a format → parse round trip |
//! | `retry_after` | `Retry-After` (delay-seconds, the three HTTP-date forms), `retry-after-ms` |
//! | `sse` | event streams, with a parse → write → parse round trip |
//! | `request_head` | the fixture server's request heads (read whole and in two pieces) and request bodies |
//! | `response` | response heads and the bodies they frame (the recorder itself reads responses through hyper, `exec::net`) |
//! | `chunked` | chunked bodies, decoded whole and in pieces |

use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::exec::tape::format::Tape;
use crate::exec::wire::http::{self, Chunked, Framing, HeadScan};
use crate::load::systems::Systems;
use crate::model::SseItem;

/// A fuzz entry point.
pub type Entry = fn(&[u8]);

/// Every target, by the name of its folder under `fuzz/corpus/` and of its
/// binary in `fuzz/fuzz_targets/`.
pub const TARGETS: &[(&str, Entry)] = &[
    ("matrix", matrix),
    ("registry", registry),
    ("tape", tape),
    ("trace_line", trace_line),
    ("duration", duration),
    ("retry_after", retry_after),
    ("sse", sse),
    ("request_head", request_head),
    ("response", response),
    ("chunked", chunked),
];

/// Longest message a file's errors may render to: messages are bounded
/// (long lists cut with a count), whatever the input.
const MAX_MESSAGE: usize = 256 * 1024;

fn text(data: &[u8]) -> String {
    String::from_utf8_lossy(data).into_owned()
}

/// An empty folder the matrix loader resolves paths in, so a fuzzed
/// `registry:` or `tape:` finds nothing and nothing outside is read.
fn empty_root() -> &'static PathBuf {
    static ROOT: OnceLock<PathBuf> = OnceLock::new();
    ROOT.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("faultmatrix-fuzz-{}", std::process::id()));
        let _ = std::fs::create_dir_all(&dir);
        dir
    })
}

fn bounded_message(what: &str, message: &str) {
    assert!(
        message.len() <= MAX_MESSAGE,
        "{what}: a {} byte message",
        message.len()
    );
}

/// A matrix file through the loader (reference system, empty folder).
pub fn matrix(data: &[u8]) {
    let t = text(data);
    let systems = Systems::new();
    match crate::load::load_text("fuzz.yaml", &t, Some(empty_root()), &systems) {
        Ok(_) => {}
        Err(e) => bounded_message("matrix", &e.to_string()),
    }
}

/// A registry file through its loader.
pub fn registry(data: &[u8]) {
    if let Err(e) = crate::load::registry_from_text("fuzz-registry.yaml", &text(data)) {
        bounded_message("registry", &e.to_string());
    }
}

/// A tape file through its reader; a tape read back is written and read
/// again unchanged.
pub fn tape(data: &[u8]) {
    match Tape::from_text("fuzz.tape.yaml", &text(data)) {
        Ok(tape) => {
            let again = Tape::from_text("again.tape.yaml", &tape.to_text())
                .unwrap_or_else(|e| panic!("a tape read, written and read again fails: {e}"));
            assert_eq!(
                again.to_text(),
                tape.to_text(),
                "tape text changed on a round trip"
            );
        }
        Err(e) => bounded_message("tape", &e.to_string()),
    }
}

/// One expected trace line, against three route names.
pub fn trace_line(data: &[u8]) {
    let t = text(data);
    let routes = ["A".to_string(), "B".into(), "openai-primary".into()];
    match crate::load::trace_line::parse_line(&t, &routes) {
        Ok(line) => {
            assert!(
                routes.iter().any(|r| r == line.route()),
                "route {:?}",
                line.route()
            );
            assert!(line.attempt >= 1, "attempt {}", line.attempt);
        }
        Err(e) => assert!(e.len() <= 4 * t.len() + 1024, "a {} byte message", e.len()),
    }
}

/// Durations and wait ranges; a parsed duration formats to text that
/// parses back to it.
pub fn duration(data: &[u8]) {
    let t = text(data);
    if let Ok(d) = crate::base::duration::parse(&t) {
        assert!(d <= faultmatrix_controller::duration::MAX, "{t:?} is {d:?}");
        let canonical = crate::base::duration::format(d);
        assert_eq!(
            crate::base::duration::parse(&canonical),
            Ok(d),
            "{t:?} formats as {canonical:?}"
        );
    }
    if let Ok(spec) = crate::base::duration::DurationSpec::parse(&t) {
        let shown = spec.to_string();
        assert_eq!(
            crate::base::duration::DurationSpec::parse(&shown),
            Ok(spec),
            "{t:?} shows as {shown:?}"
        );
    }
}

/// `Retry-After` values and HTTP dates against a fixed "now"; the input
/// also read as header lines for the guidance of a response.
pub fn retry_after(data: &[u8]) {
    use faultmatrix_controller::policy::retry_after as ra;
    let t = text(data);
    let now = UNIX_EPOCH + Duration::from_secs(1_700_000_000);
    let _ = ra::parse_retry_after(&t, now);
    let _ = ra::parse_retry_after(&t, UNIX_EPOCH);
    let _ = ra::parse_retry_after(
        &t,
        SystemTime::UNIX_EPOCH + Duration::from_secs(u32::MAX as u64 * 64),
    );
    if let Some(at) = ra::parse_http_date(&t, now) {
        assert!(at >= UNIX_EPOCH, "{t:?} is before 1970");
    }
    let headers: Vec<(&str, &str)> = t
        .lines()
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim(), v.trim()))
        .collect();
    let _ = ra::guidance(headers.iter().copied(), now);
}

/// Event streams: parse, then write what was parsed and parse it again:
/// the same items, and a complete stream.
pub fn sse(data: &[u8]) {
    let t = text(data);
    let (items, _partial) = crate::base::sse::parse(&t);
    let carried: usize = items
        .iter()
        .map(|i| match i {
            SseItem::Comment(c) => c.len(),
            SseItem::Event { event, data, id } => {
                data.len()
                    + event.as_ref().map_or(0, String::len)
                    + id.as_ref().map_or(0, String::len)
            }
        })
        .sum();
    assert!(
        carried <= t.len(),
        "{carried} bytes of items from {} bytes",
        t.len()
    );
    let written = crate::base::sse::write(&items);
    let (again, partial) = crate::base::sse::parse(&written);
    assert_eq!(
        again, items,
        "items changed on a write → parse round trip: {written:?}"
    );
    assert!(!partial, "a written stream reads as broken: {written:?}");
}

/// Request heads as the fixture server reads them: whole, and in two
/// pieces through one [`HeadScan`] (the same answer); then the body as the
/// head frames it.
pub fn request_head(data: &[u8]) {
    let whole = http::parse_request_head(data);
    let cut = data.first().map_or(0, |b| *b as usize % (data.len() + 1));
    let mut scan = HeadScan::new();
    let first = scan.scan(&data[..cut]);
    let pieces = match first {
        Ok(None) => scan.scan(data),
        done => done,
    };
    assert_eq!(pieces, whole, "read in two pieces at {cut}");
    let Ok(Some((head, used))) = whole else {
        return;
    };
    assert!(
        used <= data.len() && used <= http::MAX_HEAD,
        "head of {used} bytes"
    );
    assert!(head.headers.len() <= http::MAX_HEADERS);
    if let Ok(Framing::Chunked) = head.framing() {
        let mut dec = Chunked::default();
        if let Ok((n, _)) = dec.feed(&data[used..], http::MAX_BODY) {
            assert!(n <= data.len() - used);
            assert!(dec.data.len() <= n);
        }
    }
}

/// Response heads as the fixture-side parser reads them, then the body as
/// the head frames it (recording itself goes through hyper, `exec::net`).
pub fn response(data: &[u8]) {
    let Ok(Some((head, used))) = http::parse_response_head(data) else {
        return;
    };
    assert!(used <= data.len());
    assert!((100..=599).contains(&head.status));
    if let Ok(Framing::Chunked) = head.framing() {
        let mut dec = Chunked::default();
        if let Ok((n, _)) = dec.feed(&data[used..], http::MAX_BODY) {
            assert!(n <= data.len() - used);
            assert!(dec.data.len() <= n);
        }
    }
}

/// Chunked bodies, decoded at once and in pieces as the server reads them:
/// the same bytes, never more than the limit.
pub fn chunked(data: &[u8]) {
    const LIMIT: usize = 4096;
    let mut whole = Chunked::default();
    let one = whole.feed(data, LIMIT);
    assert!(whole.data.len() <= LIMIT);
    // Byte by byte, as a slow client sends it.
    let mut dec = Chunked::default();
    let mut buf: Vec<u8> = Vec::new();
    let mut got = Ok(false);
    for b in data {
        buf.push(*b);
        match dec.feed(&buf, LIMIT) {
            Err(e) => {
                got = Err(e);
                break;
            }
            Ok((used, done)) => {
                buf.drain(..used);
                if done {
                    got = Ok(true);
                    break;
                }
            }
        }
    }
    if let (Ok((_, true)), Ok(true)) = (&one, &got) {
        assert_eq!(dec.data, whole.data, "decoded differently byte by byte");
    }
    if one.is_ok_and(|(_, done)| done) {
        assert!(
            got.is_ok(),
            "a body read whole is refused byte by byte: {got:?}"
        );
    }
}
