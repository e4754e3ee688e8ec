"""Stable slices of the registry's agents, for a matrix of jobs (`--shard K/N`).

Rules of this module: an agent's shard depends on its id and N alone (a hash of the id), never on
which other agents are listed, so an agent added to the registry moves no other agent between
shards and a night's results compare with the last's shard by shard. Pure: no I/O.
"""

from __future__ import annotations

import hashlib


class ShardError(ValueError):
    pass


def parse_shard(text: str) -> tuple[int, int]:
    """`K/N` with 1 <= K <= N."""
    head, sep, tail = text.partition("/")
    try:
        k, n = int(head), int(tail)
    except ValueError:
        raise ShardError(f"--shard {text}: give K/N, whole numbers (for example 2/8)") from None
    if not sep or n < 1 or not 1 <= k <= n:
        raise ShardError(f"--shard {text}: K/N needs 1 <= K <= N")
    return k, n


def shard_of(agent_id: str, count: int) -> int:
    """1 to `count`."""
    digest = hashlib.sha256(agent_id.encode()).digest()
    return int.from_bytes(digest[:8], "big") % count + 1


def select_shard(ids: list[str], k: int, n: int) -> list[str]:
    return [i for i in ids if shard_of(i, n) == k]
