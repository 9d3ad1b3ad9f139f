'use strict';
/*
 * faultmatrix's virtual-clock shim for Node (protocols v1 and v2, shims/PROTOCOL.md).
 *
 * Installed by the environment only:
 *   NODE_OPTIONS="--require <repo>/shims/node/preload.cjs"
 * and active only when FAULTMATRIX_CLOCK=127.0.0.1:PORT is set (the runner's
 * control channel; FAULTMATRIX_CLOCK_TOKEN says which row this is).
 *
 * What it does:
 * - connects to the runner before the program runs: `Module.runMain` (the
 *   documented hook for `--require` preloads) is deferred until the runner's
 *   welcome has given the row's wall clock and random draws;
 * - replaces every timer the program can reach (`setTimeout`, `setInterval`,
 *   `clearTimeout`, `clearInterval`, the `timers` and `timers/promises`
 *   modules, `AbortSignal.timeout`, `scheduler.wait`) with timers on the
 *   virtual clock; undici's own timers go through the global `setTimeout`, so
 *   fetch's timeouts and the openai SDK's request-abort timer are virtual too;
 * - `Date.now`, `new Date()`, `Date()`, `performance.now`, `process.hrtime`
 *   read the virtual clock; `Math.random` returns the row's draws;
 * - counts the bytes of every socket to the row's fixture server (bytesWritten,
 *   bytesRead) and, when the event loop has nothing left to do but wait
 *   (no immediates, no work in libuv's thread pool, no connect or write in
 *   flight), tells the runner it blocks until the next virtual timer; the
 *   runner then moves the clock to that timer or to the next scripted bytes;
 * - (v2) asks the runner, synchronously, before each connection to a fixture
 *   route; when the route's next script entry is `refused`, the socket fails
 *   with the ECONNREFUSED error Node gives for a closed port, and nothing
 *   connects (undici connects with `net.connect`, which calls
 *   `Socket.prototype.connect`).
 *
 * Not virtual (documented in shims/README.md): internal timers of Node's own
 * modules (`socket.setTimeout`, `http` request timeouts, `net` keep-alive),
 * timers in worker threads, `process.uptime`, anything a native addon does.
 */

const ADDRESS = process.env.FAULTMATRIX_CLOCK;
const WARM = process.env.FAULTMATRIX_WARM === '1';
const DEBUG = process.env.FAULTMATRIX_CLOCK_DEBUG === '1';
function debug(text) {
  require("fs").writeSync(2, `[fm-clock ${process.pid} +${Math.round(process.uptime() * 1000)}ms] ${text}\n`);
}

if (ADDRESS && !globalThis.__faultmatrixClock) {
  globalThis.__faultmatrixClock = true;
  if (process._eval !== undefined || !process.argv[1]) {
    // The program must not start before the clock's welcome, and only a
    // script's start (Module.runMain) can be held back.
    require('fs').writeSync(
      2,
      'faultmatrix clock shim: only `node script.js` can run on the virtual clock ' +
        '(not -e/-p, stdin or the REPL)\n',
    );
    process.exit(97);
  }
  install();
}

function install() {
  const net = require('net');
  const fs = require('fs');
  const timers = require('timers');
  const Module = require('module');

  const PROTOCOL_VERSIONS = [1, 2];
  const SHIM_VERSION = '1.1.0';
  const EXIT_SHIM_FAILED = 97;
  const TIMEOUT_MAX = 2 ** 31 - 1;

  // The real functions, kept for the shim's own short real waits.
  const real = {
    setTimeout: globalThis.setTimeout,
    clearTimeout: globalThis.clearTimeout,
    setInterval: globalThis.setInterval,
    clearInterval: globalThis.clearInterval,
    setImmediate: globalThis.setImmediate,
    dateNow: Date.now,
    random: Math.random,
    connect: net.Socket.prototype.connect,
  };

  function fail(message) {
    try {
      fs.writeSync(2, `faultmatrix clock shim: ${message}\n`);
    } catch (_) {
      /* nothing more to do */
    }
    process.reallyExit ? process.reallyExit(EXIT_SHIM_FAILED) : process.exit(EXIT_SHIM_FAILED);
  }

  // -- the clock ---------------------------------------------------------------

  const clock = {
    nowNs: 0, // virtual time since the row's start, integer nanoseconds (< 2^53: 104 days)
    originNs: 0, // what monotonic clocks read at 0
    wallMs: 0, // the row's wall start, whole milliseconds ...
    wallSubNs: 0, // ... and the nanoseconds beyond them
    stallMs: 2000,
    heartbeatMs: 250,
    fixturePorts: new Set(),
    version: 1, // the protocol version the runner chose
    draws: null, // explicit draws, or null for the seeded generator
    seed: 0n,
    used: 0,
    overrun: false,
  };

  const wallNowMs = () => clock.wallMs + (clock.wallSubNs + clock.nowNs) / 1e6;
  const monoNowMs = () => (clock.originNs + clock.nowNs) / 1e6;

  // -- random draws ----------------------------------------------------------------

  const MASK = (1n << 64n) - 1n;
  function nextDraw() {
    clock.used += 1;
    if (DEBUG) debug(`draw ${clock.used} at ${new Error().stack.split('\n')[2].trim()}`);
    if (clock.draws === null) {
      // splitmix64, as the in-process runner (src/system.rs)
      clock.seed = (clock.seed + 0x9e3779b97f4a7c15n) & MASK;
      let z = clock.seed;
      z = ((z ^ (z >> 30n)) * 0xbf58476d1ce4e5b9n) & MASK;
      z = ((z ^ (z >> 27n)) * 0x94d049bb133111ebn) & MASK;
      z ^= z >> 31n;
      return Number(z >> 11n) / 2 ** 53;
    }
    if (clock.used <= clock.draws.length) return clock.draws[clock.used - 1];
    if (!clock.overrun) {
      clock.overrun = true;
      const n = clock.draws.length;
      send({
        op: 'error',
        code: 'draws_exhausted',
        message: `the row scripted ${n} jitter draw${n === 1 ? '' : 's'} but the system asked for more`,
        draws: clock.used,
      });
    }
    return 0;
  }

  // -- the control channel -------------------------------------------------------------

  let control = null;
  let inbuf = '';
  let onMessage = null;

  function send(msg) {
    if (control && !control.destroyed) control.write(JSON.stringify(msg) + '\n');
  }

  function sendSync(msg) {
    // For 'exit': the event loop will not run again.
    const fd = control && control._handle && control._handle.fd;
    if (typeof fd === 'number' && fd >= 0) {
      try {
        fs.writeSync(fd, JSON.stringify(msg) + '\n');
        return;
      } catch (_) {
        /* fall through */
      }
    }
    send(msg);
  }

  // One line of the runner's channel: a JSON message, or the shim fails.
  function parseLine(line) {
    try {
      return JSON.parse(line);
    } catch (_) {
      return fail(`the runner sent a line that is not JSON: ${line.slice(0, 200)}`);
    }
  }

  function pump() {
    let i;
    while ((i = inbuf.indexOf('\n')) >= 0) {
      const line = inbuf.slice(0, i);
      inbuf = inbuf.slice(i + 1);
      onMessage(parseLine(line));
    }
  }

  // Protocol v2 `connect`: a synchronous round trip on the channel's fd
  // (the program's connect call cannot wait for the event loop). Lines that
  // are not the answer (a block's reply) stay in `inbuf` for `pump`.
  let connectSeq = 0;
  const nap = new Int32Array(new SharedArrayBuffer(4));
  function refusesConnect(port) {
    if (clock.version < 2) return false;
    const fd = control && control._handle && control._handle.fd;
    if (typeof fd !== 'number' || fd < 0) fail('cannot ask the runner about a connection: the clock channel has no file descriptor');
    connectSeq += 1;
    const mine = `c${connectSeq}`;
    fs.writeSync(fd, JSON.stringify({ op: 'connect', seq: mine, port }) + '\n');
    const decoder = new (require('string_decoder').StringDecoder)('utf8');
    const buf = Buffer.alloc(65536);
    const since = real.dateNow();
    let answer = null;
    let queued = false;
    for (;;) {
      let at = 0;
      let i;
      while ((i = inbuf.indexOf('\n', at)) >= 0) {
        const line = inbuf.slice(at, i);
        let msg = null;
        try {
          msg = JSON.parse(line);
        } catch (_) {
          /* pump reports it */
        }
        if (msg && msg.op === 'connect' && msg.seq === mine) {
          inbuf = inbuf.slice(0, at) + inbuf.slice(i + 1);
          answer = msg;
          break;
        }
        at = i + 1;
      }
      if (answer) break;
      if (real.dateNow() - since > clock.stallMs) fail(`the runner did not answer connect ${mine} within ${clock.stallMs} ms of real time`);
      let n = 0;
      try {
        n = fs.readSync(fd, buf, 0, buf.length, null);
      } catch (e) {
        if (e.code !== 'EAGAIN' && e.code !== 'EWOULDBLOCK') fail(`the runner's clock channel broke: ${e.message}`);
        Atomics.wait(nap, 0, 0, 1); // 1 ms of real time
        continue;
      }
      if (n === 0) fail('the runner closed the clock channel (the row was stopped, or the runner exited)');
      inbuf += decoder.write(buf.subarray(0, n));
      queued = true;
    }
    if (queued && inbuf.indexOf('\n') >= 0) real.setImmediate(pump);
    if (DEBUG) debug(`connect port=${port} refused=${answer.refused}`);
    return answer.refused === true;
  }

  // What net gives a connect to a closed port: the socket is destroyed
  // with this error on a later tick (net.js afterConnect ->
  // ExceptionWithHostPort(status, 'connect', address, port)).
  function refuse(sock, host, port) {
    const os = require('os');
    const err = new Error(`connect ECONNREFUSED ${host}:${port}`);
    err.errno = -os.constants.errno.ECONNREFUSED;
    err.code = 'ECONNREFUSED';
    err.syscall = 'connect';
    err.address = host;
    err.port = port;
    sock.connecting = true;
    process.nextTick(() => {
      sock.connecting = false;
      sock.destroy(err);
    });
    return sock;
  }

  function loopback(address) {
    const i = address.lastIndexOf(':');
    const host = address.slice(0, i).replace(/^\[|\]$/g, '');
    const port = Number(address.slice(i + 1));
    if (!['127.0.0.1', 'localhost', '::1'].includes(host) || !Number.isInteger(port)) {
      fail(`FAULTMATRIX_CLOCK=${address} is not a loopback HOST:PORT`);
    }
    return { host, port };
  }

  function connectControl(onWelcome) {
    // Read now: a spare process (warm mode) gets its row's address with
    // the row's environment.
    const address = process.env.FAULTMATRIX_CLOCK;
    control = real.connect.call(new net.Socket(), loopback(address));
    control.setNoDelay(true);
    control.setEncoding('utf8');
    control.on('error', (e) => fail(`cannot reach the runner's clock at ${address}: ${e.message}`));
    control.on('close', () => fail('the runner closed the clock channel (the row was stopped, or the runner exited)'));
    control.on('data', (chunk) => {
      inbuf += chunk;
      pump();
    });
    onMessage = (msg) => {
      if (msg.op === 'refuse') {
        fail(
          `the runner refused this process: ${msg.error || 'no reason given'} ` +
            `(it speaks protocol versions ${JSON.stringify(msg.versions)}, this shim ${JSON.stringify(PROTOCOL_VERSIONS)})`,
        );
      }
      if (msg.op !== 'welcome') fail(`expected welcome from the runner, got ${msg.op}`);
      if (!PROTOCOL_VERSIONS.includes(msg.v)) fail(`the runner chose protocol version ${msg.v}`);
      onMessage = onReply;
      clock.version = msg.v;
      onWelcome(msg);
    };
    control.write(
      JSON.stringify({
        op: 'hello',
        versions: PROTOCOL_VERSIONS,
        role: 'row',
        shim: 'node',
        shim_version: SHIM_VERSION,
        runtime: `node ${process.versions.node}`,
        pid: process.pid,
        token: process.env.FAULTMATRIX_CLOCK_TOKEN || null,
      }) + '\n',
    );
  }

  function applyWelcome(w) {
    clock.nowNs = Number(w.now_ns || 0);
    clock.originNs = Number(w.monotonic_origin_ns || 0);
    const wall = BigInt(String(w.wall_start_ns || '0'));
    clock.wallMs = Number(wall / 1000000n);
    clock.wallSubNs = Number(wall % 1000000n);
    clock.stallMs = Number(w.stall_ms || 2000);
    clock.heartbeatMs = Number(w.heartbeat_ms || 250);
    for (const f of w.fixtures || []) clock.fixturePorts.add(Number(String(f).slice(String(f).lastIndexOf(':') + 1)));
    const j = w.jitter || {};
    if (Array.isArray(j.draws)) clock.draws = j.draws.map(Number);
    else clock.seed = BigInt(j.seed || 0) & MASK;
  }

  // -- virtual timers -------------------------------------------------------------------

  let nextId = 1;
  const pending = new Map(); // id -> VirtualTimeout, armed ones
  let refCount = 0;

  class VirtualTimeout {
    constructor(callback, after, args, repeat) {
      after *= 1; // as Node's Timeout: coalesce to a number or NaN
      if (!(after >= 1 && after <= TIMEOUT_MAX)) {
        if (after > TIMEOUT_MAX) {
          process.emitWarning(
            `${after} does not fit into a 32-bit signed integer.\nTimeout duration was set to 1.`,
            'TimeoutOverflowWarning',
          );
        }
        after = 1;
      }
      this._onTimeout = callback;
      this._timerArgs = args;
      this._idleTimeout = after;
      this._repeat = repeat ? after : null;
      this._id = nextId++;
      this._ref = true;
      this._destroyed = false;
      this._cleared = false;
      this._arm();
    }
    _arm() {
      this._when = clock.nowNs + Math.round(this._idleTimeout * 1e6);
      this._seq = nextId++;
      if (!pending.has(this._id)) {
        pending.set(this._id, this);
        if (this._ref) refCount++;
      }
      this._destroyed = false;
      liveness();
      kick();
    }
    _disarm() {
      if (pending.delete(this._id) && this._ref) refCount--;
      this._destroyed = true;
      liveness();
      kick();
    }
    ref() {
      if (!this._ref) {
        this._ref = true;
        if (pending.has(this._id)) refCount++;
        liveness();
      }
      return this;
    }
    unref() {
      if (this._ref) {
        this._ref = false;
        if (pending.has(this._id)) refCount--;
        liveness();
      }
      return this;
    }
    hasRef() {
      return this._ref;
    }
    refresh() {
      // As Node: re-arms from now, also after it fired, but not once cleared.
      if (!this._cleared) {
        if (pending.delete(this._id) && this._ref) refCount--;
        this._arm();
      }
      return this;
    }
    close() {
      this._cleared = true;
      this._disarm();
      return this;
    }
    [Symbol.toPrimitive]() {
      return this._id;
    }
  }
  if (typeof Symbol.dispose === 'symbol') {
    VirtualTimeout.prototype[Symbol.dispose] = function dispose() {
      this.close();
    };
  }

  function vSetTimeout(callback, after, ...args) {
    if (DEBUG) debug(`setTimeout ${after} from ${new Error().stack.split('\n')[2].trim()}`);
    if (typeof callback !== 'function') {
      const e = new TypeError(`The "callback" argument must be of type function. Received ${typeof callback}`);
      e.code = 'ERR_INVALID_ARG_TYPE';
      throw e;
    }
    return new VirtualTimeout(callback, after, args, false);
  }
  function vSetInterval(callback, repeat, ...args) {
    if (typeof callback !== 'function') {
      const e = new TypeError(`The "callback" argument must be of type function. Received ${typeof callback}`);
      e.code = 'ERR_INVALID_ARG_TYPE';
      throw e;
    }
    return new VirtualTimeout(callback, repeat, args, true);
  }
  function vClearTimeout(timer) {
    if (timer instanceof VirtualTimeout) timer.close();
    else if (typeof timer === 'number' || typeof timer === 'string') {
      const t = pending.get(Number(timer));
      if (t) t.close();
    } else if (timer) real.clearTimeout(timer); // a real timer made before the shim
  }

  function nextDeadline() {
    let best = null;
    for (const t of pending.values()) {
      if (best === null || t._when < best._when || (t._when === best._when && t._seq < best._seq)) best = t;
    }
    return best;
  }

  // Fires the due timers one per macrotask (microtasks run in between, as
  // in Node's timers phase), then looks for quiescence again.
  let firing = false;
  let awaiting = false; // bytes the runner released are on their way
  function fireDue() {
    const t = nextDeadline();
    if (t === null || t._when > clock.nowNs) {
      firing = false;
      kick();
      return;
    }
    firing = true;
    pending.delete(t._id);
    if (t._ref) refCount--;
    if (t._repeat !== null) {
      t._arm();
    } else {
      t._destroyed = true;
      liveness();
    }
    try {
      t._onTimeout(...(t._timerArgs || []));
    } finally {
      real.setImmediate(fireDue);
    }
  }

  // The control channel stands in for the ref'd timers: the process stays
  // alive while one is armed, and exits as it would otherwise.
  function liveness() {
    if (!control) return;
    if (refCount > 0 || waitingForTimersOnly) control.ref();
    else control.unref();
  }

  // -- fixture sockets -------------------------------------------------------------------

  const conns = []; // every fixture connection of the row, closed ones too
  function target(args) {
    const a0 = args[0];
    if (Array.isArray(a0)) return target(a0);
    if (a0 && typeof a0 === 'object') return { host: a0.host || '127.0.0.1', port: Number(a0.port) };
    return { host: typeof args[1] === 'string' ? args[1] : '127.0.0.1', port: Number(a0) };
  }
  function isFixture(args) {
    let port;
    let host;
    const a0 = args[0];
    if (Array.isArray(a0)) return isFixture(a0);
    if (a0 && typeof a0 === 'object') {
      port = a0.port;
      host = a0.host;
    } else {
      port = a0;
      host = typeof args[1] === 'string' ? args[1] : undefined;
    }
    port = Number(port);
    return clock.fixturePorts.has(port) && (host === undefined || ['127.0.0.1', 'localhost', '::1'].includes(host));
  }

  // Bytes and closes on fixture connections that arrive while a block is
  // outstanding are held until the runner's answer has moved the clock: the
  // program must see them at the virtual time they were released, not at
  // the old now (libuv may poll the fixture socket before the channel).
  // They are replayed one at a time, each once the program is quiet again,
  // as if each had arrived later: a response's head is handled (with
  // everything that schedules) before the close that follows it.
  const held = [];
  let delivering = false;
  let afterDelivery = null;
  const holding = () => waiting || delivering || awaiting;
  function deliverNext() {
    if (held.length) {
      held.shift()();
      kick();
      return;
    }
    delivering = false;
    const then = afterDelivery;
    afterDelivery = null;
    if (then) then();
  }
  function startDelivery(then) {
    delivering = true;
    afterDelivery = then;
    kick();
  }

  net.Socket.prototype.connect = function connect(...args) {
    const tracked = isFixture(args);
    if (tracked && !this.__fmConn) {
      const { host, port } = target(args);
      if (refusesConnect(port)) return refuse(this, host, port);
    }
    const out = real.connect.apply(this, args);
    if (tracked && !this.__fmConn) {
      const sock = this;
      const c = { sock, port: null, eof: false, connecting: true, closeEmitted: false };
      sock.__fmConn = c;
      conns.push(c);
      const realPush = sock.push;
      sock.push = function push(chunk, encoding) {
        if (chunk === null) c.eof = true;
        if (holding()) {
          held.push(() => realPush.call(sock, chunk, encoding));
          return true;
        }
        const r = realPush.call(sock, chunk, encoding);
        kick();
        return r;
      };
      const realDestroy = sock.destroy;
      sock.destroy = function destroy(err, cb) {
        if (err) c.eof = true;
        if (holding() && err) {
          held.push(() => realDestroy.call(sock, err, cb));
          return sock;
        }
        const r = realDestroy.call(sock, err, cb);
        kick();
        return r;
      };
      sock.once('connect', () => {
        c.port = sock.localPort;
        c.connecting = false;
        kick();
      });
      sock.on('close', () => {
        c.connecting = false;
        c.closeEmitted = true;
        kick();
      });
    }
    return out;
  };

  function report() {
    const out = [];
    for (const c of conns) {
      if (c.port === null) continue;
      const s = c.sock;
      const closed = s.destroyed || s.writableFinished;
      const entry = {
        port: c.port,
        written: s.bytesWritten,
        arrived: s.bytesRead,
        eof: c.eof || s.readableEnded,
        closed,
      };
      if (!closed && !entry.eof && s._handle && s._handle.reading === false) entry.paused = true;
      out.push(entry);
    }
    return out;
  }

  // -- quiescence ------------------------------------------------------------------------

  // libuv resources that are long-lived handles, not work in flight.
  const IDLE = new Set([
    'TCPSocketWrap', 'TCPServerWrap', 'TCPWRAP', 'PipeWrap', 'PipeServerWrap', 'TTYWrap', 'Timeout',
    'SignalWrap', 'FSEventWrap', 'StatWatcher', 'UDPWrap', 'MessagePort', 'FileHandle', 'HTTPINCOMINGMESSAGE',
    'HTTPCLIENTREQUEST', 'TLSWrap', 'Immediate',
  ]);

  let probeScheduled = false;
  let waiting = false; // a block is outstanding
  let waitingForTimersOnly = false;
  let seq = 0;
  let active = false;
  let busySince = null;
  let stallReported = false;
  let firstBlockSent = false;

  function kick() {
    if (!active || probeScheduled || waiting || firing || awaiting) return;
    probeScheduled = true;
    // A ref'd immediate: an unref'd one would wait for the poll phase to end.
    real.setImmediate(probe);
  }

  function probe() {
    probeScheduled = false;
    if (!active || waiting || firing || awaiting) return;
    const busy = [];
    let immediates = 0;
    for (const r of process.getActiveResourcesInfo()) {
      if (r === 'Immediate') immediates++;
      else if (!IDLE.has(r)) busy.push(r);
    }
    // A destroyed socket's 'close' comes from libuv's close phase, after
    // this check phase: the program still has work to do then.
    const closing = conns.some((c) => c.sock.destroyed && !c.closeEmitted);
    if (immediates > 0 || closing) {
      kick(); // the program's own immediates (or close callbacks) first
      return;
    }
    const connecting = conns.some((c) => c.connecting);
    if (hiddenWork > 0) busy.push('WebAssembly compilation');
    if (busy.length || connecting) {
      // Real work in flight (thread pool, a connect, a write): virtual time stands still.
      const now = real.dateNow();
      if (busySince === null) busySince = now;
      else if (!stallReported && now - busySince >= clock.stallMs) {
        stallReported = true;
        send({
          op: 'stalled',
          real_ms: now - busySince,
          where: busy.join(', ') || 'a connect to the fixture server',
          detail: 'waiting in real time on work the shim cannot put on the virtual clock',
        });
      }
      probeScheduled = true;
      real.setTimeout(() => {
        probeScheduled = false;
        kick();
      }, 1);
      return;
    }
    busySince = null;
    if (delivering) {
      deliverNext(); // the program is quiet: the next held event
      return;
    }
    const t = nextDeadline();
    const open = conns.filter((c) => c.port !== null && !c.sock.destroyed);
    if (t === null && open.length === 0) {
      // Nothing to wait for: the process ends as it would on the real clock.
      return;
    }
    if (DEBUG) debug(`block draws=${clock.used} deadline=${t && t._when} timers=${[...pending.values()].map((x) => `${x._idleTimeout}${x._ref ? '' : 'u'}@${x._when}`)} res=${process.getActiveResourcesInfo()} conns=${JSON.stringify(report())}`);
    seq += 1;
    waiting = true;
    waitingForTimersOnly = refCount > 0;
    liveness();
    firstBlockSent = true;
    send({
      op: 'block',
      seq,
      deadline_ns: t === null ? null : t._when,
      on: open.length ? 'select' : 'timer',
      wake_on: open.filter((c) => !c.eof).map((c) => c.port),
      conns: report(),
      draws: clock.used,
    });
  }

  function onReply(msg) {
    if (msg.seq !== seq) fail(`the runner answered block ${seq} with seq ${msg.seq}`);
    waiting = false;
    waitingForTimersOnly = false;
    if (msg.op === 'busy') {
      liveness();
      // Events held meanwhile first, then a short real wait, then report again.
      startDelivery(() => {
        probeScheduled = true;
        real.setTimeout(() => {
          probeScheduled = false;
          kick();
        }, 0);
      });
      return;
    }
    if (msg.op !== 'advance') fail(`expected advance or busy, got ${msg.op}`);
    if (DEBUG) debug(`advance now=${msg.now_ns} woke=${msg.woke} conns=${JSON.stringify(msg.conns)}`);
    const now = Number(msg.now_ns);
    if (now < clock.nowNs) fail(`the runner moved the clock backwards (${clock.nowNs} -> ${now})`);
    clock.nowNs = now;
    awaiting = true; // no probe until the released bytes are here
    awaitDelivery(msg.conns || [], real.dateNow(), () => {
      awaiting = false;
      liveness();
      startDelivery(fireDue); // I/O at the new now comes before the timers due then
    });
  }

  // The runner released bytes (or closed) on these connections at the new
  // now: the program sees them before its timers fire.
  function awaitDelivery(changes, since, then) {
    const missing = changes.filter((ch) => {
      const c = conns.find((k) => k.port === ch.port);
      if (!c || c.sock.destroyed) return false;
      if (c.sock._handle && c.sock._handle.reading === false && !c.eof) return false; // paused: the bytes wait in the kernel
      return c.sock.bytesRead < ch.sent || (ch.closed && !(c.eof || c.sock.readableEnded));
    });
    if (missing.length === 0) return then();
    if (real.dateNow() - since > clock.stallMs) {
      fail(`bytes the runner sent on port ${missing[0].port} did not arrive within ${clock.stallMs} ms of real time`);
    }
    real.setTimeout(() => awaitDelivery(changes, since, then), 0);
  }

  // -- clocks ------------------------------------------------------------------------------

  const RealDate = Date;
  const VirtualDate = new Proxy(RealDate, {
    construct(target, args, newTarget) {
      if (args.length === 0) return Reflect.construct(target, [Math.floor(wallNowMs())], newTarget);
      return Reflect.construct(target, args, newTarget);
    },
    apply() {
      return new RealDate(Math.floor(wallNowMs())).toString();
    },
  });
  RealDate.now = function now() {
    return Math.floor(wallNowMs());
  };

  const perf = globalThis.performance;
  const realPerfNow = perf.now.bind(perf);
  const realHrtime = process.hrtime;

  function patchClocks() {
    globalThis.Date = VirtualDate;
    perf.now = function now() {
      return monoNowMs();
    };
    const hrtime = function hrtime(prev) {
      const ns = BigInt(clock.originNs + clock.nowNs);
      let s = Number(ns / 1000000000n);
      let n = Number(ns % 1000000000n);
      if (prev) {
        s -= prev[0];
        n -= prev[1];
        if (n < 0) {
          s -= 1;
          n += 1e9;
        }
      }
      return [s, n];
    };
    hrtime.bigint = () => BigInt(clock.originNs + clock.nowNs);
    process.hrtime = hrtime;
    const DTF = Intl.DateTimeFormat.prototype;
    const realFormat = Object.getOwnPropertyDescriptor(DTF, 'format').get;
    Object.defineProperty(DTF, 'format', {
      configurable: true,
      get() {
        const f = realFormat.call(this);
        return (date) => f(date === undefined ? Math.floor(wallNowMs()) : date);
      },
    });
    Math.random = function random() {
      return nextDraw();
    };
  }

  // Promises settled by work on threads libuv does not list (V8 compiles
  // WebAssembly in the background: undici compiles its HTTP parser that way
  // on the first request). While one is pending, virtual time stands still.
  let hiddenWork = 0;
  function track(promise) {
    hiddenWork++;
    const done = () => {
      hiddenWork--;
      kick();
    };
    promise.then(done, done);
    return promise;
  }
  function patchHiddenWork() {
    const W = globalThis.WebAssembly;
    if (!W) return;
    for (const name of ['compile', 'instantiate', 'compileStreaming', 'instantiateStreaming']) {
      const f = W[name];
      if (typeof f !== 'function') continue;
      W[name] = function (...args) {
        return track(f.apply(this, args));
      };
    }
  }

  function patchTimers() {
    const util = require('util');
    const promises = require('timers/promises');
    const realPromises = { ...promises };

    function abortError(signal) {
      const e = new Error('The operation was aborted');
      e.name = 'AbortError';
      e.code = 'ABORT_ERR';
      e.cause = signal && signal.reason;
      return e;
    }
    function sleepPromise(delay, value, options = {}) {
      const { signal, ref = true } = options || {};
      return new Promise((resolve, reject) => {
        if (signal && signal.aborted) return reject(abortError(signal));
        const t = vSetTimeout(() => {
          if (signal) signal.removeEventListener('abort', onAbort);
          resolve(value);
        }, delay);
        if (!ref) t.unref();
        function onAbort() {
          t._disarm();
          reject(abortError(signal));
        }
        if (signal) signal.addEventListener('abort', onAbort, { once: true });
      });
    }
    async function* intervalIterator(delay, value, options = {}) {
      const { signal, ref = true } = options || {};
      if (signal && signal.aborted) throw abortError(signal);
      let ticks = 0;
      let wake = null;
      const t = vSetInterval(() => {
        ticks++;
        if (wake) wake();
      }, delay);
      if (!ref) t.unref();
      const onAbort = () => wake && wake();
      if (signal) signal.addEventListener('abort', onAbort, { once: true });
      try {
        while (true) {
          if (ticks === 0) await new Promise((r) => (wake = r));
          wake = null;
          if (signal && signal.aborted) throw abortError(signal);
          while (ticks > 0) {
            ticks--;
            yield value;
          }
        }
      } finally {
        t._disarm();
        if (signal) signal.removeEventListener('abort', onAbort);
      }
    }
    vSetTimeout[util.promisify.custom] = sleepPromise;
    Object.defineProperty(vSetTimeout, util.promisify.custom, { value: sleepPromise });

    for (const target of [globalThis, timers]) {
      target.setTimeout = vSetTimeout;
      target.setInterval = vSetInterval;
      target.clearTimeout = vClearTimeout;
      target.clearInterval = vClearTimeout;
    }
    promises.setTimeout = sleepPromise;
    promises.setInterval = intervalIterator;
    if (promises.scheduler) {
      promises.scheduler = { ...promises.scheduler, wait: (delay, options) => sleepPromise(delay, undefined, options) };
    }
    if (typeof AbortSignal.timeout === 'function') {
      AbortSignal.timeout = function timeout(ms) {
        const c = new AbortController();
        vSetTimeout(() => {
          const e = new DOMException('The operation was aborted due to timeout', 'TimeoutError');
          c.abort(e);
        }, ms).unref();
        return c.signal;
      };
    }
    void realPromises;
    // ES modules that import from 'timers' and 'timers/promises' see the same.
    Module.syncBuiltinESMExports();
  }

  // -- start-up ------------------------------------------------------------------------------

  // V8 tiers WebAssembly up (undici's HTTP parser) on background threads,
  // and Node waits for those before it exits: 150-200 ms at the end of every
  // row. Liftoff alone compiles once, up front; what the program computes is
  // unchanged. FAULTMATRIX_NODE_TIER_UP=1 keeps V8's default.
  if (process.env.FAULTMATRIX_NODE_TIER_UP !== '1') require('v8').setFlagsFromString('--liftoff-only');

  patchClocks();
  patchTimers();
  patchHiddenWork();

  let ready = false;
  const deferred = [];
  const realRunMain = Module.runMain;
  Module.runMain = function runMain(...args) {
    if (ready) return realRunMain.apply(this, args);
    deferred.push(() => realRunMain.apply(this, args));
    return undefined;
  };

  // What the program requires from outside its own directory (an SDK in
  // node_modules), reported in `exit.imported`: a spare process started
  // later for the same command requires it before its row.
  const path = require('path');
  const script = path.resolve(process.argv[1]);
  const scriptDir = path.dirname(script);
  const inside = (file) => file.startsWith(scriptDir + path.sep) && !file.includes(`${path.sep}node_modules${path.sep}`);
  const imported = new Set();
  const realLoad = Module._load;
  Module._load = function load(request, parent, isMain) {
    if (ready && parent && typeof parent.filename === 'string' && inside(parent.filename) && !Module.isBuiltin(request)) {
      try {
        const file = Module._resolveFilename(request, parent, isMain);
        if (!inside(file)) imported.add(file);
      } catch (_) {
        /* the program's own require reports it */
      }
    }
    return realLoad.apply(this, arguments);
  };

  function startRow() {
    connectControl((welcome) => {
      applyWelcome(welcome);
      ready = true;
      active = true;
      liveness();
      const heartbeat = real.setInterval(() => {
        if (!waiting) send({ op: 'heartbeat', draws: clock.used });
      }, clock.heartbeatMs);
      heartbeat.unref();
      process.on('exit', () => {
        if (DEBUG) debug('exit');
        sendSync({ op: 'exit', draws: clock.used, imported: [...imported] });
      });
      for (const run of deferred.splice(0)) run();
      kick();
    });
    // Until the welcome arrives, the channel keeps the process alive; the
    // program has not started yet.
    control.ref();
  }

  if (WARM) startSpare(startRow);
  else startRow();

  // -- warm mode: a spare process (PROTOCOL.md §8.1) ------------------------------------------

  // Node cannot fork, so a spare is started ahead of its row: it requires
  // the program's modules, says `ready`, and waits for `spawn` with its
  // row's complete environment; then it is that row's process, as
  // `node script.js` started with that environment would be.
  function startSpare(then) {
    const chan = real.connect.call(new net.Socket(), loopback(ADDRESS));
    chan.setNoDelay(true);
    chan.setEncoding('utf8');
    let spawned = false;
    let buf = '';
    let welcomed = false;
    const line = (msg) => chan.write(JSON.stringify(msg) + '\n');
    chan.on('error', () => {
      if (!spawned) process.exit(0); // the runner is gone: nothing to serve
    });
    chan.on('close', () => {
      if (!spawned) process.exit(0);
    });
    chan.on('data', (chunk) => {
      buf += chunk;
      let i;
      while (!spawned && (i = buf.indexOf('\n')) >= 0) {
        const msg = parseLine(buf.slice(0, i));
        buf = buf.slice(i + 1);
        if (!welcomed) {
          if (msg.op !== 'welcome') fail(`expected welcome from the runner, got ${msg.op}`);
          welcomed = true;
          applyWelcome(msg); // the clock module code reads while it loads
          const ready = preload();
          warmUp((warm) => {
            ready.warm_up = warm;
            ready.gc = collectGarbage();
            line(ready);
          });
        } else if (msg.op === 'spawn') {
          spawned = true;
          const env = msg.env || {};
          for (const k of Object.keys(process.env)) if (!(k in env)) delete process.env[k];
          for (const [k, v] of Object.entries(env)) process.env[k] = String(v);
          line({ op: 'spawned', id: msg.id, pid: process.pid });
          chan.end();
          chan.unref();
          then();
        } else if (msg.op === 'shutdown') {
          process.exit(0);
        }
      }
    });
    line({
      op: 'hello',
      versions: PROTOCOL_VERSIONS,
      role: 'warm',
      shim: 'node',
      shim_version: SHIM_VERSION,
      runtime: `node ${process.versions.node}`,
      pid: process.pid,
      token: process.env.FAULTMATRIX_CLOCK_TOKEN || null,
    });
  }

  // Requires what the program will: its script's literal `require('pkg')`
  // of packages (never its own relative modules, which could read the
  // row's environment), and FAULTMATRIX_WARM_IMPORTS (paths or package
  // names: what earlier rows of the command required from outside its
  // directory). Then loads fetch's HTTP client, which Node loads lazily.
  function preload() {
    const t0 = realHrtime.bigint();
    const want = new Set();
    try {
      const source = fs.readFileSync(script, 'utf8');
      for (const m of source.matchAll(/\brequire\(\s*(['"])([^'"./][^'"]*)\1\s*\)/g)) want.add(m[2]);
    } catch (_) {
      /* the program's own start reports it */
    }
    for (const m of (process.env.FAULTMATRIX_WARM_IMPORTS || '').split(',')) if (m.trim()) want.add(m.trim());
    const req = Module.createRequire(script);
    const preloaded = [];
    const failed = [];
    for (const m of want) {
      if (Module.isBuiltin(m)) continue;
      try {
        req(m);
        preloaded.push(m);
      } catch (e) {
        failed.push(`${m}: ${String((e && e.message) || e).split('\n')[0]}`);
      }
    }
    // Node loads undici (fetch, Headers) on first use, a bundle V8
    // compiles then: the lazy global loads it now.
    try {
      void globalThis.Headers;
    } catch (_) {
      /* nothing */
    }
    return { op: 'ready', preloaded, failed, import_ns: Number(realHrtime.bigint() - t0) };
  }

  // A fresh process pays for its first HTTP request: V8 compiles fetch's
  // request and response path and undici's WebAssembly HTTP parser then,
  // 30-100 ms a row would count as its own. A spare makes one POST with
  // a JSON body to a listener of its own before it says `ready`.
  //
  // Nothing of it reaches the row. Virtual time does not move before the
  // row (no advance comes), so undici's tick timer, armed here at virtual
  // 0, is the one a fresh process arms at its first request at 0 and
  // `refresh`es at a later one; the listener and the connection are
  // closed; the draws and the seed are put back. FAULTMATRIX_NODE_WARM_UP=0
  // leaves it out. `done` gets { ms, error }.
  function warmUp(done) {
    if (process.env.FAULTMATRIX_NODE_WARM_UP === '0' || typeof globalThis.fetch !== 'function') {
      return done({ ms: 0, error: 'off' });
    }
    const t0 = realHrtime.bigint();
    const used = clock.used;
    const seed = clock.seed;
    let finished = false;
    let server = null;
    const guard = real.setTimeout(() => finish(new Error('no answer within 10 s')), 10000);
    function finish(err) {
      if (finished) return;
      finished = true;
      real.clearTimeout(guard);
      clock.used = used;
      clock.seed = seed;
      if (server) server.close();
      done({ ms: Number(realHrtime.bigint() - t0) / 1e6, error: err ? String(err.message || err) : null });
    }
    // Plain `net`: Node's http server would arm an interval of its own.
    server = net.createServer((sock) => {
      let head = '';
      sock.setEncoding('latin1');
      sock.on('error', () => {});
      sock.on('data', (chunk) => {
        head += chunk;
        const end = head.indexOf('\r\n\r\n');
        if (end < 0) return;
        const m = /\r\ncontent-length: *(\d+)/i.exec(head.slice(0, end));
        if (head.length - end - 4 < (m ? Number(m[1]) : 0)) return;
        const body = '{"id":"warm-up","ok":true}';
        sock.end(
          'HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n' +
            `content-length: ${body.length}\r\nconnection: close\r\n\r\n${body}`,
        );
      });
    });
    server.on('error', finish);
    server.listen(0, '127.0.0.1', () => {
      const url = `http://127.0.0.1:${server.address().port}/warm-up`;
      globalThis
        .fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"warm":"up"}' })
        .then((r) => r.json())
        .then(() => finish(null), finish);
    });
  }

  // The spare's heap after its start-up (the SDK required, the warm-up
  // request made) holds megabytes of garbage, and V8 starts its next
  // major collection (concurrent marking on helper threads, then
  // mark-compact on the main one) a few allocations later: in the row,
  // where it took 5-15 ms of a 2-core machine from the row and from the
  // runner answering it. One full collection here, before `ready`, moves
  // that cost out of the row. No virtual time passes and the program
  // cannot see it: `gc` is taken from a context of its own and the flag
  // is turned off again, so neither the program's globals nor a context
  // it makes gain a `gc`. FAULTMATRIX_NODE_GC=0 leaves it out. Returns
  // { ms, error }.
  function collectGarbage() {
    if (process.env.FAULTMATRIX_NODE_GC === '0') return { ms: 0, error: 'off' };
    const t0 = realHrtime.bigint();
    try {
      const v8 = require('v8');
      v8.setFlagsFromString('--expose-gc');
      let gc;
      try {
        gc = require('vm').runInNewContext('gc');
      } finally {
        v8.setFlagsFromString('--no-expose-gc');
      }
      if (typeof gc !== 'function') return { ms: 0, error: 'no gc function' };
      gc();
      return { ms: Number(realHrtime.bigint() - t0) / 1e6, error: null };
    } catch (e) {
      return { ms: 0, error: String((e && e.message) || e) };
    }
  }

  void realPerfNow;
  void firstBlockSent;
}
