"""The registry dashboard opened in a real browser (headless Chromium), and its pure renderer.

A summary with every kind of row (ran, needs a login, not installed, bad entry), hostile agent
names and reasons, a protocol tier on one agent, and changes since a previous run: the page has
no console error and loads nothing but itself; the filters and the sort change what is shown;
failure ids link to the doc's anchors and cells to the agent's report; nothing the agents or the
registry wrote becomes markup or a link.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from browser import Chromium, dump_dom, find_chromium

from acp_journeys.output.html.dashboard import render_dashboard, write_dashboard
from acp_journeys.output.html.htmlsafe import clean
from acp_journeys.rules.catalog import JOURNEY_IDS

HOSTILE = '</td></tr><script>document.title="pwned"</script><img src=x onerror=alert(1)><a href="javascript:alert(1)">x</a>'


def journeys(failing: dict[str, list[str]]) -> dict:
    return {j: {"verdict": "fail" if j in failing else "pass", "failures": failing.get(j, [])} for j in JOURNEY_IDS}


def summary() -> dict:
    rows = [
        {"id": "alpha", "name": HOSTILE, "version": "1.0.0", "kind": "npx", "status": "ran", "reason": "",
         "journeys": journeys({}), "passed": 7, "total": 7, "install_s": 12.0, "run_s": 40.5, "report": True,
         "notes": [HOSTILE], "protocol": {"passed": 9, "applicable": 11}},
        {"id": "beta", "name": "Beta", "version": "2.0.0", "kind": "uvx", "status": "ran", "reason": "",
         "journeys": journeys({"plan-turn-saved-plan": ["no-plan-mode"], "plan-regular-plan": ["no-plan-mode"]}),
         "passed": 5, "total": 7, "install_s": 3.0, "run_s": 20.0, "report": True, "notes": [], "protocol": None},
        {"id": "gamma", "name": "Gamma", "version": "0.1.0", "kind": "binary", "status": "needs-login",
         "reason": "needs authenticate: session/new answered -32000 'Authentication required'",
         "journeys": journeys({j: ["session-new-error"] for j in JOURNEY_IDS}), "passed": 0, "total": 7,
         "report": True, "notes": [], "protocol": None},
        {"id": "delta", "name": "Delta", "version": "1.0.0", "kind": "binary", "status": "not-installed",
         "reason": HOSTILE, "journeys": {}, "passed": 0, "report": False, "notes": []},
        {"id": "epsilon", "name": "Epsilon", "version": "", "kind": "", "status": "bad-entry",
         "reason": "no distribution (npx, uvx or binary)", "journeys": {}, "passed": 0, "report": False},
        # An id the registry's rule refuses never becomes a link (it came from a folder name).
        {"id": "../../evil", "name": "Evil", "kind": "npx", "status": "ran", "journeys": journeys({}), "passed": 7,
         "report": True},
    ]
    return {"schema": "acp-journeys/registry-summary/1", "tool_version": "0.1.0", "date": "2026-12-03T02:00:00+00:00",
            "agents": rows, "journeys": {j: 2 for j in JOURNEY_IDS},
            "changes": {"regressions": [{"agent": "beta", "journey": "plan-regular-plan", "was": "pass", "now": "fail"}],
                        "fixes": [{"agent": "alpha", "journey": "turn-to-end", "was": "fail", "now": "pass"}]},
            "previous_date": "2026-12-02T02:00:00+00:00"}


FACTS = """(() => {
  const rows = [...document.querySelectorAll('#grid tbody tr.agent-row')];
  return {
    title: document.title,
    order: rows.map(r => r.dataset.id),
    shown: rows.filter(r => !r.hidden).map(r => r.dataset.id),
    scripts: document.scripts.length,
    images: document.images.length,
    links: [...document.querySelectorAll('a')].map(a => a.getAttribute('href')),
    names: [...document.querySelectorAll('th.agent .name')].map(n => n.textContent),
    regressed: [...document.querySelectorAll('td.cell.regressed')].map(c => c.closest('tr').dataset.id + ':' + c.dataset.journey),
    fixed: [...document.querySelectorAll('td.cell.fixed')].map(c => c.closest('tr').dataset.id + ':' + c.dataset.journey),
    tiers: [...document.querySelectorAll('td.tier')].map(t => t.textContent),
    changes: [...document.querySelectorAll('section.changes li')].map(l => l.textContent),
    reasons: [...document.querySelectorAll('p.reason')].map(p => p.textContent),
    counter: document.getElementById('shown').textContent,
  };
})()"""


def choose(select: str, value: str) -> str:
    return (f"(() => {{ const s = document.getElementById('{select}'); s.value = '{value}';"
            " s.dispatchEvent(new Event('change')); return true; })()")


def test_the_renderer_escapes_and_links_only_what_it_builds() -> None:
    page = render_dashboard(summary(), docs_url="https://example.org/docs/journeys.md")
    assert page.count("<script") == 1 and "<img" not in page and 'href="javascript:' not in page
    assert "&lt;script&gt;document.title=&quot;pwned&quot;&lt;/script&gt;" in page
    assert 'href="https://example.org/docs/journeys.md#failure-no-plan-mode"' in page
    doc = (Path(__file__).parents[2] / "docs" / "journeys.md").read_text()
    assert 'id="failure-no-plan-mode"' in doc and 'id="failure-session-new-error"' in doc
    assert 'href="agents/beta/report.html#j-plan-regular-plan"' in page
    assert "agents/../../evil" not in page
    assert "Content-Security-Policy" in page and "default-src &#x27;none&#x27;" in page


pytestmark_browser = pytest.mark.skipif(find_chromium() is None,
                                        reason="no Chromium (scripts/setup/setup-chromium.sh installs Debian's chromium)")


@pytestmark_browser
def test_the_dashboard_in_chromium(tmp_path: Path) -> None:
    path = tmp_path / "index.html"
    write_dashboard(summary(), str(path), docs_url="https://example.org/docs/journeys.md")
    with Chromium() as chromium:
        page = chromium.page()
        try:
            page.open(path.as_uri())
            facts = page.evaluate(FACTS)
            page.evaluate(choose("f-journey", "fail:plan-regular-plan"))
            fails_plan = page.evaluate(FACTS)["shown"]
            page.evaluate(choose("f-journey", ""))
            page.evaluate(choose("f-failure", "session-new-error"))
            by_failure = page.evaluate(FACTS)["shown"]
            page.evaluate(choose("f-failure", ""))
            page.evaluate(choose("f-kind", "binary"))
            by_kind = page.evaluate(FACTS)
            page.evaluate(choose("f-kind", ""))
            page.evaluate(choose("f-sort", "failed"))
            sorted_failed = page.evaluate(FACTS)["order"]
            assert page.errors() == []
            assert page.requests() == [path.as_uri()]  # nothing loaded but the page itself
        finally:
            page.close()
    assert facts["title"] == "ACP registry: 2 of 6 agents pass all 7 journeys"
    assert facts["order"] == ["../../evil", "alpha", "beta", "delta", "epsilon", "gamma"]
    assert facts["shown"] == facts["order"] and facts["counter"] == "6 of 6 agents shown"
    assert facts["scripts"] == 1 and facts["images"] == 0
    assert clean(HOSTILE) in facts["names"] and clean(HOSTILE) in facts["reasons"]
    assert all(h.startswith(("https://example.org/docs/journeys.md#", "agents/alpha/", "agents/beta/",
                             "agents/gamma/")) for h in facts["links"]), facts["links"]
    assert "agents/gamma/report.html#j-turn-to-end" in facts["links"]
    assert facts["regressed"] == ["beta:plan-regular-plan"] and facts["fixed"] == ["alpha:turn-to-end"]
    assert facts["tiers"][1:3] == ["9/11 MUST", "—"]  # alpha has the protocol tier, beta none
    assert facts["changes"] == ["beta plan-regular-plan: pass → fail", "alpha turn-to-end: fail → pass"]
    assert fails_plan == ["beta", "gamma"]
    assert by_failure == ["gamma"]
    assert by_kind["shown"] == ["delta", "gamma"] and by_kind["counter"] == "2 of 6 agents shown"
    assert sorted_failed[:3] == ["delta", "epsilon", "gamma"]  # 0 passed first, by id


@pytestmark_browser
def test_dump_dom_keeps_the_hostile_name_as_text(tmp_path: Path) -> None:
    path = tmp_path / "index.html"
    write_dashboard(summary(), str(path))
    dom = dump_dom(path)
    assert "</html>" in dom and dom.count("<script") == 1
    assert "<img" not in dom and '<a href="javascript:' not in dom
