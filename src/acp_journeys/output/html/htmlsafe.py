"""Untrusted text made inert in HTML (and inline SVG): the only way a string of a result reaches the page.

Rules of this module:
- `text` is for element content, `attr` for a quoted attribute value: both escape `&`, `<`, `>`,
  `"` and `'`, so no string can open a tag, close one (`</script>`, `</textarea>`), start an
  entity of its own or leave its attribute.
- Before escaping, `clean` drops ANSI escape sequences and turns every other character that a
  reader cannot see or that changes the text around it (C0/C1 controls but tab and newline, the
  bidirectional overrides and isolates, lone surrogates, noncharacters) into U+FFFD, so the page
  shows what is there and always encodes as UTF-8.
- No string of a result ever becomes a URL: links are built by the page from `docs_url` and the
  catalog's anchors only, and `safe_href` lets only http(s) URLs through.
"""

from __future__ import annotations

import html
import re
import urllib.parse

_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")
_UNSEEN = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
                     "\ud800-\udfff\ufdd0-\ufdef\ufffe\uffff]")
REPLACEMENT = "\ufffd"


def clean(value: object) -> str:
    """The text of `value` with hidden and unencodable characters made visible (see the rules)."""
    s = value if isinstance(value, str) else str(value)
    return _UNSEEN.sub(REPLACEMENT, _ANSI.sub("", s))


def text(value: object) -> str:
    """Element content: escaped, after `clean`."""
    return html.escape(clean(value), quote=True)


def attr(value: object) -> str:
    """A double-quoted attribute value: escaped, after `clean`, with newlines kept as entities."""
    return html.escape(clean(value), quote=True).replace("\n", "&#10;").replace("\t", "&#9;")


def safe_href(url: str) -> str | None:
    """An http(s) URL, percent-quoted where it has to be, as an escaped attribute value; else None."""
    try:
        parts = urllib.parse.urlsplit(url)
    except ValueError:
        return None
    if parts.scheme not in ("http", "https") or not parts.netloc:
        return None
    return attr(urllib.parse.quote(url, safe=":/?#=&%~+@!$,;.-_"))
