"""One run: the chosen journeys against one agent command, at most N at once.

Rules of this module: it wires the parts (launcher, MCP hub, journey scripts, judge) and owns the
run's lifetime. Whatever happens inside a journey, the journey ends with its agent processes
closed, its leftovers killed and its sandbox removed, also when the run is cancelled (Ctrl-C or
SIGTERM): then the journeys still running are marked interrupted and the result is partial.

It must not know the command line (cli/ builds its RunConfig) nor how results are printed beyond progress.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import os
import platform
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field

from acp_journeys import __version__
from acp_journeys.editor.journeys import SCRIPTS
from acp_journeys.editor.session import Bounds, JourneyContext
from acp_journeys.launch import Launcher
from acp_journeys.output.console import Progress, Wait
from acp_journeys.rules import catalog
from acp_journeys.rules.evidence import BoundHit, JourneyEvidence, JourneyResult, ProtocolTier, RunResult, Tiers
from acp_journeys.rules.judge import judge_journey, judge_result
from acp_journeys.rules.model_requests import RequestRecord
from acp_journeys.rules.protocol_tier import judge_tiers


@dataclass
class ModelStubConfig:
    """`run --model-stub`: the settings that hold `{model_url}`, filled per journey."""

    env: dict[str, str] = field(default_factory=dict)
    config_files: list[tuple[str, str]] = field(default_factory=list)
    """(template text, path under the agent's home)."""
    mask: Callable[[str], str] = str
    """The run's redactor: the stub masks what reached the model before it clips it."""


HEARTBEAT_S = 10.0
"""A waiting run says so at least this often: a slow model is not taken for a hung tool."""


@dataclass
class RunConfig:
    argv: list[str]
    journeys: list[str] = field(default_factory=lambda: list(catalog.JOURNEY_IDS))
    parallel: int | None = None
    bounds: Bounds = field(default_factory=Bounds)
    strict: bool = False
    transcripts: bool = False
    docs_url: str = catalog.DEFAULT_DOCS_URL
    subject: dict[str, str] = field(default_factory=dict)
    model_stub: ModelStubConfig | None = None
    tiers: list[str] = field(default_factory=list)
    """Opt-in tiers beside Rondar's verdict: "protocol" runs the tier's probe too (#26)."""
    heartbeat_s: float = HEARTBEAT_S
    """How often the progress says what the running journeys wait on (a terminal's live line: each second)."""


def _now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


def journey_bound(bounds: Bounds) -> float:
    """A safety net over a whole journey: every step inside has its own, smaller bound."""
    return (bounds.initialize() * 2 + bounds.request() * 6 + bounds.turn() * 3
            + bounds.cancel_s + bounds.exit_s * 4 + 60)


def probe_bound(bounds: Bounds) -> float:
    """A safety net over the protocol tier's probe: its 9 short steps, a cancel and the closing."""
    return bounds.initialize() + bounds.request() * 10 + bounds.cancel_s + bounds.exit_s + 30


class Run:
    def __init__(self, config: RunConfig, launcher: Launcher, progress: Progress) -> None:
        self.config = config
        self.launcher = launcher
        self.progress = progress
        self.result = RunResult(
            tool_version=__version__, agent_command=list(config.argv), started_at=_now(),
            strict=config.strict, docs_url=config.docs_url, timeout_scale=config.bounds.scale,
            subject=dict(config.subject), machine=_machine(),
        )
        self.hub = None
        self.stub = None
        self.active: dict[str, JourneyContext] = {}
        """The journeys running now, for the heartbeat."""
        self.queued: dict[str, float] = {}
        """The journeys waiting for a free slot (--parallel), since when (monotonic)."""
        self._socket_dir = tempfile.mkdtemp(prefix="acpj-hub-", dir="/tmp")

    async def execute(self) -> RunResult:
        """Runs every journey; on cancellation, returns the partial result instead of raising."""
        from acp_journeys.services.mcp_hub import RondarMcpHub

        self.hub = RondarMcpHub(self._socket_dir)
        if self.config.model_stub is not None:
            from acp_journeys.services.model_stub import ModelStub

            self.stub = await asyncio.to_thread(ModelStub(mask=self.config.model_stub.mask).start)
        limit = asyncio.Semaphore(self.config.parallel or len(self.config.journeys) or 1)
        tasks = [asyncio.create_task(self._guarded(jid, limit)) for jid in self.config.journeys]
        probe = asyncio.create_task(self._probe(limit)) if "protocol" in self.config.tiers else None
        heartbeat = asyncio.create_task(self._heartbeat())
        try:
            await asyncio.gather(*tasks, *([probe] if probe else []))
            interrupted = False
        except asyncio.CancelledError:
            interrupted = True
            await asyncio.wait(tasks + ([probe] if probe else []))  # each cleans up, keeps its partial evidence
        finally:
            heartbeat.cancel()
            await asyncio.gather(heartbeat, return_exceptions=True)
            self.progress.end_status()
            await self.hub.close()
            await self.launcher.close()
            if self.stub is not None:
                await asyncio.to_thread(self.stub.stop)
                records = self.stub.records.snapshot()
                self.result.model_stub = {"requests": self.stub.records.received,
                                          "records_not_kept": self.stub.records.dropped(),
                                          "connections_refused": self.stub.refused_connections,
                                          "dialects": sorted({r.dialect for r in records if r.dialect})}
            try:
                os.rmdir(self._socket_dir)
            except OSError:
                pass
        results = [t.result() for t in tasks if t.done() and not t.cancelled() and t.exception() is None]
        order = {jid: i for i, jid in enumerate(self.config.journeys)}
        self.result.journeys = sorted(results, key=lambda r: order[r.id])
        self.result.partial = interrupted or len(results) < len(self.config.journeys)
        self.result.launch = self.launcher.describe()
        self.result.ended_at = _now()
        if probe is not None:
            tier = probe.result() if probe.done() and not probe.cancelled() and probe.exception() is None \
                else ProtocolTier()
            self.result.tiers = Tiers(protocol=tier)
        self.result = judge_tiers(judge_result(self.result))
        tier = self.result.tiers.protocol if self.result.tiers else None
        if tier is not None and not self.config.transcripts and all(c.verdict == "pass" for c in tier.checks):
            tier.probe_transcript = None  # kept, as a journey's, only where something did not pass
        return self.result

    async def _probe(self, limit: asyncio.Semaphore) -> ProtocolTier:
        """The protocol tier's probe: one agent process of its own, run and cleaned up as a journey is."""
        from acp_journeys.editor import protocol_probe
        from acp_journeys.rules import protocol_catalog

        tier = ProtocolTier()
        try:
            async with limit:
                self.progress.started(protocol_catalog.PROBE_ID)
                started = time.monotonic()
                sandbox = await self.launcher.open_sandbox(protocol_catalog.PROBE_ID)
                ctx = JourneyContext(protocol_catalog.PROBE_ID, sandbox, self.config.argv, self.config.bounds)
                tier.probe = ctx.evidence
                channel = None
                self.active[protocol_catalog.PROBE_ID] = ctx  # the heartbeat says what it waits on, too
                try:
                    assert self.hub is not None
                    channel = await self.hub.open_channel(protocol_catalog.PROBE_ID, ctx.on_mcp_call,
                                                          socket_path=sandbox.mcp_socket_path)
                    await self._point_at_model_stub(ctx, sandbox)
                    await asyncio.wait_for(protocol_probe.run(ctx, tier.probe_sent), probe_bound(self.config.bounds))
                except asyncio.CancelledError:
                    ctx.evidence.interrupted = True
                    ctx.stop_early("the run was stopped")
                except asyncio.TimeoutError:
                    ctx.stop_early("the probe ran over its overall bound")
                except Exception as exc:  # our bug: the tier's checks skip what the probe did not reach
                    ctx.evidence.runner_error = f"{type(exc).__name__}: {exc}\n" + traceback.format_exc(limit=8)
                finally:
                    await self._cleanup(ctx, channel, sandbox)
                    self.active.pop(protocol_catalog.PROBE_ID, None)
                tier.duration_s = round(time.monotonic() - started, 3)
                tier.probe_transcript = ctx.transcript
                self.progress.say(f"{protocol_catalog.PROBE_ID}: done in {tier.duration_s:.1f}s")
        except asyncio.CancelledError:
            pass  # cancelled while waiting for a slot: the tier's checks of the probe skip
        return tier

    async def _heartbeat(self) -> None:
        """Every `heartbeat_s` (each second for a terminal's live line): what the journeys wait on."""
        interval = min(self.config.heartbeat_s, 1.0) if self.progress.live else self.config.heartbeat_s
        while True:
            await asyncio.sleep(interval)
            self.progress.waiting(self.waits())

    def waits(self) -> list[Wait]:
        """What each running journey waits on now: its requests in flight, with their bounds."""
        now = time.monotonic()
        out = []
        for journey_id, ctx in list(self.active.items()):
            found = False
            for session in ctx.sessions:
                conn = session.conn
                for method, since, bound in list(conn.waits.values()) if conn is not None else ():
                    turn = session.router.turn
                    what = f"turn {turn.name} (session/prompt)" if method == "session/prompt" and turn else method
                    if len(ctx.sessions) > 1:
                        what += f" of process {session.index + 1}"
                    out.append(Wait(journey_id, what, now - since, bound))
                    found = True
                closed = session.evidence.stdin_closed_at
                if closed is not None and not session.exited.is_set():
                    out.append(Wait(journey_id, f"process {session.index + 1} to end after its input closed",
                                    ctx.clock.now() - closed, ctx.bounds.exit_s))
                    found = True
            if not found:  # between requests: starting, checking, or closing its processes
                elapsed = ctx.clock.now()
                out.append(Wait(journey_id, f"running {elapsed:.0f} s, no request in flight", elapsed))
        for journey_id, since in list(self.queued.items()):
            out.append(Wait(journey_id, f"waiting {now - since:.0f} s for a free slot (--parallel "
                                        f"{self.config.parallel})", now - since))
        return out

    async def _guarded(self, journey_id: str, limit: asyncio.Semaphore) -> JourneyResult:
        self.queued[journey_id] = time.monotonic()
        try:
            async with limit:
                self.queued.pop(journey_id, None)
                return await self._journey(journey_id)
        except asyncio.CancelledError:
            # Cancelled while waiting for a slot: it never started.
            self.queued.pop(journey_id, None)
            journey = catalog.JOURNEYS_BY_ID[journey_id]
            evidence = JourneyEvidence(journey=journey_id, interrupted=True, stopped_early="never started")
            return self._judged(journey, evidence, None, 0.0)

    async def _journey(self, journey_id: str) -> JourneyResult:
        journey = catalog.JOURNEYS_BY_ID[journey_id]
        self.progress.started(journey_id)
        started = time.monotonic()
        sandbox = await self.launcher.open_sandbox(journey_id)
        ctx = JourneyContext(journey_id, sandbox, self.config.argv, self.config.bounds)
        channel = None
        self.active[journey_id] = ctx
        try:
            assert self.hub is not None
            channel = await self.hub.open_channel(journey_id, ctx.on_mcp_call, socket_path=sandbox.mcp_socket_path)
            await self._point_at_model_stub(ctx, sandbox)
            await asyncio.wait_for(SCRIPTS[journey_id](ctx), journey_bound(self.config.bounds))
        except asyncio.CancelledError:
            ctx.evidence.interrupted = True
            ctx.stop_early("the run was stopped")
        except asyncio.TimeoutError:
            bound = journey_bound(self.config.bounds)
            ctx.stop_early(f"the journey ran over its overall bound of {bound:.0f} s (--timeout-scale "
                           f"{self.config.bounds.scale:g}); raise --timeout-scale if your model is slow")
        except Exception as exc:  # our bug, not the agent's: verdict `error`, and the run goes on
            ctx.evidence.runner_error = f"{type(exc).__name__}: {exc}\n" + traceback.format_exc(limit=8)
        finally:
            await self._cleanup(ctx, channel, sandbox)
            self.active.pop(journey_id, None)
            if self.stub is not None:
                ctx.evidence.model_requests = [
                    RequestRecord.from_dict({**r, "at": round(ctx.clock.since(r["at"]), 4)})
                    for r in self.stub.records.as_dicts(tag=journey_id)]
                dropped = self.stub.records.dropped(journey_id)
                if dropped:
                    from acp_journeys.services.model_stub.records import RECORDS_KEPT

                    ctx.evidence.bounds_hit.append(BoundHit(
                        what="requests to the model stub", seen=len(ctx.evidence.model_requests) + dropped,
                        kept=RECORDS_KEPT, kept_what="kept, and each later one that shows the judge something new"))
        return self._judged(journey, ctx.evidence, ctx.transcript, time.monotonic() - started)

    async def _point_at_model_stub(self, ctx: JourneyContext, sandbox) -> None:
        """Fill `{model_url}` for this journey: its own path on the endpoint tags its requests."""
        if self.stub is None or self.config.model_stub is None:
            return
        from acp_journeys.services.model_stub.placeholders import fill, fill_env

        endpoint = await sandbox.model_endpoint()
        if endpoint is not None:  # a container with no network: through a relay on its loopback
            socket_path, base = endpoint
            self.stub.add_unix_listener(socket_path)
            url = f"{base.rstrip('/')}/t/{ctx.evidence.journey}"
        else:
            url = self.stub.url_for(ctx.evidence.journey)
        sandbox.extra_env = fill_env(self.config.model_stub.env, url)
        for text, dest in self.config.model_stub.config_files:
            await sandbox.write_home_file(dest, fill(text, url).encode())
        ctx.evidence.model_stub_used = True

    async def _cleanup(self, ctx: JourneyContext, channel, sandbox) -> None:
        # Shielded steps: a second Ctrl-C must not leave processes or files behind.
        for step in (ctx.close_all, channel.close if channel else None, sandbox.close):
            if step is None:
                continue
            try:
                await asyncio.shield(step())
            except asyncio.CancelledError:
                ctx.evidence.interrupted = True
            except Exception as exc:
                ctx.evidence.runner_error = ctx.evidence.runner_error or f"cleanup failed: {exc}"

    def _judged(self, journey, evidence, transcript, seconds: float) -> JourneyResult:
        judgement = judge_journey(evidence, strict=self.config.strict, docs_url=self.config.docs_url,
                                  timeout_scale=self.config.bounds.scale)
        keep = transcript is not None and (self.config.transcripts or judgement.verdict != "pass")
        result = JourneyResult(
            id=journey.id, title=journey.title, doc=catalog.doc_link(journey.anchor, self.config.docs_url),
            verdict=judgement.verdict, failures=judgement.failures, warnings=judgement.warnings,
            duration_s=round(seconds, 3), evidence=evidence, transcript=transcript if keep else None,
        )
        self.progress.finished(result)
        return result


def _machine() -> dict[str, object]:
    return {
        "platform": platform.platform(),
        "python": sys.version.split()[0],
        "cpus": os.cpu_count(),
    }
