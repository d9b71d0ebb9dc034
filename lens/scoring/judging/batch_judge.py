"""The judge at batch prices: a model client that sends judge calls through a provider's batch
API: OpenAI's Batch API (``openai/`` judges) or Anthropic's Message Batches (``litellm/anthropic/``
judges), each a ``BatchTransport`` below.

The judge engine (:mod:`lens.scoring.judging.judge_engine`) gives this client all its calls at once
(it is ``batched``): the synchronous client and this one are two transports of the same judge. It
gathers the calls that arrive together, uploads them as one JSONL file, creates a batch, polls
it, downloads the output and error files and answers each call from them. It is a
``ModelClient``, so verdicts land in the run's events and the model cache exactly as
synchronous ones do.

The batch id is written to ``RUN_DIR/judge_batches.json`` before polling starts: a scoring
killed while it waits resumes polling that batch on the next run instead of paying twice, and
downloaded outputs are kept in ``RUN_DIR/judge_batches/`` until their verdicts are recorded.
Calls a batch did not answer (expiry, a failed request) fail like any failed call: their metric
is unknown and the next scoring asks again. Batch calls cost half the list price; the cost of
each batch at both prices is kept, and shown in the report's "Judge batches" section.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from pydantic import BaseModel, ConfigDict, ValidationError

from lens.core.errors import ConfigError
from lens.core.jsonguard import JsonRefused, loads_guarded
from lens.core.safenames import UnsafeName, checked_name, child
from lens.data.config import CacheConfig, JudgeConfig
from lens.models.anthropic_batch import ENDED, AnthropicBatchAPI, BatchRequest, MessageParams
from lens.models.base import Completion, CompletionRequest, ModelClient, ModelError, Usage
from lens.models.cache import ModelCache, cache_key, default_cache_path
from lens.models.openai_batch import CHAT_ENDPOINT, TERMINAL, ChatBody, OpenAIBatchAPI
from lens.models.pricing import pricing_for
from lens.runs.sections import Cell, SectionDoc, SectionTable
from lens.runs.store import atomic_write_text

STATE_FILE = "judge_batches.json"
OUTPUT_DIR = "judge_batches"
SECTION = Path("sections") / "judge_batches.json"
# The Batch API's price relative to synchronous calls.
BATCH_DISCOUNT = 0.5


def request_body(request: CompletionRequest, model: str) -> ChatBody:
    body: ChatBody = {"model": model, "temperature": request.temperature,
                      "messages": [{"role": m.role, "content": m.content}
                                   for m in request.messages]}
    if request.response_schema is not None:
        body["response_format"] = {"type": "json_schema", "json_schema": {
            "name": "response", "schema": request.response_schema}}
    if request.max_tokens:
        body["max_tokens"] = request.max_tokens
    if request.seed is not None:
        body["seed"] = request.seed
    return body


# A judge verdict's length when the request sets none (Anthropic requires max_tokens).
ANTHROPIC_MAX_TOKENS = 1024


def anthropic_params(request: CompletionRequest, model: str) -> MessageParams:
    """A Messages API request: the system prompt apart; a response schema, which the Messages
    API has no field for, asked for in the system prompt."""
    system = "\n\n".join(m.content for m in request.messages if m.role == "system")
    if request.response_schema is not None:
        schema = json.dumps(request.response_schema, sort_keys=True)
        system += ("\n\n" if system else "") + ("Reply with one JSON object, and nothing "
                                                  f"else, matching this JSON schema: {schema}")
    body: MessageParams = {"model": model, "temperature": request.temperature,
                           "max_tokens": request.max_tokens or ANTHROPIC_MAX_TOKENS,
                           "messages": [{"role": m.role, "content": m.content}
                                        for m in request.messages if m.role != "system"]}
    if system:
        body["system"] = system
    return body


# One request of a batch: an OpenAI chat body or an Anthropic Messages request.
Body = ChatBody | MessageParams


class BatchEntry(BaseModel):
    """One batch of ``RUN_DIR/judge_batches.json``: what was submitted, and once ``done``, what
    came of it. Only the fields set are written, in this order; keys lens does not name are
    kept."""

    model_config = ConfigDict(extra="allow")

    id: str
    # OpenAI's: the uploaded file of requests.
    input_file_id: str | None = None
    status: str | None = None
    model: str | None = None
    custom_ids: list[str]
    submitted_at: float | None = None
    done: bool = False
    succeeded: int | None = None
    failed: int | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cost_batch_usd: float | None = None
    cost_list_usd: float | None = None
    # What the provider said went wrong with the batch as a whole.
    errors: str | None = None


@dataclass(frozen=True)
class Submitted:
    """A batch the provider accepted: its id (not yet checked as a name) and first status."""

    id: str
    status: str
    input_file_id: str | None = None


@dataclass(frozen=True)
class Polled:
    """A batch's state as the provider reports it, the parts lens reads: where its results are
    (OpenAI's output and error files, Anthropic's results URL) and what went wrong with it."""

    status: str
    ended: bool
    output_file_id: str | None = None
    error_file_id: str | None = None
    results_url: str | None = None
    errors: str | None = None


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


@dataclass
class Answer:
    """One request's result in a batch's output: text and usage, or why it failed."""

    custom_id: str
    text: str = ""
    finish_reason: str | None = None
    usage: Usage | None = None
    error: str | None = None


class OpenAIBatches:
    """OpenAI's Batch API: a JSONL file uploaded, a batch over it, output and error files."""

    def __init__(self, api: OpenAIBatchAPI) -> None:
        self.api = api

    def body(self, request: CompletionRequest, model: str) -> ChatBody:
        return request_body(request, model)

    async def submit(self, requests: dict[str, CompletionRequest], model: str) -> Submitted:
        lines = [json.dumps({"custom_id": c, "method": "POST", "url": CHAT_ENDPOINT,
                             "body": self.body(request, model)}, ensure_ascii=False)
                 for c, request in requests.items()]
        jsonl = ("\n".join(lines) + "\n").encode("utf-8")
        file_id = await self.api.upload(jsonl, "lens-judge.jsonl")
        created = await self.api.create(file_id, metadata={"source": "lens judge"})
        return Submitted(id=created["id"], input_file_id=file_id,
                         status=str(created.get("status", "validating")))

    async def status(self, batch_id: str) -> Polled:
        info = await self.api.retrieve(batch_id)
        status = str(info.get("status"))
        return Polled(status, status in TERMINAL, output_file_id=_text(info.get("output_file_id")),
                      error_file_id=_text(info.get("error_file_id")),
                      errors=str(info["errors"])[:500] if info.get("errors") else None)

    async def results(self, batch_id: str, polled: Polled) -> list[bytes]:
        lines: list[bytes] = []
        for key, fid in (("output_file_id", polled.output_file_id),
                         ("error_file_id", polled.error_file_id)):
            if fid is not None:
                try:
                    checked_name(fid, f"the batch's {key}")
                except UnsafeName as exc:
                    raise ModelError(f"batch {batch_id}: {exc}; its calls are unknown") from None
                lines += (await self.api.content(fid)).splitlines()
        return lines

    def parse(self, line: dict[str, Any], batch_id: str) -> Answer:
        cid = str(line.get("custom_id"))
        response = line.get("response") or {}
        body = response.get("body") or {}
        if response.get("status_code") != 200 or line.get("error"):
            err = line.get("error") or body.get("error") or {}
            msg = err.get("message") if isinstance(err, dict) else str(err)
            return Answer(cid, error=f"batch {batch_id}: request failed (HTTP "
                                     f"{response.get('status_code')}): {msg}")
        try:
            text = body["choices"][0]["message"].get("content") or ""
            finish = body["choices"][0].get("finish_reason")
        except (KeyError, IndexError, TypeError, AttributeError):
            return Answer(cid, error=f"batch {batch_id}: unreadable result")
        usage = body.get("usage") or {}
        return Answer(cid, text, finish, Usage(
            prompt_tokens=tokens(usage.get("prompt_tokens")),
            completion_tokens=tokens(usage.get("completion_tokens"))))

    async def aclose(self) -> None:
        await self.api.aclose()


class AnthropicBatches:
    """Anthropic's Message Batches: the requests in the create call, results as JSONL."""

    def __init__(self, api: AnthropicBatchAPI) -> None:
        self.api = api

    def body(self, request: CompletionRequest, model: str) -> MessageParams:
        return anthropic_params(request, model)

    async def submit(self, requests: dict[str, CompletionRequest], model: str) -> Submitted:
        batch: list[BatchRequest] = [{"custom_id": c, "params": self.body(request, model)}
                                     for c, request in requests.items()]
        created = await self.api.create_batch(batch)
        return Submitted(id=created["id"], status=str(created.get("processing_status")))

    async def status(self, batch_id: str) -> Polled:
        info = await self.api.retrieve(batch_id)
        status = str(info.get("processing_status"))
        return Polled(status, status == ENDED, results_url=_text(info.get("results_url")),
                      errors=str(info["errors"])[:500] if info.get("errors") else None)

    async def results(self, batch_id: str, polled: Polled) -> list[bytes]:
        return (await self.api.results(batch_id, polled.results_url)).splitlines()

    def parse(self, line: dict[str, Any], batch_id: str) -> Answer:
        cid = str(line.get("custom_id"))
        result = line.get("result") or {}
        kind = result.get("type")
        if kind != "succeeded":
            err = result.get("error") or {}
            inner = err.get("error") if isinstance(err.get("error"), dict) else err
            msg = inner.get("message") if isinstance(inner, dict) else None
            return Answer(cid, error=f"batch {batch_id}: request {kind}"
                                     + (f": {msg}" if msg else ""))
        message = result.get("message") or {}
        try:
            text = "".join(part.get("text", "") for part in message["content"]
                           if part.get("type") == "text")
        except (KeyError, TypeError, AttributeError):
            return Answer(cid, error=f"batch {batch_id}: unreadable result")
        u = message.get("usage") or {}
        read = tokens(u.get("cache_read_input_tokens"))
        write = tokens(u.get("cache_creation_input_tokens"))
        # Anthropic counts cached tokens apart from input_tokens; lens's prompt_tokens holds all.
        return Answer(cid, text, message.get("stop_reason"), Usage(
            prompt_tokens=tokens(u.get("input_tokens")) + read + write,
            completion_tokens=tokens(u.get("output_tokens")),
            cached_prompt_tokens=read, cache_write_tokens=write))

    async def aclose(self) -> None:
        await self.api.aclose()


BatchTransport = OpenAIBatches | AnthropicBatches

# More tokens than any one judge call could use: a count above it is the server's fault.
MAX_TOKENS_PER_CALL = 10**9
# One line of a batch's results; a verdict is a few hundred bytes.
MAX_RESULT_LINE_BYTES = 16 * 1024 * 1024


def tokens(value: object) -> int:
    """A token count from a batch's results: absent is 0; anything but a whole number from 0
    to :data:`MAX_TOKENS_PER_CALL` makes the result unreadable (``ValueError``)."""
    if value is None:
        return 0
    if isinstance(value, int) and not isinstance(value, bool) and (
            0 <= value <= MAX_TOKENS_PER_CALL):
        return value
    raise ValueError("a token count that is not a whole number of tokens")


def parse_line(transport: BatchTransport, raw: bytes, batch_id: str) -> Answer | None:
    """One line of a batch's results read through the JSON guard; ``None`` when it names no
    call (the call it was meant for is then reported as having no result)."""
    try:
        line = loads_guarded(raw, what=f"batch {batch_id} result line",
                             max_bytes=MAX_RESULT_LINE_BYTES)
    except JsonRefused:
        return None
    if not isinstance(line, dict) or not isinstance(line.get("custom_id"), str):
        return None
    try:
        return transport.parse(line, batch_id)
    except (TypeError, ValueError, AttributeError, KeyError, IndexError, OverflowError):
        return Answer(line["custom_id"], error=f"batch {batch_id}: unreadable result")


def is_anthropic(config: JudgeConfig) -> bool:
    return config.provider == "litellm" and config.name.startswith("anthropic/")


def custom_id(body: Body) -> str:
    blob = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


@dataclass
class _Group:
    # The calls gathered, by custom id (the hash of the request's body).
    requests: dict[str, CompletionRequest] = field(default_factory=dict)
    done: anyio.Event = field(default_factory=anyio.Event)
    failure: str | None = None


class BatchState:
    """``RUN_DIR/judge_batches.json``: every batch this run submitted, and what came of it."""

    def __init__(self, run_dir: Path) -> None:
        self.path = run_dir / STATE_FILE
        self.out_dir = run_dir / OUTPUT_DIR
        self.batches: list[BatchEntry] = []
        if self.path.is_file():
            self.batches = self._read()

    def _read(self) -> list[BatchEntry]:
        """The batches of the state file, each with a plain id and a list of call ids: the file
        is the run's, but may have been edited, and its ids become file names."""
        fix = "restore it or remove it (its batches are then submitted again)"
        try:
            data = loads_guarded(self.path.read_bytes(), what=str(self.path),
                                 max_bytes=256 * 1024 * 1024)
        except JsonRefused as exc:
            raise ConfigError(f"{exc}; {fix}") from None
        batches = data.get("batches", []) if isinstance(data, dict) else None
        if not isinstance(batches, list):
            raise ConfigError(f"{self.path}: 'batches' is not a list; {fix}")
        problems = []
        entries = []
        for i, b in enumerate(batches):
            if not isinstance(b, dict):
                problems.append(f"batches[{i}] is not an object")
                continue
            try:
                checked_name(b.get("id"), f"batches[{i}].id")
            except UnsafeName as exc:
                problems.append(str(exc))
            ids = b.get("custom_ids")
            if not isinstance(ids, list) or not all(isinstance(c, str) for c in ids):
                problems.append(f"batches[{i}].custom_ids is not a list of strings")
            try:
                entries.append(BatchEntry.model_validate(b))
            except ValidationError as exc:
                problems.extend(f"batches[{i}].{'.'.join(map(str, e['loc']))}: {e['msg']}"
                                for e in exc.errors() if e["loc"] not in (("id",),
                                                                           ("custom_ids",)))
        if problems:
            raise ConfigError(f"{self.path}: {'; '.join(problems)}; {fix}")
        return entries

    def output(self, batch_id: str) -> Path:
        """Where a batch's downloaded results are kept."""
        return child(self.out_dir, batch_id, "batch id", ".jsonl")

    def save(self) -> None:
        atomic_write_text(self.path, json.dumps(
            {"batches": [b.model_dump(mode="json", exclude_unset=True) for b in self.batches]},
            indent=1))


class BatchJudgeClient:
    """A ``ModelClient`` for judges whose calls go through the Batch API."""

    # The judge engine gives a batched client every call at once, so that one batch holds them.
    batched = True

    def __init__(self, config: JudgeConfig, run_dir: Path, *, api_key: str,
                 cache: CacheConfig | None = None, collect_s: float = 0.5,
                 api: OpenAIBatchAPI | None = None) -> None:
        self.config = config
        self.provider = config.provider
        self.model = config.name
        self.transport: BatchTransport
        if is_anthropic(config):
            self.transport = AnthropicBatches(AnthropicBatchAPI(
                config.base_url, api_key, timeout_s=config.timeout_s))
            # The model as Anthropic names it.
            self.wire_model = config.name.removeprefix("anthropic/")
        else:
            self.transport = OpenAIBatches(
                api or OpenAIBatchAPI(config.base_url, api_key, timeout_s=config.timeout_s))
            self.wire_model = config.name
        self.state = BatchState(run_dir)
        self.collect_s = collect_s
        self.pricing = pricing_for(config)
        self.cache = None
        if cache is not None and cache.enabled:
            self.cache = ModelCache(cache.path or default_cache_path())
        self._results: dict[str, Completion] = {}
        self._errors: dict[str, str] = {}
        self._open: _Group | None = None
        self._last_added = 0.0
        for b in self.state.batches:
            if b.done:
                self._load_output(b.id)

    # -- ModelClient ------------------------------------------------------------------------
    async def complete(self, request: CompletionRequest) -> Completion:
        body = self.transport.body(request, self.wire_model)
        cid = custom_id(body)
        ckey = cache_key(provider=self.provider, model=self.model,
                         base_url=self.config.base_url, request=request)
        if cid in self._results:
            return self._results[cid].model_copy(update={"cached": True})
        if self.cache is not None:
            hit = self.cache.get(ckey)
            if hit is not None:
                return hit.model_copy(update={"cached": True})
        group = self._open
        leader = group is None
        if group is None:
            group = self._open = _Group()
        group.requests[cid] = request
        self._last_added = time.monotonic()
        if leader:
            # Gather every call that arrives until the judge has asked them all.
            while True:
                await anyio.sleep(self.collect_s)
                if time.monotonic() - self._last_added >= self.collect_s:
                    break
            self._open = None
            try:
                await self._run(group)
            except ModelError as exc:
                group.failure = str(exc)
            finally:
                group.done.set()
        else:
            await group.done.wait()
        if cid in self._results:
            completion = self._results[cid]
            if self.cache is not None:
                self.cache.put(ckey, completion)
            return completion
        raise ModelError(self._errors.get(cid) or group.failure or "the batch gave no result")

    async def aclose(self) -> None:
        await self.transport.aclose()
        if self.cache is not None:
            self.cache.close()

    # -- batches ----------------------------------------------------------------------------
    async def _run(self, group: _Group) -> None:
        wanted = set(group.requests)
        pending = [b for b in self.state.batches
                   if not b.done and wanted & set(b.custom_ids)]
        covered = {c for b in pending for c in b.custom_ids}
        new = [c for c in group.requests if c not in covered]
        if new:
            pending.append(await self._submit({c: group.requests[c] for c in new}))
        deadline = time.monotonic() + self.config.batch_max_wait_s
        async with anyio.create_task_group() as tg:
            for b in pending:
                tg.start_soon(self._wait_or_fail, b, deadline)

    async def _wait_or_fail(self, entry: BatchEntry, deadline: float) -> None:
        """Wait for one batch; its failure fails its own calls, not the other batches'."""
        try:
            await self._wait(entry, deadline)
        except ModelError as exc:
            for c in entry.custom_ids:
                self._errors.setdefault(c, str(exc))

    async def _submit(self, requests: dict[str, CompletionRequest]) -> BatchEntry:
        created = await self.transport.submit(requests, self.wire_model)
        try:
            checked_name(created.id, "the batch id the server answered")
        except UnsafeName as exc:
            # Its id would become a URL path and a file name: such a batch cannot be followed.
            raise ModelError(f"batch API: {exc}; its calls are unknown") from None
        entry = BatchEntry(id=created.id, status=created.status,
                           model=f"{self.provider}/{self.model}", custom_ids=list(requests),
                           submitted_at=time.time(), done=False)
        if created.input_file_id is not None:
            entry.input_file_id = created.input_file_id
        # Written before polling: a killed scoring finds this batch and polls it again.
        self.state.batches.append(entry)
        self.state.save()
        return entry

    async def _wait(self, entry: BatchEntry, deadline: float) -> None:
        while True:
            polled = await self.transport.status(entry.id)
            if polled.status != entry.status:
                entry.status = polled.status
                self.state.save()
            if polled.ended:
                break
            if time.monotonic() >= deadline:
                for c in entry.custom_ids:
                    self._errors[c] = (f"batch {entry.id} still {polled.status} after "
                                       f"{self.config.batch_max_wait_s:.0f} s; run lens score "
                                       "again to resume polling it")
                return
            await anyio.sleep(self.config.batch_poll_s)
        await self._collect(entry, polled)

    async def _collect(self, entry: BatchEntry, polled: Polled) -> None:
        lines = await self.transport.results(entry.id, polled)
        self.state.out_dir.mkdir(exist_ok=True)
        self.state.output(entry.id).write_bytes(b"\n".join(lines) + b"\n")
        ok = self._load_output(entry.id)
        missing = [c for c in entry.custom_ids if c not in self._results]
        for c in missing:
            self._errors.setdefault(c, f"batch {entry.id} {entry.status}: no result for "
                                       "this call (it is asked again by the next scoring)")
        entry.done = True
        entry.succeeded, entry.failed = len(ok), len(missing)
        entry.prompt_tokens = sum(self._results[c].usage.prompt_tokens for c in ok)
        entry.completion_tokens = sum(self._results[c].usage.completion_tokens for c in ok)
        entry.cost_batch_usd = self._cost(entry.prompt_tokens, entry.completion_tokens,
                                          BATCH_DISCOUNT)
        entry.cost_list_usd = self._cost(entry.prompt_tokens, entry.completion_tokens, 1.0)
        if polled.errors is not None:
            entry.errors = polled.errors
        self.state.save()
        # A report section of its own, whatever scored the run (lens's tiers or a protocol).
        table = cost_table(self.state.path.parent)
        if table is not None:
            section = self.state.path.parent / SECTION
            section.parent.mkdir(exist_ok=True)
            doc: SectionDoc = {"title": "Judge batches", "tables": [table]}
            atomic_write_text(section, json.dumps(doc, indent=1))

    def _cost(self, prompt: int, completion: int, factor: float) -> float | None:
        if self.pricing is None:
            return None
        return self.pricing.cost(Usage(prompt_tokens=prompt,
                                       completion_tokens=completion)) * factor

    def _load_output(self, batch_id: str) -> list[str]:
        """Read a downloaded output file into results; returns the ids answered."""
        path = self.state.output(batch_id)
        if not path.is_file():
            return []
        ok: list[str] = []
        for raw in path.read_bytes().splitlines():
            if not raw.strip():
                continue
            answer = parse_line(self.transport, raw, batch_id)
            if answer is None:
                continue
            cid = answer.custom_id
            if answer.error is not None or answer.usage is None:
                self._errors[cid] = answer.error or f"batch {batch_id}: unreadable result"
                continue
            u = answer.usage
            self._results[cid] = Completion(
                text=answer.text, usage=u, finish_reason=answer.finish_reason,
                provider=self.provider,
                model=self.model,
                cost_usd=(self.pricing.cost(u) * BATCH_DISCOUNT if self.pricing else None))
            ok.append(cid)
        return ok


def pending_batches(run_dir: Path) -> list[str]:
    """Ids of the batches a run submitted and has not collected yet."""
    return [b.id for b in BatchState(run_dir).batches if not b.done]


def cost_table(run_dir: Path) -> SectionTable | None:
    """The judge's batches and their cost at batch and at list price, as a report table."""
    state = BatchState(run_dir)
    if not state.batches:
        return None
    rows: list[list[Cell]] = [
        [b.id, b.status, len(b.custom_ids), b.succeeded, b.failed, b.cost_list_usd,
         b.cost_batch_usd]
        for b in state.batches]
    rows.append(_total_row(state.batches))
    return {"title": f"judge cost through the Batch API ({1 - BATCH_DISCOUNT:.0%} discount)",
            "columns": ["batch", "status", "requests", "succeeded", "failed",
                        "cost at list price (USD)", "cost at batch price (USD)"],
            "rows": rows}


def _total_row(batches: list[BatchEntry]) -> list[Cell]:
    """The batches' requests, successes, failures and costs summed (a batch without a count
    counts 0); the costs unknown when one batch's is."""
    batch = [b.cost_batch_usd for b in batches]
    full = [b.cost_list_usd for b in batches]
    known = [c for c in [*batch, *full] if c is not None]
    whole = len(known) == 2 * len(batches)
    return ["total", "", sum(len(b.custom_ids) for b in batches),
            sum(b.succeeded or 0 for b in batches), sum(b.failed or 0 for b in batches),
            sum(c or 0.0 for c in full) if whole else None,
            sum(c or 0.0 for c in batch) if whole else None]


def make_judge_client(config: JudgeConfig, run_dir: Path, cache: CacheConfig | None
                      ) -> ModelClient:
    """The judge client a config asks for: batched when ``batch: true``, else the usual one;
    asked under the config's prompt version."""
    from lens.scoring.judging.judge_panel import with_prompts

    if not config.batch:
        from lens.models.factory import create_client

        return with_prompts(create_client(config, cache=cache), config.prompts)
    return with_prompts(BatchJudgeClient(config, run_dir, api_key=batch_api_key(config),
                                         cache=cache), config.prompts)


def batch_api_key(config: JudgeConfig) -> str:
    """The API key of a batch judge; a ConfigError when the judge has no batch API or no key
    (checked before a run starts, so that no answer is paid for in vain)."""
    anthropic = is_anthropic(config)
    if config.provider != "openai" and not anthropic:
        raise ConfigError(f"judge.batch: batch APIs are OpenAI's (openai/ judges) and "
                          f"Anthropic's (litellm/anthropic/ judges); judge {config.model!r} is "
                          "neither: use such a judge or set batch: false")
    env = config.api_key_env or ("ANTHROPIC_API_KEY" if anthropic else "OPENAI_API_KEY")
    key = os.environ.get(env)
    if not key:
        raise ConfigError(f"judge {config.model!r}: no API key: set the environment variable "
                          f"{env} (or name another one with 'api_key_env')")
    return key
