"""Headless Chromium for the HTML report's tests, the benchmark and the README's screenshot.

A real browser (Debian's `chromium`, installed by scripts/setup/setup-chromium.sh), driven over the
DevTools protocol with a small WebSocket client of the standard library: no browser package.
Each `Chromium` is a fresh profile in a temp folder, started with no network service worth the
name (no sync, no component updates, no background networking) and removed at the end; every
wait is bounded.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import tempfile
import time
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any, Callable

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run", "--no-default-browser-check",
         "--disable-extensions", "--mute-audio", "--hide-scrollbars"]
START_TIMEOUT_S = 30.0
CALL_TIMEOUT_S = 60.0


def find_chromium() -> str | None:
    for name in (os.environ.get("ACP_JOURNEYS_CHROMIUM", ""), "chromium", "chromium-browser"):
        if name and shutil.which(name):
            return shutil.which(name)
    return None


class WebSocket:
    """The client side of RFC 6455, text frames only: enough for the DevTools protocol."""

    def __init__(self, url: str, timeout: float = CALL_TIMEOUT_S) -> None:
        parts = urllib.parse.urlsplit(url)
        self.sock = socket.create_connection((parts.hostname or "127.0.0.1", parts.port or 80), timeout=timeout)
        key = base64.b64encode(os.urandom(16)).decode()
        path = parts.path + (f"?{parts.query}" if parts.query else "")
        self.sock.sendall((f"GET {path} HTTP/1.1\r\nHost: {parts.hostname}:{parts.port}\r\nUpgrade: websocket\r\n"
                           f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n")
                          .encode())
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = self.sock.recv(4096)
            if not chunk:
                raise ConnectionError("the browser closed the WebSocket handshake")
            head += chunk
        head, self.buffer = head.split(b"\r\n\r\n", 1)
        if not head.startswith(b"HTTP/1.1 101"):
            raise ConnectionError(f"no WebSocket upgrade: {head[:200]!r}")

    def _read(self, n: int) -> bytes:
        while len(self.buffer) < n:
            chunk = self.sock.recv(max(65536, n - len(self.buffer)))
            if not chunk:
                raise ConnectionError("the browser closed the WebSocket")
            self.buffer += chunk
        out, self.buffer = self.buffer[:n], self.buffer[n:]
        return out

    def send(self, text: str) -> None:
        payload = text.encode()
        mask = os.urandom(4)
        n = len(payload)
        header = bytes([0x81]) + (bytes([0x80 | n]) if n < 126 else
                                  bytes([0x80 | 126]) + struct.pack("!H", n) if n < 65536 else
                                  bytes([0x80 | 127]) + struct.pack("!Q", n))
        masked = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
        self.sock.sendall(header + mask + masked)

    def recv(self) -> str:
        message = b""
        while True:
            b0, b1 = self._read(2)
            n = b1 & 0x7F
            if n == 126:
                n = struct.unpack("!H", self._read(2))[0]
            elif n == 127:
                n = struct.unpack("!Q", self._read(8))[0]
            mask = self._read(4) if b1 & 0x80 else None
            data = self._read(n)
            if mask:
                data = bytes(b ^ mask[i % 4] for i, b in enumerate(data))
            opcode = b0 & 0x0F
            if opcode == 0x8:
                raise ConnectionError("the browser closed the WebSocket")
            if opcode == 0x9:  # ping: answer, go on
                self.sock.sendall(bytes([0x8A, 0x80]) + os.urandom(4))
                continue
            if opcode in (0x1, 0x2, 0x0):
                message += data
                if b0 & 0x80:
                    return message.decode()

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass


class Page:
    """One tab, over its own DevTools WebSocket; events are kept in `events`."""

    def __init__(self, ws_url: str, on_close: Callable[[], None] | None = None) -> None:
        self.ws = WebSocket(ws_url)
        self.on_close = on_close
        self.next_id = 0
        self.events: list[dict[str, Any]] = []

    def call(self, method: str, timeout: float = CALL_TIMEOUT_S, **params: Any) -> dict[str, Any]:
        self.next_id += 1
        ident = self.next_id
        self.ws.send(json.dumps({"id": ident, "method": method, "params": params}))
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.ws.sock.settimeout(max(0.1, deadline - time.monotonic()))
            message = json.loads(self.ws.recv())
            if message.get("id") == ident:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message.get("result", {})
            self.events.append(message)
        raise TimeoutError(f"{method}: no answer in {timeout} s")

    def wait_event(self, method: str, timeout: float = CALL_TIMEOUT_S) -> dict[str, Any]:
        for i, event in enumerate(self.events):
            if event.get("method") == method:
                return self.events.pop(i)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.ws.sock.settimeout(max(0.1, deadline - time.monotonic()))
            message = json.loads(self.ws.recv())
            if message.get("method") == method:
                return message
            self.events.append(message)
        raise TimeoutError(f"no {method} in {timeout} s")

    def open(self, url: str, timeout: float = CALL_TIMEOUT_S) -> float:
        """Navigates and waits for the load event; returns the wall seconds it took."""
        start = time.monotonic()
        self.call("Page.navigate", url=url)
        self.wait_event("Page.loadEventFired", timeout)
        return time.monotonic() - start

    def evaluate(self, expression: str) -> Any:
        answer = self.call("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in answer:
            raise RuntimeError(f"{expression[:80]}: {answer['exceptionDetails']}")
        return answer.get("result", {}).get("value")

    def errors(self) -> list[str]:
        """Console errors, uncaught exceptions and browser log errors (CSP violations, failed loads)."""
        out = []
        for e in self.events:
            method, params = e.get("method"), e.get("params", {})
            if method == "Runtime.exceptionThrown":
                out.append(f"exception: {params.get('exceptionDetails', {}).get('text')}")
            elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
                out.append(f"console.{params.get('type')}: {[a.get('value') for a in params.get('args', [])]}")
            elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
                entry = params["entry"]
                out.append(f"log ({entry.get('source')}): {entry.get('text')} {entry.get('url', '')}")
        return out

    def requests(self) -> list[str]:
        return [e["params"]["request"]["url"] for e in self.events if e.get("method") == "Network.requestWillBeSent"]

    def screenshot(self, path: Path, width: int = 1280, height: int = 900, full_page: bool = False) -> None:
        self.call("Emulation.setDeviceMetricsOverride", width=width, height=height, deviceScaleFactor=1, mobile=False)
        if full_page:
            metrics = self.call("Page.getLayoutMetrics")
            size = metrics.get("cssContentSize") or metrics["contentSize"]
            height = int(size["height"])
            self.call("Emulation.setDeviceMetricsOverride", width=width, height=height, deviceScaleFactor=1,
                      mobile=False)
        shot = self.call("Page.captureScreenshot", format="png", captureBeyondViewport=full_page)
        path.write_bytes(base64.b64decode(shot["data"]))

    def close(self) -> None:
        self.ws.close()
        if self.on_close is not None:
            self.on_close()


class Chromium:
    """A headless browser of its own (fresh profile), ended with its whole process group."""

    def __init__(self, binary: str | None = None) -> None:
        found = binary or find_chromium()
        if found is None:
            raise FileNotFoundError("no chromium on PATH (scripts/setup/setup-chromium.sh installs it)")
        self.binary = found
        self.profile = tempfile.mkdtemp(prefix="acpj-chromium-")
        self.proc: subprocess.Popen[bytes] | None = None
        self.port = 0

    def __enter__(self) -> Chromium:
        self.proc = subprocess.Popen([self.binary, *FLAGS, f"--user-data-dir={self.profile}",
                                      "--remote-debugging-port=0", "about:blank"],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        port_file = Path(self.profile) / "DevToolsActivePort"
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if port_file.exists() and port_file.read_text().strip():
                self.port = int(port_file.read_text().split()[0])
                return self
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        self.__exit__(None, None, None)
        raise RuntimeError("chromium did not open its DevTools port")

    def page(self) -> Page:
        """A new tab (closed again by `Page.close`), with the events the checks read enabled."""
        request = urllib.request.Request(f"http://127.0.0.1:{self.port}/json/new?about:blank", method="PUT")
        target = json.loads(urllib.request.urlopen(request, timeout=10).read())
        page = Page(target["webSocketDebuggerUrl"], on_close=lambda: self._close_target(target["id"]))
        for domain in ("Page", "Runtime", "Log", "Network"):
            page.call(f"{domain}.enable")
        return page

    def _close_target(self, target_id: str) -> None:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{self.port}/json/close/{target_id}", timeout=10).read()
        except OSError:
            pass  # the browser is going anyway

    def __exit__(self, *exc: object) -> None:
        if self.proc is not None and self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait(timeout=30)
        shutil.rmtree(self.profile, ignore_errors=True)


def dump_dom(path: Path, binary: str | None = None, timeout: float = 60) -> str:
    """The DOM after load, as `chromium --dump-dom` prints it (scripts have run)."""
    found = binary or find_chromium()
    assert found is not None
    with tempfile.TemporaryDirectory(prefix="acpj-chromium-") as profile:
        proc = subprocess.run([found, *FLAGS, f"--user-data-dir={profile}", "--dump-dom", path.as_uri()],
                              capture_output=True, timeout=timeout, start_new_session=True)
    return proc.stdout.decode("utf-8", "replace")
