//! Spare processes (PROTOCOL.md §8.1): warm mode for Node, which cannot
//! fork. A spare is the row's command started ahead of its row with
//! `FAULTMATRIX_WARM=1`: the Node shim requires the program's modules, says
//! `ready`, and waits; a row takes it, sends `spawn` with the row's complete
//! environment, and from then on it is that row's process, exactly as one
//! started for the row (its own stdout and stderr, its exit status, its
//! process group). Interpreter start and `require` happen before the row,
//! and the next spare for the command is started when the row's process is
//! done (started while the row ran, its start-up took the machine from the
//! row: on two cores the row's own real time went from a median of 26 ms to
//! 32-38 ms, its slowest from 38 ms to 57 ms).
//!
//! Spares are pooled for the life of the runner's process, keyed as warm
//! parents are ([`super::warm::Key`]). A spare whose start failed in the
//! background is dropped; the next row that finds none starts one itself
//! and reports its failure. When the runner's process ends, idle spares see
//! their channel close and exit.

use std::io::{ErrorKind, Write};
use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::os::unix::net::UnixStream;
use std::process::{Child, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::warm::{read_msg, Key, HELLO_BOUND, READY_BOUND};

/// A process started for a row that has not come yet.
pub struct Spare {
    /// What it was started as.
    pub key: Key,
    /// The process; taken by the row.
    child: Option<Child>,
    /// Its warm channel (blocking).
    chan: TcpStream,
    buf: Vec<u8>,
    /// Its stdout and stderr (the runner's ends, non-blocking).
    stdout: Option<UnixStream>,
    stderr: Option<UnixStream>,
    /// Real time from its start to `ready`.
    pub start: Duration,
}

impl Drop for Spare {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            super::command::kill_group(Some(c.id()));
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// A spare handed to its row.
pub struct Taken {
    /// The row's process.
    pub child: Child,
    /// Its stdout (the runner's end).
    pub stdout: UnixStream,
    /// Its stderr (the runner's end).
    pub stderr: UnixStream,
}

static POOL: Mutex<Vec<Spare>> = Mutex::new(Vec::new());

/// Keys of spares being started in the background, one entry each.
static STARTING: Mutex<Vec<Key>> = Mutex::new(Vec::new());

/// An idle spare started as `key`, if there is one.
fn take(key: &Key) -> Option<Spare> {
    let mut pool = crate::base::lock(&POOL);
    let i = pool.iter().position(|p| &p.key == key)?;
    Some(pool.remove(i))
}

/// An idle spare started as `key`: one in the pool, else one being started
/// in the background once it is ready (blocking, up to the time a start
/// may take), else none: the caller starts one.
pub fn take_or_wait(key: &Key) -> Option<Spare> {
    let t0 = Instant::now();
    loop {
        if let Some(s) = take(key) {
            return Some(s);
        }
        let starting = crate::base::lock(&STARTING).iter().any(|k| k == key);
        if !starting || t0.elapsed() > HELLO_BOUND + READY_BOUND {
            return take(key);
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// Starts a spare for `key` on a thread of its own and pools it when it is
/// ready, for the command's next row.
pub fn start_in_background(
    key: Key,
    clock_vars: impl Fn(&str, &str) -> Vec<(String, String)> + Send + 'static,
    welcome: Value,
    token: String,
) {
    crate::base::lock(&STARTING).push(key.clone());
    let done = key.clone();
    let failed = key.clone();
    let started = std::thread::Builder::new()
        .name("node-spare".into())
        .spawn(move || {
            if let Ok(s) = start(key, clock_vars, &welcome, token) {
                crate::base::lock(&POOL).push(s);
            }
            unmark(&done);
        });
    if started.is_err() {
        unmark(&failed);
    }
}

fn unmark(key: &Key) {
    let mut starting = crate::base::lock(&STARTING);
    if let Some(i) = starting.iter().position(|k| k == key) {
        starting.swap_remove(i);
    }
}

/// Hands `spare` to its row: sends `spawn` with the row's complete
/// environment and waits (bounded) for `spawned`.
pub fn hand_over(
    mut spare: Spare,
    id: &str,
    env: &std::collections::BTreeMap<String, String>,
) -> Result<Taken, String> {
    let mut line = serde_json::json!({"op": "spawn", "id": id, "env": env}).to_string();
    line.push('\n');
    spare
        .chan
        .write_all(line.as_bytes())
        .map_err(|e| format!("the spare process's channel failed: {e}"))?;
    let deadline = Instant::now() + HELLO_BOUND;
    loop {
        let msg = read_msg(&mut spare.chan, &mut spare.buf, deadline)
            .map_err(|e| format!("the spare process did not take its row: {e}"))?;
        if msg.get("op").and_then(Value::as_str) == Some("spawned")
            && msg.get("id").and_then(Value::as_str) == Some(id)
        {
            break;
        }
    }
    let (Some(child), Some(stdout), Some(stderr)) =
        (spare.child.take(), spare.stdout.take(), spare.stderr.take())
    else {
        return Err("the spare process was already handed over".into());
    };
    Ok(Taken {
        child,
        stdout,
        stderr,
    })
}

/// Starts a spare: `clock_vars(address, token)` are the shims' variables
/// for its channel; `welcome` is the clock it reads while it requires.
pub fn start(
    key: Key,
    clock_vars: impl Fn(&str, &str) -> Vec<(String, String)>,
    welcome: &Value,
    token: String,
) -> Result<Spare, String> {
    let t0 = Instant::now();
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .and_then(|l| l.set_nonblocking(true).map(|()| l))
        .map_err(|e| format!("cannot bind a spare process's channel: {e}"))?;
    let addr = listener
        .local_addr()
        .map_err(|e| format!("cannot bind a spare process's channel: {e}"))?
        .to_string();
    let pair = || -> std::io::Result<(UnixStream, Stdio)> {
        let (ours, theirs) = UnixStream::pair()?;
        ours.set_nonblocking(true)?;
        Ok((ours, Stdio::from(std::os::fd::OwnedFd::from(theirs))))
    };
    let ((out, out_theirs), (err, err_theirs)) = pair()
        .and_then(|o| pair().map(|e| (o, e)))
        .map_err(|e| format!("cannot make a spare process's output pipes: {e}"))?;
    // The system's own list, then what earlier rows of the key required.
    let mut imports: Vec<String> = key
        .env
        .iter()
        .filter(|(k, v)| k == "FAULTMATRIX_WARM_IMPORTS" && !v.is_empty())
        .map(|(_, v)| v.clone())
        .collect();
    imports.extend(super::warm::learned(&key));
    let mut cmd = super::warm::warm_command(
        &key,
        clock_vars(&addr, &token),
        out_theirs,
        err_theirs,
        &imports,
    );
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("cannot start a spare process `{}`: {e}", key.argv.join(" ")))?;
    drop(cmd);
    let mut outputs = [out, err];
    let give_up = |child: &mut Child, outputs: &mut [UnixStream; 2], message: String| {
        super::command::kill_group(Some(child.id()));
        let _ = child.kill();
        let _ = child.wait();
        let mut said = Vec::new();
        for s in outputs.iter_mut() {
            let _ = std::io::Read::read_to_end(s, &mut said);
        }
        if said.is_empty() {
            format!("{message}; it wrote nothing on stdout or stderr")
        } else {
            format!(
                "{message}; its output ends with:\n{}",
                super::warm::tail_text(&said, 20)
            )
        }
    };
    let chan = loop {
        match listener.accept() {
            Ok((s, _)) => break s,
            Err(e) if e.kind() == ErrorKind::WouldBlock => {}
            Err(e) => {
                return Err(give_up(
                    &mut child,
                    &mut outputs,
                    format!("a spare process's channel failed: {e}"),
                ))
            }
        }
        if let Ok(Some(st)) = child.try_wait() {
            return Err(give_up(
                &mut child,
                &mut outputs,
                format!("the spare process exited with {st} before it said hello"),
            ));
        }
        if t0.elapsed() > HELLO_BOUND {
            return Err(give_up(
                &mut child,
                &mut outputs,
                format!(
                    "the spare process did not say hello within {} s",
                    HELLO_BOUND.as_secs()
                ),
            ));
        }
        std::thread::sleep(Duration::from_millis(2));
    };
    let _ = chan.set_nonblocking(false);
    let _ = chan.set_nodelay(true);
    let [out, err] = outputs;
    let mut spare = Spare {
        key,
        child: Some(child),
        chan,
        buf: Vec::new(),
        stdout: Some(out),
        stderr: Some(err),
        start: Duration::ZERO,
    };
    let give_up = |mut spare: Spare, message: String| -> Result<Spare, String> {
        let mut child = spare.child.take().expect("not handed over yet");
        let mut outputs = [
            spare.stdout.take().expect("not handed over yet"),
            spare.stderr.take().expect("not handed over yet"),
        ];
        Err(give_up(&mut child, &mut outputs, message))
    };
    let hello = match read_msg(&mut spare.chan, &mut spare.buf, t0 + HELLO_BOUND) {
        Ok(h) => h,
        Err(e) => return give_up(spare, format!("the spare process did not say hello: {e}")),
    };
    let versions_ok = hello
        .get("versions")
        .and_then(Value::as_array)
        .is_some_and(|v| v.iter().any(|x| x.as_u64() == Some(1)));
    if hello.get("op").and_then(Value::as_str) != Some("hello")
        || hello.get("role").and_then(Value::as_str) != Some("warm")
        || !versions_ok
        || hello.get("token").and_then(Value::as_str) != Some(token.as_str())
    {
        return give_up(
            spare,
            format!("the spare process's hello was not a v1 warm hello: {hello}"),
        );
    }
    let mut line = welcome.to_string();
    line.push('\n');
    if let Err(e) = spare.chan.write_all(line.as_bytes()) {
        return give_up(spare, format!("cannot welcome the spare process: {e}"));
    }
    let t1 = Instant::now();
    loop {
        match read_msg(&mut spare.chan, &mut spare.buf, t1 + READY_BOUND) {
            Ok(msg) if msg.get("op").and_then(Value::as_str) == Some("ready") => break,
            Ok(_) => {}
            Err(e) => {
                return give_up(
                    spare,
                    format!("the spare process did not finish its requires: {e}"),
                )
            }
        }
    }
    spare.start = t0.elapsed();
    Ok(spare)
}
