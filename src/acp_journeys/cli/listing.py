"""`acp-journeys list`: the journeys and the checks, with failure ids and doc anchors (named
listing.py: a submodule `list` would shadow the builtin in the package).

Rules of this module: the text is made from the catalog alone (`list_text` is pure).
"""

from __future__ import annotations

import argparse

from acp_journeys.cli.common import EXIT_PASS
from acp_journeys.rules import catalog


def add_parser(sub: argparse._SubParsersAction) -> None:
    sub.add_parser("list", help="the journeys and the checks, with failure ids and doc anchors")


def run(args: argparse.Namespace) -> int:
    print(list_text())
    return EXIT_PASS


def list_text(docs_url: str = catalog.DEFAULT_DOCS_URL) -> str:
    lines = ["Checks on every agent process (" + catalog.doc_link("step-2", docs_url) + "):"]
    for failure_id, text in catalog.PROCESS_CHECKS:
        lines.append(f"  {failure_id:<30} {text} {_fix(failure_id, docs_url)}")
    for journey in catalog.JOURNEYS:
        lines += ["", f"{journey.id}: {journey.title} ({catalog.doc_link(journey.anchor, docs_url)})"]
        for failure_id in catalog.JOURNEY_FAILURES[journey.id]:
            kind = catalog.FAILURES[failure_id]
            anchor = catalog.anchor_for(failure_id, journey.id)
            lines.append(f"  {failure_id:<30} #{anchor:<8} {kind.message} {_fix(failure_id, docs_url)}")
    lines += ["", "With --strict:"]
    for kind in catalog.FAILURES.values():
        if kind.tier == "strict":
            lines.append(f"  {kind.id:<30} #{kind.anchor:<8} {kind.message} {_fix(kind.id, docs_url)}")
    kind = catalog.FAILURES["evidence-incomplete"]
    lines += ["", "On a result.json that verify judges:",
              f"  {kind.id:<30} #{kind.anchor} {kind.message} {_fix(kind.id, docs_url)}"]
    return "\n".join(lines)


def _fix(failure_id: str, docs_url: str) -> str:
    """The link to the id's own paragraph (what it means, how to fix it)."""
    return f"(how to fix: {catalog.doc_link(catalog.fix_anchor(failure_id) or 'failure-ids', docs_url)})"
