"""`acp-journeys action report WORK` and `action gate WORK`: the report and gate steps inside
the runner container, on WORK/result.json, under the baseline that prepare copied and with the
inputs that it kept.

Rules of this module: report never fails the job (the gate does). The gate's exit code is the
step's: 0 pass (or a failure with fail-on-failure false), 1 a failed or refused gate, 2 a
result that cannot be judged. Verify's own lines (they quote the agent) are printed only when
the gate does not pass; the shell step prints them under the runner's stop-commands pause, and
the gate's annotation after it (through ACPJ_MESSAGES).
"""

from __future__ import annotations

import contextlib
import glob
import io
import os
import re
from collections.abc import Mapping

from acp_journeys.cli.action.inputs import Inputs, annotate, kept_inputs, say


def baseline_args(work: str) -> list[str]:
    found = sorted(glob.glob(os.path.join(glob.escape(work), "baseline", "*")))
    return ["--baseline", found[0]] if found else []


def _judged_as(inp: Inputs, environ: Mapping[str, str]) -> list[str]:
    """The journeys that ran and the commit: a file without one is partial, another commit's refused."""
    out = [a for j in inp.journeys() for a in ("--journey", j)]
    return out + (["--expect-sha", environ["GITHUB_SHA"]] if environ.get("GITHUB_SHA") else [])


def report_cli(environ: Mapping[str, str], work: str) -> list[str]:
    inp = kept_inputs(environ, work)
    cli = ["report", f"{work}/result.json", "--github", "--check-name", inp.text("check-name") or "ACP journeys",
           *_judged_as(inp, environ)]
    if environ.get("ACPJ_ARTIFACT_URL"):
        cli += ["--artifact-url", environ["ACPJ_ARTIFACT_URL"]]  # of the HTML report
    if inp.text("docs-url"):
        cli += ["--docs-url", inp.text("docs-url")]
    cli += baseline_args(work)
    return cli + ([] if inp.flag("post-check", True) else ["--no-check-run"])


def gate_cli(environ: Mapping[str, str], work: str) -> list[str]:
    return ["verify", f"{work}/result.json", *_judged_as(kept_inputs(environ, work), environ),
            *baseline_args(work)]


def report(environ: Mapping[str, str], work: str) -> int:
    from acp_journeys.cli import main as cli_main

    return cli_main(report_cli(environ, work))


def gate(environ: Mapping[str, str], work: str) -> int:
    from acp_journeys.cli import main as cli_main

    fail = kept_inputs(environ, work).flag("fail-on-failure", True)
    log = io.StringIO()
    with contextlib.redirect_stdout(log), contextlib.redirect_stderr(log):
        code = cli_main(gate_cli(environ, work))
    verdict = environ.get("ACPJ_VERDICT", "")
    if code == 0:
        say(f"verdict: pass{f' (reported: {verdict})' if verdict else ''}")
        return 0
    print(log.getvalue(), end="", flush=True)
    if code != 1:
        annotate("error", f"result.json could not be judged (exit {code})", environ)
        return 2
    # A refused or partial result is no failure count: say the gate's word (verify's line above).
    word = re.search(r"^verdict: (REFUSED|PARTIAL)", log.getvalue(), re.M)
    failed, passed = environ.get("ACPJ_FAILED") or "some", environ.get("ACPJ_PASSED") or "?"
    if word and fail:
        annotate("error", f"ACP journeys: the gate says {word[1]} (see verify's verdict line above): the job fails",
                 environ)
    elif fail:
        annotate("error", f"ACP journeys failed ({failed} failed, {passed} passed): see the job summary", environ)
    elif word:
        annotate("warning", f"ACP journeys: the gate says {word[1]}; fail-on-failure is false, so the job goes on",
                 environ)
    else:
        annotate("warning", f"ACP journeys failed ({failed} failed); fail-on-failure is false, so the job goes on",
                 environ)
    return 1 if fail else 0
