"""How deep parsed JSON nests, measured without recursion: a hostile frame or file cannot blow
the stack. Pure; used on the editor's frames and on result.json."""

from __future__ import annotations


def json_depth_over(value: object, limit: int) -> bool:
    """Whether parsed JSON nests deeper than `limit` (checked without recursion)."""
    stack: list[tuple[object, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > limit:
            return True
        if isinstance(node, dict):
            stack.extend((v, depth + 1) for v in node.values() if isinstance(v, (dict, list)))
        elif isinstance(node, list):
            stack.extend((v, depth + 1) for v in node if isinstance(v, (dict, list)))
    return False
