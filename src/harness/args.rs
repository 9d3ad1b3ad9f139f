//! libtest's command line read without clap when it is one of the common
//! ones, as libtest-mimic's clap parser reads it.
//!
//! Under nextest every test is a process (`BIN --exact NAME --nocapture`),
//! and building clap's parser for [`Arguments`] cost 1.1 M of a one-test
//! process's 8.4 M instructions in the debug profile. Every flag and option
//! of [`Arguments`] is read here; anything else (help, `-Z`, an unknown or
//! repeated argument, a conflict, a value clap would check or refuse) goes
//! to clap, which parses it or says why not exactly as before. The test
//! below holds this reader to clap's on every form it accepts.

use libtest_mimic::{Arguments, ColorSetting, FormatSetting};

/// `argv` (the program first) as [`Arguments::from_iter`] reads it, or
/// `None` when clap must read it.
pub(super) fn parse(argv: &[String]) -> Option<Arguments> {
    let mut a = Arguments::default();
    let mut seen = Vec::with_capacity(argv.len());
    let mut rest = argv.iter().skip(1);
    while let Some(arg) = rest.next() {
        if !arg.starts_with('-') {
            if a.filter.is_some() {
                return None;
            }
            a.filter = Some(arg.clone());
            continue;
        }
        let (flag, inline) = match arg.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f, Some(v)),
            _ => (arg.as_str(), None),
        };
        if flag != "--skip" {
            if seen.contains(&flag) {
                return None; // clap refuses a repeated argument
            }
            seen.push(flag);
        }
        let switch = |on: &mut bool| {
            *on = true;
            inline.is_none().then_some(())
        };
        match flag {
            "--include-ignored" => switch(&mut a.include_ignored)?,
            "--ignored" => switch(&mut a.ignored)?,
            "--test" => switch(&mut a.test)?,
            "--bench" => switch(&mut a.bench)?,
            "--list" => switch(&mut a.list)?,
            "--nocapture" => switch(&mut a.nocapture)?,
            "--show-output" => switch(&mut a.show_output)?,
            "--exact" => switch(&mut a.exact)?,
            "-q" | "--quiet" => switch(&mut a.quiet)?,
            "--test-threads" => {
                let v = value(inline, &mut rest)?;
                if !v.bytes().all(|b| b.is_ascii_digit()) || v.len() > 9 {
                    return None;
                }
                a.test_threads = Some(v.parse().ok()?);
            }
            "--logfile" => a.logfile = Some(value(inline, &mut rest)?.to_string()),
            "--skip" => a.skip.push(value(inline, &mut rest)?.to_string()),
            "--color" => {
                a.color = Some(match value(inline, &mut rest)? {
                    "auto" => ColorSetting::Auto,
                    "always" => ColorSetting::Always,
                    "never" => ColorSetting::Never,
                    _ => return None,
                })
            }
            "--format" => {
                a.format = Some(match value(inline, &mut rest)? {
                    "pretty" => FormatSetting::Pretty,
                    "terse" => FormatSetting::Terse,
                    "json" => FormatSetting::Json,
                    _ => return None,
                })
            }
            _ => return None,
        }
    }
    let conflict = (a.test && a.bench) || (a.quiet && a.format.is_some());
    (!conflict).then_some(a)
}

/// An option's value: after `=`, else the next argument; `None` (clap
/// decides) when it is missing, empty or looks like a flag.
fn value<'a>(
    inline: Option<&'a str>,
    rest: &mut impl Iterator<Item = &'a String>,
) -> Option<&'a str> {
    let v = match inline {
        Some(v) => v,
        None => rest.next()?.as_str(),
    };
    (!v.is_empty() && !v.starts_with('-')).then_some(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(line: &str) -> Vec<String> {
        std::iter::once("bin")
            .chain(line.split(' ').filter(|s| !s.is_empty()))
            .map(String::from)
            .collect()
    }

    /// Every command line this reads, it reads as clap does.
    #[test]
    fn reads_what_it_reads_as_clap_does() {
        let lines = [
            "",
            "--exact m.yaml::row --nocapture",
            "--nocapture --exact m.yaml::row",
            "--list --format terse",
            "--list --format=terse --ignored",
            "--list --format json",
            "--format pretty",
            "-q",
            "--quiet --list",
            "--test-threads 8",
            "--test-threads=1 --exact a",
            "--include-ignored --show-output",
            "--test --skip a --skip=b --skip c",
            "--bench",
            "--color always",
            "--color=never --logfile out.txt",
            "--color auto",
            "filter",
            "filter --exact",
            "--ignored filter --test-threads 2",
        ];
        for line in lines {
            let a = argv(line);
            let fast = parse(&a).unwrap_or_else(|| panic!("`{line}` went to clap"));
            assert_eq!(
                format!("{fast:?}"),
                format!("{:?}", Arguments::from_iter(&a)),
                "`{line}`"
            );
        }
    }

    /// What clap refuses, explains or checks goes to clap.
    #[test]
    fn leaves_the_rest_to_clap() {
        for line in [
            "--help",
            "-h",
            "-Z unstable-options",
            "--unknown",
            "--exact --exact",
            "--list=true",
            "--test --bench",
            "-q --format terse",
            "--test-threads",
            "--test-threads x",
            "--test-threads -1",
            "--test-threads 99999999999999999999",
            "--color sometimes",
            "--color ALWAYS",
            "--format",
            "--skip",
            "--skip=",
            "--skip --exact",
            "a b",
            "-qq",
        ] {
            assert!(parse(&argv(line)).is_none(), "`{line}` was read here");
        }
    }
}
