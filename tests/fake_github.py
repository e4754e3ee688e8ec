"""A real HTTP server on loopback standing in for the GitHub API.

One implementation for every test that talks to it: it records each request (method, path,
headers, raw body). A POST (the check-runs endpoint) is answered with the next of `statuses` (the
last one repeats); a GET with what `gets` holds for its path (without the query), else 404.
"""

from __future__ import annotations

import http.server
import json
import threading
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field


@dataclass
class FakeGitHub:
    statuses: list[int] = field(default_factory=lambda: [201])
    check_id: int = 7
    check_url: str = "https://github.example.test/o/r/runs/7"
    requests: list[dict] = field(default_factory=list)
    gets: dict[str, tuple[int, dict[str, str], bytes]] = field(default_factory=dict)
    """path -> (status, headers, body); a header value may hold {url}, the server's own base."""
    url: str = ""

    def answer(self) -> int:
        return self.statuses.pop(0) if len(self.statuses) > 1 else self.statuses[0]


@contextmanager
def serve(fake: FakeGitHub) -> Iterator[FakeGitHub]:
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            fake.requests.append({"method": "POST", "path": self.path, "headers": dict(self.headers.items()),
                                  "body": body})
            status = fake.answer()
            if status == 201:
                answer = {"id": fake.check_id, "html_url": fake.check_url}
            else:
                answer = {"message": "Resource not accessible by integration" if status == 403 else "boom"}
            data = json.dumps(answer).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:  # noqa: N802
            fake.requests.append({"method": "GET", "path": self.path, "headers": dict(self.headers.items()),
                                  "body": b""})
            status, headers, data = fake.gets.get(
                urllib.parse.urlsplit(self.path).path, (404, {}, b'{"message": "Not Found"}'))
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value.replace("{url}", fake.url))
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    fake.url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield fake
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
