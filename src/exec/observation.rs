//! What running a row observed: every call, the trace lines, how the
//! system ended, when, and what the harness saw go wrong. Drivers (in
//! process, over the wire) produce it; verdicts read it.

use std::time::Duration;

use crate::contracts::system::SystemResult;
use crate::exec::scripted::CallRecord;
use crate::exec::trace::ObservedLine;

/// How the system's run ended.
#[derive(Debug, Clone)]
pub enum RunEnd {
    /// It returned.
    Returned(SystemResult),
    /// It was still running when the row's budget ran out.
    Hung,
    /// The harness stopped it (extra call, runaway).
    Aborted,
}

/// Everything observed while running a row.
#[derive(Debug, Clone)]
pub struct Observation {
    /// Raw call records in start order.
    pub calls: Vec<CallRecord>,
    /// The trace lines.
    pub lines: Vec<ObservedLine>,
    /// How the system ended.
    pub end: RunEnd,
    /// Virtual time when the system returned (or was stopped).
    pub returned_at: Duration,
    /// Escalation events.
    pub escalations: Vec<crate::contracts::system::Escalation>,
    /// Records created at create endpoints.
    pub records: u32,
    /// Harness failures.
    pub failures: Vec<String>,
    /// The row's synthetic request id.
    pub request_id: String,
    /// What became of the row's tape, when it has one.
    pub tape: Option<crate::exec::tape::TapeOutcome>,
    /// What a command system printed, and how to run it by hand (shown
    /// under a failing row's problems); `None` for other systems.
    pub command: Option<CommandOutput>,
}

/// What a command system printed, bounded, and the shell lines that run it
/// by hand against `faultmatrix serve`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CommandOutput {
    /// How the command ended (`exit status: 3`, `killed after 30s`).
    pub ended: String,
    /// The end of its stdout: at most a few lines and bytes, what was cut
    /// said first.
    pub stdout: String,
    /// The end of its stderr, likewise.
    pub stderr: String,
    /// Its JSON result line (bounded), `None` when it printed none.
    pub json: Option<String>,
    /// Shell lines that reproduce the run by hand, in order.
    pub reproduce: Vec<String>,
}

impl Observation {
    /// A row that could not run at all: no calls, one failure.
    pub fn failed(request_id: String, message: String) -> Self {
        Observation {
            calls: Vec::new(),
            lines: Vec::new(),
            end: RunEnd::Aborted,
            returned_at: Duration::ZERO,
            escalations: Vec::new(),
            records: 0,
            failures: vec![message],
            request_id,
            tape: None,
            command: None,
        }
    }

    /// The stop reason: `success`, the error's stop, `hung` or `aborted`.
    pub fn stop(&self) -> &str {
        match &self.end {
            RunEnd::Returned(Ok(_)) => "success",
            RunEnd::Returned(Err(e)) => &e.stop,
            RunEnd::Hung => "hung",
            RunEnd::Aborted => "aborted",
        }
    }

    /// The output the caller got: a success's output, or what a failed run
    /// delivered before it failed (a stream that broke part-way); empty when
    /// the system reports none or never returned.
    pub fn output(&self) -> &str {
        match &self.end {
            RunEnd::Returned(Ok(s)) => s.output.as_deref().unwrap_or(""),
            RunEnd::Returned(Err(e)) => e.output.as_deref().unwrap_or(""),
            RunEnd::Hung | RunEnd::Aborted => "",
        }
    }
}

/// The synthetic request id of a row: stable across runs and thread counts.
pub fn request_id(file: &str, row: &str) -> String {
    // FNV-1a, 32 bits: short, stable, no dependency.
    // Plain loops over the three parts: a chained iterator cost about
    // twice the instructions a byte.
    let mut h: u32 = 0x811c_9dc5;
    for part in [file.as_bytes(), &[0], row.as_bytes()] {
        for &b in part {
            h ^= b as u32;
            h = h.wrapping_mul(0x0100_0193);
        }
    }
    // Written by hand: `format!` cost about 700 instructions a row.
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut id = String::with_capacity(12);
    id.push_str("req-");
    for shift in (0..8).rev() {
        id.push(char::from(HEX[(h >> (shift * 4)) as usize & 0xf]));
    }
    id
}

#[cfg(test)]
mod request_id_tests {
    use super::request_id;

    /// FNV-1a of `file`, a zero byte and `row`, as eight hex digits with
    /// leading zeros (values computed apart, in Python).
    #[test]
    fn request_ids_are_fnv_1a_in_eight_hex_digits() {
        assert_eq!(request_id("a.yaml", "r"), "req-ba8dbc77");
        assert_eq!(request_id("matrices/x.yaml", "a row"), "req-6a5bb5f0");
        assert_eq!(request_id("", ""), "req-050c5d1f");
        assert_eq!(request_id("f.yaml", "r268"), "req-006a7790");
    }
}
