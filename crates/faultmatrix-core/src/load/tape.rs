//! Tape settings in a matrix file: the file-level `tapes:` block (upstream
//! base URLs for recording, scrub rules, the recording timeout) and a row's
//! `tape:` and `record:` keys. Parsed from loose YAML into [`TapeConfig`]
//! and [`TapeRow`]; errors come back as [`YamlError`]s with paths so the
//! loader renders them like every other diagnostic.
//!
//! ```yaml
//! tapes:
//!   upstreams:
//!     A: http://127.0.0.1:8080
//!     B: { url: http://127.0.0.1:8081, key_env: B_API_KEY }
//!   scrub:
//!     headers: [x-account-id]
//!     json_paths: [error.account, data.*.user]
//!     prefixes: [cus_]
//!   timeout: 30s
//! rows:
//!   - name: refused then served
//!     tape: tapes/refused-then-served.yaml
//!     record: { expect: [429, 200] }
//!     expect: { trace: ..., stop: success }
//! ```

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use crate::base::redact::Scrubber;
use crate::base::yaml::{self, Seg, Value, YamlError};
use crate::load::raw::{RawRecord, RawTapes, RawUpstream};
use crate::model::tape::{TapeConfig, TapeRow, Upstream};

fn err(path: Vec<Seg>, message: impl Into<String>) -> YamlError {
    YamlError {
        pos: None,
        path,
        message: message.into(),
    }
}

fn key(s: &str) -> Seg {
    Seg::Key(s.into())
}

/// Parses the file-level `tapes:` block (absent: the defaults).
pub fn parse_config(value: Option<&Value>) -> Result<TapeConfig, Vec<YamlError>> {
    let base = vec![key("tapes")];
    let raw: RawTapes = match value {
        None => RawTapes::default(),
        Some(v) => yaml::from_value(v, &base).map_err(|e| vec![e])?,
    };
    let mut errors = Vec::new();
    let mut upstreams = BTreeMap::new();
    let listed = match &raw.upstreams {
        None => None,
        Some(Value::Mapping(m)) => Some(m),
        Some(_) => {
            errors.push(err(
                vec![key("tapes"), key("upstreams")],
                "`upstreams` maps route names to base URLs, such as `{ A: http://127.0.0.1:8080 }`",
            ));
            None
        }
    };
    for (k, v) in listed.into_iter().flatten() {
        let Some(route) = k.as_str() else {
            errors.push(err(
                vec![key("tapes"), key("upstreams")],
                "upstream names are route names such as `A`",
            ));
            continue;
        };
        let p = vec![key("tapes"), key("upstreams"), key(route)];
        let up = match v {
            Value::String(url) => Upstream {
                url: url.clone(),
                key_env: None,
                key_header: None,
            },
            other => match yaml::from_value::<RawUpstream>(other, &p) {
                Ok(r) => Upstream {
                    url: r.url,
                    key_env: r.key_env,
                    key_header: r.key_header,
                },
                Err(e) => {
                    errors.push(e);
                    continue;
                }
            },
        };
        if let Err(m) = crate::base::url::BaseUrl::parse(&up.url) {
            errors.push(err(p, m));
            continue;
        }
        upstreams.insert(route.to_string(), up);
    }
    let scrub = raw.scrub.unwrap_or_default();
    for (i, path) in scrub.json_paths.iter().enumerate() {
        if path.is_empty() || path.split('.').any(str::is_empty) {
            errors.push(err(
                vec![key("tapes"), key("scrub"), key("json_paths"), Seg::Index(i)],
                format!("`{path}` is not a JSON path: write keys joined by dots, such as `error.account_id` (`*` matches any key or index)"),
            ));
        }
    }
    for (i, p) in scrub.prefixes.iter().enumerate() {
        if p.len() < 2 {
            errors.push(err(
                vec![key("tapes"), key("scrub"), key("prefixes"), Seg::Index(i)],
                format!("prefix `{p}` is too short: it would scrub ordinary words (give at least 2 characters, such as `org-`)"),
            ));
        }
    }
    let timeout = raw.timeout.map_or(Duration::from_secs(30), |d| d.0);
    if timeout.is_zero() {
        errors.push(err(
            vec![key("tapes"), key("timeout")],
            "`timeout` is 0: no recorded call could be answered",
        ));
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    Ok(TapeConfig {
        upstreams,
        scrub: Scrubber::new(&scrub.headers, &scrub.json_paths, &scrub.prefixes),
        timeout,
    })
}

const SHAPE_WORDS: [&str; 4] = ["timeout", "reset", "malformed", "broken"];

/// Parses a row's `tape:` (relative to `dir`, the matrix file's directory)
/// and `record:` keys. `row` is the row's path (`rows[3]`).
pub fn parse_row(
    tape: &str,
    record: Option<&Value>,
    row: &[Seg],
    dir: Option<&Path>,
    config: &Arc<TapeConfig>,
    cwd: &Path,
) -> Result<TapeRow, Vec<YamlError>> {
    let mut tape_path = row.to_vec();
    tape_path.push(key("tape"));
    if tape.trim().is_empty() {
        return Err(vec![err(
            tape_path,
            "`tape` is empty: give a path such as `tapes/rate-limited.yaml`, relative to this file",
        )]);
    }
    let mut rec_path = row.to_vec();
    rec_path.push(key("record"));
    let mut expect = None;
    if let Some(v) = record {
        let r: RawRecord = yaml::from_value(v, &rec_path).map_err(|e| vec![e])?;
        let mut words = Vec::new();
        let mut errors = Vec::new();
        for (i, item) in r.expect.iter().flatten().enumerate() {
            let mut p = rec_path.clone();
            p.extend([key("expect"), Seg::Index(i)]);
            let word = match item {
                Value::Number(n) => n.to_string(),
                Value::String(s) => s.clone(),
                _ => String::new(),
            };
            let ok = match word.parse::<u16>() {
                Ok(n) => (100..=599).contains(&n),
                Err(_) => SHAPE_WORDS.contains(&word.as_str()),
            };
            if ok {
                words.push(word);
            } else {
                errors.push(err(
                    p,
                    format!("`{word}` is not an answer shape: expected a status such as 429, or one of timeout, reset, malformed, broken"),
                ));
            }
        }
        if !errors.is_empty() {
            return Err(errors);
        }
        if r.expect.as_ref().is_some_and(Vec::is_empty) {
            return Err(vec![err(
                rec_path,
                "`record.expect` is empty: list the answers you want recorded, such as [429, 200]",
            )]);
        }
        expect = r.expect.map(|_| words);
    }
    let path = match dir {
        Some(d) => d.join(tape),
        None => Path::new(tape).to_path_buf(),
    };
    Ok(TapeRow {
        file: crate::base::paths::display_name(&path, cwd),
        path,
        written: tape.to_string(),
        record_expect: expect,
        config: config.clone(),
        root: PathBuf::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &str) -> Value {
        yaml::parse_value(s).unwrap()
    }

    #[test]
    fn parses_upstreams_and_scrub_rules() {
        let c = parse_config(Some(&v(
            "upstreams: { A: 'http://127.0.0.1:1', B: { url: 'http://127.0.0.1:2', key_env: K } }\nscrub: { prefixes: [cus_] }\ntimeout: 5s",
        )))
        .unwrap();
        assert_eq!(c.upstreams["A"].url, "http://127.0.0.1:1");
        assert_eq!(c.upstreams["B"].key_env.as_deref(), Some("K"));
        assert_eq!(c.timeout, Duration::from_secs(5));
        assert_eq!(c.scrub.text("id cus_42"), "id cus_[scrubbed]");
    }

    #[test]
    fn bad_settings_name_their_place() {
        let e = parse_config(Some(&v("upstreams: { A: 'ftp://x' }"))).unwrap_err();
        assert!(
            e[0].message.contains("not an http:// or https:// URL"),
            "{e:?}"
        );
        assert_eq!(yaml::path_text(&e[0].path), "tapes.upstreams.A");
        let e =
            parse_config(Some(&v("scrub: { json_paths: ['a..b'], prefixes: [x] }"))).unwrap_err();
        assert_eq!(e.len(), 2);
        let cfg = Arc::new(TapeConfig::default());
        let row = [key("rows"), Seg::Index(0)];
        let e = parse_row(
            "t.yaml",
            Some(&v("expect: [429, later]")),
            &row,
            None,
            &cfg,
            Path::new(""),
        )
        .unwrap_err();
        assert_eq!(yaml::path_text(&e[0].path), "rows[0].record.expect[1]");
        assert!(
            e[0].message.contains("`later` is not an answer shape"),
            "{e:?}"
        );
        let ok = parse_row(
            "t.yaml",
            Some(&v("expect: [429, '200', broken]")),
            &row,
            Some(Path::new("m")),
            &cfg,
            Path::new(""),
        )
        .unwrap();
        assert_eq!(ok.record_expect.unwrap(), ["429", "200", "broken"]);
        assert_eq!(ok.path, Path::new("m/t.yaml"));
    }
}
