//! The file-glob matcher (`faultmatrix::engine::glob`) against globset,
//! which faultmatrix used before: on thousands of generated patterns, both
//! accept or both refuse the pattern, and every path gets the same answer.

use faultmatrix::engine::glob::GlobSet;

/// Pieces patterns are made of: every kind of token, the `**` forms next
/// to separators and group edges, and the characters that break them.
const PIECES: &[&str] = &[
    "a",
    "b",
    "x",
    "/",
    "*",
    "**",
    "?",
    "[ab]",
    "[!a]",
    "[^/]",
    "[a-c]",
    "[]]",
    "[a-]",
    "[-a]",
    "{a,b}",
    "{a/,**}",
    "{**/a,b}",
    "{a,}",
    "{,}",
    "{a,{b,x}}",
    "{",
    "}",
    ",",
    "\\*",
    "\\",
    "-",
    "]",
    "[",
    ".yaml",
    "{yaml,yml}",
    "[z-a]",
];

/// Paths are made of these.
const PATH_CHARS: &[char] = &['a', 'b', 'x', '/', '*', '-', ']', ',', '.'];

/// A small deterministic generator (no rand crate for one test).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self, below: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((self.0 >> 33) % below as u64) as usize
    }
}

fn theirs(pattern: &str) -> Option<globset::GlobSet> {
    let glob = globset::Glob::new(pattern).ok()?;
    let mut b = globset::GlobSetBuilder::new();
    b.add(glob);
    b.build().ok()
}

#[test]
fn the_matcher_answers_as_globset_does() {
    let mut rng = Lcg(15);
    let mut paths: Vec<String> = [
        "",
        "a",
        "x.yaml",
        "a/x.yml",
        "a/b/x.yaml",
        "/a",
        "a/",
        "a//b",
        "ab",
        "a/b",
        "b/a/b",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    for _ in 0..300 {
        let len = rng.next(9);
        paths.push(
            (0..len)
                .map(|_| PATH_CHARS[rng.next(PATH_CHARS.len())])
                .collect(),
        );
    }
    let (mut compared, mut refused) = (0, 0);
    for _ in 0..4000 {
        let n = 1 + rng.next(6);
        let pattern: String = (0..n).map(|_| PIECES[rng.next(PIECES.len())]).collect();
        let ours = GlobSet::new(std::slice::from_ref(&pattern));
        let Some(reference) = theirs(&pattern) else {
            assert!(
                ours.is_err(),
                "globset refuses `{pattern}`, ours accepts it"
            );
            refused += 1;
            continue;
        };
        let ours = ours.unwrap_or_else(|e| panic!("ours refuses `{pattern}`: {e:?}"));
        for p in &paths {
            assert_eq!(
                ours.is_match(p),
                reference.is_match(p),
                "pattern `{pattern}`, path `{p}`"
            );
            compared += 1;
        }
    }
    // The generator reaches both outcomes, so the comparison means something.
    assert!(compared > 500_000 && refused > 100, "{compared} {refused}");
}

#[test]
fn a_bad_pattern_is_an_error_naming_it() {
    let e = GlobSet::new(&["**/*.{yaml".to_string()]).unwrap_err();
    assert_eq!(e.0, "**/*.{yaml");
    assert!(e.1.reason.contains("unclosed alternate group"), "{e:?}");
}
