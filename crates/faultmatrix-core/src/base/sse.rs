//! Server-sent events as text: parsing a stream into items (comment lines
//! and event boundaries kept) and writing items back. The fixture server,
//! the HTTP transport and the tape recorder all speak it through here.

use std::fmt::Write as _;

use faultmatrix_controller::SseItem;

/// Parses an event stream into items, keeping boundaries and comments.
/// Returns the items and whether the text ended inside an event.
pub fn parse(text: &str) -> (Vec<SseItem>, bool) {
    let mut items = Vec::new();
    let mut event: Option<String> = None;
    let mut data: Option<String> = None;
    let mut id: Option<String> = None;
    let mut pending = false;
    let mut rest = text;
    while !rest.is_empty() {
        // A line ends with CRLF, LF or CR (the WHATWG event-stream grammar).
        let (line, next, complete) = match rest.find(['\r', '\n']) {
            Some(i) => {
                let end = if rest[i..].starts_with("\r\n") {
                    i + 2
                } else {
                    i + 1
                };
                (&rest[..i], &rest[end..], true)
            }
            None => (rest, "", false),
        };
        rest = next;
        if !complete {
            // A line cut off by the end of the connection.
            pending = true;
            break;
        }
        if line.is_empty() {
            if let Some(d) = data.take() {
                items.push(SseItem::Event {
                    event: event.take(),
                    data: d,
                    id: id.take(),
                });
            }
            event = None;
            id = None;
            pending = false;
            continue;
        }
        if let Some(c) = line.strip_prefix(':') {
            items.push(SseItem::Comment(
                c.strip_prefix(' ').unwrap_or(c).to_string(),
            ));
            continue;
        }
        let (field, value) = match line.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (line, ""),
        };
        pending = true;
        match field {
            "data" => match &mut data {
                Some(d) => {
                    d.push('\n');
                    d.push_str(value);
                }
                None => data = Some(value.to_string()),
            },
            "event" => event = Some(value.to_string()),
            "id" => id = Some(value.to_string()),
            _ => {}
        }
    }
    (items, pending)
}

/// The text of one item: a comment line, or an event's fields, each
/// followed by a blank line.
pub fn item_text(item: &SseItem) -> String {
    match item {
        SseItem::Comment(c) => format!(": {}\n\n", c.replace(['\r', '\n'], " ")),
        SseItem::Event { event, data, id } => {
            let mut s = String::new();
            if let Some(e) = event {
                let _ = writeln!(s, "event: {e}");
            }
            if let Some(i) = id {
                let _ = writeln!(s, "id: {i}");
            }
            for l in data.split('\n') {
                let _ = writeln!(s, "data: {l}");
            }
            s.push('\n');
            s
        }
    }
}

/// Writes items as an event stream (the inverse of [`parse`]).
pub fn write(items: &[SseItem]) -> String {
    items.iter().map(item_text).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(d: &str) -> SseItem {
        SseItem::Event {
            event: None,
            data: d.into(),
            id: None,
        }
    }

    #[test]
    fn keeps_comments_and_event_boundaries() {
        let text = ": keep-alive\n: keep-alive\n\ndata: {\"a\":1}\n\nevent: done\ndata: x\ndata: y\nid: 7\n\n";
        let (items, broke) = parse(text);
        assert!(!broke);
        assert_eq!(
            items,
            vec![
                SseItem::Comment("keep-alive".into()),
                SseItem::Comment("keep-alive".into()),
                ev("{\"a\":1}"),
                SseItem::Event {
                    event: Some("done".into()),
                    data: "x\ny".into(),
                    id: Some("7".into())
                },
            ]
        );
        assert_eq!(parse(&write(&items)), (items, false));
    }

    #[test]
    fn a_stream_ending_inside_an_event_broke() {
        let (items, broke) = parse("data: one\n\ndata: tw");
        assert_eq!(items, vec![ev("one")]);
        assert!(broke);
        let (_, broke) = parse("data: one\n\ndata: two\n");
        assert!(broke);
    }

    #[test]
    fn a_line_ends_with_crlf_lf_or_cr() {
        // A CR alone ends a line too: `: x\r\r\n` is a comment `x`, an
        // empty line, and nothing else (it was a comment `x\r`, which
        // changed when written and read again).
        let (items, broke) = parse(": x\r\r\ndata: a\rdata: b\r\r");
        assert_eq!(items, vec![SseItem::Comment("x".into()), ev("a\nb")],);
        assert!(!broke);
        assert_eq!(parse(&write(&items)), (items, false));
    }

    #[test]
    fn sse_round_trips() {
        let items = vec![
            SseItem::Comment("keep-alive".into()),
            SseItem::Event {
                event: Some("delta".into()),
                data: "a\nb".into(),
                id: Some("7".into()),
            },
        ];
        let text: String = write(&items);
        assert_eq!(parse(&text), (items, false));
    }
}
