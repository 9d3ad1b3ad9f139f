//! Bad input, table-driven: each case is a YAML snippet (a matrix file
//! `m.yaml` or a registry file `r.yaml`) and the exact diagnostics it must
//! render, compiler style. A case's snippet and message start after the
//! opening line break of the raw string.

use faultmatrix::load::{load_text, registry_from_text};
use faultmatrix::Systems;

#[derive(Clone, Copy)]
enum Kind {
    Matrix,
    Registry,
}
use Kind::{Matrix, Registry};

struct Case {
    name: &'static str,
    kind: Kind,
    yaml: &'static str,
    expected: &'static str,
}

const CASES: &[Case] = &[
    Case {
        name: "unknown top-level key",
        kind: Matrix,
        yaml: r#"
titel: t
rows:
  - name: a
    inject: { A: [200] }
    expect: { stop: success }
"#,
        expected: r#"
error: unknown key `titel`
 --> m.yaml:1:1
  |
1 | titel: t
  | ^ expected one of: title, system, policy, registry, defaults, tapes, rows
  = help: did you mean `title`?

error: missing key `title` in the file
 --> m.yaml:1:1
  |
1 | titel: t
  | ^ add `title:` here
"#,
    },
    Case {
        name: "unknown row key",
        kind: Matrix,
        yaml: r#"
title: t
policy:
  routes: [{ name: A, attempts: 2 }, { name: B, attempts: 2 }]
  backoff: { initial: 1s, factor: 2, cap: 30s, jitter: none }
  deadline: 30s
rows:
  - name: a
    inejct: { A: [200] }
    expect: { stop: success }
"#,
        expected: r#"
error: unknown key `inejct` in `rows[0]`
 --> m.yaml:8:5
  |
8 |     inejct: { A: [200] }
  |     ^ expected one of: name, ignore, tags, inject, deadline, jitter, jitter_seed, request, horizon, budget, max_calls, tolerance, expect, tape, record
  = help: did you mean `inject`?
"#,
    },
    Case {
        name: "unknown expect key",
        kind: Matrix,
        yaml: r#"
title: t
policy:
  routes: [{ name: A, attempts: 2 }, { name: B, attempts: 2 }]
  backoff: { initial: 1s, factor: 2, cap: 30s, jitter: none }
  deadline: 30s
rows:
  - name: a
    inject: { A: [200] }
    expect:
      stop: success
      trcae: A1 200 return
"#,
        expected: r#"
error: unknown key `trcae` in `rows[0].expect`
  --> m.yaml:11:7
   |
11 |       trcae: A1 200 return
   |       ^ expected one of: trace, stop, elapsed, error, escalations, records, amplification, output, snapshot, requests
   = help: did you mean `trace`?
"#,
    },
    Case {
        name: "duration without unit",
        kind: Matrix,
        yaml: r#"
title: t
policy:
  routes: [{ name: A, attempts: 2 }, { name: B, attempts: 2 }]
  backoff: { initial: 1s, factor: 2, cap: 30s, jitter: none }
  deadline: 30s
rows:
  - name: a
    deadline: 5
    inject: { A: [200] }
    expect: { stop: success }
"#,
        expected: r#"
error: `rows[0].deadline`: `5` has no unit: write it as `5s` or `5ms`
 --> m.yaml:8:15
  |
8 |     deadline: 5
  |               ^
"#,
    },
    Case {
        name: "duration with unknown unit",
        kind: Matrix,
        yaml: r#"
title: t
policy:
  routes: [{ name: A, attempts: 2 }, { name: B, attempts: 2 }]
  backoff: { initial: 1s, factor: 2, cap: 30s, jitter: none }
  deadline: 30s
rows:
  - name: a
    deadline: 5sec
    inject: { A: [200] }
    expect: { stop: success }
"#,
        expected: r#"
error: `rows[0].deadline`: `5sec` has unknown unit `sec`: expected one of ns, us, ms, s, m, h
 --> m.yaml:8:15
  |
8 |     deadline: 5sec
  |               ^
"#,
    },
    Case {
        name: "unknown route",
        kind: Matrix,
        yaml: r#"
title: t
policy:
  routes: [{ name: A, attempts: 2 }, { name: B, attempts: 2 }]
  backoff: { initial: 1s, factor: 2, cap: 30s, jitter: none }
  deadline: 30s
rows:
  - name: a
    inject:
      C: [200]
    expect: { stop: success }
"#,
        expected: r#"
error: unknown route `C` in `inject`
 --> m.yaml:9:7
  |
9 |       C: [200]
  |       ^ the policy declares: A, B
  = help: did you mean `A`?
"#,
    },
    Case {
        name: "route in the wrong case",
        kind: Matrix,
        yaml: r#"
title: t
policy:
  routes: [{ name: A, attempts: 2 }, { name: B, attempts: 2 }]
  backoff: { initial: 1s, factor: 2, cap: 30s, jitter: none }
  deadline: 30s
rows:
  - name: a
    inject:
      b: [200]
    expect: { stop: success }
"#,
        expected: r#"
error: unknown route `b` in `inject`
 --> m.yaml:9:7
  |
9 |       b: [200]
  |       ^ the policy declares: A, B
  = help: did you mean `B`?
"#,
    },
    Case {
        name: "unknown code in a trace line",
        kind: Matrix,
        yaml: r#"
title: t
policy:
  routes: [{ name: A, attempts: 2 }, { name: B, attempts: 2 }]
  backoff: { initial: 1s, factor: 2, cap: 30s, jitter: none }
  deadline: 30s
rows:
  - name: a
    inject: { A: [429, 200] }
    expect:
      trace: |
        A1 429 RATE_LIMTED retry wait=1s
        A2 200 return
"#,
        expected: r#"
error: unknown reason code `RATE_LIMTED` in trace line `A1 429 RATE_LIMTED retry wait=1s`
  --> m.yaml:11:16
   |
11 |         A1 429 RATE_LIMTED retry wait=1s
   |                ^ codes come from the registry (built-in registry)
   = help: did you mean `RATE_LIMITED`?
"#,
    },
    Case {
        name: "unknown decision in a trace line",
        kind: Matrix,
        yaml: r#"
title: t
policy:
  routes: [{ name: A, attempts: 2 }, { name: B, attempts: 2 }]
  backoff: { initial: 1s, factor: 2, cap: 30s, jitter: none }
  deadline: 30s
rows:
  - name: a
    inject: { A: [429, 200] }
    expect:
      trace: |
        A1 429 RATE_LIMITED retyr wait=1s
        A2 200 return
"#,
        expected: r#"
error: bad trace line: `retyr` is not a decision: expected one of retry, switch, return, fail
  --> m.yaml:11:29
   |
11 |         A1 429 RATE_LIMITED retyr wait=1s
   |                             ^
   = help: did you mean `retry`?
"#,
    },
    Case {
        name: "unknown route in a trace line",
        kind: Matrix,
        yaml: r#"
title: t
policy:
  routes: [{ name: A, attempts: 2 }, { name: B, attempts: 2 }]
  backoff: { initial: 1s, factor: 2, cap: 30s, jitter: none }
  deadline: 30s
rows:
  - name: a
    inject: { A: [200] }
    expect:
      trace: [C1 200 return]
"#,
        expected: r#"
error: bad trace line: `C1` names route `C`, which is not declared: routes are A, B
  --> m.yaml:10:15
   |
10 |       trace: [C1 200 return]
   |               ^
   = help: did you mean `A`?
"#,
    },
    Case {
        name: "unknown stop reason",
        kind: Matrix,
        yaml: r#"
title: t
policy:
  routes: [{ name: A, attempts: 2 }, { name: B, attempts: 2 }]
  backoff: { initial: 1s, factor: 2, cap: 30s, jitter: none }
  deadline: 30s
rows:
  - name: a
    inject: { A: [503, 503] }
    expect: { stop: exhuasted }
"#,
        expected: r#"
error: unknown stop reason `exhuasted`
 --> m.yaml:9:21
  |
9 |     expect: { stop: exhuasted }
  |                     ^ expected one of: success, terminal, exhausted, deadline, partial-output, guidance-refused, not-idempotent, switch-refused
  = help: did you mean `exhausted`?
"#,
    },
    Case {
        name: "unknown script entry",
        kind: Matrix,
        yaml: r#"
title: t
policy:
  routes: [{ name: A, attempts: 2 }, { name: B, attempts: 2 }]
  backoff: { initial: 1s, factor: 2, cap: 30s, jitter: none }
  deadline: 30s
rows:
  - name: a
    inject: { A: [timout] }
    expect: { stop: deadline }
"#,
        expected: r#"
error: unknown script entry `timout`
 --> m.yaml:8:19
  |
8 |     inject: { A: [timout] }
  |                   ^ expected a status such as 503, timeout, reset, malformed, ok, or a reason code
  = help: did you mean `timeout`?
"#,
    },
    Case {
        name: "status out of range",
        kind: Matrix,
        yaml: r#"
title: t
policy:
  routes: [{ name: A, attempts: 2 }, { name: B, attempts: 2 }]
  backoff: { initial: 1s, factor: 2, cap: 30s, jitter: none }
  deadline: 30s
rows:
  - name: a
    inject: { A: [700] }
    expect: { stop: success }
"#,
        expected: r#"
error: status 700 is not an HTTP status: expected 100 to 599
 --> m.yaml:8:19
  |
8 |     inject: { A: [700] }
  |                   ^
"#,
    },
    Case {
        name: "duplicate row names",
        kind: Matrix,
        yaml: r#"
title: t
policy:
  routes: [{ name: A, attempts: 2 }, { name: B, attempts: 2 }]
  backoff: { initial: 1s, factor: 2, cap: 30s, jitter: none }
  deadline: 30s
rows:
  - name: a
    inject: { A: [200] }
    expect: { stop: success }
  - name: a
    inject: { A: [200] }
    expect: { stop: success }
"#,
        expected: r#"
error: duplicate row name `a`: row names are unique in a file (first used on line 7)
  --> m.yaml:10:11
   |
10 |   - name: a
   |           ^
"#,
    },
    Case {
        name: "row asserts nothing",
        kind: Matrix,
        yaml: r#"
title: t
policy:
  routes: [{ name: A, attempts: 2 }, { name: B, attempts: 2 }]
  backoff: { initial: 1s, factor: 2, cap: 30s, jitter: none }
  deadline: 30s
rows:
  - name: a
    inject: { A: [200] }
    expect: {}
"#,
        expected: r#"
error: the row asserts nothing: give `trace`, `stop` or another expectation
 --> m.yaml:9:13
  |
9 |     expect: {}
  |             ^
"#,
    },
    Case {
        name: "trace and snapshot together",
        kind: Matrix,
        yaml: r#"
title: t
policy:
  routes: [{ name: A, attempts: 2 }, { name: B, attempts: 2 }]
  backoff: { initial: 1s, factor: 2, cap: 30s, jitter: none }
  deadline: 30s
rows:
  - name: a
    inject: { A: [200] }
    expect:
      trace: A1 200 return
      snapshot: true
"#,
        expected: r#"
error: give either `trace` or `snapshot: true`, not both
  --> m.yaml:11:7
   |
11 |       snapshot: true
   |       ^ a snapshot row keeps its trace in the snapshot file
"#,
    },
    Case {
        name: "repeat forever before the end",
        kind: Matrix,
        yaml: r#"
title: t
policy:
  routes: [{ name: A, attempts: 2 }, { name: B, attempts: 2 }]
  backoff: { initial: 1s, factor: 2, cap: 30s, jitter: none }
  deadline: 30s
rows:
  - name: a
    inject:
      A: [{ status: 503, repeat: forever }, 200]
    expect: { stop: success }
"#,
        expected: r#"
error: an entry that repeats forever must be the last of its route
 --> m.yaml:9:11
  |
9 |       A: [{ status: 503, repeat: forever }, 200]
  |           ^
"#,
    },
    Case {
        name: "repeat zero",
        kind: Matrix,
        yaml: r#"
title: t
policy:
  routes: [{ name: A, attempts: 2 }, { name: B, attempts: 2 }]
  backoff: { initial: 1s, factor: 2, cap: 30s, jitter: none }
  deadline: 30s
rows:
  - name: a
    inject:
      A: [{ status: 503, repeat: 0 }]
    expect: { stop: success }
"#,
        expected: r#"
error: `repeat` is a count of at least 1, or `forever`
 --> m.yaml:9:34
  |
9 |       A: [{ status: 503, repeat: 0 }]
  |                                  ^
"#,
    },
    Case {
        name: "jitter draw out of range",
        kind: Matrix,
        yaml: r#"
title: t
policy:
  routes: [{ name: A, attempts: 2 }, { name: B, attempts: 2 }]
  backoff: { initial: 1s, factor: 2, cap: 30s, jitter: none }
  deadline: 30s
rows:
  - name: a
    jitter: [0.5, 1.5]
    inject: { A: [200] }
    expect: { stop: success }
"#,
        expected: r#"
error: jitter draw 1.5 is outside [0, 1): a draw is a fraction such as 0.25
 --> m.yaml:8:19
  |
8 |     jitter: [0.5, 1.5]
  |                   ^
"#,
    },
    Case {
        name: "jitter and seed together",
        kind: Matrix,
        yaml: r#"
title: t
policy:
  routes: [{ name: A, attempts: 2 }, { name: B, attempts: 2 }]
  backoff: { initial: 1s, factor: 2, cap: 30s, jitter: none }
  deadline: 30s
rows:
  - name: a
    jitter: [0.5]
    jitter_seed: 7
    inject: { A: [200] }
    expect: { stop: success }
"#,
        expected: r#"
error: give either `jitter` (explicit draws) or `jitter_seed`, not both
 --> m.yaml:9:18
  |
9 |     jitter_seed: 7
  |                  ^
"#,
    },
    Case {
        name: "unknown system",
        kind: Matrix,
        yaml: r#"
title: t
system: referense
rows:
  - name: a
    inject: { A: [200] }
    expect: { stop: success }
"#,
        expected: r#"
error: unknown system `referense`
 --> m.yaml:2:9
  |
2 | system: referense
  |         ^ expected one of: reference
  = help: did you mean `reference`?
"#,
    },
    Case {
        name: "empty rows",
        kind: Matrix,
        yaml: r#"
title: t
rows: []
"#,
        expected: r#"
error: `rows` is empty: a matrix needs at least one row
 --> m.yaml:2:7
  |
2 | rows: []
  |       ^
"#,
    },
    Case {
        name: "yaml syntax error",
        kind: Matrix,
        yaml: r#"
title: t
rows:
  - name: a
   inject: { A: [200] }
"#,
        expected: r#"
error: invalid YAML: did not find expected '-' indicator, while parsing a block collection
 --> m.yaml:4:4
  |
4 |    inject: { A: [200] }
  |    ^ the YAML syntax breaks here (check the indentation and brackets)
"#,
    },
    Case {
        name: "not a mapping",
        kind: Matrix,
        yaml: r#"
- title: t
"#,
        expected: r#"
error: a matrix file is a mapping with `title`, `policy` and `rows`
 --> m.yaml:1:1
  |
1 | - title: t
  | ^
"#,
    },
    Case {
        name: "unknown code in error",
        kind: Matrix,
        yaml: r#"
title: t
policy:
  routes: [{ name: A, attempts: 2 }, { name: B, attempts: 2 }]
  backoff: { initial: 1s, factor: 2, cap: 30s, jitter: none }
  deadline: 30s
rows:
  - name: a
    inject: { A: [{ status: 504, repeat: forever }], B: [{ status: 504, repeat: forever }] }
    expect:
      stop: exhausted
      error: { code: GATEWAY_TIMEOUTS }
"#,
        expected: r#"
error: unknown reason code `GATEWAY_TIMEOUTS`
  --> m.yaml:11:22
   |
11 |       error: { code: GATEWAY_TIMEOUTS }
   |                      ^ codes come from the registry (built-in registry)
   = help: did you mean `GATEWAY_TIMEOUT`?
"#,
    },
    Case {
        name: "unknown code in escalations",
        kind: Matrix,
        yaml: r#"
title: t
policy:
  routes: [{ name: A, attempts: 2 }, { name: B, attempts: 2 }]
  backoff: { initial: 1s, factor: 2, cap: 30s, jitter: none }
  deadline: 30s
rows:
  - name: a
    inject: { A: [401] }
    expect:
      stop: terminal
      escalations: [{ code: AUTH_FAIL }]
"#,
        expected: r#"
error: unknown reason code `AUTH_FAIL`
  --> m.yaml:11:29
   |
11 |       escalations: [{ code: AUTH_FAIL }]
   |                             ^ codes come from the registry (built-in registry)
   = help: did you mean `AUTH_FAILED`?
"#,
    },
    Case {
        name: "unknown fault",
        kind: Matrix,
        yaml: r#"
title: t
policy:
  routes: [{ name: A, attempts: 2 }, { name: B, attempts: 2 }]
  backoff: { initial: 1s, factor: 2, cap: 30s, jitter: none }
  deadline: 30s
rows:
  - name: a
    inject:
      A: [{ fault: rest }]
    expect: { stop: exhausted }
"#,
        expected: r#"
error: unknown fault `rest`
 --> m.yaml:9:20
  |
9 |       A: [{ fault: rest }]
  |                    ^ expected one of: timeout, reset, malformed, truncated
  = help: did you mean `reset`?
"#,
    },
    Case {
        name: "status and fault together",
        kind: Matrix,
        yaml: r#"
title: t
policy:
  routes: [{ name: A, attempts: 2 }, { name: B, attempts: 2 }]
  backoff: { initial: 1s, factor: 2, cap: 30s, jitter: none }
  deadline: 30s
rows:
  - name: a
    inject:
      A: [{ status: 503, fault: timeout }]
    expect: { stop: exhausted }
"#,
        expected: r#"
error: an entry gives exactly one of `status`, `fault` or `code`
 --> m.yaml:9:11
  |
9 |       A: [{ status: 503, fault: timeout }]
  |           ^
"#,
    },
    Case {
        name: "several errors in one row",
        kind: Matrix,
        yaml: r#"
title: t
policy:
  routes: [{ name: A, attempts: 2 }, { name: B, attempts: 2 }]
  backoff: { initial: 1s, factor: 2, cap: 30s, jitter: none }
  deadline: 30s
rows:
  - name: a
    inejct: { A: [200] }
    deadline: 5
    expect: { stop: sucess }
"#,
        expected: r#"
error: unknown key `inejct` in `rows[0]`
 --> m.yaml:8:5
  |
8 |     inejct: { A: [200] }
  |     ^ expected one of: name, ignore, tags, inject, deadline, jitter, jitter_seed, request, horizon, budget, max_calls, tolerance, expect, tape, record
  = help: did you mean `inject`?

error: `rows[0].deadline`: `5` has no unit: write it as `5s` or `5ms`
 --> m.yaml:9:15
  |
9 |     deadline: 5
  |               ^

error: unknown stop reason `sucess`
  --> m.yaml:10:21
   |
10 |     expect: { stop: sucess }
   |                     ^ expected one of: success, terminal, exhausted, deadline, partial-output, guidance-refused, not-idempotent, switch-refused
   = help: did you mean `success`?
"#,
    },
    Case {
        name: "errors in several rows",
        kind: Matrix,
        yaml: r#"
title: t
policy:
  routes: [{ name: A, attempts: 2 }, { name: B, attempts: 2 }]
  backoff: { initial: 1s, factor: 2, cap: 30s, jitter: none }
  deadline: 30s
rows:
  - name: a
    inject: { A: [200] }
    expect: { stop: sucess }
  - name: b
    inject: { D: [200] }
    expect: { stop: success }
"#,
        expected: r#"
error: unknown stop reason `sucess`
 --> m.yaml:9:21
  |
9 |     expect: { stop: sucess }
  |                     ^ expected one of: success, terminal, exhausted, deadline, partial-output, guidance-refused, not-idempotent, switch-refused
  = help: did you mean `success`?

error: unknown route `D` in `inject`
  --> m.yaml:11:15
   |
11 |     inject: { D: [200] }
   |               ^ the policy declares: A, B
   = help: did you mean `A`?
"#,
    },
    Case {
        name: "max_calls zero",
        kind: Matrix,
        yaml: r#"
title: t
policy:
  routes: [{ name: A, attempts: 2 }, { name: B, attempts: 2 }]
  backoff: { initial: 1s, factor: 2, cap: 30s, jitter: none }
  deadline: 30s
rows:
  - name: a
    max_calls: 0
    inject: { A: [200] }
    expect: { stop: success }
"#,
        expected: r#"
error: `max_calls` is 0: no call could be made
 --> m.yaml:8:16
  |
8 |     max_calls: 0
  |                ^
"#,
    },
    Case {
        name: "row name with separator",
        kind: Matrix,
        yaml: r#"
title: t
policy:
  routes: [{ name: A, attempts: 2 }, { name: B, attempts: 2 }]
  backoff: { initial: 1s, factor: 2, cap: 30s, jitter: none }
  deadline: 30s
rows:
  - name: a::b
    inject: { A: [200] }
    expect: { stop: success }
"#,
        expected: r#"
error: row name contains `::`, which separates file and row in test ids
 --> m.yaml:7:11
  |
7 |   - name: a::b
  |           ^
"#,
    },
    Case {
        name: "unknown policy key",
        kind: Matrix,
        yaml: r#"
title: t
policy:
  routes: [{ name: A, attempts: 2 }]
  backof: { initial: 1s }
rows:
  - name: a
    inject: { A: [200] }
    expect: { stop: success }
"#,
        expected: r#"
error: unknown key `backof` in `policy`
 --> m.yaml:4:3
  |
4 |   backof: { initial: 1s }
  |   ^ expected one of: routes, backoff, deadline, attempt_timeout, switch_delay, retry_after, body_paths, switch_on, retry_creates_without_key
  = help: did you mean `backoff`?
"#,
    },
    Case {
        name: "unknown key in a script entry",
        kind: Matrix,
        yaml: r#"
title: t
policy:
  routes: [{ name: A, attempts: 2 }, { name: B, attempts: 2 }]
  backoff: { initial: 1s, factor: 2, cap: 30s, jitter: none }
  deadline: 30s
rows:
  - name: a
    inject:
      A: [{ status: 200, latncy: 1s }]
    expect: { stop: success }
"#,
        expected: r#"
error: unknown key `latncy` in `rows[0].inject.A[0]`
 --> m.yaml:9:26
  |
9 |       A: [{ status: 200, latncy: 1s }]
  |                          ^ expected one of: status, code, headers, body, latency, fault, committed, stream, repeat, recovers_after
  = help: did you mean `latency`?
"#,
    },
    Case {
        name: "registry unknown key",
        kind: Registry,
        yaml: r#"
version: 1
codes:
  SLOW:
    retryable: true
    max_attempts: 3
    escalate_to: ops
    retriable: true
"#,
        expected: r#"
error: unknown key `retriable` in `codes.SLOW`
 --> r.yaml:7:5
  |
7 |     retriable: true
  |     ^ expected one of: retryable, switch, max_attempts, escalate_to, match, fixture
  = help: did you mean `retryable`?
"#,
    },
    Case {
        name: "registry code that is not a mapping",
        kind: Registry,
        yaml: r#"
version: 1
codes:
  SLOW: yes
"#,
        expected: r#"
error: code `SLOW` is a mapping with `retryable`, `max_attempts`, `escalate_to`, `match` and `fixture`
 --> r.yaml:3:9
  |
3 |   SLOW: yes
  |         ^
"#,
    },
    Case {
        name: "registry terminal code recovers",
        kind: Registry,
        yaml: r#"
version: 1
codes:
  DENIED:
    retryable: false
    fixture: { status: 403, recovers_after: 1 }
"#,
        expected: r#"
error: terminal code `DENIED` is configured to recover after 1 failing call
 --> r.yaml:5:29
  |
5 |     fixture: { status: 403, recovers_after: 1 }
  |                             ^ a terminal code never succeeds on a later attempt: remove `recovers_after`, or make the code retryable
"#,
    },
    Case {
        name: "registry bad status class",
        kind: Registry,
        yaml: r#"
version: 1
codes:
  SLOW:
    retryable: true
    match: { status: [5x] }
"#,
        expected: r#"
error: a status match is a status such as 429 or a class such as 5xx
 --> r.yaml:5:23
  |
5 |     match: { status: [5x] }
  |                       ^
"#,
    },
    Case {
        name: "registry version",
        kind: Registry,
        yaml: r#"
version: 2
codes:
  SLOW:
    retryable: true
"#,
        expected: r#"
error: registry version 2 is not supported: expected 1
 --> r.yaml:1:10
  |
1 | version: 2
  |          ^
"#,
    },
    Case {
        name: "two rows with the same snapshot name",
        kind: Matrix,
        yaml: r#"
title: t
rows:
  - name: A then B
    inject: { A: [200] }
    expect: { snapshot: true }
  - name: a-then-b
    inject: { A: [200] }
    expect: { snapshot: true }
"#,
        expected: r#"
error: snapshot name `m__a_then_b` is already used by the row on line 3: rename one of the rows
 --> m.yaml:6:11
  |
6 |   - name: a-then-b
  |           ^
"#,
    },
];

fn render(kind: Kind, yaml: &str) -> String {
    let systems = Systems::new();
    match kind {
        Kind::Matrix => match load_text("m.yaml", yaml, None, &systems) {
            Ok(_) => "(loaded without errors)".to_string(),
            Err(e) => e.to_string(),
        },
        Kind::Registry => match registry_from_text("r.yaml", yaml) {
            Ok(_) => "(loaded without errors)".to_string(),
            Err(e) => e.to_string(),
        },
    }
}

#[test]
fn every_bad_input_gives_its_exact_message() {
    assert!(CASES.len() >= 25, "the table holds at least 25 cases");
    let mut failures = Vec::new();
    for case in CASES {
        let yaml = case.yaml.strip_prefix('\n').unwrap_or(case.yaml);
        let expected = case.expected.strip_prefix('\n').unwrap_or(case.expected);
        let got = render(case.kind, yaml);
        if got != expected {
            failures.push(format!(
                "---- {} ----\nexpected:\n{expected}\ngot:\n{got}",
                case.name
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn case_names_are_unique() {
    let mut names: Vec<&str> = CASES.iter().map(|c| c.name).collect();
    names.sort();
    names.dedup();
    assert_eq!(names.len(), CASES.len());
}
