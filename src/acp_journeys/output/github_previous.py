"""The previous run's summary.json, from an artifact of this workflow's last successful run.

The registry's nightly page marks what changed since the night before; the summary of that night
is in an artifact of the workflow's previous successful run. This finds it through GitHub's REST
API, as the workflow's own token may (`actions: read`):

1. `GET /repos/{repo}/actions/workflows/{file}/runs?status=success`: the runs, newest first
   (the current run, `GITHUB_RUN_ID`, is never one of them, and is skipped should it be);
2. `GET /repos/{repo}/actions/runs/{id}/artifacts?name=NAME`: the first run whose artifact is
   still there (artifacts expire);
3. `GET /repos/{repo}/actions/artifacts/{id}/zip`: a redirect to a signed URL, followed by
   hand so that the token never goes to another host; the zip is read in memory, bounded, and
   only its top-level `summary.json` is taken (no path from the archive is ever written).

Not finding one is never an error of the run: `fetch_previous_summary` says why in one line and
the page shows no changes. Every request has a timeout; the token never appears in a message.
"""

from __future__ import annotations

import io
import json
import urllib.error
import urllib.parse
import urllib.request
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from acp_journeys import __version__
from acp_journeys.output.github import NoRedirect, api_message, redact_token

REQUEST_TIMEOUT_S = 30.0
MAX_RUNS_LOOKED_AT = 10
# The page's artifact holds every agent's report: the zip is bounded, and so is the one file read.
MAX_ZIP_BYTES = 256 << 20
MAX_SUMMARY_BYTES = 64 << 20
SUMMARY_MEMBER = "summary.json"


@dataclass(frozen=True)
class PreviousSummary:
    """Where the summary was written (None when there is none) and what happened, in one line."""

    path: str | None
    note: str


class _Missing(Exception):
    """Why there is no previous summary (a sentence, with no token in it)."""


def workflow_file(env: Mapping[str, str]) -> str | None:
    """The workflow's file name from GITHUB_WORKFLOW_REF (`owner/repo/.github/workflows/f.yml@ref`)."""
    ref = env.get("GITHUB_WORKFLOW_REF", "")
    path = ref.split("@", 1)[0]
    name = path.rsplit("/", 1)[-1]
    return name if name.endswith((".yml", ".yaml")) and "/.github/workflows/" in path else None


def fetch_previous_summary(env: Mapping[str, str], artifact: str, dest: str, *,
                           timeout: float = REQUEST_TIMEOUT_S) -> PreviousSummary:
    """Write the previous successful run's `summary.json` from its artifact `artifact` to `dest`."""
    token = env.get("GITHUB_TOKEN") or env.get("GH_TOKEN") or ""
    try:
        api, repo, workflow = _where(env, token)
        client = _Client(api, token, timeout)
        run_id, artifact_id, size = _find_artifact(client, repo, workflow, artifact, env.get("GITHUB_RUN_ID", ""))
        if size > MAX_ZIP_BYTES:
            raise _Missing(f"the artifact {artifact} of run {run_id} is {size} bytes, over the bound of {MAX_ZIP_BYTES}")
        data = client.download(f"/repos/{repo}/actions/artifacts/{artifact_id}/zip")
        summary = _summary_from_zip(data, artifact, run_id)
    except _Missing as exc:
        return PreviousSummary(None, redact_token(str(exc), token))
    try:
        with open(dest, "wb") as f:
            f.write(summary)
    except OSError as exc:
        return PreviousSummary(None, f"cannot write {dest}: {exc.strerror or exc}")
    return PreviousSummary(dest, f"the summary of run {run_id} (artifact {artifact})")


def _where(env: Mapping[str, str], token: str) -> tuple[str, str, str]:
    repo = env.get("GITHUB_REPOSITORY", "")
    workflow = workflow_file(env)
    if not repo or workflow is None:
        raise _Missing("not in a GitHub Actions run (GITHUB_REPOSITORY and GITHUB_WORKFLOW_REF are not set)")
    if not token:
        raise _Missing("no token (set GITHUB_TOKEN to the workflow's token, with actions: read)")
    api = env.get("GITHUB_API_URL") or "https://api.github.com"
    if urllib.parse.urlsplit(api).scheme not in ("https", "http"):
        raise _Missing(f"GITHUB_API_URL is not an http(s) URL: {api[:200]}")
    owner, _, name = repo.partition("/")
    quoted = f"{urllib.parse.quote(owner, safe='')}/{urllib.parse.quote(name, safe='')}"
    return api.rstrip("/"), quoted, urllib.parse.quote(workflow, safe="")


def _find_artifact(client: _Client, repo: str, workflow: str, artifact: str,
                   current_run: str) -> tuple[int, int, int]:
    runs = client.get_json(f"/repos/{repo}/actions/workflows/{workflow}/runs",
                           {"status": "success", "per_page": str(MAX_RUNS_LOOKED_AT)})
    listed = runs.get("workflow_runs") if isinstance(runs, dict) else None
    if not isinstance(listed, list):
        raise _Missing("the API's list of runs has no workflow_runs")
    ids = [r["id"] for r in listed if isinstance(r, dict) and isinstance(r.get("id"), int)
           and str(r["id"]) != current_run][:MAX_RUNS_LOOKED_AT]
    if not ids:
        raise _Missing(f"no successful run of {urllib.parse.unquote(workflow)} before this one")
    for run_id in ids:
        found = client.get_json(f"/repos/{repo}/actions/runs/{run_id}/artifacts", {"name": artifact})
        for item in (found.get("artifacts") or []) if isinstance(found, dict) else []:
            if (isinstance(item, dict) and item.get("name") == artifact and not item.get("expired")
                    and isinstance(item.get("id"), int)):
                size = item.get("size_in_bytes")
                return run_id, item["id"], size if isinstance(size, int) else 0
    raise _Missing(f"none of the last {len(ids)} successful run(s) has an artifact named {artifact} "
                   "(expired, or the dashboard job did not upload one)")


def _summary_from_zip(data: bytes, artifact: str, run_id: int) -> bytes:
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            try:
                info = archive.getinfo(SUMMARY_MEMBER)
            except KeyError:
                raise _Missing(f"the artifact {artifact} of run {run_id} has no top-level {SUMMARY_MEMBER}") from None
            if info.file_size > MAX_SUMMARY_BYTES:
                raise _Missing(f"{SUMMARY_MEMBER} of run {run_id} is over the bound of {MAX_SUMMARY_BYTES} bytes")
            with archive.open(info) as member:
                summary = member.read(MAX_SUMMARY_BYTES + 1)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, EOFError) as exc:
        raise _Missing(f"the artifact {artifact} of run {run_id} is not a readable zip ({type(exc).__name__})") from None
    if len(summary) > MAX_SUMMARY_BYTES:
        raise _Missing(f"{SUMMARY_MEMBER} of run {run_id} is over the bound of {MAX_SUMMARY_BYTES} bytes")
    return summary


class _Client:
    """GETs against the API with the token; a redirect followed by hand to a signed URL, without it."""

    def __init__(self, api: str, token: str, timeout: float) -> None:
        self.api, self.token, self.timeout = api, token, timeout
        self.opener = urllib.request.build_opener(NoRedirect)  # a redirect is followed by hand, without the token

    def get_json(self, path: str, query: Mapping[str, str]) -> Any:
        body = self._get(f"{self.api}{path}?{urllib.parse.urlencode(query)}", with_token=True, limit=16 << 20)
        try:
            return json.loads(body)
        except ValueError:
            raise _Missing(f"the API's answer to GET {path} is not JSON") from None

    def download(self, path: str) -> bytes:
        return self._get(f"{self.api}{path}", with_token=True, limit=MAX_ZIP_BYTES, follow=True)

    def _get(self, url: str, *, with_token: bool, limit: int, follow: bool = False) -> bytes:
        headers = {"Accept": "application/vnd.github+json", "X-GitHub-Api-Version": "2022-11-28",
                   "User-Agent": f"acp-journeys/{__version__}"}
        if with_token:
            headers["Authorization"] = f"Bearer {self.token}"
        shown = urllib.parse.urlsplit(url).path  # a signed URL's query is a credential too
        try:
            with self.opener.open(urllib.request.Request(url, headers=headers), timeout=self.timeout) as answer:
                body = answer.read(limit + 1)
        except urllib.error.HTTPError as exc:
            location = exc.headers.get("Location") if exc.code in (301, 302, 303, 307, 308) else None
            if follow and location:
                target = urllib.parse.urljoin(url, location)
                if urllib.parse.urlsplit(target).scheme not in ("https", "http"):
                    raise _Missing("the artifact's download redirect is not an http(s) URL") from None
                return self._get(target, with_token=False, limit=limit)
            try:
                message = " ".join(api_message(exc.read(64 << 10)).split())
            except OSError:
                message = ""
            raise _Missing(f"GET {shown} answered HTTP {exc.code}{f' ({message})' if message else ''}") from None
        except (urllib.error.URLError, OSError) as exc:
            raise _Missing(f"GET {shown} failed: {type(exc).__name__}: {getattr(exc, 'reason', exc)}") from None
        if len(body) > limit:
            raise _Missing(f"the answer to GET {shown} is over the bound of {limit} bytes")
        return body
