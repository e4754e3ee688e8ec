"""`acp-journeys list`: the journeys and the checks, with failure ids and doc anchors (named
listing.py: a submodule `list` would shadow the builtin in the package).

Rules of this module: the text and the data are made from the catalog alone (`list_text` and
`list_data` are pure); `--json` prints the same catalog as data, for scripts and dashboards.
"""

from __future__ import annotations

import argparse
import json

from acp_journeys.cli.common import EXIT_PASS
from acp_journeys.rules import catalog, protocol_catalog


def add_parser(sub: argparse._SubParsersAction) -> None:
    listing = sub.add_parser("list", help="the journeys and the checks, with failure ids and doc anchors")
    listing.add_argument("--json", action="store_true",
                         help="print the catalog as JSON: the journeys, their failure ids, messages and doc links")


def run(args: argparse.Namespace) -> int:
    print(json.dumps(list_data(), indent=2) if args.json else list_text())
    return EXIT_PASS


def _failure(failure_id: str, anchor: str, docs_url: str) -> dict:
    kind = catalog.FAILURES[failure_id]
    return {"id": failure_id, "message": kind.message, "tier": kind.tier, "common": kind.common,
            "anchor": anchor, "doc": catalog.doc_link(anchor, docs_url),
            "fix": catalog.doc_link(catalog.fix_anchor(failure_id) or "failure-ids", docs_url)}


def list_data(docs_url: str = catalog.DEFAULT_DOCS_URL) -> dict:
    """The catalog as data: what `list` prints, with each failure's doc link and the link to its fix."""
    return {
        "schema": "acp-journeys/catalog/1",
        "docs_url": docs_url,
        "rules": {"exit_s": catalog.RULES.exit_s, "cancel_s": catalog.RULES.cancel_s},
        "process_checks": [{**_failure(failure_id, "step-2", docs_url), "check": text}
                           for failure_id, text in catalog.PROCESS_CHECKS],
        "journeys": [{"id": j.id, "title": j.title, "anchor": j.anchor, "doc": catalog.doc_link(j.anchor, docs_url),
                      "processes": j.processes,
                      "failures": [_failure(f, catalog.anchor_for(f, j.id), docs_url) for f in j.failure_ids]}
                     for j in catalog.JOURNEYS],
        "strict": [_failure(k.id, k.anchor or "step-2", docs_url) for k in catalog.FAILURES.values()
                   if k.tier == "strict"],
        "verify": [_failure("evidence-incomplete", catalog.FAILURES["evidence-incomplete"].anchor or "", docs_url)],
    }


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
    lines += ["", "With --tier protocol (a verdict of its own, beside Rondar's; the ACP v1 spec at "
              f"{protocol_catalog.SPEC_URL}):"]
    for check in protocol_catalog.CHECKS:
        lines.append(f"  {check.id:<30} {check.level:<6} {check.title} ({check.anchor})")
    return "\n".join(lines)


def _fix(failure_id: str, docs_url: str) -> str:
    """The link to the id's own paragraph (what it means, how to fix it)."""
    return f"(how to fix: {catalog.doc_link(catalog.fix_anchor(failure_id) or 'failure-ids', docs_url)})"
