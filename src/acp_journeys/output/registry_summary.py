"""The registry run's summary (`summary.json`), made from `DIR/agents/*/` alone.

Rules of this module: each agent's folder holds `status.json` (what `acp-journeys registry`
knew of it: the entry, the install, why it did not run) and, when it ran, `result.json`. The
verdicts come from the evidence, judged again here as `verify` judges it; a file that cannot be
read is that agent's row with why, never an exception. "needs a login" is read from the
evidence too: every journey failed at `session/new` and its error is an auth error (ACP's
-32000, or words of a login). `compare` lists what changed since a previous summary. No clock:
the caller gives the date. Nothing here renders HTML (html/dashboard.py does).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from acp_journeys.output.bounded_file import UnreadableFile, read_bounded
from acp_journeys.rules.catalog import JOURNEY_IDS

SUMMARY_SCHEMA = "acp-journeys/registry-summary/1"
ID = re.compile(r"^[a-z][a-z0-9-]*$")
STATUSES = ("ran", "needs-login", "not-installed", "bad-entry", "run-error")
AUTH_REQUIRED = -32000
"""ACP's error code for "authentication required"."""
AUTH_WORDS = re.compile(r"auth|log ?in\b|sign ?in|credential|api[ _-]?key|unauthori[sz]ed|forbidden|token", re.I)
MAX_STATUS_BYTES = 1 << 20


class SummaryError(Exception):
    pass


def agent_row(folder: Path) -> dict[str, Any]:
    """One agent's row (see the module's rules)."""
    row: dict[str, Any] = {"id": folder.name, "name": folder.name, "version": "", "kind": "", "status": "run-error",
                           "reason": "", "journeys": {}, "passed": 0, "total": 0, "install_s": None,
                           "run_s": None, "tool_version": "", "date": "", "report": False, "notes": [],
                           "protocol": None}
    status: dict[str, Any] = {}
    try:
        raw = json.loads(read_bounded(str(folder / "status.json"), MAX_STATUS_BYTES, "status.json"))
        status = raw if isinstance(raw, dict) else {}
    except (UnreadableFile, ValueError, UnicodeDecodeError):
        status = {}
    for key in ("name", "version", "kind", "reason", "tool_version", "date"):
        if isinstance(status.get(key), str):
            row[key] = status[key]
    for key in ("install_s", "run_s"):
        if isinstance(status.get(key), (int, float)) and not isinstance(status.get(key), bool):
            row[key] = status[key]
    row["notes"] = [n for n in status.get("notes", []) if isinstance(n, str)] if isinstance(
        status.get("notes"), list) else []
    if status.get("status") in STATUSES:
        row["status"] = status["status"]
    elif not status:
        row["reason"] = "no readable status.json"
    result_path = folder / "result.json"
    if row["status"] != "ran" and not result_path.exists():
        return row
    if not result_path.exists():
        row["status"], row["reason"] = "run-error", "no result.json"
        return row
    try:
        result = _judged(result_path)
    except SummaryError as exc:
        row["status"], row["reason"] = "run-error", str(exc)
        return row
    row["status"] = "ran"
    row["tool_version"] = result.tool_version
    row["date"] = result.started_at
    row["report"] = (folder / "report.html").is_file()
    row["journeys"] = {j.id: {"verdict": j.verdict, "failures": [f.id for f in j.failures]} for j in result.journeys}
    row["passed"] = sum(1 for j in result.journeys if j.verdict == "pass")
    row["total"] = len(result.journeys)
    if result.partial:
        row["reason"] = "partial run (stopped or over its bound)"
    login = login_message(result)
    if login is not None:
        row["status"] = "needs-login"
        word = status.get("login_row") if isinstance(status.get("login_row"), str) else ""
        row["reason"] = f"{word}: {login}" if word else login
    row["protocol"] = protocol_tier(result)
    return row


def _judged(path: Path):
    from acp_journeys.output import result_file
    from acp_journeys.rules.judge import judge_result
    from acp_journeys.rules.protocol_tier import judge_tiers

    try:
        # The journeys and the protocol tier, both judged again from the evidence, as verify does.
        return judge_tiers(judge_result(result_file.read(str(path))))
    except result_file.ResultFileError as exc:
        raise SummaryError(f"result.json: {exc}".replace(str(path), "result.json")) from None
    except (ValueError, TypeError, KeyError, AttributeError, RecursionError) as exc:
        raise SummaryError(f"result.json cannot be judged ({type(exc).__name__})") from None


def login_message(result) -> str | None:
    """The auth error of `session/new`, when it is why every journey failed."""
    journeys = result.journeys
    if not journeys or not all(any(f.id == "session-new-error" for f in j.failures) for j in journeys):
        return None
    for journey in journeys:
        for request in journey.evidence.requests:
            error = request.error if request.method == "session/new" else None
            if not isinstance(error, dict):
                continue
            code, message = error.get("code"), str(error.get("message", ""))
            if code == AUTH_REQUIRED or AUTH_WORDS.search(message):
                return f"session/new answered {code} {' '.join(message.split())[:300]!r}"
    return None


def protocol_tier(result) -> dict[str, int] | None:
    """MUSTs passed of those that apply, when the result has a protocol tier (`tiers.protocol`),
    as the tier's own judge counts them (a MUST met with a warning is met)."""
    tier = result.tiers.protocol if result.tiers else None
    if tier is None:
        return None
    return {"passed": tier.musts_passed, "applicable": tier.musts_applicable}


def build_summary(folder: str, *, tool_version: str, date: str, previous: dict | None = None) -> dict[str, Any]:
    agents_dir = Path(folder) / "agents"
    rows = []
    if agents_dir.is_dir():
        rows = [agent_row(p) for p in sorted(agents_dir.iterdir()) if p.is_dir() and ID.match(p.name)]
    summary: dict[str, Any] = {
        "schema": SUMMARY_SCHEMA, "tool_version": tool_version, "date": date,
        "agents": rows,
        "journeys": {jid: sum(1 for r in rows if r["journeys"].get(jid, {}).get("verdict") == "pass")
                     for jid in JOURNEY_IDS},
        "counts": {s: sum(1 for r in rows if r["status"] == s) for s in STATUSES},
        "changes": None,
    }
    if previous is not None:
        summary["changes"] = compare(summary, previous)
        summary["previous_date"] = previous.get("date") if isinstance(previous.get("date"), str) else ""
    return summary


def compare(current: dict[str, Any], previous: dict[str, Any]) -> dict[str, list[dict[str, str]]]:
    """Regressions (passed before, not now; or ran before and no longer runs) and fixes."""
    before = {r.get("id"): r for r in previous.get("agents", []) if isinstance(r, dict)}
    regressions: list[dict[str, str]] = []
    fixes: list[dict[str, str]] = []
    for row in current["agents"]:
        old = before.get(row["id"])
        if not isinstance(old, dict):
            continue
        old_journeys = old.get("journeys") if isinstance(old.get("journeys"), dict) else {}
        if old.get("status") == "ran" and row["status"] != "ran":
            regressions.append({"agent": row["id"], "journey": "", "was": "ran", "now": row["status"]})
            continue
        if old.get("status") != "ran" and row["status"] == "ran" and old.get("status") in STATUSES:
            fixes.append({"agent": row["id"], "journey": "", "was": str(old.get("status")), "now": "ran"})
        for jid in JOURNEY_IDS:
            now = row["journeys"].get(jid, {}).get("verdict")
            was = old_journeys.get(jid, {}).get("verdict") if isinstance(old_journeys.get(jid), dict) else None
            if was == "pass" and now in ("fail", "error"):
                regressions.append({"agent": row["id"], "journey": jid, "was": "pass", "now": now})
            elif was in ("fail", "error") and now == "pass":
                fixes.append({"agent": row["id"], "journey": jid, "was": was, "now": "pass"})
    return {"regressions": regressions, "fixes": fixes}


def read_summary(path: str) -> dict[str, Any]:
    try:
        data = json.loads(read_bounded(path, 64 << 20, "summary.json"))
    except UnreadableFile as exc:
        raise SummaryError(str(exc)) from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise SummaryError(f"{path}: not JSON ({exc})") from None
    if not isinstance(data, dict) or data.get("schema") != SUMMARY_SCHEMA or not isinstance(data.get("agents"), list):
        raise SummaryError(f"{path}: not a registry summary (schema {SUMMARY_SCHEMA})")
    return data
