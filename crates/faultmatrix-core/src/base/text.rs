//! `str::lines` and `str::trim` with a fast path for the common text of a
//! matrix (ASCII lines a few dozen bytes long): the same answers, fewer
//! instructions (the searchers and Unicode checks of the general ones cost
//! a three-line trace about 1,500 instructions).

/// The lines of `s` as [`str::lines`] gives them: split at `\n`, a `\r`
/// just before a `\n` dropped (a last line's own `\r` kept), no empty
/// line after a final `\n`.
pub fn lines(s: &str) -> impl Iterator<Item = &str> {
    let mut rest = Some(s);
    std::iter::from_fn(move || {
        let r = rest?;
        if r.is_empty() {
            rest = None;
            return None;
        }
        match r.as_bytes().iter().position(|&b| b == b'\n') {
            Some(i) => {
                rest = Some(&r[i + 1..]);
                let line = &r[..i];
                Some(line.strip_suffix('\r').unwrap_or(line))
            }
            None => {
                rest = None;
                Some(r)
            }
        }
    })
}

/// `s` as [`str::trim`] gives it. Text that starts and ends with a visible
/// ASCII character has nothing to trim, and is returned without a search.
pub fn trim(s: &str) -> &str {
    match (s.as_bytes().first(), s.as_bytes().last()) {
        (Some(a), Some(b)) if a.is_ascii_graphic() && b.is_ascii_graphic() => s,
        _ => s.trim(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Both agree with std on texts built from the characters that matter
    /// at line and field edges: newlines, carriage returns, spaces, tabs,
    /// a Unicode space and a visible character.
    #[test]
    fn lines_and_trim_agree_with_std() {
        let atoms = [
            "\n", "\r", "\r\n", " ", "\t", "\u{a0}", "a", "é", "\u{2003}",
        ];
        let mut texts = vec![String::new()];
        for _ in 0..4 {
            let mut next = Vec::new();
            for t in &texts {
                for a in atoms {
                    next.push(format!("{t}{a}"));
                }
            }
            texts.extend(next);
        }
        for t in &texts {
            assert_eq!(
                lines(t).collect::<Vec<_>>(),
                t.lines().collect::<Vec<_>>(),
                "{t:?}"
            );
            assert_eq!(trim(t), t.trim(), "{t:?}");
        }
    }
}
