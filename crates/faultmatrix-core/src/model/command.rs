//! A command system: the program run per row against the fixture server,
//! with its environment, working directory, clock and time limit.

use std::path::PathBuf;
use std::time::Duration;

/// Default time a command may run.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// Which clock a command system's rows run on (`system.clock`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Clock {
    /// The row's virtual clock, shared with the client process through a
    /// clock shim (`shims/`): waits are exact, `system.timeout` and the
    /// row's `budget` are virtual.
    Virtual,
    /// The real clock: waits are measured and judged with the row's
    /// tolerance.
    Real,
}

impl Clock {
    /// The default for a program: virtual when it is an interpreter a shim
    /// exists for (Python, Node), real otherwise. `program` is `argv[0]` as
    /// written; a `${VAR:-default}` counts as its default.
    pub fn default_for(program: &str) -> Clock {
        if interpreter(program, &["python", "node", "nodejs"]) {
            Clock::Virtual
        } else {
            Clock::Real
        }
    }

    /// `virtual` or `real`, as written in a matrix.
    pub fn as_str(self) -> &'static str {
        match self {
            Clock::Virtual => "virtual",
            Clock::Real => "real",
        }
    }
}

/// Whether `program` (`argv[0]` as written) is a Python interpreter: such a
/// command on the virtual clock runs warm by default (one parent imports
/// the program once, a forked child per row).
pub fn is_python(program: &str) -> bool {
    interpreter(program, &["python"])
}

/// Whether `program` is a Node interpreter: such a command on the virtual
/// clock runs warm by default (a spare process per worker, started and
/// `require`d ahead of its row).
pub fn is_node(program: &str) -> bool {
    interpreter(program, &["node", "nodejs"])
}

fn interpreter(program: &str, stems: &[&str]) -> bool {
    {
        let mut text = program.to_string();
        while let Some(i) = text.find("${") {
            let Some(end) = text[i..].find('}') else {
                break;
            };
            let inner = &text[i + 2..i + end];
            let value = inner.split_once(":-").map_or("", |(_, d)| d).to_string();
            text.replace_range(i..i + end + 1, &value);
        }
        let name = text.rsplit('/').next().unwrap_or("").to_ascii_lowercase();
        let interpreter = |stem: &str| {
            name.strip_prefix(stem)
                .is_some_and(|rest| rest.chars().all(|c| c.is_ascii_digit() || c == '.'))
        };
        stems.iter().any(|s| interpreter(s))
    }
}

/// A command system, validated.
#[derive(Debug, Clone, PartialEq)]
pub struct CommandSpec {
    /// Program and arguments (unexpanded).
    pub argv: Vec<String>,
    /// Extra environment.
    pub env: Vec<(String, String)>,
    /// Working directory (absolute or relative to the runner's directory).
    pub cwd: Option<PathBuf>,
    /// Time after which the command is killed (virtual time on the
    /// virtual clock).
    pub timeout: Duration,
    /// Route names the command calls, when declared.
    pub routes: Option<Vec<String>>,
    /// The clock the rows run on.
    pub clock: Clock,
    /// Rows run warm (`system.warm`): Python as children forked from a
    /// parent that imported the program once, Node in spare processes
    /// started and `require`d ahead of their rows (on the virtual clock).
    pub warm: bool,
}

#[cfg(test)]
mod tests {
    use super::Clock;

    #[test]
    fn interpreters_default_to_the_virtual_clock() {
        for p in [
            "python3",
            "python",
            "python3.11",
            "/usr/bin/node",
            ".venv-shims/bin/python",
            "${FAULTMATRIX_PYTHON:-python3}",
            "${FAULTMATRIX_NODE:-node}",
        ] {
            assert_eq!(Clock::default_for(p), Clock::Virtual, "{p}");
        }
        for p in [
            "sh",
            "cargo",
            "./client",
            "pythonista",
            "${FAULTMATRIX_PYTHON}",
            "${X:-sh}",
        ] {
            assert_eq!(Clock::default_for(p), Clock::Real, "{p}");
        }
    }

    #[test]
    fn node_and_python_are_told_apart() {
        for p in [
            "node",
            "/usr/bin/node",
            "nodejs",
            "node20",
            "${FAULTMATRIX_NODE:-node}",
        ] {
            assert!(super::is_node(p), "{p}");
            assert!(!super::is_python(p), "{p}");
        }
        for p in ["python3", "nodemon", "sh", "${FAULTMATRIX_NODE}"] {
            assert!(!super::is_node(p), "{p}");
        }
    }
}
