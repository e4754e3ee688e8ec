"""A fixture agent whose answer to session/new holds JSON nested 300 deep (under `_meta`):
the reference agent behind a line proxy. The run must still write result.json and pass."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path

REFERENCE_AGENT = Path(__file__).resolve().parents[2] / "src" / "acp_journeys" / "demo" / "reference_agent.py"
DEPTH = 300


def deep() -> object:
    value: object = "bottom"
    for _ in range(DEPTH):
        value = {"d": value}
    return value


def main() -> int:
    agent = subprocess.Popen([sys.executable, str(REFERENCE_AGENT)], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert agent.stdin is not None and agent.stdout is not None

    def pump_in() -> None:
        for line in sys.stdin.buffer:
            agent.stdin.write(line)
            agent.stdin.flush()
        agent.stdin.close()

    threading.Thread(target=pump_in, daemon=True).start()
    for line in agent.stdout:
        try:
            message = json.loads(line)
        except ValueError:
            message = None
        if isinstance(message, dict) and isinstance(message.get("result"), dict) and "sessionId" in message["result"]:
            message["result"]["_meta"] = deep()
            line = (json.dumps(message) + "\n").encode()
        sys.stdout.buffer.write(line)
        sys.stdout.buffer.flush()
    return agent.wait()


if __name__ == "__main__":
    sys.exit(main())
