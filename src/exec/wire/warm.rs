//! Warm parents (PROTOCOL.md §8): a Python command is started once per
//! (command, working directory, `PYTHON*` variables) and worker, imports the
//! program's dependencies once, and forks a fresh child per row, each child
//! on its own row clock. Importing an SDK costs seconds; a fork costs
//! milliseconds.
//!
//! Parents are pooled for the life of the runner's process: a row takes an
//! idle parent with its key (or starts one), and gives it back when the row
//! is over, so concurrent rows get a parent each. A parent whose channel
//! broke is dropped (killed). When the runner's process ends, the parents
//! see their channel close and exit with their children.

use std::io::{ErrorKind, Read, Write};
use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::Value;

/// Real time a parent has to say hello.
pub const HELLO_BOUND: Duration = Duration::from_secs(30);
/// Real time a parent has to import the program's dependencies (an SDK on
/// a loaded machine).
pub const READY_BOUND: Duration = Duration::from_secs(300);

/// What makes two rows' parents interchangeable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Key {
    /// The command, expanded.
    pub argv: Vec<String>,
    /// Its working directory.
    pub cwd: Option<PathBuf>,
    /// The system's own `PYTHON*` variables, expanded (read by the
    /// interpreter before the shim; everything else a child gets in its
    /// `spawn.env`).
    pub env: Vec<(String, String)>,
}

/// A warm parent, idle or lent to one row.
pub struct Parent {
    /// What it was started as.
    pub key: Key,
    /// The parent's process.
    pub child: Child,
    /// Its control channel (blocking while idle).
    pub chan: TcpStream,
    /// Bytes read from the channel and not yet parsed.
    pub buf: Vec<u8>,
    /// Real time its imports took.
    pub import: Duration,
}

impl Drop for Parent {
    fn drop(&mut self) {
        // Its whole group: the parent and any child it still has.
        super::command::kill_group(Some(self.child.id()));
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

static POOL: Mutex<Vec<Parent>> = Mutex::new(Vec::new());

/// An idle parent started as `key`, if there is one.
pub fn take(key: &Key) -> Option<Parent> {
    let mut pool = crate::base::lock(&POOL);
    let i = pool.iter().position(|p| &p.key == key)?;
    Some(pool.swap_remove(i))
}

/// Gives a parent back to the pool after a row.
pub fn give_back(p: Parent) {
    crate::base::lock(&POOL).push(p);
}

/// Reads one JSON line from a blocking channel before `deadline`.
pub fn read_msg(
    chan: &mut TcpStream,
    buf: &mut Vec<u8>,
    deadline: Instant,
) -> Result<Value, String> {
    loop {
        if let Some(i) = buf.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = buf.drain(..=i).collect();
            return serde_json::from_slice(&line)
                .map_err(|e| format!("the warm parent sent a line that is not JSON: {e}"));
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err("timed out".into());
        }
        let _ = chan.set_read_timeout(Some(left));
        let mut chunk = [0u8; 8192];
        match chan.read(&mut chunk) {
            Ok(0) => return Err("the warm parent closed its channel".into()),
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                return Err("timed out".into())
            }
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(format!("the warm parent's channel failed: {e}")),
        }
    }
}

/// Starts a parent: `clock_vars(address, token)` are the shims' variables
/// for its channel; `welcome` is the clock it reads during its imports.
pub fn start(
    key: Key,
    clock_vars: impl Fn(&str, &str) -> Vec<(String, String)>,
    welcome: &Value,
    token: String,
) -> Result<Parent, String> {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .and_then(|l| l.set_nonblocking(true).map(|()| l))
        .map_err(|e| format!("cannot bind a warm parent's channel: {e}"))?;
    let addr = listener
        .local_addr()
        .map_err(|e| format!("cannot bind a warm parent's channel: {e}"))?
        .to_string();
    let mut cmd = Command::new(&key.argv[0]);
    cmd.args(&key.argv[1..])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        cmd.process_group(0);
    }
    if let Some(c) = &key.cwd {
        cmd.current_dir(c);
    }
    for (k, v) in &key.env {
        cmd.env(k, v);
    }
    for (k, v) in clock_vars(&addr, &token) {
        cmd.env(k, v);
    }
    cmd.env("FAULTMATRIX_WARM", "1");
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("cannot start a warm parent `{}`: {e}", key.argv.join(" ")))?;
    let give_up = |child: &mut Child, message: String| -> Result<Parent, String> {
        super::command::kill_group(Some(child.id()));
        let _ = child.kill();
        let _ = child.wait();
        Err(message)
    };
    let t0 = Instant::now();
    let chan = loop {
        match listener.accept() {
            Ok((s, _)) => break s,
            Err(e) if e.kind() == ErrorKind::WouldBlock => {}
            Err(e) => return give_up(&mut child, format!("a warm parent's channel failed: {e}")),
        }
        if let Ok(Some(st)) = child.try_wait() {
            return give_up(
                &mut child,
                format!("the warm parent exited with {st} before it said hello"),
            );
        }
        if t0.elapsed() > HELLO_BOUND {
            return give_up(
                &mut child,
                format!(
                    "the warm parent did not say hello within {} s",
                    HELLO_BOUND.as_secs()
                ),
            );
        }
        std::thread::sleep(Duration::from_millis(2));
    };
    let mut parent = Parent {
        key,
        child,
        chan,
        buf: Vec::new(),
        import: Duration::ZERO,
    };
    let _ = parent.chan.set_nonblocking(false);
    let _ = parent.chan.set_nodelay(true);
    let hello = read_msg(&mut parent.chan, &mut parent.buf, t0 + HELLO_BOUND)?;
    let role = hello.get("role").and_then(Value::as_str);
    let versions_ok = hello
        .get("versions")
        .and_then(Value::as_array)
        .is_some_and(|v| v.iter().any(|x| x.as_u64() == Some(1)));
    if hello.get("op").and_then(Value::as_str) != Some("hello")
        || role != Some("warm")
        || !versions_ok
        || hello.get("token").and_then(Value::as_str) != Some(token.as_str())
    {
        return Err(format!(
            "the warm parent's hello was not a v1 warm hello: {hello}"
        ));
    }
    let mut line = welcome.to_string();
    line.push('\n');
    parent
        .chan
        .write_all(line.as_bytes())
        .map_err(|e| format!("cannot welcome the warm parent: {e}"))?;
    let t1 = Instant::now();
    loop {
        let msg = read_msg(&mut parent.chan, &mut parent.buf, t1 + READY_BOUND)?;
        if msg.get("op").and_then(Value::as_str) == Some("ready") {
            break;
        }
    }
    parent.import = t1.elapsed();
    Ok(parent)
}
