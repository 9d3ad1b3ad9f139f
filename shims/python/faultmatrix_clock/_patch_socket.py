"""Sockets to the row's fixture server: byte accounting and virtual waits.

Only connections to an address the runner listed in `welcome.fixtures` are
tracked; every other socket (the control channel included) is untouched.

For a tracked connection the shim counts what the application wrote and
read, and reports it in every `block` (shims/PROTOCOL.md, "Byte
accounting"):

- `written`: bytes handed to the kernel by send/sendall/sendto/sendmsg;
- `arrived`: bytes read by the application plus bytes waiting in the
  kernel's receive queue (FIONREAD), so data the program has not asked for
  yet does not look "in flight";
- `eof`: the client side has seen the server close (read EOF or a reset, or
  the TCP state says the peer closed);
- `closed`: the application closed the socket or shut down writing.

A connection to a fixture address first asks the runner (protocol v2,
`connect`): when the route's next script entry is `refused`, `connect`
raises `ConnectionRefusedError` (errno ECONNREFUSED) and `connect_ex`
returns ECONNREFUSED, as a closed port would, and nothing connects.

A blocking read (recv/recv_into/recvfrom/recvfrom_into on a socket with a
timeout other than 0) on a tracked connection never waits in real time: if
no byte is ready, the shim blocks on the virtual clock until the runner
releases data on it, or until the socket's timeout has passed in virtual
time, when it raises `socket.timeout` ("timed out") exactly as the real call
would. Non-blocking sockets (asyncio's) pass straight through, counted.
"""

import errno
import fcntl
import os
import select
import socket
import struct
import termios
import weakref

from ._clock import CLOCK, REAL, _channel, seconds_to_ns

_S = socket.socket
_REAL = {
    name: getattr(_S, name)
    for name in (
        "connect", "connect_ex", "recv", "recv_into", "recvfrom", "recvfrom_into",
        "send", "sendall", "sendto", "sendmsg", "_real_close", "shutdown", "detach",
    )
    if hasattr(_S, name)
}

# tcp_info.tcpi_state values that mean the peer has closed (or reset).
_PEER_CLOSED = {6, 7, 8, 9, 11}  # TIME_WAIT, CLOSE, CLOSE_WAIT, LAST_ACK, CLOSING
_LOOPBACK = {"127.0.0.1", "localhost", "::1", "::ffff:127.0.0.1"}
_FIONREAD = termios.FIONREAD


class Conn:
    __slots__ = ("port", "fd", "written", "read", "eof", "closed", "sock_ref", "__weakref__")

    def __init__(self, sock, port):
        self.port = port
        self.fd = sock.fileno()
        self.written = 0
        self.read = 0
        self.eof = False
        self.closed = False
        self.sock_ref = weakref.ref(sock, self._collected)

    def _collected(self, _ref):
        # The socket object was freed without close(): its fd is closed.
        self.closed = True
        self.fd = -1

    def queued(self):
        if self.closed or self.fd < 0:
            return 0
        try:
            return struct.unpack("i", fcntl.ioctl(self.fd, _FIONREAD, b"\0\0\0\0"))[0]
        except OSError:
            return 0

    def peer_closed(self):
        if self.eof:
            return True
        sock = self.sock_ref()
        if sock is None or self.closed:
            return False
        try:
            info = _S.getsockopt(sock, socket.IPPROTO_TCP, socket.TCP_INFO, 8)
        except OSError:
            return False
        return info[0] in _PEER_CLOSED

    def entry(self):
        return {
            "port": self.port,
            "written": self.written,
            "arrived": self.read + self.queued(),
            "eof": self.peer_closed(),
            "closed": self.closed,
        }


class Registry:
    def __init__(self):
        self.by_sock = weakref.WeakKeyDictionary()
        self.all = []  # every tracked connection of the row, closed ones too

    def track(self, sock, port):
        c = Conn(sock, port)
        self.by_sock[sock] = c
        self.all.append(c)
        return c

    def report(self):
        return [c.entry() for c in self.all]

    def by_port(self, port):
        for c in reversed(self.all):
            if c.port == port:
                return c
        return None

    def await_delivery(self, conns):
        """After the runner released bytes (or closed), waits in real time,
        briefly, until they have reached this process, so that the program
        sees at virtual time t everything the server did up to t."""
        deadline = REAL["monotonic"]() + max(CLOCK.stall_ms, 100) / 1000
        for entry in conns:
            c = self.by_port(entry.get("port"))
            if c is None or c.closed:
                continue
            sent = int(entry.get("sent", 0))
            want_eof = bool(entry.get("closed"))
            while c.read + c.queued() < sent or (want_eof and not c.peer_closed()):
                if c.closed:
                    break
                if REAL["monotonic"]() > deadline:
                    _channel.fail(
                        f"the runner sent {sent} bytes on the connection from port {c.port}"
                        f" but only {c.read + c.queued()} arrived within {CLOCK.stall_ms} ms of real time"
                    )
                try:
                    select.select([c.fd], [], [], 0.001)
                except (OSError, ValueError):
                    break

    def forget_all(self):
        self.by_sock = weakref.WeakKeyDictionary()
        self.all = []


REGISTRY = Registry()


def _is_fixture(sock, address):
    if not CLOCK.fixture_ports or sock.family not in (socket.AF_INET, socket.AF_INET6):
        return False
    if not isinstance(address, tuple) or len(address) < 2:
        return False
    host, port = address[0], address[1]
    return port in CLOCK.fixture_ports and (host in _LOOPBACK or (host, port) in CLOCK.fixtures)


def _register(sock, address):
    try:
        port = sock.getsockname()[1]
    except OSError:
        return
    if port:
        REGISTRY.track(sock, port)


def _refused(address):
    """Protocol v2: the runner says this connection is refused (the
    route's next script entry is `refused`): the program gets the error a
    real refusal gives, and nothing connects."""
    return CLOCK.refuses_connect(address[1])


def connect(self, address):
    if not _is_fixture(self, address):
        return _REAL["connect"](self, address)
    if _refused(address):
        # What connect(2) gives on a closed port, blocking or not (asyncio's
        # sock_connect calls this and fails its future with it).
        raise ConnectionRefusedError(errno.ECONNREFUSED, os.strerror(errno.ECONNREFUSED))
    try:
        _REAL["connect"](self, address)
    except BlockingIOError:
        _register(self, address)  # in progress (non-blocking): in flight
        raise
    _register(self, address)


def connect_ex(self, address):
    if not _is_fixture(self, address):
        return _REAL["connect_ex"](self, address)
    if _refused(address):
        return errno.ECONNREFUSED
    rc = _REAL["connect_ex"](self, address)
    if rc in (0, errno.EINPROGRESS, errno.EWOULDBLOCK, errno.EALREADY):
        _register(self, address)
    return rc


def _readable_now(fd):
    try:
        r, _, _ = select.select([fd], [], [], 0)
    except (OSError, ValueError):
        return True  # let the real call report the error
    return bool(r)


def _wait_readable(sock, conn):
    """Blocks on the virtual clock until `sock` has data (or EOF), or its
    timeout passes in virtual time."""
    timeout = sock.gettimeout()
    if timeout == 0.0:
        return
    deadline = None if timeout is None else CLOCK.now_ns + seconds_to_ns(timeout)
    while True:
        if _readable_now(conn.fd):
            return
        if deadline is not None and CLOCK.now_ns >= deadline:
            raise socket.timeout("timed out")
        CLOCK.block(deadline, "recv", [conn.port])


def _after_read(conn, n, nbytes_asked):
    conn.read += n
    if n == 0 and nbytes_asked != 0:
        conn.eof = True


def _reader(name, size_of, flags_at):
    real = _REAL[name]

    def method(self, *args, **kwargs):
        conn = REGISTRY.by_sock.get(self)
        if conn is None:
            return real(self, *args, **kwargs)
        flags = args[flags_at] if len(args) > flags_at else kwargs.get("flags", 0)
        if not flags & socket.MSG_DONTWAIT:
            _wait_readable(self, conn)
        try:
            result = real(self, *args, **kwargs)
        except (ConnectionResetError, ConnectionAbortedError, BrokenPipeError):
            conn.eof = True
            raise
        if not flags & socket.MSG_PEEK:
            n, asked = size_of(result, args, kwargs)
            _after_read(conn, n, asked)
        return result

    method.__name__ = name
    method.__qualname__ = f"socket.{name}"
    return method


def _asked(args, kwargs, pos, key, default=None):
    if len(args) > pos:
        return args[pos]
    return kwargs.get(key, default)


def _size_recv(result, args, kwargs):
    return len(result), _asked(args, kwargs, 0, "bufsize", 1)


def _size_recvfrom(result, args, kwargs):
    return len(result[0]), _asked(args, kwargs, 0, "bufsize", 1)


def _size_recv_into(result, args, kwargs):
    asked = _asked(args, kwargs, 1, "nbytes", 0) or len(memoryview(_asked(args, kwargs, 0, "buffer")))
    return result, asked


def _size_recvfrom_into(result, args, kwargs):
    asked = _asked(args, kwargs, 1, "nbytes", 0) or len(memoryview(_asked(args, kwargs, 0, "buffer")))
    return result[0], asked


def send(self, data, *args):
    n = _REAL["send"](self, data, *args)
    conn = REGISTRY.by_sock.get(self)
    if conn is not None:
        conn.written += n
    return n


def sendall(self, data, *args):
    _REAL["sendall"](self, data, *args)
    conn = REGISTRY.by_sock.get(self)
    if conn is not None:
        conn.written += len(memoryview(data).cast("B"))


def sendto(self, data, *args):
    n = _REAL["sendto"](self, data, *args)
    conn = REGISTRY.by_sock.get(self)
    if conn is not None:
        conn.written += n
    return n


def sendmsg(self, buffers, *args):
    n = _REAL["sendmsg"](self, buffers, *args)
    conn = REGISTRY.by_sock.get(self)
    if conn is not None:
        conn.written += n
    return n


def _real_close(self, *args):
    conn = REGISTRY.by_sock.get(self)
    if conn is not None:
        conn.closed = True
        conn.fd = -1
    return _REAL["_real_close"](self, *args)


def shutdown(self, how):
    conn = REGISTRY.by_sock.get(self)
    if conn is not None and how in (socket.SHUT_WR, socket.SHUT_RDWR):
        conn.closed = True
    return _REAL["shutdown"](self, how)


def detach(self):
    conn = REGISTRY.by_sock.pop(self, None)
    if conn is not None:
        conn.closed = True
        conn.fd = -1
    return _REAL["detach"](self)


def patch_socket():
    CLOCK.sockets = REGISTRY
    _S.connect = connect
    _S.connect_ex = connect_ex
    # recv(bufsize, flags), recv_into(buffer, nbytes, flags): where flags sits.
    _S.recv = _reader("recv", _size_recv, 1)
    _S.recvfrom = _reader("recvfrom", _size_recvfrom, 1)
    _S.recv_into = _reader("recv_into", _size_recv_into, 2)
    _S.recvfrom_into = _reader("recvfrom_into", _size_recvfrom_into, 2)
    _S.send = send
    _S.sendall = sendall
    _S.sendto = sendto
    if "sendmsg" in _REAL:
        _S.sendmsg = sendmsg
    _S._real_close = _real_close
    _S.shutdown = shutdown
    _S.detach = detach
