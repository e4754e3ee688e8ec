"""A fixture agent that prints its secret: $LEAKED_TOKEN on stderr (and in its own argv, if given),
then runs the reference agent. Every output of the run must still hold no trace of the token."""

from __future__ import annotations

import os
import sys
from pathlib import Path

REFERENCE_AGENT = Path(__file__).resolve().parents[2] / "src" / "acp_journeys" / "demo" / "reference_agent.py"

token = os.environ.get("LEAKED_TOKEN", "")
print(f"starting with token {token} and {{\"token\": \"{token}\"}}", file=sys.stderr, flush=True)
os.execv(sys.executable, [sys.executable, str(REFERENCE_AGENT)])
