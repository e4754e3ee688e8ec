"""The model stub's log of requests: the records themselves are evidence types of the rules
(`rules.model_requests`); this module keeps them while the run goes on.

Rules of this module: `RecordLog` is safe to use from the server's request threads and the
runner's loop at once; it never judges (the judge reads the records' hints).

An agent decides how many requests it sends, so the log keeps a bound of them per route tag
(`RECORDS_KEPT`): the first ones, and after them each record that shows something the first
ones do not (its `facts`: what the judge's hints and the stub's own failures read), so that the
judge reads the same hints from the records kept as it would from all. The rest are counted.
"""

from __future__ import annotations

import threading
import time
from dataclasses import replace
from typing import Any

from acp_journeys.rules.model_requests import RequestRecord

RECORDS_KEPT = 500
"""Records kept per route tag (a journey), besides those that show a new fact."""
TAGS_COUNTED = 64
"""Route tags counted each on its own (the agent may invent tags); the rest share one count."""
OTHER_TAGS = "(other tags)"


def facts(record: RequestRecord) -> tuple[Any, ...]:
    """What of a record the judge reads (`rules.model_requests`): a record past the bound whose
    facts no kept record of its tag has is kept too. Each field has few values (the script's
    intents, booleans), so few records are kept so."""
    return (record.dialect in (None, "models"), record.status >= 400, record.side_request is None, record.intent,
            record.image_present, record.image_decoded, record.why.startswith("no shell tool offered"),
            "no create_plan tool" in record.why, record.decision == {"text": "I don't know."},
            bool(record.retried))


class RecordLog:
    def __init__(self, kept: int = RECORDS_KEPT) -> None:
        self._records: list[RequestRecord] = []
        self._by_seq: dict[int, int] = {}  # seq -> index in _records
        self._lock = threading.Lock()
        self._seq = 0
        self._kept_per_tag = kept
        self._tags: dict[str | None, int] = {}  # records kept per tag
        self._facts: dict[str | None, set[tuple[Any, ...]]] = {}
        self._dropped: dict[str | None, int] = {}

    def next_seq(self) -> int:
        with self._lock:
            self._seq += 1
            return self._seq

    def add(self, record: RequestRecord) -> None:
        with self._lock:
            tag = record.tag if record.tag in self._tags or len(self._tags) < TAGS_COUNTED else OTHER_TAGS
            seen = self._facts.setdefault(tag, set())
            known = facts(record)
            if self._tags.get(tag, 0) >= self._kept_per_tag and known in seen:
                self._dropped[tag] = self._dropped.get(tag, 0) + 1
                return
            seen.add(known)
            self._tags[tag] = self._tags.get(tag, 0) + 1
            self._by_seq[record.seq] = len(self._records)
            self._records.append(record)

    def amend(self, seq: int, **changes: Any) -> None:
        """Change fields of a record already added (an answer that could not be written)."""
        with self._lock:
            index = self._by_seq.get(seq)
            if index is not None:
                self._records[index] = replace(self._records[index], **changes)

    def dropped(self, tag: str | None = None) -> int:
        """How many records of `tag` (of every tag, with None) were counted and not kept."""
        with self._lock:
            return sum(self._dropped.values()) if tag is None else self._dropped.get(tag, 0)

    @property
    def received(self) -> int:
        """Every request that reached the server, kept or not."""
        with self._lock:
            return self._seq

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
