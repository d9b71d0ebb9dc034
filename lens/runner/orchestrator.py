"""The async orchestration of a run.

Units (adapter × scope × repeat) run concurrently, each with its own adapter instance. Within a
unit, episodes are ingested in timestamp order; at each checkpoint the adapter is prepared and
that checkpoint's questions are answered concurrently, and ingest resumes only when all of them
are stored, so no question ever sees a later episode.
"""

from __future__ import annotations

import functools
import hashlib
import time
import traceback
from collections.abc import Callable, Coroutine
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import anyio

from lens.core.errors import AdapterNotFound
from lens.data.config import AdapterConfig, RunConfig
from lens.data.dataset import Dataset, Question, Scope
from lens.data.reader_prompts import load_reader_prompt
from lens.memory.adapter import CapabilityManifest, MemoryAdapter, ModelUsage, resolve_adapter
from lens.memory.contract import check_result
from lens.memory.executor import AdapterWorkerLost
from lens.memory.executor import adapter_factory as executor_factory
from lens.memory.oracle import OracleMemory, is_oracle
from lens.memory.run_cache import wants_run_cache
from lens.models.base import ModelClient, ModelError, ToolSpec
from lens.runner.agent import Agent, tool_specs
from lens.runner.memory_state import UnitPlace, after_questions, before_questions
from lens.runner.reader import FixedReader
from lens.runs.batch_save import BatchSaver
from lens.runs.records import QuestionRecord, question_key, session_status, unit_key
from lens.runs.store import RunStore, now_iso

if TYPE_CHECKING:
    from datetime import datetime

    from lens.runner.gateway.server import ModelGateway


class RunProgress(Protocol):
    def start(self, units: int, questions: int, done: int) -> None: ...
    def question_done(self, status: str, agent_tokens: int) -> None: ...
    def unit_done(self, key: str) -> None: ...


class StopRule(Protocol):
    """Sequential stopping (lens.flow.stopping): the order in which scope blocks are answered,
    and whether to stop after the blocks done so far (a prefix of that order)."""

    order: list[str]

    async def look(self, done: list[str]) -> bool: ...


class _NoProgress:
    def start(self, units: int, questions: int, done: int) -> None: ...
    def question_done(self, status: str, agent_tokens: int) -> None: ...
    def unit_done(self, key: str) -> None: ...


@dataclass(frozen=True)
class Unit:
    adapter: AdapterConfig
    scope: Scope
    repeat: int
    questions: tuple[Question, ...]

    @functools.cached_property
    def key(self) -> str:
        # Asked for every question of the unit, several times: made once.
        return unit_key(self.adapter.display, self.scope.scope_id, self.repeat)


@dataclass
class RunSummary:
    units: int = 0
    units_failed: int = 0
    questions: int = 0
    answered: int = 0
    errored: int = 0
    # Finished sessions without answer text (status empty_answer); not in ``answered``.
    empty: int = 0
    # Answers given without any tool call (status no_memory); not in ``answered``.
    no_memory: int = 0
    skipped: int = 0
    wall_s: float = 0.0
    failures: list[str] = field(default_factory=list)
    # Units run again after their adapter's worker was lost (a Ray node that went away).
    units_retried: int = 0
    # Tool calls that failed in the questions recorded now (the sessions went on).
    tool_errors: int = 0
    # The run stopped answering because its verdict was settled (lens.flow.stopping); the
    # units left are not started, and ``--continue-past-stop`` answers them.
    stopped: bool = False
    units_not_started: int = 0

    def count(self, status: str) -> None:
        if status == "answered":
            self.answered += 1
        elif status == "empty_answer":
            self.empty += 1
        elif status == "no_memory":
            self.no_memory += 1
        else:
            self.errored += 1


def derive_seed(seed: int, *parts: str) -> int:
    """A per-question seed from the run seed, stable across processes (no salted hash())."""
    digest = hashlib.sha256("|".join([str(seed), *parts]).encode()).digest()
    return int.from_bytes(digest[:4], "big")


def plan_units(config: RunConfig, dataset: Dataset) -> list[Unit]:
    units = []
    for adapter in config.adapters:
        for scope in dataset.scopes:
            qs = tuple(sorted(dataset.questions_for(scope.scope_id),
                              key=lambda q: (q.checkpoint_after, q.question_id)))
            for repeat in range(config.repeats):
                units.append(Unit(adapter, scope, repeat, qs))
    return units


AdapterFactory = Callable[[AdapterConfig], MemoryAdapter]
T = TypeVar("T")


# Reading a usage counter takes no time: an adapter that cannot answer within this as its unit
# fails is hung, and the unit's failure is not held up for a whole call_timeout_s.
USAGE_AT_FAILURE_S = 10.0


def _wants_run_cache(name: str) -> bool:
    try:
        return wants_run_cache(resolve_adapter(name))
    except AdapterNotFound:
        # An adapter that a caller's own adapter factory builds need not be registered.
        return False


def _deadline(adapter: MemoryAdapter, seconds: float) -> AbstractContextManager[anyio.CancelScope]:
    # An adapter in a worker of its own enforces its timeouts itself (it can stop the worker).
    return anyio.fail_after(None if getattr(adapter, "enforces_timeouts", False) else seconds)


def _worker_lost(exc: BaseException) -> AdapterWorkerLost | None:
    """The loss of the adapter's worker behind ``exc``, also from inside a task group."""
    if isinstance(exc, AdapterWorkerLost):
        return exc
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            found = _worker_lost(inner)
            if found is not None:
                return found
    return None


class Runner:
    def __init__(
        self,
        config: RunConfig,
        dataset: Dataset,
        store: RunStore,
        model: ModelClient,
        *,
        progress: RunProgress | None = None,
        adapter_factory: AdapterFactory | None = None,
        retry_errors: bool = False,
        gateway: ModelGateway | None = None,
        stop_rule: StopRule | None = None,
    ) -> None:
        self.config = config
        self.dataset = dataset
        self.store = store
        self.model = model
        self.progress = progress or _NoProgress()
        self.adapter_factory = adapter_factory or executor_factory(config.executor)
        # A FIFO semaphore, taken without yielding when a slot is free: every question of a
        # checkpoint waits here at once, and a CapacityLimiter spent an exception, an event
        # and a trip round the event loop on each.
        self.question_limiter = anyio.Semaphore(config.concurrency.questions, fast_acquire=True)
        self.unit_limiter = anyio.CapacityLimiter(config.concurrency.units)
        self.summary = RunSummary()
        self._finished: set[str] = set()
        # Questions this run recorded (a unit run again skips them).
        self._saved_now: set[str] = set()
        self._retry_errors = retry_errors
        self._saver: BatchSaver[QuestionRecord] = BatchSaver(store.save_questions)
        # The model gateway of the run (lens.runner.gateway), when an adapter calls models
        # through it.
        self.gateway = gateway
        # Units whose memory usage was logged as they failed (the adapter could still be asked).
        self._usage_logged_at_failure: set[str] = set()
        self.stop_rule = stop_rule
        # Per scope block: its units not ended yet; and the blocks already looked at.
        self._open_units: dict[str, set[str]] = {}
        self._looked = 0
        self._look_lock = anyio.Lock()
        # A publisher's reader prompt, read once for every question of the run.
        prompt_file = config.agent.reader_prompt_file
        self._reader_template = (load_reader_prompt(prompt_file).template
                                 if prompt_file is not None else None)

    def _load_finished(self) -> tuple[set[str], set[str]]:
        done_units = self.store.done_keys("unit_done")
        finished = self.store.committed_questions()
        if self._retry_errors:
            errored_units = {k.rsplit("|", 1)[0] for k, s in finished.items() if s == "error"}
            return done_units - errored_units, {k for k, s in finished.items() if s != "error"}
        return done_units, set(finished)

    async def run(self) -> RunSummary:
        started = time.perf_counter()
        pending = self.begin()
        if self.stop_rule is not None:
            # A resumed run whose finished blocks settle the verdict starts nothing.
            await self._look()
        async with anyio.create_task_group() as tg:
            for unit in pending:
                tg.start_soon(self._run_unit_limited, unit)
        if self.summary.stopped:
            self.store.append_event("units_not_started", units=self.summary.units_not_started)
        return self.finish(started)

    def _block_order(self, units: list[Unit], pending: list[Unit]) -> list[Unit]:
        """Under a stop rule, the pending units in the seeded block order (the arms of a block
        side by side), and each block's units still open."""
        assert self.stop_rule is not None
        place = {scope: i for i, scope in enumerate(self.stop_rule.order)}
        arm = {a.display: i for i, a in enumerate(self.config.adapters)}
        for u in pending:
            self._open_units.setdefault(u.scope.scope_id, set()).add(u.key)
        return sorted(pending, key=lambda u: (place.get(u.scope.scope_id, len(place)),
                                              u.repeat, arm.get(u.adapter.display, 0)))

    def _done_prefix(self) -> list[str]:
        assert self.stop_rule is not None
        done: list[str] = []
        for scope in self.stop_rule.order:
            if self._open_units.get(scope):
                break
            done.append(scope)
        return done

    async def _look(self) -> None:
        """Read the verdict over the finished prefix of blocks, once per new prefix."""
        assert self.stop_rule is not None
        async with self._look_lock:
            if self.summary.stopped:
                return
            done = self._done_prefix()
            if len(done) <= self._looked:
                return
            self._looked = len(done)
            if await self.stop_rule.look(done):
                self.summary.stopped = True

    def begin(self) -> list[Unit]:
        """The units not done yet; what is done already is counted and announced."""
        units = plan_units(self.config, self.dataset)
        done_units, self._finished = self._load_finished()
        pending = [u for u in units if u.key not in done_units]
        if self.stop_rule is not None:
            pending = self._block_order(units, pending)
        total_q = sum(len(u.questions) for u in units)
        already = sum(
            1 for u in units for q in u.questions
            if question_key(u.key, q.question_id) in self._finished
        )
        self.summary.units = len(units)
        self.summary.questions = total_q
        self.summary.skipped = already
        self.progress.start(len(units), total_q, already)
        self.store.append_event("run_started", units=len(units), pending_units=len(pending),
                                questions=total_q, already_done=already)
        return pending

    def finish(self, started: float) -> RunSummary:
        self.summary.wall_s = time.perf_counter() - started
        self.store.append_event("run_finished", answered=self.summary.answered,
                                empty_answers=self.summary.empty,
                                no_memory=self.summary.no_memory,
                                errored=self.summary.errored,
                                units_failed=self.summary.units_failed,
                                wall_s=round(self.summary.wall_s, 3))
        return self.summary

    async def _run_unit_limited(self, unit: Unit) -> None:
        async with self.unit_limiter:
            if self.summary.stopped:
                self.summary.units_not_started += 1
                return
            await self._run_unit(unit)
        self.progress.unit_done(unit.key)
        if self.stop_rule is not None:
            self._open_units.get(unit.scope.scope_id, set()).discard(unit.key)
            await self._look()

    async def _run_unit(self, unit: Unit) -> None:
        retries = self.config.executor.unit_retries if self.config.executor.kind == "ray" else 0
        for attempt in range(retries + 1):
            pending = [q for q in unit.questions
                       if question_key(unit.key, q.question_id) not in self._finished
                       and question_key(unit.key, q.question_id) not in self._saved_now]
            try:
                await self._attempt_unit(unit, pending)
                return
            except Exception as exc:
                lost = _worker_lost(exc)
                if lost is not None and lost.retryable and attempt < retries:
                    self.summary.units_retried += 1
                    self.store.append_event("unit_retry", unit.key, attempt=attempt + 1,
                                            reason=str(lost))
                    continue
                await self._fail_unit(unit, pending, lost or exc)
                return

    async def _attempt_unit(self, unit: Unit, pending: list[Question]) -> None:
        timeout = unit.adapter.call_timeout_s
        adapter: MemoryAdapter | None = None
        self._usage_logged_at_failure.discard(unit.key)
        try:
            adapter = self.adapter_factory(self._adapter_config(unit))
            with _deadline(adapter, timeout):
                await adapter.reset(unit.scope.scope_id)
            with _deadline(adapter, timeout):
                caps = check_result("get_capabilities", await adapter.get_capabilities())
            self.store.append_event("unit_started", unit.key, adapter=unit.adapter.display,
                                    scope_id=unit.scope.scope_id, repeat=unit.repeat,
                                    capabilities=caps.model_dump(mode="json"),
                                    **({"oracle": True} if is_oracle(unit.adapter) else {}))
            await self._stream(unit, adapter, caps, pending, timeout)
            if self.gateway is not None:
                # Calls made while answering (query embeddings, rewrites) count too.
                await self._record_model_usage(unit, adapter, timeout)
            self.store.append_event("unit_done", unit.key)
        except Exception:
            if adapter is not None:
                await self._usage_before_failure(unit, adapter, timeout)
            raise
        finally:
            if adapter is not None:
                with anyio.move_on_after(timeout, shield=True):
                    try:
                        await adapter.aclose()
                    except Exception:
                        self.store.save_error(f"{unit.key}.aclose", traceback.format_exc())
            if self.gateway is not None:
                self.gateway.revoke(unit.key)

    def _adapter_config(self, unit: Unit) -> AdapterConfig:
        """The unit's adapter config; an adapter that asks for the model gateway gets this
        unit's access to it in its options, one that builds its own model client the run's
        cache section."""
        cfg = unit.adapter
        if _wants_run_cache(cfg.name):
            cfg = cfg.model_copy(update={"options": {
                **cfg.options, "model_cache": self.config.cache.model_dump(mode="json")}})
        if self.gateway is None:
            return cfg
        return self.gateway.unit_config(cfg, unit.key, unit.repeat)

    async def _stream(self, unit: Unit, adapter: MemoryAdapter, caps: CapabilityManifest,
                      pending: list[Question], timeout: float) -> None:
        by_checkpoint: dict[int, list[Question]] = {}
        for q in pending:
            by_checkpoint.setdefault(q.checkpoint_after, []).append(q)
        if not by_checkpoint:
            return
        # The dataset may be an outline (its text on disk): the unit reads its scope whole
        # now and lets it go when it ends, so a run holds the text of its open units only.
        scope = await anyio.to_thread.run_sync(self.dataset.full_scope, unit.scope.scope_id)
        episodes = scope.ordered_episodes()
        tools = tool_specs(caps)
        place = self._place(unit)
        last = max(by_checkpoint)
        ingested = 0
        for checkpoint in sorted(by_checkpoint):
            seg_start = time.perf_counter()
            first = ingested
            per_episode: list[float] = []
            while ingested < checkpoint:
                t0 = time.perf_counter()
                with _deadline(adapter, timeout):
                    await adapter.ingest(episodes[ingested].for_adapter())
                per_episode.append(round(time.perf_counter() - t0, 6))
                ingested += 1
            self.store.append_event("ingest_segment", unit.key, first=first, upto=ingested,
                                    seconds=round(time.perf_counter() - seg_start, 4),
                                    episode_seconds=per_episode)
            t0 = ingest_ended = time.perf_counter()
            with _deadline(adapter, timeout):
                await adapter.prepare(unit.scope.scope_id, checkpoint)
            standing = await self._standing_context(unit, adapter, caps, checkpoint, timeout)
            self.store.append_event("prepare_done", unit.key, checkpoint=checkpoint,
                                    seconds=round(time.perf_counter() - t0, 4),
                                    standing_context_bytes=len((standing or "").encode()))
            state = await self._memory_state(unit, place, adapter, caps, checkpoint, ingested,
                                             ingest_ended, timeout)
            await self._record_model_usage(unit, adapter, timeout)
            # "Now" of a question without its own time: the last episode it was given.
            now = episodes[ingested - 1].timestamp if ingested else None
            async with anyio.create_task_group() as tg:
                for q in by_checkpoint[checkpoint]:
                    tg.start_soon(self._answer, unit, adapter, caps, tools, q, ingested,
                                  standing, now, state, scope)
            if state is not None:
                await self._listing_call(unit, checkpoint, "after", after_questions(
                    self.store, place, adapter, checkpoint, state), adapter, timeout)
            self.store.append_event("checkpoint_done", unit.key, checkpoint=checkpoint)
            if checkpoint == last:
                break

    @staticmethod
    def _place(unit: Unit) -> UnitPlace:
        return UnitPlace(unit.key, unit.adapter.display, unit.scope.scope_id, unit.repeat)

    async def _memory_state(self, unit: Unit, place: UnitPlace, adapter: MemoryAdapter,
                            caps: CapabilityManifest, checkpoint: int, ingested: int,
                            ingest_ended: float, timeout: float) -> str | None:
        """The digest of the state this checkpoint's questions are answered from, recorded with
        its listing (lens/runner/memory_state.py); None when the adapter does not list. The
        oracle arm's agent reads lens's evidence, not the stand-in's memory."""
        if not caps.memory_listing or is_oracle(unit.adapter):
            return None
        return await self._listing_call(unit, checkpoint, "before", before_questions(
            self.store, place, adapter, checkpoint, ingested, ingest_ended), adapter, timeout)

    async def _listing_call(self, unit: Unit, checkpoint: int, phase: str,
                            call: Coroutine[Any, Any, T], adapter: MemoryAdapter,
                            timeout: float) -> T | None:
        """A reading of the memory's listing; one that raises is recorded (its traceback in
        errors/, a ``memory_state`` event the checklist fails) and the questions go on: the
        listing is an optional capability, the answers are not."""
        try:
            with _deadline(adapter, timeout):
                return await call
        except AdapterWorkerLost:
            raise
        except Exception as exc:
            tb = self.store.save_error(f"{unit.key}.list_memory{checkpoint}",
                                       traceback.format_exc())
            self.store.append_event("memory_state", unit.key, phase="error",
                                    adapter=unit.adapter.display,
                                    scope_id=unit.scope.scope_id, checkpoint=checkpoint,
                                    when=phase, error=f"{type(exc).__name__}: {exc} (see {tb})")
            return None

    async def _standing_context(self, unit: Unit, adapter: MemoryAdapter,
                                caps: CapabilityManifest, checkpoint: int,
                                timeout: float) -> str | None:
        if not caps.standing_context:
            return None
        with _deadline(adapter, timeout):
            text: str | None = check_result(
                "standing_context", await adapter.standing_context(unit.scope.scope_id, checkpoint))
        return text

    async def _usage_before_failure(self, unit: Unit, adapter: MemoryAdapter,
                                    timeout: float) -> None:
        """What the failing unit's memory spent so far stays in the memory-cost report: its own
        model calls too when the adapter can still be asked (a model it calls itself, as mem0
        does, may be what failed), else the gateway's meter alone (in ``_fail_unit``)."""
        with anyio.move_on_after(min(timeout, USAGE_AT_FAILURE_S)) as scope:
            try:
                await self._record_model_usage(unit, adapter, timeout)
            except Exception:
                return
        if not scope.cancelled_caught:
            self._usage_logged_at_failure.add(unit.key)

    async def _record_model_usage(self, unit: Unit, adapter: MemoryAdapter,
                                  timeout: float) -> None:
        """Log the adapter's own model usage so far (cumulative) for the memory-cost report."""
        with _deadline(adapter, timeout):
            raw = await adapter.model_usage()
        if raw is None and self.gateway is None:
            return
        try:
            reported = None if raw is None else ModelUsage.model_validate(raw)
        except ValueError:
            self.store.append_event("adapter_usage_invalid", unit.key)
            return
        usage = (reported if self.gateway is None
                 else self.gateway.with_unit_usage(unit.key, reported))
        if usage is None:
            return
        self.store.append_event("adapter_usage", unit.key, **usage.model_dump())

    async def _answer(self, unit: Unit, adapter: MemoryAdapter, caps: CapabilityManifest,
                      tools: list[ToolSpec], q: Question, ingested: int,
                      standing: str | None, checkpoint_time: datetime | None,
                      state: str | None, scope: Scope) -> None:
        async with self.question_limiter:
            started_at = now_iso()
            t0 = time.perf_counter()
            agent_cfg = self.config.agent
            # The oracle arm's agent reads this question's evidence, built here in the driver
            # (lens/memory/oracle.py); every other arm's agent reads its own adapter.
            memory = (OracleMemory.for_question(scope, q, ingested)
                      if is_oracle(unit.adapter) else adapter)
            seed = derive_seed(self.config.seed, unit.key, q.question_id)
            agent: Agent | FixedReader
            if agent_cfg.mode == "fixed_reader":
                # The reader cuts at the window of the config's model, the condition's cut.
                agent = FixedReader(
                    model=self.model, adapter=memory, config=agent_cfg,
                    template=self._reader_template,
                    episode_times={e.episode_id: e.timestamp for e in unit.scope.episodes},
                    call_timeout_s=unit.adapter.call_timeout_s, seed=seed, repeat=unit.repeat)
            else:
                agent = Agent(
                    model=self.model, adapter=memory, budget=agent_cfg.budget,
                    capabilities=caps, tools=tools,
                    call_timeout_s=unit.adapter.call_timeout_s,
                    temperature=agent_cfg.temperature, max_tokens=agent_cfg.max_tokens,
                    seed=seed, repeat=unit.repeat, standing_context=standing,
                    min_tool_rounds=agent_cfg.min_tool_rounds,
                )
            base: dict[str, Any] = dict(unit_key=unit.key, adapter=unit.adapter.display,
                        scope_id=unit.scope.scope_id, repeat=unit.repeat,
                        question_id=q.question_id, checkpoint=q.checkpoint_after,
                        started_at=started_at, episodes_ingested=ingested,
                        expected_answer=q.ground_truth.canonical_answer, memory_state=state)
            try:
                result = await agent.answer(q.for_agent(checkpoint_time))
            except AdapterWorkerLost:
                # The unit ends (and may run again); this question is not recorded here.
                raise
            except Exception as exc:
                reason = str(exc) if isinstance(exc, ModelError) else f"{type(exc).__name__}: {exc}"
                tb = self.store.save_error(question_key(unit.key, q.question_id),
                                           traceback.format_exc())
                record = QuestionRecord(**base, status="error", error=f"{reason} (see {tb})",
                                        wall_s=time.perf_counter() - t0)
            else:
                for i, tb_text in enumerate(result.tracebacks):
                    self.store.save_error(f"{question_key(unit.key, q.question_id)}.tool{i}",
                                          tb_text)
                record = QuestionRecord(
                    **base, status=session_status(result.answer, len(result.tool_calls),
                                                  result.standing_context_bytes, bool(tools)),
                    answer=result.answer,
                    cited_refs=result.cited_refs, retrieved_refs=result.retrieved_refs,
                    tool_calls=result.tool_calls, tool_errors=result.tool_errors,
                    model_calls=result.model_calls, transcript=result.transcript,
                    budget=result.budget, wall_s=time.perf_counter() - t0,
                    standing_context_bytes=result.standing_context_bytes,
                    standing_context_truncated=result.standing_context_truncated,
                )
        # The question's slot is free once its model calls are over: the next question starts
        # while this record is flushed. The checkpoint's task group still waits for the save.
        await self._save(record)

    async def _save(self, record: QuestionRecord) -> None:
        # Written and fsynced in a worker thread, with the records that finish beside it, so
        # a slow disk flush never stalls the calls in flight; counted only once durable.
        await self._saver.save(record)
        self._count(record)

    def _count(self, record: QuestionRecord) -> None:
        self._saved_now.add(record.key)
        self.summary.count(record.status)
        self.summary.tool_errors += record.tool_errors
        self.progress.question_done(record.status, record.tokens("agent"))

    async def _fail_unit(self, unit: Unit, pending: list[Question], exc: BaseException) -> None:
        tb = self.store.save_error(unit.key, traceback.format_exc())
        message = f"unit failed: {type(exc).__name__}: {exc} (see {tb})"
        self.summary.units_failed += 1
        self.summary.failures.append(f"{unit.key}: {message}")
        self.store.append_event("unit_error", unit.key, error=message)
        spent = self.gateway.unit_usage(unit.key) if self.gateway is not None else None
        if spent is not None and unit.key not in self._usage_logged_at_failure:
            # What the memory system spent through the gateway before the unit failed stays
            # in the memory-cost report (the adapter itself can no longer be asked).
            self.store.append_event("adapter_usage", unit.key, **spent.model_dump())
        for q in pending:
            if question_key(unit.key, q.question_id) in self._saved_now:
                continue
            record = QuestionRecord(
                unit_key=unit.key, adapter=unit.adapter.display, scope_id=unit.scope.scope_id,
                repeat=unit.repeat, question_id=q.question_id, checkpoint=q.checkpoint_after,
                status="error", error=message, started_at=now_iso(),
                expected_answer=q.ground_truth.canonical_answer,
            )
            await self._save(record)
