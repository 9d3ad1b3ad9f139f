//! Generating cases: for each route a sequence of answers drawn from what a
//! route can answer (the registry's codes and their fixtures, statuses,
//! server guidance in every form and range, latencies around the attempt
//! timeout, resets, malformed and truncated answers, streams that break
//! before or after output), and the case's jitter draws, deadline and
//! request. Weights and bounds come from the invariants file's `generate`.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::engine::explore::case::{Answer, Case, Header, RequestKind, Step};
use crate::engine::explore::prng::Rng;
use crate::model::invariants::Generate;
use crate::model::registry::Registry;

/// What cases are drawn from: the routes, the codes with fixtures, the
/// declared attempt timeout, the generator's settings.
#[derive(Debug, Clone)]
pub struct Space {
    /// The system's routes, in order.
    pub routes: Vec<String>,
    /// Registry codes that have a fixture.
    pub codes: Vec<String>,
    /// Codes whose fixture has an error body (for mixed answers).
    pub bodies: Vec<String>,
    /// The declared attempt timeout (latencies are drawn around it).
    pub attempt_timeout: Duration,
    /// Weights and bounds.
    pub generate: Generate,
}

impl Space {
    /// The space of a system with these routes, this registry and attempt timeout.
    pub fn new(
        routes: Vec<String>,
        registry: &Registry,
        attempt_timeout: Duration,
        generate: Generate,
    ) -> Self {
        let codes: Vec<String> = registry
            .codes
            .iter()
            .filter(|c| c.fixture.is_some())
            .map(|c| c.name.clone())
            .collect();
        let bodies = codes
            .iter()
            .filter(|c| crate::engine::explore::case::fixture_body(registry, c).is_some())
            .cloned()
            .collect();
        Self {
            routes,
            codes,
            bodies,
            attempt_timeout,
            generate,
        }
    }
}

/// Delay-seconds values: zero, small, around a 60s cap, huge (beyond u64).
const SECONDS: [&str; 10] = [
    "0",
    "1",
    "2",
    "3",
    "5",
    "30",
    "61",
    "120",
    "3600",
    "99999999999999999999",
];
/// Offsets of an HTTP-date from the virtual wall clock: past, now, future.
const DATE_OFFSETS: [i64; 8] = [-60, -1, 0, 1, 4, 10, 90, 7200];
/// Values no parser should honour.
const MALFORMED: [&str; 6] = [
    "soon",
    "-1",
    "1.5",
    "",
    "Sun, 32 Nov 1994 08:49:37 GMT",
    "0x10",
];
/// `retry-after-ms` values.
const MILLIS: [&str; 8] = ["0", "250", "1500", "4000", "70000", "-5", "abc", "2.5"];
/// Deadlines a case may set.
const DEADLINES: [u64; 7] = [500, 1000, 2000, 3000, 5000, 10_000, 30_000];

/// Where a case's virtual wall clock may start (seconds and nanoseconds
/// since 1970), besides the default: a plain date, dates a few seconds
/// before a year, century, leap day and the RFC 850 two-digit-year window
/// turn over (so `+10s` lands in the next one), the 32-bit `time_t` limit,
/// close after 1970 (so past dates fall before it), and a wall between two
/// seconds (HTTP-dates have whole seconds).
pub const WALLS: [(u64, u32); 8] = [
    (1_695_988_800, 0),           // Fri, 29 Sep 2023 12:00:00 GMT
    (946_684_795, 0),             // Fri, 31 Dec 1999 23:59:55 GMT
    (1_709_164_795, 0),           // Wed, 28 Feb 2024 23:59:55 GMT
    (2_524_607_995, 0),           // Fri, 31 Dec 2049 23:59:55 GMT
    (3_155_759_995, 0),           // Tue, 31 Dec 2069 23:59:55 GMT
    (2_147_483_640, 0),           // Tue, 19 Jan 2038 03:14:00 GMT
    (30, 0),                      // Thu, 01 Jan 1970 00:00:30 GMT
    (1_695_988_800, 500_000_000), // 2023-09-29T12:00:00.5Z
];

/// The wall clock a case reads: its own or the default.
pub fn wall_or_default(wall: Option<SystemTime>) -> SystemTime {
    wall.unwrap_or_else(crate::load::policy::retry_after::default_wall_start)
}

/// An HTTP-date `offset` seconds from the wall clock `wall` (whole seconds,
/// rounded down), in IMF-fixdate (0), RFC 850 (1) or asctime (2) form.
pub fn http_date(wall: SystemTime, offset: i64, form: u64) -> String {
    let at = if offset >= 0 {
        wall + Duration::from_secs(offset as u64)
    } else {
        wall.checked_sub(Duration::from_secs(offset.unsigned_abs()))
            .unwrap_or(UNIX_EPOCH)
    };
    crate::load::policy::retry_after::format_http_date(at, form as u8)
}

fn guidance(rng: &mut Rng, wall: SystemTime) -> Answer {
    let status = *rng.pick(&[429u16, 503]);
    let (header, value) = match rng.below(8) {
        0..=2 => (Header::RetryAfter, rng.pick(&SECONDS).to_string()),
        3..=4 => (
            Header::RetryAfter,
            http_date(wall, *rng.pick(&DATE_OFFSETS), rng.below(3)),
        ),
        5 => (Header::RetryAfter, rng.pick(&MALFORMED).to_string()),
        _ => (Header::RetryAfterMs, rng.pick(&MILLIS).to_string()),
    };
    Answer::Guidance {
        status,
        header,
        value,
    }
}

fn step(space: &Space, rng: &mut Rng, wall: SystemTime) -> Step {
    let g = &space.generate;
    let w = &g.weights;
    let weights = [
        w.ok,
        w.status,
        if space.codes.is_empty() { 0 } else { w.code },
        if space.bodies.is_empty() { 0 } else { w.mixed },
        w.retry_after,
        w.timeout,
        w.reset,
        w.malformed,
        w.truncated,
        w.stream,
        w.slow,
    ];
    let weights = if weights.iter().all(|w| *w == 0) {
        [1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]
    } else {
        weights
    };
    let mut latency = Duration::ZERO;
    let answer = match rng.weighted(&weights) {
        0 => Answer::Ok,
        1 => Answer::Status(*rng.pick(&g.statuses)),
        2 => Answer::Code(rng.pick(&space.codes).clone()),
        3 => Answer::Mixed {
            status: *rng.pick(&[500u16, 503, 429, 400, 404]),
            code: rng.pick(&space.bodies).clone(),
        },
        4 => guidance(rng, wall),
        5 => Answer::Timeout,
        6 => Answer::Reset,
        7 => Answer::Malformed,
        8 => Answer::Truncated,
        9 => Answer::Stream {
            data: rng.below(3) as u8,
            comment: rng.chance(0.5),
            breaks: rng.chance(0.6),
        },
        _ => {
            let at = space.attempt_timeout;
            let ms = Duration::from_millis(1);
            latency = *rng.pick(&[at / 2, at.saturating_sub(ms), at, at + ms, at * 2]);
            if rng.chance(0.5) {
                Answer::Ok
            } else {
                Answer::Status(*rng.pick(&[503u16, 429, 500]))
            }
        }
    };
    if latency.is_zero() && rng.chance(0.1) {
        latency = *rng.pick(&[Duration::from_millis(100), Duration::from_secs(1)]);
    }
    Step { answer, latency }
}

/// Case `index` of a run seeded `seed`.
pub fn case(space: &Space, seed: u64, index: u64) -> Case {
    let mut rng = Rng::for_case(seed, index);
    let g = &space.generate;
    let wall = rng.chance(g.wall).then(|| {
        let (s, n) = *rng.pick(&WALLS);
        UNIX_EPOCH + Duration::new(s, n)
    });
    let at = wall_or_default(wall);
    let routes = space
        .routes
        .iter()
        .map(|r| {
            let n = rng.range(1, g.calls.max(1) as u64);
            (
                r.clone(),
                (0..n).map(|_| step(space, &mut rng, at)).collect(),
            )
        })
        .collect();
    let draws = (0..rng.range(0, g.draws as u64))
        .map(|_| rng.below(16) as f64 / 16.0)
        .collect();
    let deadline = rng
        .chance(g.deadline)
        .then(|| Duration::from_millis(*rng.pick(&DEADLINES)));
    let create = rng.chance(g.create);
    let request = RequestKind {
        create,
        key: rng.chance(g.key),
        stream: rng.chance(g.stream),
    };
    Case {
        routes,
        draws,
        deadline,
        request,
        wall,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_parse_as_the_controller_reads_them() {
        use crate::load::policy::retry_after::{default_wall_start, parse_retry_after};
        let walls = WALLS
            .iter()
            .map(|(s, n)| UNIX_EPOCH + Duration::new(*s, *n))
            .chain([default_wall_start()]);
        for wall in walls {
            // HTTP-dates have whole seconds: from a wall between two
            // seconds, "10s later" is 9.5s later.
            let frac = Duration::from_nanos(
                wall.duration_since(UNIX_EPOCH).unwrap().subsec_nanos() as u64,
            );
            for form in 0..3 {
                let d = http_date(wall, 10, form);
                assert_eq!(
                    parse_retry_after(&d, wall),
                    Some(Duration::from_secs(10) - frac),
                    "form {form}: {d}"
                );
                assert_eq!(parse_retry_after(&http_date(wall, -60, form), wall), None);
            }
        }
        assert_eq!(
            http_date(UNIX_EPOCH + Duration::from_secs(3_155_759_995), 10, 1),
            "Wednesday, 01-Jan-70 00:00:05 GMT"
        );
    }

    #[test]
    fn walls_are_drawn() {
        let reg = crate::load::registry::builtin();
        let space = Space::new(
            vec!["A".into()],
            &reg,
            Duration::from_secs(2),
            Generate::default(),
        );
        let walls: std::collections::BTreeSet<_> =
            (0..200).map(|i| case(&space, 1, i).wall).collect();
        assert!(walls.contains(&None));
        assert_eq!(walls.len(), WALLS.len() + 1, "{walls:?}");
    }

    #[test]
    fn the_same_index_gives_the_same_case() {
        let reg = crate::load::registry::builtin();
        let space = Space::new(
            vec!["A".into(), "B".into()],
            &reg,
            Duration::from_secs(2),
            Generate::default(),
        );
        assert_eq!(case(&space, 9, 41), case(&space, 9, 41));
        assert_ne!(case(&space, 9, 41), case(&space, 9, 42));
        let c = case(&space, 9, 41);
        assert_eq!(c.routes.len(), 2);
        assert!(c.routes.iter().all(|(_, s)| !s.is_empty() && s.len() <= 5));
    }
}
