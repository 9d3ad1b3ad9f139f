//! Systems by name: what `system: <name>` in a matrix builds, from the
//! file's `policy` block. `reference` is built in; teams register their own.

use std::collections::BTreeMap;
use std::sync::Arc;

pub use super::built::{Built, Factory};

/// Systems by name.
#[derive(Clone)]
pub struct Systems {
    map: BTreeMap<String, Factory>,
}

impl Default for Systems {
    fn default() -> Self {
        let mut s = Self {
            map: BTreeMap::new(),
        };
        s.register("reference", Arc::new(super::policy::build_reference));
        s
    }
}

impl Systems {
    /// The built-in systems (`reference`).
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers a system under a name.
    pub fn register(&mut self, name: &str, factory: Factory) -> &mut Self {
        self.map.insert(name.to_string(), factory);
        self
    }

    /// A factory by name.
    pub fn get(&self, name: &str) -> Option<&Factory> {
        self.map.get(name)
    }

    /// Registered names.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.map.keys().map(String::as_str)
    }
}
