"""What the dialects share: images in their wire forms, ids, token counts and SSE framing.

Rules of this module: pure helpers; no HTTP. Token counts are estimates (4 characters a token)
that are always valid integers: clients and agents add them up, none checks them.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import secrets
from typing import Any

from acp_journeys.services.model_stub.conversation import ImagePart

DATA_URL = re.compile(r"^data:(?P<type>[\w.+/-]+)?(?P<params>(?:;[^,;]*)*),(?P<data>.*)$", re.S)


class BadRequest(Exception):
    """The request is not valid for its dialect: answered 400 with the message."""


def decode_base64(data: str) -> bytes | None:
    try:
        return base64.b64decode(data.strip() + "=" * (-len(data.strip()) % 4), validate=False)
    except (binascii.Error, ValueError):
        return None


def image_from_url(url: Any) -> ImagePart:
    """An image given as a URL: a data: URL is decoded; any other URL cannot be fetched here."""
    if isinstance(url, str):
        match = DATA_URL.match(url)
        if match and ";base64" in (match.group("params") or ""):
            return ImagePart(match.group("type") or "image/*", decode_base64(match.group("data")), "data-url")
    return ImagePart("image/*", None, "url")


def image_from_base64(media_type: Any, data: Any) -> ImagePart:
    decoded = decode_base64(data) if isinstance(data, str) else None
    return ImagePart(media_type if isinstance(media_type, str) else "image/*", decoded, "base64")


def new_id(prefix: str) -> str:
    return f"{prefix}{secrets.token_hex(12)}"


def estimate_tokens(value: Any) -> int:
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    return max(1, len(text) // 4)


def pieces(text: str, size: int = 8) -> list[str]:
    """Text cut into small deltas, as a real stream comes: clients must join them."""
    return [text[i:i + size] for i in range(0, len(text), size)] or [""]


def sse(data: Any, event: str | None = None) -> bytes:
    """One server-sent event; `data` is JSON-encoded unless it is already a string."""
    body = data if isinstance(data, str) else json.dumps(data, separators=(",", ":"))
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {body}\n\n".encode()


def text_of(content: Any) -> str:
    """Plain text of a content value that is a string or a list of text-like blocks."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, str):
                parts.append(block)
            elif isinstance(block, dict) and isinstance(block.get("text"), str):
                parts.append(block["text"])
        return "\n".join(parts)
    if isinstance(content, dict) and isinstance(content.get("text"), str):
        return content["text"]
    return "" if content is None else json.dumps(content)
