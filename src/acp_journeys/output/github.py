"""`acp-journeys report PATH --github`: a check run, the job summary and the step outputs.

Rules of this module:
- Only the standard library (urllib). The environment is a mapping that the caller passes:
  GITHUB_API_URL (default the public API), GITHUB_REPOSITORY, GITHUB_SHA, GITHUB_EVENT_NAME,
  GITHUB_EVENT_PATH, GITHUB_TOKEN (the `token` argument wins), GITHUB_STEP_SUMMARY, GITHUB_OUTPUT,
  and, for a link to the run, GITHUB_SERVER_URL and GITHUB_RUN_ID.
- The check run is on the pull request's head sha for `pull_request` and `pull_request_target`
  events (read from the event file), else on GITHUB_SHA. It is `POST
  /repos/{owner}/{repo}/check-runs` with status completed, conclusion success or failure, and an
  output whose summary is `summary_markdown` within GitHub's 65,535 characters.
- Each request has a timeout; 5xx answers, 429 and connection errors are tried again a few
  times with short bounded waits. Redirects are not followed (the token stays with the API).
- Nothing here raises for a GitHub problem: a missing token or repository, 401/403/404 (a
  read-only token of a pull request from a fork or of Dependabot), any other answer, a network
  error, an unwritable file, each becomes a warning that says why. The token never appears in a
  warning, and this module prints nothing.
- With `artifact_url` (the action's artifact of result.json and the HTML report), both the check
  run's summary and the job summary link it.
- The summary is always appended to GITHUB_STEP_SUMMARY, kept (with what the file held) under
  1 MiB; the outputs `verdict`, `passed`, `failed`, `result-path` and `check-url` are appended
  to GITHUB_OUTPUT in the heredoc form with a random delimiter that no value holds.
"""

from __future__ import annotations

import json
import os
import secrets
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from acp_journeys import __version__
from acp_journeys.output.markdown import GITHUB_SUMMARY_LIMIT, escape_markdown, summary_markdown, summary_title
from acp_journeys.rules.evidence import RunResult

if TYPE_CHECKING:
    from acp_journeys.rules.baseline import BaselineOutcome
    from acp_journeys.rules.gate import Gate

DEFAULT_API_URL = "https://api.github.com"
STEP_SUMMARY_LIMIT = 1024 * 1024
"""GitHub's bound on one step's job summary, in bytes."""
REQUEST_TIMEOUT_S = 10.0
RETRY_WAITS_S: tuple[float, ...] = (1.0, 2.0, 4.0)
READ_ONLY_WARNING = ("the token cannot create check runs (a pull request from a fork or Dependabot has a "
                     "read-only token): the job summary has the verdict")


@dataclass
class GitHubReport:
    verdict: str
    conclusion: str
    head_sha: str | None = None
    check_url: str | None = None
    status: int | None = None
    """The HTTP status of the last answer to the check-run request, if any came."""
    attempts: int = 0
    summary_written: bool = False
    outputs_written: bool = False
    warnings: list[str] = field(default_factory=list)
    gate: Gate | None = None
    """The gate's word (PARTIAL, REFUSED) that the check run, the summary and `verdict` say."""


class NoRedirect(urllib.request.HTTPRedirectHandler):
    """A redirect comes back as an HTTPError: urllib would send the token on to any host."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):  # type: ignore[no-untyped-def]
        return None


def head_sha(env: Mapping[str, str]) -> tuple[str | None, list[str]]:
    """The sha to put the check run on, and warnings about how it was found."""
    warnings: list[str] = []
    event = env.get("GITHUB_EVENT_NAME", "")
    if event in ("pull_request", "pull_request_target"):
        path = env.get("GITHUB_EVENT_PATH", "")
        try:
            with open(path, encoding="utf-8") as fh:
                payload = json.load(fh)
            sha = payload["pull_request"]["head"]["sha"]
            if isinstance(sha, str) and sha:
                return sha, warnings
            warnings.append(f"the {event} event file has no pull_request.head.sha: using GITHUB_SHA")
        except (OSError, ValueError, KeyError, TypeError) as exc:
            warnings.append(f"cannot read the pull request's head sha from GITHUB_EVENT_PATH "
                            f"({type(exc).__name__}): using GITHUB_SHA")
    sha = env.get("GITHUB_SHA") or None
    if sha is None:
        warnings.append("no commit sha (GITHUB_SHA is not set): no check run")
    return sha, warnings


def redact_token(text: str, token: str | None) -> str:
    return text.replace(token, "***") if token else text


def api_message(body: bytes) -> str:
    try:
        message = json.loads(body.decode("utf-8", "replace")).get("message", "")
    except (ValueError, AttributeError):
        message = ""
    return str(message)[:300]


def post_json(url: str, payload: Mapping[str, Any], *, token: str, timeout: float = REQUEST_TIMEOUT_S,
              waits: Sequence[float] = RETRY_WAITS_S) -> tuple[int | None, bytes, int, str | None]:
    """POST JSON with retries: (status or None, body, attempts, connection error or None)."""
    data = json.dumps(payload).encode("utf-8")
    headers = {
        "Authorization": f"Bearer {token}",
        "Accept": "application/vnd.github+json",
        "X-GitHub-Api-Version": "2022-11-28",
        "Content-Type": "application/json",
        "User-Agent": f"acp-journeys/{__version__}",
    }
    opener = urllib.request.build_opener(NoRedirect)
    attempts = 0
    status: int | None = None
    body = b""
    error: str | None = None
    for wait in (*waits, None):
        attempts += 1
        request = urllib.request.Request(url, data=data, headers=headers, method="POST")
        try:
            with opener.open(request, timeout=timeout) as response:
                return response.status, response.read(), attempts, None
        except urllib.error.HTTPError as exc:
            status, body, error = exc.code, exc.read(), None
            if not (status >= 500 or status == 429):
                return status, body, attempts, None
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            status, body, error = None, b"", f"{type(exc).__name__}: {reason}"
        if wait is not None:
            time.sleep(wait)
    return status, body, attempts, error


def _check_payload(result: RunResult, sha: str, *, docs_url: str, check_name: str, conclusion: str,
                   env: Mapping[str, str], baseline: BaselineOutcome | None,
                   artifact_url: str | None = None, gate: Gate | None = None) -> dict[str, Any]:
    output: dict[str, Any] = {
        "title": summary_title(result, baseline, gate)[:250],
        "summary": summary_markdown(result, docs_url=docs_url, limit=GITHUB_SUMMARY_LIMIT, baseline=baseline,
                                    report_link=artifact_url, gate=gate),
    }
    warnings = [f"- {escape_markdown(j.id)}: {escape_markdown(w)}" for j in result.journeys for w in j.warnings]
    if warnings:
        text = "Warnings of the journeys:\n\n" + "\n".join(warnings) + "\n"
        if len(text) > GITHUB_SUMMARY_LIMIT:
            marker = "\n… warnings cut; see result.json\n"
            text = text[: text.rfind("\n", 0, GITHUB_SUMMARY_LIMIT - len(marker))] + marker
        output["text"] = text
    payload: dict[str, Any] = {"name": check_name, "head_sha": sha, "status": "completed",
                               "conclusion": conclusion, "output": output}
    server, repo, run_id = env.get("GITHUB_SERVER_URL"), env.get("GITHUB_REPOSITORY"), env.get("GITHUB_RUN_ID")
    if server and repo and run_id and server.startswith(("https://", "http://")):
        payload["details_url"] = f"{server.rstrip('/')}/{repo}/actions/runs/{urllib.parse.quote(run_id)}"
    return payload


def _create_check_run(report: GitHubReport, result: RunResult, env: Mapping[str, str], token: str | None,
                      *, docs_url: str, check_name: str, baseline: BaselineOutcome | None,
                      timeout: float, waits: Sequence[float], artifact_url: str | None = None) -> None:
    repo = env.get("GITHUB_REPOSITORY", "")
    owner, _, name = repo.partition("/")
    if not token:
        report.warnings.append("no token (set GITHUB_TOKEN or pass --token): no check run; "
                               "the job summary has the verdict")
        return
    if not owner or not name or "/" in name:
        report.warnings.append("GITHUB_REPOSITORY is not owner/name: no check run; the job summary has the verdict")
        return
    sha, sha_warnings = head_sha(env)
    report.warnings.extend(sha_warnings)
    report.head_sha = sha
    if sha is None:
        return
    api = (env.get("GITHUB_API_URL") or DEFAULT_API_URL).rstrip("/")
    if urllib.parse.urlsplit(api).scheme not in ("https", "http"):
        report.warnings.append("GITHUB_API_URL is not an http(s) URL: no check run")
        return
    url = f"{api}/repos/{urllib.parse.quote(owner, safe='')}/{urllib.parse.quote(name, safe='')}/check-runs"
    payload = _check_payload(result, sha, docs_url=docs_url, check_name=check_name,
                             conclusion=report.conclusion, env=env, baseline=baseline, artifact_url=artifact_url,
                             gate=report.gate)
    status, body, report.attempts, error = post_json(url, payload, token=token, timeout=timeout, waits=waits)
    report.status = status
    if status is not None and 200 <= status < 300:
        try:
            answer = json.loads(body.decode("utf-8"))
            report.check_url = answer.get("html_url") or answer.get("url")
        except (ValueError, AttributeError):
            report.warnings.append("the check run was created, but its answer was not JSON")
        return
    if status in (403, 404):
        report.warnings.append(f"{READ_ONLY_WARNING} (HTTP {status})")
    elif status == 401:
        report.warnings.append("the token was refused (HTTP 401): no check run; the job summary has the verdict")
    elif status is not None:
        message = api_message(body)
        report.warnings.append(f"the GitHub API answered HTTP {status}{': ' + message if message else ''} "
                               f"after {report.attempts} attempt(s): no check run; the job summary has the verdict")
    else:
        report.warnings.append(f"cannot reach the GitHub API ({error}) after {report.attempts} attempt(s): "
                               "no check run; the job summary has the verdict")


def _append(path: str, text: str) -> None:
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(text)


def _write_step_summary(report: GitHubReport, result: RunResult, path: str, *, docs_url: str,
                        baseline: BaselineOutcome | None, artifact_url: str | None = None) -> None:
    try:
        used = os.path.getsize(path) if os.path.exists(path) else 0
    except OSError:
        used = 0
    room = STEP_SUMMARY_LIMIT - used - 1024
    if room < 1024:
        report.warnings.append("the job summary file is already near GitHub's 1 MiB: the summary was not added")
        return
    limit = min(room, STEP_SUMMARY_LIMIT)
    text = summary_markdown(result, docs_url=docs_url, limit=limit, baseline=baseline, report_link=artifact_url,
                            gate=report.gate)
    for _ in range(8):  # characters can take up to 4 bytes: shrink until the bytes fit
        size = len(text.encode("utf-8"))
        if size <= room:
            break
        limit = max(1024, int(limit * room / size) - 64)
        text = summary_markdown(result, docs_url=docs_url, limit=limit, baseline=baseline, report_link=artifact_url,
                                gate=report.gate)
    else:
        report.warnings.append("the summary did not fit in the job summary")
        return
    try:
        _append(path, text + "\n")
        report.summary_written = True
    except OSError as exc:
        report.warnings.append(f"cannot write the job summary ({type(exc).__name__}: {exc.strerror or exc})")


def github_output(values: Mapping[str, str]) -> str:
    """`name<<DELIMITER` / value / `DELIMITER` lines, with a delimiter that no name or value holds."""
    lines = []
    for name, value in values.items():
        delimiter = f"ghadelimiter_{secrets.token_hex(16)}"
        while delimiter in value or delimiter in name:
            delimiter = f"ghadelimiter_{secrets.token_hex(16)}"
        lines.append(f"{name}<<{delimiter}\n{value}\n{delimiter}\n")
    return "".join(lines)


def report_github(result: RunResult, *, env: Mapping[str, str], token: str | None, docs_url: str,
                  check_name: str = "ACP journeys", baseline: BaselineOutcome | None = None,
                  result_path: str = "", timeout: float = REQUEST_TIMEOUT_S,
                  retry_waits: Sequence[float] = RETRY_WAITS_S, artifact_url: str | None = None,
                  post_check: bool = True, gate: Gate | None = None) -> GitHubReport:
    """Create the check run, append the job summary and write the outputs; never raises for GitHub.
    `artifact_url`: the artifact that holds the HTML report, linked from both summaries.
    `post_check=False`: no request at all (a matrix job whose merge job posts the one check).
    `gate`: the gate's word; a partial or refused result says so everywhere, never pass."""
    verdict = baseline.verdict if baseline is not None else result.verdict
    if gate is not None and gate.word in ("PARTIAL", "REFUSED"):
        verdict = gate.word.lower()
    elif result.partial:
        verdict = "partial"
    report = GitHubReport(verdict=verdict, conclusion="success" if verdict == "pass" else "failure", gate=gate)
    token = token or env.get("GITHUB_TOKEN") or None
    if post_check:
        _create_check_run(report, result, env, token, docs_url=docs_url, check_name=check_name, baseline=baseline,
                          timeout=timeout, waits=retry_waits, artifact_url=artifact_url)
    summary_path = env.get("GITHUB_STEP_SUMMARY")
    if summary_path:
        _write_step_summary(report, result, summary_path, docs_url=docs_url, baseline=baseline,
                            artifact_url=artifact_url)
    output_path = env.get("GITHUB_OUTPUT")
    if output_path:
        values = {"verdict": verdict, "passed": str(result.passed), "failed": str(result.failed),
                  "result-path": result_path, "check-url": report.check_url or ""}
        try:
            _append(output_path, github_output(values))
            report.outputs_written = True
        except OSError as exc:
            report.warnings.append(f"cannot write the step outputs ({type(exc).__name__}: {exc.strerror or exc})")
    report.warnings = [redact_token(w, token) for w in report.warnings]
    return report
