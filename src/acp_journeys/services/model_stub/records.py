"""The model stub's log of requests: the records themselves are evidence types of the rules
(`rules.model_requests`); this module keeps them while the run goes on.

Rules of this module: `RecordLog` is safe to use from the server's request threads and the
runner's loop at once; it never judges (the judge reads the records' hints).
"""

from __future__ import annotations

import threading
import time
from dataclasses import replace
from typing import Any

from acp_journeys.rules.model_requests import RequestRecord


class RecordLog:
    def __init__(self) -> None:
        self._records: list[RequestRecord] = []
        self._lock = threading.Lock()
        self._seq = 0

    def next_seq(self) -> int:
        with self._lock:
            self._seq += 1
            return self._seq

    def add(self, record: RequestRecord) -> None:
        with self._lock:
            self._records.append(record)

    def amend(self, seq: int, **changes: Any) -> None:
        """Change fields of a record already added (an answer that could not be written)."""
        with self._lock:
            self._records = [replace(r, **changes) if r.seq == seq else r for r in self._records]

    def snapshot(self, tag: str | None = None, since: float | None = None,
                 until: float | None = None) -> list[RequestRecord]:
        """Records in order of arrival; only those of `tag`, and of [since, until], when given."""
        with self._lock:
            records = sorted(self._records, key=lambda r: r.seq)
        return [r for r in records
                if (tag is None or r.tag == tag)
                and (since is None or r.at >= since) and (until is None or r.at <= until)]

    def as_dicts(self, tag: str | None = None, since: float | None = None,
                 until: float | None = None) -> list[dict[str, Any]]:
        return [r.to_dict() for r in self.snapshot(tag, since, until)]

    def __len__(self) -> int:
        with self._lock:
            return len(self._records)


def now() -> float:
    return time.monotonic()
