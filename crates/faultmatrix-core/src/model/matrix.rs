//! A matrix file, validated: its system under test, registry and rows.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use crate::base::yaml::{Pos, Positions, Seg};
use crate::contracts::system::System;
use crate::model::command::CommandSpec;
use crate::model::registry::Registry;
use crate::model::row::Row;

/// What a matrix runs its rows against.
#[derive(Clone)]
pub enum SystemUnderTest {
    /// A system in this process (the reference system, or one a team
    /// registered), on the row's paused clock.
    InProcess {
        /// The name the matrix uses (`reference`).
        name: String,
        /// The system, built from the file's `policy`.
        system: Arc<dyn System>,
    },
    /// A program run per row against the fixture server over HTTP.
    Command(Arc<CommandSpec>),
    /// An in-process system whose calls go over real HTTP, on the real
    /// clock, to the row's fixture server (`faultmatrix run --over-http`):
    /// no process per row, so a row's cost does not depend on its file.
    OverHttp {
        /// The name the matrix uses (`reference`).
        name: String,
        /// The system, built from the file's `policy`.
        system: Arc<dyn System>,
        /// The routes the system declares, in fallback order: each gets a
        /// listener even when a row does not script it, so a call to it is
        /// observed instead of refused.
        routes: Option<Vec<String>>,
    },
}

/// One matrix file, validated.
pub struct Matrix {
    /// The file as the user named it (relative path, `/` separators).
    pub file: String,
    /// The file's text (for diagnostics and row positions).
    pub source: Arc<str>,
    /// The title line.
    pub title: String,
    /// The system under test.
    pub system: SystemUnderTest,
    /// The reason-code registry in force for this file.
    pub registry: Arc<Registry>,
    /// The rows, in file order.
    pub rows: Vec<Row>,
    /// Error-body paths used to classify answers (empty: the defaults).
    pub body_paths: Vec<String>,
    /// The `policy.deadline` in force, when the system reports one (the
    /// HTML timeline draws it).
    pub deadline: Option<Duration>,
    positions: OnceLock<Positions>,
    /// Where each row's `name` is written, read from the text's lines when
    /// it is in the plain shape (`None`: ask `positions`).
    row_names: OnceLock<Option<Vec<Pos>>>,
}

impl Matrix {
    /// Assembles a validated matrix.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        file: String,
        source: Arc<str>,
        title: String,
        system: SystemUnderTest,
        registry: Arc<Registry>,
        rows: Vec<Row>,
        body_paths: Vec<String>,
    ) -> Self {
        Self {
            file,
            source,
            title,
            system,
            registry,
            rows,
            body_paths,
            deadline: None,
            positions: OnceLock::new(),
            row_names: OnceLock::new(),
        }
    }

    /// The name of the system under test (`reference`, `command`, or a
    /// registered name).
    pub fn system_name(&self) -> &str {
        match &self.system {
            SystemUnderTest::InProcess { name, .. } | SystemUnderTest::OverHttp { name, .. } => {
                name
            }
            SystemUnderTest::Command(_) => "command",
        }
    }

    /// Whether rows run on the real clock (waits are measured and judged
    /// with the row's tolerance): a real-clock command, or `--over-http`.
    pub fn real_clock(&self) -> bool {
        match &self.system {
            SystemUnderTest::Command(c) => c.clock == crate::model::command::Clock::Real,
            SystemUnderTest::OverHttp { .. } => true,
            SystemUnderTest::InProcess { .. } => false,
        }
    }

    /// The command, when the system is one (its rows run over HTTP).
    pub fn command(&self) -> Option<&Arc<CommandSpec>> {
        match &self.system {
            SystemUnderTest::Command(c) => Some(c),
            SystemUnderTest::InProcess { .. } | SystemUnderTest::OverHttp { .. } => None,
        }
    }

    /// Error-body paths for classification.
    pub fn body_paths(&self) -> &[String] {
        &self.body_paths
    }

    /// The position index of the file, built on first use.
    pub fn positions(&self) -> &Positions {
        self.positions
            .get_or_init(|| Positions::index(&self.source))
    }

    /// Whether the position index has been built (a passing row never
    /// needs it: building it is a second parse of the file).
    pub fn positions_indexed(&self) -> bool {
        self.positions.get().is_some()
    }

    /// Position of a node, indexed on first use.
    pub fn pos(&self, path: &[Seg]) -> Pos {
        self.positions().value(path)
    }

    /// Where a row's `name` key is written. Every row result carries its
    /// line, so this must not index the file (a second parse, costlier
    /// than running the row): in the plain shape the rows' lines are read
    /// once from the text ([`crate::base::yaml::one_row::row_names`]) and
    /// used when every name there is the loaded row's; else the index.
    pub fn row_pos(&self, row: &Row) -> Pos {
        if let [Seg::Key(rows), Seg::Index(i)] = row.path.as_slice() {
            if rows == "rows" {
                if let Some(p) = self.plain_row_names().and_then(|t| t.get(*i)) {
                    return *p;
                }
            }
        }
        let mut name = row.path.clone();
        name.push(Seg::Key("name".into()));
        self.positions().key(&name)
    }

    /// Where each `rows:` item's `name` is written, as the parse that
    /// loaded the rows noted it (one position per item, in item order):
    /// [`Matrix::row_pos`] then reads no text.
    pub(crate) fn note_row_name_positions(&mut self, at: Vec<Pos>) {
        self.row_names = OnceLock::from(Some(at));
    }

    /// The rows' `name` positions, when they are known already (noted at
    /// load, or read once): what the model cache stores with the rows.
    pub(crate) fn noted_row_names(&self) -> Option<&[Pos]> {
        self.row_names.get().and_then(Option::as_deref)
    }

    /// The rows' `name` positions read from the text's lines, when the
    /// text is in the plain shape and each item there names the row loaded
    /// from it (so a position is never another row's).
    fn plain_row_names(&self) -> Option<&[Pos]> {
        self.row_names
            .get_or_init(|| {
                let read = crate::base::yaml::one_row::row_names(&self.source)?;
                if read.len() != self.rows.len() {
                    return None;
                }
                for row in &self.rows {
                    let [Seg::Key(rows), Seg::Index(i)] = row.path.as_slice() else {
                        return None;
                    };
                    if rows != "rows" || read.get(*i).map(|(_, n)| *n) != Some(row.name.as_str()) {
                        return None;
                    }
                }
                Some(read.into_iter().map(|(p, _)| p).collect())
            })
            .as_deref()
    }

    /// `file:line:col` of a row.
    pub fn row_location(&self, row: &Row) -> String {
        let p = self.row_pos(row);
        format!("{}:{}:{}", self.file, p.line, p.col)
    }

    /// The stable test id of a row: `path/of/file.yaml::row name`, with
    /// control and bidi characters escaped ([`crate::base::label::escape`]).
    pub fn row_id(&self, row: &Row) -> String {
        // Escaped: a newline, an ANSI escape or a bidi override in a name
        // would split or disguise the test name in every report.
        use crate::base::label::escape;
        // Pushed, not `format!`ed: asked twice a row (1,500 instructions).
        let (file, name) = (escape(&self.file), escape(&row.name));
        let mut id = String::with_capacity(file.len() + 2 + name.len());
        id.push_str(&file);
        id.push_str("::");
        id.push_str(&name);
        id
    }
}
