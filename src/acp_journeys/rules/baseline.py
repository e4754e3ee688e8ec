"""The expected-failures baseline (`--baseline FILE`): which failures a run may have and still pass.

Rules of this module:
- The file is YAML (read with ruamel.yaml): a list whose items are strings `journey` or
  `journey:failure-id`, or mappings `{id: <one of those>, reason: <text>}`. An empty file (or one
  with only comments) is an empty baseline.
- `parse_baseline` (and `output.bounded_file.load_baseline`, which reads the file for it) raises
  `BaselineError` naming the file and the line (1-based) for: YAML that
  does not parse, a top level that is not a list, an item that is neither a string nor a mapping,
  a mapping without `id` or with a key other than `id` and `reason`, an unknown journey id, an
  unknown failure id or one that the journey cannot produce, and an entry given twice.
- `journey` expects the journey to fail (with any failures); `journey:failure-id` expects that
  failure in that journey.
- `apply_baseline` is pure. Only journeys whose verdict is not `pass` have failures. A failure is
  expected when an entry covers it, else new. An entry is
  stale when its journey ran and passed (`journey`) or ran without that failure
  (`journey:failure-id`). An entry whose journey did not run is unchecked: neither used nor stale.
- Under a baseline the run passes only when it has no new failure, no stale entry and is not
  partial. Every finding has a message that names the entry (its id and its line).

It must not read the file itself: `output.bounded_file.load_baseline` hands it the text.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from acp_journeys.rules.catalog import FAILURES, JOURNEY_FAILURES, JOURNEY_IDS
from acp_journeys.rules.evidence import RunResult


class BaselineError(ValueError):
    """A baseline file that cannot be used; the message names the file and the line."""


@dataclass(frozen=True)
class BaselineEntry:
    id: str
    """As written: `journey` or `journey:failure-id`."""
    journey: str
    failure: str | None
    reason: str | None
    line: int
    """1-based line of the entry in its file."""
    file: str = ""

    def where(self) -> str:
        return f"{self.file}:{self.line}" if self.file else f"line {self.line}"

    def describe(self) -> str:
        text = f"baseline entry '{self.id}' ({self.where()})"
        return f"{text}, reason: {self.reason}" if self.reason else text


@dataclass(frozen=True)
class Baseline:
    path: str
    entries: tuple[BaselineEntry, ...] = ()


@dataclass(frozen=True)
class Finding:
    """One failure of the run as the baseline sees it."""

    journey: str
    failure: str | None
    """The failure id; None when the journey failed (or errored) with no failure listed."""
    entry: BaselineEntry | None
    message: str

    @property
    def key(self) -> str:
        return f"{self.journey}:{self.failure}" if self.failure else self.journey


@dataclass(frozen=True)
class EntryFinding:
    """A baseline entry that no failure used."""

    entry: BaselineEntry
    message: str


@dataclass(frozen=True)
class BaselineOutcome:
    verdict: Literal["pass", "fail"]
    expected: tuple[Finding, ...] = ()
    new: tuple[Finding, ...] = ()
    stale: tuple[EntryFinding, ...] = ()
    unchecked: tuple[EntryFinding, ...] = ()
    messages: tuple[str, ...] = field(default=())
    """Every finding's message: new failures, stale entries, expected failures, unchecked."""

    def entry_for(self, journey: str, failure: str | None) -> BaselineEntry | None:
        """The entry that makes this failure expected, or None when it is new."""
        for found in self.expected:
            if found.journey == journey and found.failure == failure:
                return found.entry
        return None


_ALWAYS_POSSIBLE = frozenset({"runner-error"} | {f.id for f in FAILURES.values() if f.tier == "strict"})


def _possible(journey: str) -> frozenset[str]:
    return frozenset(JOURNEY_FAILURES.get(journey, ())) | _ALWAYS_POSSIBLE


def _kind(value: object) -> str:
    if isinstance(value, dict):
        return "mapping"
    if isinstance(value, list):
        return "list"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    return "string" if isinstance(value, str) else type(value).__name__


def _parse_id(text: str, where: str) -> tuple[str, str | None]:
    journey, sep, failure = text.strip().partition(":")
    journey, failure = journey.strip(), failure.strip()
    if journey not in JOURNEY_IDS:
        raise BaselineError(f"{where}: unknown journey id '{journey}' (known: {', '.join(JOURNEY_IDS)})")
    if not sep:
        return journey, None
    if not failure:
        raise BaselineError(f"{where}: '{text}' has no failure id after the colon")
    if failure not in FAILURES:
        raise BaselineError(f"{where}: unknown failure id '{failure}' (see `acp-journeys list`)")
    if failure not in _possible(journey):
        raise BaselineError(
            f"{where}: journey '{journey}' cannot fail with '{failure}' "
            f"(it can fail with: {', '.join(sorted(_possible(journey)))})")
    return journey, failure


def parse_baseline(text: str, name: str = "<baseline>") -> Baseline:
    """Parse baseline YAML text; `name` is used in error messages (the file name)."""
    from ruamel.yaml import YAML
    from ruamel.yaml.comments import CommentedMap, CommentedSeq
    from ruamel.yaml.error import MarkedYAMLError, YAMLError

    deep = _too_deep(text)
    if deep is not None:  # a baseline is flat; deep YAML takes the parser very long
        raise BaselineError(f"{name}:{deep}: not a baseline: nested too deep")
    try:
        data = YAML(typ="rt").load(text)
    except MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = f":{mark.line + 1}" if mark is not None else ""
        problem = exc.problem or exc.context or "not valid YAML"
        raise BaselineError(f"{name}{line}: not valid YAML: {problem}") from None
    except YAMLError as exc:
        raise BaselineError(f"{name}: not valid YAML: {exc}") from None
    except RecursionError:
        raise BaselineError(f"{name}: not a baseline: YAML nested too deep") from None
    if data is None:
        return Baseline(name)
    if not isinstance(data, CommentedSeq):
        line = data.lc.line + 1 if hasattr(data, "lc") and data.lc.line is not None else 1
        raise BaselineError(
            f"{name}:{line}: a baseline is a list of `journey` or `journey:failure-id` items, "
            f"not a {_kind(data)}")
    entries: list[BaselineEntry] = []
    seen: dict[str, BaselineEntry] = {}
    for index, item in enumerate(data):
        line = data.lc.item(index)[0] + 1
        where = f"{name}:{line}"
        reason: str | None = None
        if isinstance(item, str):
            raw = item
        elif isinstance(item, CommentedMap):
            extra = [str(k) for k in item if k not in ("id", "reason")]
            if len(item) == 1 and extra and extra[0] in JOURNEY_IDS:
                value = item[extra[0]]
                hint = f"{extra[0]}:{value}" if isinstance(value, str) else extra[0]
                raise BaselineError(f"{where}: write '{hint}' with no space after the colon (YAML read it "
                                    "as a mapping), or quote it")
            if extra:
                raise BaselineError(f"{where}: unknown key '{extra[0]}' (an entry has `id` and `reason`)")
            if "id" not in item:
                raise BaselineError(f"{where}: the entry has no `id` (`id: journey` or `id: journey:failure-id`)")
            raw = item["id"]
            if not isinstance(raw, str):
                raise BaselineError(f"{where}: `id` must be a string such as `turn-to-end:reply-not-in-chunks`")
            if "reason" in item:
                if not isinstance(item["reason"], str):
                    raise BaselineError(f"{where}: `reason` must be text")
                reason = item["reason"].strip() or None
        else:
            raise BaselineError(
                f"{where}: an entry is `journey`, `journey:failure-id` or a mapping with `id` and "
                f"`reason`, not a {_kind(item)}")
        journey, failure = _parse_id(raw, where)
        key = f"{journey}:{failure}" if failure else journey
        if key in seen:
            raise BaselineError(f"{where}: '{key}' is given twice (first at line {seen[key].line})")
        entry = BaselineEntry(key, journey, failure, reason, line, name)
        seen[key] = entry
        entries.append(entry)
    return Baseline(name, tuple(entries))


def _too_deep(text: str, flow: int = 16, indent: int = 32, dashes: int = 4) -> int | None:
    """The first line (1-based) that nests deeper than any baseline does, or None."""
    depth = 0
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.lstrip()
        if len(line) - len(stripped) > indent or len(stripped) - len(stripped.lstrip("- ")) > 2 * dashes:
            return number
        for char in line:
            depth += 1 if char in "[{" else -1 if char in "]}" else 0
            if depth > flow:
                return number
    return None


def apply_baseline(result: RunResult, baseline: Baseline) -> BaselineOutcome:
    """Sort the run's failures into expected and new, find stale entries, and give the verdict."""
    by_key = {e.id: e for e in baseline.entries}
    ran = {j.id: j for j in result.journeys}
    expected: list[Finding] = []
    new: list[Finding] = []
    used: set[str] = set()
    for journey in result.journeys:
        if journey.verdict == "pass":
            continue  # the journey's verdict rules: a passing journey has no failure to cover
        ids: list[str | None] = [f.id for f in journey.failures] or [None]
        for failure in dict.fromkeys(ids):
            entry = by_key.get(f"{journey.id}:{failure}") if failure else None
            entry = entry or by_key.get(journey.id)
            key = f"{journey.id}:{failure}" if failure else journey.id
            if entry is not None:
                used.add(entry.id)
                expected.append(Finding(journey.id, failure, entry,
                                        f"expected failure {key}: covered by {entry.describe()}"))
            else:
                what = f"new failure {key}" if failure else f"journey {key} failed ({journey.verdict})"
                new.append(Finding(journey.id, failure, None, f"{what}: not in the baseline {baseline.path}"))
    stale: list[EntryFinding] = []
    unchecked: list[EntryFinding] = []
    for entry in baseline.entries:
        if entry.id in used:
            continue
        if entry.journey not in ran:
            unchecked.append(EntryFinding(entry, f"{entry.describe()} was not checked: the journey did not run"))
        elif entry.failure is None:
            stale.append(EntryFinding(entry, f"stale {entry.describe()}: the journey now passes; remove the entry"))
        else:
            stale.append(EntryFinding(entry, f"stale {entry.describe()}: the journey no longer fails with "
                                             f"{entry.failure}; remove the entry"))
    messages = [f.message for f in new] + [s.message for s in stale]
    if result.partial:
        messages.append("the run is partial (it was stopped before every journey ended)")
    messages += [f.message for f in expected] + [u.message for u in unchecked]
    verdict: Literal["pass", "fail"] = "fail" if (new or stale or result.partial) else "pass"
    return BaselineOutcome(verdict, tuple(expected), tuple(new), tuple(stale), tuple(unchecked), tuple(messages))
