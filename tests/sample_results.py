"""Real `RunResult`s for the report, baseline and GitHub tests (built, not mocked)."""

from __future__ import annotations

from acp_journeys.rules.catalog import FAILURES, JOURNEYS, anchor_for, doc_link
from acp_journeys.rules.evidence import Failure, JourneyEvidence, JourneyResult, ProcessEvidence, RunResult

DOCS = "https://docs.example.test/journeys.md"

INJECTION = ("<script>alert(1)</script> **bold** [link](https://evil.test) | cell | `code` "
             "<img src=x onerror=alert(1)> &amp; # heading _em_ ~~strike~~ $x$\n- list item\n```\nfence")


def failure(fid: str, journey: str, detail: str = "") -> Failure:
    return Failure(id=fid, message=FAILURES[fid].message, doc=doc_link(anchor_for(fid, journey), DOCS),
                   detail=detail)


def journey(jid: str, verdict: str = "pass", failures: list[Failure] | None = None,
            stderr: str = "", seconds: float = 1.5, warnings: list[str] | None = None) -> JourneyResult:
    j = next(x for x in JOURNEYS if x.id == jid)
    processes = [ProcessEvidence(index=1, argv=["agent", "--acp"], started_at=0.0, stderr_tail=stderr,
                                 stderr_bytes=len(stderr.encode("utf-8", "surrogatepass")))]
    return JourneyResult(id=jid, title=j.title, doc=doc_link(j.anchor, DOCS), verdict=verdict,  # type: ignore[arg-type]
                         failures=failures or [], duration_s=seconds, warnings=warnings or [],
                         evidence=JourneyEvidence(journey=jid, processes=processes))


def run(journeys: list[JourneyResult], **extra: object) -> RunResult:
    passed = sum(1 for j in journeys if j.verdict == "pass")
    return RunResult(tool_version="0.1.0", agent_command=["agent", "--acp"], started_at="2026-11-05T10:00:00+00:00",
                     ended_at="2026-11-05T10:01:00+00:00", docs_url=DOCS, journeys=journeys,
                     verdict="pass" if passed == len(journeys) else "fail", passed=passed,
                     failed=len(journeys) - passed, **extra)  # type: ignore[arg-type]


def all_pass() -> RunResult:
    return run([journey(j.id) for j in JOURNEYS])


def mixed() -> RunResult:
    """turn-to-end fails twice (with injected agent text), stop-running-turn errors, the rest pass."""
    js = []
    for j in JOURNEYS:
        if j.id == "turn-to-end":
            js.append(journey(j.id, "fail", [failure("reply-not-in-chunks", j.id, detail="reply: " + INJECTION),
                                             failure("stop-reason", j.id, detail="got max_tokens")],
                              stderr="Traceback: boom\n" + INJECTION + "\n``````\nend"))
        elif j.id == "stop-running-turn":
            js.append(journey(j.id, "error", [failure("runner-error", j.id, detail="KeyError: 'x'")],
                              stderr="warn\x00\x1b[31mred\x1b[0m\x07 \ud800"))
        else:
            js.append(journey(j.id))
    return run(js)
