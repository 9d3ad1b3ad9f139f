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
//!
//! What a parent writes on its stdout and stderr (a failed import, a child's
//! traceback before it attached its own streams) is kept ([`Said`]) and
//! shown in the failure of the row it was serving.

use std::io::{ErrorKind, Read, Write};
use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
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

/// Bytes of a parent's output kept for messages.
const KEEP_SAID: usize = 64 * 1024;

/// What a warm parent wrote on its stdout and stderr (one pipe for both),
/// read by a thread of its own so that a parent never blocks on a full
/// pipe; the last [`KEEP_SAID`] bytes are kept.
#[derive(Clone, Default)]
pub struct Said(Arc<Mutex<SaidBuf>>);

#[derive(Default)]
struct SaidBuf {
    bytes: Vec<u8>,
    /// Bytes written in all (kept or not).
    total: u64,
    /// The pipe reached end of file: the parent and its children are gone.
    ended: bool,
}

impl Said {
    /// Reads `from` until end of file on a thread.
    fn follow(from: std::os::unix::net::UnixStream) -> Self {
        let said = Said::default();
        let sink = said.clone();
        let _ = std::thread::Builder::new()
            .name("warm-parent-output".into())
            .spawn(move || {
                let mut from = from;
                let mut chunk = [0u8; 8192];
                loop {
                    match from.read(&mut chunk) {
                        Ok(0) => break,
                        Ok(n) => sink.push(&chunk[..n]),
                        Err(e) if e.kind() == ErrorKind::Interrupted => {}
                        Err(_) => break,
                    }
                }
                crate::base::lock(&sink.0).ended = true;
            });
        said
    }

    fn push(&self, bytes: &[u8]) {
        let mut b = crate::base::lock(&self.0);
        b.bytes.extend_from_slice(bytes);
        b.total += bytes.len() as u64;
        if b.bytes.len() > 2 * KEEP_SAID {
            let cut = b.bytes.len() - KEEP_SAID;
            b.bytes.drain(..cut);
        }
    }

    /// A position in the output: [`Said::since`] gives what came after.
    pub fn mark(&self) -> u64 {
        crate::base::lock(&self.0).total
    }

    /// What the parent wrote after `mark` (as much of it as is kept).
    pub fn since(&self, mark: u64) -> Vec<u8> {
        let b = crate::base::lock(&self.0);
        let new = (b.total.saturating_sub(mark) as usize).min(b.bytes.len());
        b.bytes[b.bytes.len() - new..].to_vec()
    }

    /// Waits (up to `bound` of real time) until the output has been quiet
    /// for 100 ms or has ended: a failed child's last words are in the pipe
    /// before its exit is reported, and this lets the reading thread catch
    /// up with them (on a loaded machine it may wait a while for a CPU).
    /// Used on failure paths only.
    pub fn settle(&self, bound: Duration) {
        let t0 = Instant::now();
        let mut last = self.mark();
        let mut quiet = Instant::now();
        while t0.elapsed() < bound {
            if crate::base::lock(&self.0).ended {
                return;
            }
            std::thread::sleep(Duration::from_millis(5));
            let now = self.mark();
            if now != last {
                last = now;
                quiet = Instant::now();
            } else if quiet.elapsed() >= Duration::from_millis(100) {
                return;
            }
        }
    }

    /// Waits (up to `bound` of real time) for the end of the output: the
    /// parent and every child holding the pipe are gone, so everything
    /// they wrote has been read.
    fn wait_end(&self, bound: Duration) {
        let t0 = Instant::now();
        while t0.elapsed() < bound && !crate::base::lock(&self.0).ended {
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

/// `bytes` as the indented last lines of a message, or "" when empty.
pub fn tail_text(bytes: &[u8], lines: usize) -> String {
    let text = String::from_utf8_lossy(bytes);
    let all: Vec<&str> = text.lines().collect();
    let start = all.len().saturating_sub(lines);
    all[start..]
        .iter()
        .map(|l| format!("  | {l}"))
        .collect::<Vec<_>>()
        .join("\n")
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
    /// Modules it was asked to preload (`preload`, from earlier rows'
    /// `exit.imported`).
    pub preloaded: std::collections::BTreeSet<String>,
    /// What it wrote on its stdout and stderr.
    pub said: Said,
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

/// Modules rows of each key imported (their `exit.imported`), so that a
/// parent started later (another worker's) imports them before its first
/// row instead of learning them from it.
static LEARNED: Mutex<Vec<(Key, std::collections::BTreeSet<String>)>> = Mutex::new(Vec::new());

/// Records what a row of `key` imported.
pub fn learn(key: &Key, modules: &[String]) {
    if modules.is_empty() {
        return;
    }
    let mut learned = crate::base::lock(&LEARNED);
    match learned.iter_mut().find(|(k, _)| k == key) {
        Some((_, set)) => set.extend(modules.iter().cloned()),
        None => learned.push((key.clone(), modules.iter().cloned().collect())),
    }
}

/// What rows of `key` imported so far.
pub fn learned(key: &Key) -> std::collections::BTreeSet<String> {
    crate::base::lock(&LEARNED)
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, set)| set.clone())
        .unwrap_or_default()
}

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

/// The command that starts a warm process for `key` (a Python warm
/// parent, a Node spare): in a process group of its own, in the key's
/// directory with its environment, the clock's variables `vars`,
/// `FAULTMATRIX_WARM=1`, and `FAULTMATRIX_WARM_IMPORTS` when `imports`
/// has any.
pub(super) fn warm_command(
    key: &Key,
    vars: Vec<(String, String)>,
    stdout: Stdio,
    stderr: Stdio,
    imports: &[String],
) -> Command {
    let mut cmd = Command::new(&key.argv[0]);
    cmd.args(&key.argv[1..])
        .stdin(Stdio::null())
        .stdout(stdout)
        .stderr(stderr);
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
    for (k, v) in vars {
        cmd.env(k, v);
    }
    cmd.env("FAULTMATRIX_WARM", "1");
    if !imports.is_empty() {
        cmd.env("FAULTMATRIX_WARM_IMPORTS", imports.join(","));
    }
    cmd
}

/// Starts a parent: `clock_vars(address, token)` are the shims' variables
/// for its channel; `welcome` is the clock it reads during its imports;
/// `imports` the system's own `FAULTMATRIX_WARM_IMPORTS`, to which what
/// rows of the key imported so far is added.
pub fn start(
    key: Key,
    clock_vars: impl Fn(&str, &str) -> Vec<(String, String)>,
    welcome: &Value,
    token: String,
    imports: Option<String>,
) -> Result<Parent, String> {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .and_then(|l| l.set_nonblocking(true).map(|()| l))
        .map_err(|e| format!("cannot bind a warm parent's channel: {e}"))?;
    let addr = listener
        .local_addr()
        .map_err(|e| format!("cannot bind a warm parent's channel: {e}"))?
        .to_string();
    let (ours, theirs) = std::os::unix::net::UnixStream::pair()
        .map_err(|e| format!("cannot make a warm parent's output pipe: {e}"))?;
    let theirs2 = theirs
        .try_clone()
        .map_err(|e| format!("cannot make a warm parent's output pipe: {e}"))?;
    // What earlier rows of this key imported, with the system's own list.
    let preloaded = learned(&key);
    let mut imports: Vec<String> = imports.into_iter().collect();
    imports.extend(preloaded.iter().cloned());
    let mut cmd = warm_command(
        &key,
        clock_vars(&addr, &token),
        Stdio::from(std::os::fd::OwnedFd::from(theirs)),
        Stdio::from(std::os::fd::OwnedFd::from(theirs2)),
        &imports,
    );
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("cannot start a warm parent `{}`: {e}", key.argv.join(" ")))?;
    // The child's ends of the pipe are in the child only now.
    drop(cmd);
    let said = Said::follow(ours);
    let give_up = |child: &mut Child, message: String| -> Result<Parent, String> {
        super::command::kill_group(Some(child.id()));
        let _ = child.kill();
        let _ = child.wait();
        said.wait_end(Duration::from_secs(5));
        let out = said.since(0);
        if out.is_empty() {
            Err(format!("{message}; it wrote nothing on stdout or stderr"))
        } else {
            Err(format!(
                "{message}; its output ends with:\n{}",
                tail_text(&out, 20)
            ))
        }
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
    let mut chan = chan;
    let mut buf = Vec::new();
    let _ = chan.set_nonblocking(false);
    let _ = chan.set_nodelay(true);
    let hello = match read_msg(&mut chan, &mut buf, t0 + HELLO_BOUND) {
        Ok(h) => h,
        Err(e) => {
            return give_up(
                &mut child,
                format!("the warm parent did not say hello: {e}"),
            )
        }
    };
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
        return give_up(
            &mut child,
            format!("the warm parent's hello was not a v1 warm hello: {hello}"),
        );
    }
    let mut line = welcome.to_string();
    line.push('\n');
    if let Err(e) = chan.write_all(line.as_bytes()) {
        return give_up(&mut child, format!("cannot welcome the warm parent: {e}"));
    }
    let t1 = Instant::now();
    loop {
        match read_msg(&mut chan, &mut buf, t1 + READY_BOUND) {
            Ok(msg) if msg.get("op").and_then(Value::as_str) == Some("ready") => break,
            Ok(_) => {}
            Err(e) => {
                return give_up(
                    &mut child,
                    format!("the warm parent did not finish its imports: {e}"),
                )
            }
        }
    }
    Ok(Parent {
        key,
        child,
        chan,
        buf,
        import: t1.elapsed(),
        preloaded,
        said,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn said_gives_what_came_after_a_mark_and_keeps_the_last_bytes() {
        let said = Said::default();
        said.push(b"before the row\n");
        let mark = said.mark();
        assert!(said.since(mark).is_empty());
        said.push(b"the child's traceback\n");
        assert_eq!(said.since(mark), b"the child's traceback\n");
        assert_eq!(said.since(0), b"before the row\nthe child's traceback\n");
        // Past twice the kept size, only the last KEEP_SAID bytes stay.
        said.push(&vec![b'x'; 2 * KEEP_SAID]);
        assert_eq!(said.since(0).len(), KEEP_SAID);
        assert_eq!(said.since(mark).len(), KEEP_SAID);
    }

    #[test]
    fn said_follows_a_pipe_to_its_end() {
        let (mut ours, theirs) = std::os::unix::net::UnixStream::pair().unwrap();
        let said = Said::follow(theirs);
        ours.write_all(b"last words\n").unwrap();
        drop(ours);
        said.wait_end(Duration::from_secs(10));
        assert!(crate::base::lock(&said.0).ended);
        assert_eq!(said.since(0), b"last words\n");
        assert_eq!(tail_text(&said.since(0), 5), "  | last words");
    }
}
