//! The process environment as data. Only the entry points (the CLI's
//! `main`, the cargo harness) read the real environment, once, into an
//! [`Env`]; everything below reads the copy it is handed, so a test can
//! give a row any environment without touching the process's.

use std::collections::BTreeMap;
use std::path::PathBuf;

/// Environment variables and the working directory, captured once.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Env {
    vars: BTreeMap<String, String>,
    /// The working directory the run started in.
    pub cwd: PathBuf,
}

impl Env {
    /// The process's environment and working directory, now (the entry
    /// points call this; nothing below them does).
    pub fn capture() -> Self {
        Self {
            vars: std::env::vars_os()
                .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
                .collect(),
            cwd: std::env::current_dir().unwrap_or_default(),
        }
    }

    /// An environment of exactly these variables (tests, embedding).
    pub fn from_pairs<I, K, V>(pairs: I) -> Self
    where
        I: IntoIterator<Item = (K, V)>,
        K: Into<String>,
        V: Into<String>,
    {
        Self {
            vars: pairs
                .into_iter()
                .map(|(k, v)| (k.into(), v.into()))
                .collect(),
            cwd: PathBuf::new(),
        }
    }

    /// Every variable, by name (for a process that must be given a complete
    /// environment, such as a warm parent's child).
    pub fn vars(&self) -> impl Iterator<Item = (&str, &str)> {
        self.vars.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }

    /// A variable's value.
    pub fn var(&self, name: &str) -> Option<&str> {
        self.vars.get(name).map(String::as_str)
    }

    /// A variable's value, when set and not empty.
    pub fn non_empty(&self, name: &str) -> Option<&str> {
        self.var(name).filter(|v| !v.is_empty())
    }

    /// Whether a variable is `1`, `true` or `yes` (any case).
    pub fn flag(&self, name: &str) -> bool {
        self.var(name)
            .is_some_and(|v| matches!(v.to_ascii_lowercase().as_str(), "1" | "true" | "yes"))
    }

    /// Sets a variable in this copy.
    pub fn set(&mut self, name: impl Into<String>, value: impl Into<String>) {
        self.vars.insert(name.into(), value.into());
    }

    /// Removes a variable from this copy.
    pub fn remove(&mut self, name: &str) {
        self.vars.remove(name);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_and_values() {
        let mut e = Env::from_pairs([("A", "Yes"), ("B", ""), ("C", "0")]);
        assert!(e.flag("A") && !e.flag("B") && !e.flag("C") && !e.flag("D"));
        assert_eq!(e.non_empty("B"), None);
        assert_eq!(e.var("C"), Some("0"));
        e.set("D", "x");
        e.remove("A");
        assert_eq!((e.var("A"), e.var("D")), (None, Some("x")));
    }
}
