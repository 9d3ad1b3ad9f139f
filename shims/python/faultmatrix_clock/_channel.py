"""The control channel: newline-delimited JSON over one loopback TCP
connection to the runner (shims/PROTOCOL.md, "Transport").

The channel's socket is a plain `socket.socket` that never matches a fixture
address, so the socket patches pass it straight through. Writes may come from
two threads (the waiting thread and the watchdog) and are serialised; replies
are read only by the thread that waits, one block at a time.
"""

import json
import os
import socket
import sys
import threading

# Exit status of a process whose shim could not keep the row on the virtual
# clock (no runner, refused, protocol error). Never a silent real-time fallback.
EXIT_SHIM_FAILED = 97

MAX_LINE = 16 * 1024 * 1024


def fail(message):
    """Ends the process: the row cannot run on the virtual clock."""
    try:
        sys.stderr.write(f"faultmatrix clock shim: {message}\n")
        sys.stderr.flush()
    except Exception:
        pass
    os._exit(EXIT_SHIM_FAILED)


def parse_address(text):
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit():
        fail(f"FAULTMATRIX_CLOCK={text!r} is not HOST:PORT (such as 127.0.0.1:40123)")
    host = host.strip("[]")
    if host not in ("127.0.0.1", "localhost", "::1"):
        fail(f"FAULTMATRIX_CLOCK={text!r}: the control channel is loopback only")
    return host, int(port)


class Channel:
    def __init__(self, address, connect_timeout=10.0):
        host, port = parse_address(address)
        try:
            self.sock = socket.create_connection((host, port), timeout=connect_timeout)
        except OSError as err:
            fail(f"cannot reach the runner's clock at {address}: {err}")
        self.sock.settimeout(None)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._buf = bytearray()
        self._wlock = threading.Lock()
        self.closed = False

    def send(self, message):
        data = json.dumps(message, separators=(",", ":")).encode() + b"\n"
        with self._wlock:
            if self.closed:
                return
            try:
                self.sock.sendall(data)
            except OSError as err:
                self.closed = True
                fail(f"the runner's clock channel broke while sending: {err}")

    def try_send(self, message):
        """As send, but never ends the process (exit paths, heartbeats)."""
        data = json.dumps(message, separators=(",", ":")).encode() + b"\n"
        with self._wlock:
            if self.closed:
                return False
            try:
                self.sock.sendall(data)
                return True
            except OSError:
                self.closed = True
                return False

    def recv(self):
        """The next message; ends the process if the runner went away."""
        while True:
            i = self._buf.find(b"\n")
            if i >= 0:
                line = bytes(self._buf[:i])
                del self._buf[: i + 1]
                try:
                    message = json.loads(line)
                except ValueError:
                    fail(f"the runner sent a line that is not JSON: {line[:200]!r}")
                if not isinstance(message, dict) or not isinstance(message.get("op"), str):
                    fail(f"the runner sent a message without an op: {line[:200]!r}")
                return message
            if len(self._buf) > MAX_LINE:
                fail("the runner sent a line longer than 16 MiB")
            try:
                chunk = self.sock.recv(65536)
            except OSError as err:
                fail(f"the runner's clock channel broke: {err}")
            if not chunk:
                fail("the runner closed the clock channel (the row was stopped, or the runner exited)")
            self._buf += chunk

    def close(self):
        with self._wlock:
            self.closed = True
            try:
                self.sock.close()
            except OSError:
                pass
