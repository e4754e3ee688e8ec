"""The Markdown summary, rendered by a real CommonMark parser (with GFM tables and strikethrough)."""

from __future__ import annotations

import html
import re

import pytest
from markdown_it import MarkdownIt
from sample_results import DOCS, INJECTION, all_pass, failure, journey, mixed, run

from acp_journeys.output.markdown import MIN_LIMIT, code_fence, cut_marker, escape_markdown, summary_markdown
from acp_journeys.rules.catalog import JOURNEY_FAILURES, JOURNEYS

MD = MarkdownIt("commonmark").enable(["table", "strikethrough"])


def render(text: str) -> str:
    return MD.render(text)


def test_all_pass_has_title_table_and_no_stderr() -> None:
    text = summary_markdown(all_pass(), docs_url=DOCS)
    first = text.splitlines()[0]
    assert first.startswith("## ✅ ACP journeys: pass — 7 of 7 journeys passed, 0 failed")
    out = render(text)
    assert out.count("<tr>") == 1 + len(JOURNEYS)
    for j in JOURNEYS:
        assert f'href="{DOCS}#{j.anchor}"' in out
    assert "<pre>" not in out


def test_failures_first_with_messages_details_and_anchor_links() -> None:
    text = summary_markdown(mixed(), docs_url=DOCS)
    assert text.startswith("## ❌ ACP journeys: fail — 5 of 7 journeys passed, 1 failed, 1 error of acp-journeys")
    sections = re.findall(r"^### .*\((\S+)\): (\w+)$", text, flags=re.M)
    assert [s[1] for s in sections] == ["fail", "error"] + ["pass"] * 5
    assert sections[0][0] == "turn-to-end" and sections[1][0] == "stop-running-turn"
    out = render(text)
    assert "<strong>reply-not-in-chunks</strong>" in out
    assert "session/update notifications before the answer to session/prompt" in out
    # Each failure links its own paragraph, with its step beside it.
    assert (f'<a href="{DOCS}#failure-reply-not-in-chunks">how to fix (#failure-reply-not-in-chunks)</a> · '
            f'<a href="{DOCS}#step-3">step (#step-3)</a>') in out
    assert f'<a href="{DOCS}#failure-runner-error">how to fix (#failure-runner-error)</a>' in out
    # runner-error has no step of its own: the journey's (#step-7)
    assert f'<a href="{DOCS}#step-7">step (#step-7)</a>' in out
    assert "got max_tokens" in out
    row = re.search(r"<tr>\s*<td><a[^>]*>A turn to its end</a></td>\s*<td[^>]*>(.*?)</td>\s*<td[^>]*>(.*?)</td>"
                    r"\s*<td[^>]*>(.*?)</td>", out, flags=re.S)
    assert row and "fail" in row.group(1) and row.group(2) == "1.5"
    assert row.group(3) == "reply-not-in-chunks, stop-reason"


def test_agent_text_cannot_inject_markdown_or_html() -> None:
    out = render(summary_markdown(mixed(), docs_url=DOCS))
    for bad in ("<script", "<img", 'href="https://evil.test"', "<strong>bold", "<em>em", "<s>strike",
                "<h1", "<li>list item"):
        assert bad not in out, bad
    assert "&lt;script&gt;alert(1)&lt;/script&gt; **bold** [link](https://evil.test) | cell | `code`" in out
    # every row of the table still has its 4 cells
    for row in re.findall(r"<tr>(.*?)</tr>", out, flags=re.S):
        assert len(re.findall(r"<t[dh]", row)) == 4
    # the stderr blocks hold the agent's text verbatim, fences inside included, and close
    blocks = re.findall(r"<pre><code[^>]*>(.*?)</code></pre>", out, flags=re.S)
    assert len(blocks) == 2
    assert html.unescape(blocks[0]).endswith("```\nfence\n``````\nend\n")
    assert "\x1b" not in blocks[1] and "\x00" not in blocks[1] and "red" in blocks[1]


NASTY = [INJECTION, "- item", "+ item", "1. first", "12) twelfth", "# title", "=== x", "> quote",
         "<div>x</div>", "&copy; &#60;", "a\\*b\\", "![img](x)", "[x]: https://ref.test", "``x``",
         "a|b", "***", "___", "~~~", "$$x$$", "<https://auto.test>", "x\u202eevil", "tab\there"]


@pytest.mark.parametrize("text", NASTY)
def test_escape_markdown_is_plain_text(text: str) -> None:
    out = render(escape_markdown(text)).strip()
    assert out.startswith("<p>") and out.endswith("</p>"), out
    inner = out[3:-4]
    assert "<" not in inner, inner  # no tag at all: entities only
    want = " ".join(text.splitlines()).replace("\t", " ").replace("\u202e", "")
    assert html.unescape(inner) == want


def test_code_fence_cannot_be_closed_from_inside() -> None:
    body = "a\n```\n````\n`````` x\n~~~\nend"
    out = render(code_fence(body) + "\nafter\n")
    assert html.unescape(re.search(r"<code[^>]*>(.*?)</code>", out, flags=re.S).group(1)) == body + "\n"
    assert "<p>after</p>" in out


def _big() -> object:
    js = []
    for j in JOURNEYS:
        ids = [f for f in JOURNEY_FAILURES[j.id]]
        js.append(journey(j.id, "fail", [failure(f, j.id, detail=("x&<*" * 1000)) for f in ids],
                          stderr=("E" * 5000) + "END-OF-STDERR"))
    return run(js)


def test_cut_at_githubs_limit_with_marker() -> None:
    result = _big()
    full = summary_markdown(result, docs_url=DOCS, limit=10**7)
    assert len(full) > 65535
    text = summary_markdown(result, docs_url=DOCS)
    assert len(text) <= 65535
    assert text.endswith(cut_marker(65535))
    assert "… summary cut at 65535 characters; see result.json" in text


def _medium() -> object:
    js = [journey(j.id, "fail", [failure("stop-reason", j.id, detail=INJECTION),
                                 failure("prompt-error", j.id, detail="&" * 50)],
                  stderr=INJECTION * 20) for j in JOURNEYS]
    return run(js)


@pytest.mark.parametrize("fraction", [0.0, 0.01, 0.05, 0.1, 0.2, 0.33, 0.5, 0.61, 0.75, 0.9, 0.99])
def test_cut_never_inside_an_escape_or_an_open_fence(fraction: float) -> None:
    result = _medium()
    full = summary_markdown(result, docs_url=DOCS, limit=10**7)
    limit = max(MIN_LIMIT, int(len(full) * fraction))
    text = summary_markdown(result, docs_url=DOCS, limit=limit)
    assert len(text) <= limit
    marker = cut_marker(limit)
    assert text.endswith(marker)
    body = text[: -len(marker)]
    assert body == "" or body.endswith("\n")
    if "… (cut)" not in body:
        assert full.startswith(body)  # cut between whole blocks
    tokens = MD.parse(text)
    last = [t for t in tokens if t.type == "inline"][-1]
    assert last.content.startswith("… summary cut at")  # the marker is a paragraph, not code


def test_a_long_stderr_fence_is_shortened_to_its_tail_and_closed() -> None:
    result = run([journey("turn-to-end", "fail", [failure("stop-reason", "turn-to-end")],
                          stderr="start\n" + "line ```` x\n" * 400 + "END-OF-STDERR")])
    full = summary_markdown(result, docs_url=DOCS, limit=10**7)
    limit = len(full) - 1000
    text = summary_markdown(result, docs_url=DOCS, limit=limit)
    assert len(text) <= limit and text.endswith(cut_marker(limit))
    out = render(text)
    code = html.unescape(re.search(r"<code[^>]*>(.*?)</code>", out, flags=re.S).group(1))
    assert code.startswith("… (cut)\n") and code.endswith("END-OF-STDERR\n")
    assert "summary cut at" in out.rsplit("</pre>", 1)[1]


def test_limit_too_small_is_refused() -> None:
    with pytest.raises(ValueError):
        summary_markdown(all_pass(), docs_url=DOCS, limit=10)


def test_a_docs_url_that_is_not_http_gives_no_link() -> None:
    out = render(summary_markdown(mixed(), docs_url="javascript:alert(1)"))
    assert 'href="javascript' not in out


def test_under_a_baseline_failures_are_tagged_and_stale_entries_listed() -> None:
    from acp_journeys.rules.baseline import apply_baseline, parse_baseline

    result = mixed()
    outcome = apply_baseline(result, parse_baseline(
        "- turn-to-end:reply-not-in-chunks\n- id: image-and-file\n  reason: '<b>vision</b> later'\n", "b.yml"))
    text = summary_markdown(result, docs_url=DOCS, baseline=outcome)
    assert text.startswith("## ❌ ACP journeys: fail")
    assert "baseline: 1 expected, 2 new, 1 stale" in text.splitlines()[0]
    out = render(text)
    assert "(expected: baseline entry 'turn-to-end:reply-not-in-chunks' (b.yml:1))" in out
    assert "<strong>stop-reason</strong> (new: not in the baseline)" in out
    assert "stale baseline entry 'image-and-file' (b.yml:2), reason: &lt;b&gt;vision&lt;/b&gt; later" in out
    assert "<b>" not in out


BARE_LINKS = "see https://evil.test/x, HTTP://EVIL.TEST, www.evil.test, ftp://evil.test, xmpp:a@evil.test and me@evil.test"


def test_bare_urls_of_agent_text_are_no_links_on_github() -> None:
    """GitHub's own renderer (cmark-gfm with its autolink extension) makes no link of them."""
    cmarkgfm = pytest.importorskip("cmarkgfm")
    gfm = cmarkgfm.github_flavored_markdown_to_html
    assert '<a href="https://evil.test/x"' in gfm(BARE_LINKS)  # the renderer does link them raw
    escaped = gfm(escape_markdown(BARE_LINKS))
    assert "<a " not in escaped, escaped
    assert html.unescape(escaped).replace("\u2060", "") == f"<p>{BARE_LINKS}</p>\n"
    js = [journey(j.id, "fail", [failure("stop-reason", j.id, detail=BARE_LINKS)], stderr=BARE_LINKS,
                  warnings=[BARE_LINKS]) if j.id == "turn-to-end" else journey(j.id) for j in JOURNEYS]
    result = run(js)
    result.agent_command = ["agent", "https://evil.test/cmd"]
    out = gfm(summary_markdown(result, docs_url=DOCS))
    links = re.findall(r'<a href="([^"]*)"', out)
    assert links and all(link.startswith(DOCS) for link in links), links
