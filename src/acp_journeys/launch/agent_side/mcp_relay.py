#!/usr/bin/env python3
"""Relay an MCP stdio session to the runner's Unix socket: `python3 mcp_relay.py SOCKET_PATH`.

The ACP agent starts this script as its `rondar` stdio MCP server. It holds no MCP logic: it
connects to SOCKET_PATH, where the runner's one MCP server listens, and copies bytes both ways,
the agent's stdin to the socket and the socket to the agent's stdout.

Rules:
- Standard library only, and no import from acp_journeys: it must start fast and run with any
  python3 that the agent's environment offers.
- It must never outlive its stdin. The relay counts as a process of the agent, so a relay left
  after the agent ends is a finding against the agent. When stdin ends it half-closes the socket,
  gives the server up to 1 s to finish its answers, and exits 0.
- When the socket closes, it exits. On SIGTERM or SIGINT it exits at once.
- Errors go to stderr as one line starting with "mcp_relay:".
"""

import errno
import os
import select
import signal
import socket
import sys
import threading
import time

CONNECT_TIMEOUT = 5.0  # seconds to wait for the socket to appear and accept
DRAIN_TIMEOUT = 1.0  # seconds the server gets to finish after stdin ends
CHUNK = 65536


def _say(message):
    try:
        os.write(2, ("mcp_relay: " + message + "\n").encode("utf-8", "replace"))
    except OSError:
        pass


class _StdinClosed(Exception):
    """Stdin ended before the socket accepted: there is nobody left to serve."""


def _connect(path, early):
    """Connect to `path`, retrying while it is missing or refuses, for up to CONNECT_TIMEOUT.

    While it waits it keeps reading stdin into `early` (sent once connected), so that an agent
    that closes our stdin meanwhile never waits on us.
    """
    deadline = time.monotonic() + CONNECT_TIMEOUT
    delay = 0.01
    while True:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.connect(path)
            return sock
        except OSError as exc:
            sock.close()
            retry = exc.errno in (errno.ENOENT, errno.ECONNREFUSED, errno.EAGAIN)
            if not retry or time.monotonic() + delay > deadline:
                raise
        try:
            readable, _, _ = select.select([0], [], [], delay)
            data = os.read(0, CHUNK) if readable else None
        except (OSError, ValueError):
            data = b""
        if data == b"":
            raise _StdinClosed()
        if data:
            early.append(data)
        delay = min(delay * 2, 0.2)


def _write_all(fd, data):
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def main(argv):
    # Exit at once on a signal: no cleanup to do, nothing buffered (all writes are raw).
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    if len(argv) != 2 or not argv[1]:
        _say("usage: mcp_relay.py SOCKET_PATH")
        return 2
    path = argv[1]
    early = []
    try:
        sock = _connect(path, early)
        if early:
            sock.sendall(b"".join(early))
    except _StdinClosed:
        return 0
    except OSError as exc:
        _say("cannot connect to %s: %s" % (path, exc.strerror or exc))
        return 1

    done = threading.Event()  # set by either pump when it ends
    state = {"stdin_eof": False, "socket_closed": False, "error": None}

    def up():  # agent's stdin -> socket
        while True:
            try:
                data = os.read(0, CHUNK)
            except OSError:
                data = b""  # stdin unusable: same as its end
            if not data:
                state["stdin_eof"] = True
                break
            try:
                sock.sendall(data)
            except OSError as exc:
                if state["error"] is None:
                    state["error"] = "the server's socket closed while sending: %s" % (exc.strerror or exc)
                break
        done.set()

    def down():  # socket -> agent's stdout
        try:
            while True:
                data = sock.recv(CHUNK)
                if not data:
                    break
                _write_all(1, data)
        except OSError as exc:
            # EPIPE: the agent stopped reading; ECONNRESET: the server went away. Both end us quietly.
            if exc.errno not in (errno.EPIPE, errno.ECONNRESET) and state["error"] is None:
                state["error"] = "relaying the server's answers failed: %s" % (exc.strerror or exc)
        state["socket_closed"] = True
        done.set()

    for pump in (up, down):
        threading.Thread(target=pump, name=pump.__name__, daemon=True).start()

    done.wait()
    if state["stdin_eof"] and not state["socket_closed"]:
        # The agent closed our input: tell the server, let it flush its last answers, then go.
        try:
            sock.shutdown(socket.SHUT_WR)
        except OSError:
            pass
        deadline = time.monotonic() + DRAIN_TIMEOUT
        while not state["socket_closed"]:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            done.clear()
            if state["socket_closed"]:
                break
            done.wait(left)
    if state["error"]:
        _say(state["error"])
        return 1
    return 0


if __name__ == "__main__":
    # os._exit: the pump threads may still block in read(); never wait for them.
    os._exit(main(sys.argv))
