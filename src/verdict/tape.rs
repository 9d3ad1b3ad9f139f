//! The verdict of a tape row: a tape that could not be replayed fails with
//! its own message first; a recording is moved into place only when the
//! upstream answered in the shape the row asked for and the row passed,
//! and is discarded (the old tape byte-for-byte untouched) otherwise.

use crate::exec::run::Observation;
use crate::exec::tape::TapeOutcome;
use crate::model::Row;
use crate::verdict::failure::{Problem, ProblemKind};

/// The answers a recording must get: `record.expect`, else the outcomes of
/// `expect.trace`.
pub fn wanted_shape(row: &Row) -> Option<Vec<String>> {
    let tape = row.tape()?;
    tape.record_expect.clone().or_else(|| {
        row.expect
            .trace
            .as_ref()
            .map(|lines| lines.iter().map(|l| l.outcome().to_string()).collect())
    })
}

/// `429 then 429 then 200`; `nothing` for no answers.
fn shape(tokens: &[String]) -> String {
    if tokens.is_empty() {
        "nothing (no call reached the upstream)".to_string()
    } else {
        tokens.join(" then ")
    }
}

/// The problems of a row with a tape, given the problems of its other
/// assertions (`rest`, computed by `assertions` only when needed); commits
/// or discards a recording.
pub fn problems(
    row: &Row,
    obs: &Observation,
    assertions: impl FnOnce() -> Vec<Problem>,
) -> Vec<Problem> {
    let tape = |detail: String| Problem::new(ProblemKind::Tape, detail);
    let recording = |detail: String| Problem::new(ProblemKind::Recording, detail);
    match &obs.tape {
        None | Some(TapeOutcome::Replayed(None)) => assertions(),
        Some(TapeOutcome::Unavailable(msg)) => vec![tape(msg.clone())],
        Some(TapeOutcome::Replayed(Some(problem))) => {
            // The tape's verdict first; the rest below it is context.
            let mut out = vec![tape(problem.clone())];
            out.extend(
                assertions()
                    .into_iter()
                    .filter(|p| !(p.kind == ProblemKind::Harness && p.detail == *problem)),
            );
            out
        }
        Some(TapeOutcome::Recorded(rec)) => {
            let mut out = match wanted_shape(row) {
                _ if rec.problem.is_some() => {
                    vec![recording(rec.problem.clone().unwrap_or_default())]
                }
                None => vec![recording(format!(
                    "recording {}: the row does not say which answers it wants recorded: add `record: {{ expect: [429, 200] }}` or an `expect.trace`",
                    rec.file
                ))],
                Some(want) if want != rec.got => vec![recording(format!(
                    "recording {}: the upstream did not misbehave on cue: wanted {}, got {}\nnothing is wrong with the code under test: the upstream decides when it refuses; record again",
                    rec.file,
                    shape(&want),
                    shape(&rec.got)
                ))],
                Some(_) => assertions(),
            };
            if out.is_empty() {
                match rec.commit() {
                    Ok(()) => return out,
                    Err(e) => return vec![recording(e)],
                }
            }
            rec.discard();
            let state = if rec.target.exists() {
                "the old tape is unchanged"
            } else {
                "no tape was written"
            };
            out.push(recording(format!("recording {} failed: {state}", rec.file)));
            out
        }
    }
}
