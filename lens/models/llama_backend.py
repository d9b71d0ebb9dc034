"""The ``llama_cpp`` backend: a GGUF model in-process through llama-cpp-python.

Calls run in worker threads so the event loop stays free; the loaded model is shared by every
client that names it. A llama context is not thread-safe, so each call holds one loaded
instance; ``options.parallel`` loads up to that many instances (each with
``n_threads / parallel`` threads, loaded when concurrent calls first need them) so that as many
calls run at once. Each instance costs a copy of the repacked weights; what it buys is a
machine whose cores are not all idle: one instance's threads wait for each other at every
step and spin when another process takes a core, where one-thread instances do not (bench/
RESULTS.md).

Tool calls come from constrained decoding: each turn's output must match oneOf(a call of an
offered tool with schema-valid arguments, a final answer), compiled from JSON schema to a
llama.cpp grammar; lens renders tool results itself.
"""

from __future__ import annotations

import contextlib
import functools
import json
import math
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import anyio
import anyio.to_thread

from lens.core.cpu import idle_cores
from lens.core.errors import ConfigError
from lens.data.config import ModelConfig
from lens.models.base import Completion, CompletionRequest, ModelError, Usage
from lens.models.llama_decode import eval_prompt, greedy_constrained, last_logits
from lens.models.local_models import resolve_model_path
from lens.models.local_prompt import action_schema, parse_action, render_prompt, tool_rounds

if TYPE_CHECKING:
    from llama_cpp.llama_types import CreateCompletionResponse

# Part of the cache key: bump when rendering or constraints change what the model is asked.
PROMPT_FORMAT = "chatml-json-actions-3"
_OPTIONS = ("n_ctx", "n_threads", "n_batch", "parallel", "min_tool_rounds", "max_tool_rounds",
            "models_dir", "seed", "optional_args", "ground_refs")


def default_threads() -> int:
    """llama.cpp's thread count when ``options.n_threads`` is not set: the idle cores (its
    worker threads spin while they wait for each other, so more threads than free cores is
    slower, not faster)."""
    return idle_cores()


@dataclass(frozen=True)
class LlamaSettings:
    path: Path
    n_ctx: int
    n_threads: int
    n_batch: int
    seed: int
    parallel: int = 1


class LoadedModel:
    """One llama.cpp model instance; a :class:`ModelPool` lends it to one call at a time."""

    def __init__(self, settings: LlamaSettings) -> None:
        try:
            from llama_cpp import Llama
        except ImportError:
            raise ConfigError(
                "the llama_cpp provider needs llama-cpp-python: install lens with the 'local' "
                "extra (see the README for the build flags)"
            ) from None
        self.settings = settings
        self.llm = Llama(
            model_path=str(settings.path),
            n_ctx=settings.n_ctx,
            n_threads=settings.n_threads,
            n_threads_batch=settings.n_threads,
            n_batch=settings.n_batch,
            seed=settings.seed,
            verbose=False,
        )


class ModelPool:
    """Up to ``settings.parallel`` instances of one model, each lent to one call at a time. An
    instance is loaded only when every loaded one is busy, so a run that makes one call at a
    time holds one copy. A lent instance keeps its context between calls: a call that starts
    with the previous call's prompt re-uses its evaluation (prefix reuse)."""

    def __init__(self, settings: LlamaSettings) -> None:
        self.settings = settings
        self._slots = threading.Semaphore(settings.parallel)
        self._lock = threading.Lock()
        self._idle: list[LoadedModel] = []
        self._loaded = 0

    @contextlib.contextmanager
    def lend(self) -> Iterator[LoadedModel]:
        self._slots.acquire()
        try:
            with self._lock:
                model = self._idle.pop() if self._idle else None
                if model is None:
                    self._loaded += 1
            if model is None:
                try:
                    model = LoadedModel(self.settings)
                except BaseException:
                    with self._lock:
                        self._loaded -= 1
                    raise
            try:
                yield model
            finally:
                with self._lock:
                    self._idle.append(model)
        finally:
            self._slots.release()

    @property
    def instances(self) -> int:
        """How many instances are loaded."""
        with self._lock:
            return self._loaded


_loaded: dict[LlamaSettings, ModelPool] = {}
_loaded_lock = threading.Lock()


def shared_model(settings: LlamaSettings) -> ModelPool:
    with _loaded_lock:
        pool = _loaded.get(settings)
        if pool is None:
            pool = _loaded[settings] = ModelPool(settings)
        return pool


@functools.lru_cache(maxsize=256)
def _gbnf(schema_json: str) -> str:
    from llama_cpp.llama_grammar import json_schema_to_gbnf

    return str(json_schema_to_gbnf(schema_json))


class LlamaCppClient:
    provider = "llama_cpp"
    # The grammar of a turn with tool_choice "required" admits only a tool call.
    tool_choice_required = True
    # A local model bounds its own time through max_tokens; a wall-clock timeout would only
    # abandon a computation that keeps the model busy anyway.
    wall_clock_timeout = False

    def __init__(self, config: ModelConfig) -> None:
        opts = config.backend_options(_OPTIONS)
        self.model = config.name
        self.config = config
        models_dir = opts.get("models_dir")
        path, identity = resolve_model_path(config.name,
                                            Path(models_dir) if models_dir else None)
        parallel = int(opts.get("parallel", 1))
        if parallel < 1:
            raise ConfigError(f"model {config.model!r}: options.parallel must be 1 or more "
                              f"(instances of the model answering at once), got {parallel}")
        self.settings = LlamaSettings(
            path=path,
            n_ctx=int(opts.get("n_ctx", 8192)),
            # The idle cores shared among the instances: more threads than cores spin.
            n_threads=int(opts.get("n_threads", max(1, default_threads() // parallel))),
            n_batch=int(opts.get("n_batch", 512)),
            seed=int(opts.get("seed", 0)),
            parallel=parallel,
        )
        mtr = opts.get("max_tool_rounds")
        # After this many tool-call turns the next turn may only answer, so a small model
        # cannot search until the budget runs out with nothing to show.
        self.max_tool_rounds: int | None = int(mtr) if mtr is not None else None
        # Before this many tool-call turns the model may not answer: a small model otherwise
        # answers from its own imagination without looking at the memory at all.
        self.min_tool_rounds = int(opts.get("min_tool_rounds", 1))
        self.optional_args = bool(opts.get("optional_args", False))
        # A ref_id argument must name a record the tools returned: a small model otherwise
        # "retrieves" ids it made up (or copied from the prompt's example).
        self.ground_refs = bool(opts.get("ground_refs", True))
        self.cache_identity = {"model": identity, "format": PROMPT_FORMAT,
                               "n_ctx": self.settings.n_ctx,
                               "min_tool_rounds": self.min_tool_rounds,
                               "optional_args": self.optional_args,
                               "ground_refs": self.ground_refs,
                               "max_tool_rounds": self.max_tool_rounds}
        self._model: ModelPool | None = None

    def _loaded(self) -> ModelPool:
        if self._model is None:
            self._model = shared_model(self.settings)
        return self._model

    def share_loaded(self) -> None:
        """Use a model of the same file already loaded in this process (by the agent, say) if
        its context is as large, whatever its thread count: a second copy would only cost a
        load and memory."""
        with _loaded_lock:
            for settings, model in _loaded.items():
                if settings.path == self.settings.path and settings.n_ctx >= self.settings.n_ctx:
                    self._model = model
                    return

    async def complete(self, request: CompletionRequest) -> Completion:
        cancelled = threading.Event()
        try:
            # Abandon on cancel: the worker notices ``cancelled`` at the next token and stops.
            return await anyio.to_thread.run_sync(
                self._complete_sync, request, cancelled, abandon_on_cancel=True
            )
        finally:
            cancelled.set()

    def _complete_sync(self, request: CompletionRequest, cancelled: threading.Event) -> Completion:
        started = time.perf_counter()
        loaded = self._loaded() if self._model is None else self._model
        agentic = bool(request.tools) and request.response_schema is None
        rounds = tool_rounds(request.messages)
        answer_only = (agentic and self.max_tool_rounds is not None
                       and rounds >= self.max_tool_rounds)
        must_call = agentic and not answer_only and rounds < self.min_tool_rounds
        prompt = render_prompt(request, answer_only=answer_only,
                               optional_args=self.optional_args)
        schema: dict[str, Any] | None = None
        if agentic:
            schema = action_schema(request, answer_only=answer_only, must_call=must_call,
                                   optional_args=self.optional_args,
                                   ground_refs=self.ground_refs)
        elif request.response_schema is not None:
            schema = request.response_schema
        max_tokens = request.max_tokens or self.config.max_tokens or 512
        with loaded.lend() as instance:
            if cancelled.is_set():
                raise ModelError("cancelled before the model started", retryable=False)
            from llama_cpp import LlamaGrammar, StoppingCriteriaList

            llm = instance.llm
            tokens = llm.tokenize(prompt.encode("utf-8"), add_bos=False, special=True)
            n_prompt = len(tokens)
            room = llm.n_ctx() - n_prompt
            if room < 16:
                raise ModelError(
                    f"llama_cpp/{self.model}: the prompt ({n_prompt} tokens) does not fit the "
                    f"context window (n_ctx {llm.n_ctx()}); raise options.n_ctx or lower the "
                    "payload budget", retryable=False)
            try:
                gbnf = _gbnf(json.dumps(schema)) if schema else None
            except Exception as exc:  # the converter raises plain errors on unsupported schemas
                raise ModelError(f"llama_cpp/{self.model}: cannot turn the JSON schema into a "
                                 f"grammar: {exc}", retryable=False) from None
            finish_reason: str | None
            if request.temperature == 0:
                decoded = greedy_constrained(
                    llm, tokens, gbnf, min(max_tokens, room), cancelled, request.stop)
                raw, finish_reason = decoded.text, decoded.finish_reason
                prompt_tokens, completion_tokens = decoded.prompt_tokens, decoded.completion_tokens
            else:
                out = llm.create_completion(
                    prompt=tokens,
                    max_tokens=min(max_tokens, room),
                    temperature=request.temperature,
                    top_p=request.top_p if request.top_p is not None else 0.95,
                    seed=request.seed if request.seed is not None else self.settings.seed,
                    stop=["<|im_end|>", "<|endoftext|>", *(request.stop or [])],
                    grammar=LlamaGrammar.from_string(gbnf, verbose=False) if gbnf else None,
                    stopping_criteria=StoppingCriteriaList([_StopWhen(cancelled)]),
                )
                # Without stream=True llama-cpp returns one response, never an iterator.
                response = cast("CreateCompletionResponse", out)
                choice = response["choices"][0]
                raw, finish_reason = choice.get("text") or "", choice.get("finish_reason")
                usage: dict[str, Any] = dict(response.get("usage") or {})
                prompt_tokens = int(usage.get("prompt_tokens", n_prompt))
                completion_tokens = int(usage.get("completion_tokens", 0))
        if agentic:
            turn = sum(1 for m in request.messages if m.role == "assistant")
            text, calls = parse_action(raw, turn)
        else:
            text, calls = raw.strip(), []
        finish = "tool_calls" if calls else finish_reason
        return Completion(
            text=text,
            tool_calls=calls,
            usage=Usage(prompt_tokens=prompt_tokens, completion_tokens=completion_tokens),
            finish_reason=finish,
            latency_s=time.perf_counter() - started,
            # Local inference has no per-token fee: the cost is known, and it is zero.
            cost_usd=0.0,
        )

    def choice_probabilities(self, prompt: str, choices: tuple[str, ...]) -> dict[str, float]:
        """The model's probabilities of continuing the raw ``prompt`` with each of ``choices``
        (by their first tokens, which must differ), normalised over the choices: a constrained
        one-token verdict read as a probability, in one forward pass over the new tokens of the
        prompt. Prompts sharing a start with the previous one re-use its evaluation."""
        with self._loaded().lend() as instance:
            llm = instance.llm
            tokens = llm.tokenize(prompt.encode("utf-8"), add_bos=False, special=True)
            if len(tokens) >= llm.n_ctx():
                raise ModelError(
                    f"llama_cpp/{self.model}: the prompt ({len(tokens)} tokens) does not fit the "
                    f"context window (n_ctx {llm.n_ctx()}); raise options.n_ctx", retryable=False)
            firsts = [llm.tokenize(c.encode("utf-8"), add_bos=False, special=False)[0]
                      for c in choices]
            if len(set(firsts)) != len(firsts):
                raise ValueError(f"choices {choices} do not differ in their first token")
            eval_prompt(llm, tokens)
            logits = last_logits(llm)
            picked = [float(logits[t]) for t in firsts]
        top = max(picked)
        weights = [math.exp(v - top) for v in picked]
        total = sum(weights)
        return {c: w / total for c, w in zip(choices, weights, strict=True)}

    async def aclose(self) -> None:
        # The loaded model stays shared for other clients of the process.
        self._model = None


class _StopWhen:
    def __init__(self, event: threading.Event) -> None:
        self.event = event

    def __call__(self, input_ids: Any, logits: Any) -> bool:
        return self.event.is_set()
