"""`acp-journeys action merge-prepare` and `action merge WORK`: the steps of merge/action.yml
(one verdict for a matrix) inside the runner container; its report and gate are the action's.

Rules of this module: those of prepare (every input checked first, exit 2 with a message); the
merge quotes the parts (the agents' text): its annotations go through ACPJ_MESSAGES, printed by
the shell step after the runner's stop-commands pause.
"""

from __future__ import annotations

import glob
import os
import tempfile
from collections.abc import Mapping

from acp_journeys.cli.action.inputs import Inputs, annotate, keep_inputs, kept_inputs, say, set_outputs
from acp_journeys.cli.action.prepare import report_network
from acp_journeys.cli.common import UsageError


def expect_args(inp: Inputs) -> list[str]:
    words = inp.journeys() or ["all"]
    return [a for w in words for a in ("--expect", w)]


def prepare(environ: Mapping[str, str]) -> int:
    inp = Inputs(environ)
    pattern = inp.text("pattern")
    if not pattern:
        raise UsageError("input pattern is empty: give the pattern of the matrix jobs' artifact names")
    expect_args(inp)
    inp.flag("fail-on-failure", True)
    inp.flag("post-check", True)
    for name in ("check-name", "runner-image", "docs-url"):
        inp.text(name)
    work = tempfile.mkdtemp(prefix="acp-journeys-merge.", dir=environ.get("ACPJ_TEMP") or tempfile.gettempdir())
    os.chmod(work, 0o755)
    os.mkdir(f"{work}/parts")
    keep_inputs(inp, work)
    set_outputs({"work": work, "download-path": f"{work}/parts", "result-path": f"{work}/result.json",
                 "html-path": f"{work}/result.html", "report-network": report_network(environ)}, environ)
    say(f"work folder {work}; the artifacts matching '{pattern}' go to {work}/parts")
    return 0


def merge(environ: Mapping[str, str], work: str) -> int:
    from acp_journeys.cli import main as cli_main

    inp = kept_inputs(environ, work)
    root = glob.escape(f"{work}/parts")
    # download-artifact puts each artifact of a pattern in a folder named after it.
    parts = sorted({*glob.glob(f"{root}/result.json"), *glob.glob(f"{root}/*/result.json")})
    if not parts:
        annotate("error", f"no result.json in the artifacts matching '{inp.text('pattern')}': did the "
                 "matrix jobs run, and does the pattern match their artifact-name?", environ)
        return 2
    say(f"merging {len(parts)} result(s): {' '.join(os.path.relpath(p, f'{work}/parts') for p in parts)}")
    if cli_main(["merge", f"{work}/result.json", *parts, *expect_args(inp)]) != 0:
        annotate("error", "the results could not be merged: see the message above", environ)
        return 2
    # The page of the merged result, judged again from its evidence like everything we publish.
    if cli_main(["report", f"{work}/result.json", "--html", f"{work}/result.html"]) != 0:
        annotate("warning", "the HTML report of the merged result could not be written (see above); result.json "
                 "is uploaded all the same", environ)
    return 0
