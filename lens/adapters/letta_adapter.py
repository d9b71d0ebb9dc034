"""Letta (optional extra ``lens[letta]``, formerly MemGPT): an agent that manages its own memory,
served by a Letta server of the adapter's own, with every model call through lens's gateway.

Each adapter instance starts a Letta server as a subprocess on a loopback socket it binds itself;
the server keeps its SQLite database, logs and tool folder in a temporary folder of the instance
(removed at close) and exits when lens's process ends, however it ends. Per scope, one Letta
agent (``memgpt_v2_agent``: core memory blocks, archival memory, their tools) is created with its
chat model and its embedding model both pointed at the unit's gateway address.

- ``ingest: agent`` (default): each episode is a message to the agent, which decides with its
  model what to write: archival memory passages (embedded) and edits of its core memory blocks.
  The agent's message buffer is cleared after each episode, so what it keeps is what it wrote.
- ``ingest: archival``: each episode's text goes straight into archival memory (Letta chunks and
  embeds it; no chat call).

Search is Letta's semantic archival search (the agent's own ``archival_memory_search``); each
result is a passage (``letta:<passage id>``, declared synthetic) whose ``metadata.episode_ids``
names the episodes whose ingest wrote it, and ``retrieve`` also returns those episodes by id. In
agent mode the core memory blocks are the standing context the answering agent reads first.
``list_memory`` is Letta's own listing of the agent's memory: its archival passages
(``agents.passages.list``) and its core memory blocks (``agents.blocks.list``).
"""

from __future__ import annotations

import logging
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from lens.core.distribution import install_hint
from lens.core.errors import ConfigError
from lens.data.dataset import Episode
from lens.memory.adapter import CapabilityManifest, Document, SearchResult, SyncMemoryAdapter
from lens.memory.gateway_access import GatewayAccess, GatewayOptions
from lens.memory.listing import MemoryItem, MemoryListing

SYNTHETIC_PREFIX = "letta:"
INSTALL = install_hint("letta")
AGENT_TYPE = "memgpt_v2_agent"
ARCHIVAL_TOOLS = ("archival_memory_insert", "archival_memory_search")
DEFAULT_PERSONA = (
    "I am a memory keeper. Records arrive one at a time; I keep what matters in them so it can "
    "be recalled later: facts, numbers, events and their dates go to archival memory, lasting "
    "facts about the people and things involved go to my core memory.")
DEFAULT_INSTRUCTIONS = (
    "A new record arrived. Save what is worth remembering from it with your memory tools "
    "(archival_memory_insert for facts and events, with their dates; memory_insert or "
    "memory_replace for lasting facts in core memory). Do not answer the user.")
# Letta stop reasons that mean the step did not run as Letta meant: the unit fails, visibly.
_FAILED_STOPS = {"error", "invalid_llm_response", "invalid_tool_call", "no_tool_call",
                 "cancelled"}
_LOG_TAIL = 3000


class LettaOptions(GatewayOptions):
    ingest: Literal["agent", "archival"] = Field(
        default="agent", description="agent: the Letta agent writes its memory with the model; "
        "archival: each episode is stored verbatim in archival memory (embeddings only)")
    max_results: int = Field(default=10, ge=1, le=100)
    max_steps: int = Field(default=4, ge=1, le=50,
                           description="agent steps (model calls) per episode at most")
    max_tokens: int = Field(default=1024, ge=64, description="output tokens per model call")
    context_window: int = Field(default=16384, ge=2048, description="the context window Letta "
                                "assumes for the model (it summarizes past it)")
    episode_chars: int = Field(default=6000, ge=100,
                               description="each episode's text is cut to this")
    chunk_tokens: int = Field(default=300, ge=32, description="Letta's embedding chunk size "
                              "for archival passages")
    persona: str = Field(default=DEFAULT_PERSONA, min_length=1,
                         description="the agent's persona block")
    instructions: str = Field(default=DEFAULT_INSTRUCTIONS, min_length=1,
                              description="what the agent is told with each episode")
    startup_timeout_s: float = Field(default=300.0, gt=0,
                                     description="seconds the Letta server may take to start")
    request_timeout_s: float = Field(default=1800.0, ge=10, le=1800,
                                     description="Letta's timeout for one model call")


def _import_letta() -> Any:
    try:
        import letta  # noqa: F401  (the server runs in a subprocess; fail here if absent)
        from letta_client import Letta
        from letta_client.core.api_error import ApiError
    except ImportError as exc:
        raise ConfigError(f"adapter 'letta' needs letta: {INSTALL} ({exc})") from None
    for name in ("httpx", "letta_client"):
        logging.getLogger(name).setLevel(logging.WARNING)
    return Letta, ApiError


def _server_env(home: Path, access: GatewayAccess, opts: LettaOptions) -> dict[str, str]:
    """The server's environment: the parent's, less anything that would point Letta at another
    database, model or telemetry sink, plus its folder and the unit's key. Letta reads these
    only from its environment (its embedding client takes the key from OPENAI_API_KEY alone), and
    this process is the adapter's own, so nothing leaks into lens's."""
    drop = ("LETTA_", "OPENAI_", "SENTRY_", "OTEL_", "DD_", "CLICKHOUSE_", "COMPOSIO_",
            "ANTHROPIC_", "GEMINI_", "GROQ_", "TOGETHER_", "MISTRAL_")
    env = {k: v for k, v in os.environ.items() if not k.startswith(drop)}
    env.update(
        HOME=str(home), LETTA_DIR=str(home / ".letta"),
        # Letta's default OpenAI provider (model listings) points at the gateway too.
        OPENAI_API_KEY=access.api_key, OPENAI_BASE_URL=access.base_url,
        LETTA_LLM_REQUEST_TIMEOUT_SECONDS=str(opts.request_timeout_s),
        LETTA_TELEMETRY_PROFILER="false", LETTA_DISABLE_TRACING="true",
        LETTA_ENABLE_BATCH_JOB_POLLING="false", LETTA_ENABLE_DB_POOL_MONITORING="false",
        LETTA_LOGGING_LETTA_LOG_PATH=str(home / ".letta" / "logs" / "Letta.log"),
        PYTHONUNBUFFERED="1",
    )
    # The child imports this package from where lens was imported (a checkout, an install).
    root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    return env


class LettaServer:
    """A Letta server on a loopback socket, owned by one adapter instance."""

    def __init__(self, home: Path, env: dict[str, str], timeout_s: float) -> None:
        self.home = home
        self.log_path = home / "server.log"
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            sock.bind(("127.0.0.1", 0))
            sock.listen(64)
            self.base_url = f"http://127.0.0.1:{sock.getsockname()[1]}"
            with self.log_path.open("wb") as log:
                # stdin stays open in this process: its end of file tells the server to exit.
                self.proc = subprocess.Popen(
                    [sys.executable, "-m", "lens.adapters.letta_server", str(sock.fileno())],
                    stdin=subprocess.PIPE, stdout=log, stderr=subprocess.STDOUT,
                    pass_fds=[sock.fileno()], cwd=home, env=env, start_new_session=True)
        finally:
            sock.close()
        try:
            self._wait_ready(timeout_s)
        except BaseException:
            self.stop()
            raise

    def log_tail(self) -> str:
        try:
            return self.log_path.read_text(encoding="utf-8", errors="replace")[-_LOG_TAIL:]
        except OSError:
            return ""

    def _wait_ready(self, timeout_s: float) -> None:
        import httpx

        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"the Letta server exited with status {self.proc.returncode} "
                                   f"while starting; its log ends:\n{self.log_tail()}")
            try:
                if httpx.get(self.base_url + "/v1/health/", timeout=5).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.5)
        raise RuntimeError(f"the Letta server did not answer within {timeout_s:.0f} s "
                           f"(option startup_timeout_s); its log ends:\n{self.log_tail()}")

    def stop(self) -> None:
        proc = self.proc
        if proc.poll() is None:
            if proc.stdin is not None:
                proc.stdin.close()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)
        elif proc.stdin is not None:
            proc.stdin.close()


@dataclass
class _Passage:
    text: str
    episode_ids: list[str] = field(default_factory=list)


class LettaAdapter(SyncMemoryAdapter):
    Options = LettaOptions

    def __init__(self, **options: Any) -> None:
        self.opts = LettaOptions.model_validate(options)
        letta_cls, self._api_error = _import_letta()
        access = self.opts.access()
        if access.embedding_model is None or access.embedding_dim is None:
            raise ConfigError("adapter 'letta' needs the gateway's embedding model for Letta's "
                              f"archival memory: {INSTALL}")
        self.access: GatewayAccess = access
        self.home = Path(tempfile.mkdtemp(prefix="lens-letta-"))
        self.server: LettaServer | None = None
        try:
            self.server = LettaServer(self.home, _server_env(self.home, access, self.opts),
                                      self.opts.startup_timeout_s)
            self.client = letta_cls(base_url=self.server.base_url,
                                    timeout=self.opts.request_timeout_s * self.opts.max_steps)
        except BaseException:
            self.close()
            raise
        self.agent_id: str | None = None
        self.episodes: dict[str, Episode] = {}
        self.passages: dict[str, _Passage] = {}
        # Passage text -> the ids of the passages holding it (Letta's search answers with text).
        self.by_text: dict[str, list[str]] = {}
        # Core memory block label -> its value after the last ingest and the episodes whose
        # ingest changed it.
        self.blocks: dict[str, tuple[str, list[str]]] = {}

    # -- the agent ------------------------------------------------------------------------------
    def _new_agent(self) -> str:
        a, o = self.access, self.opts
        agent = self.client.agents.create(
            name="lens-memory", agent_type=AGENT_TYPE, include_base_tools=True,
            tool_ids=self._archival_tools(),
            memory_blocks=[{"label": "human", "value": ""},
                           {"label": "persona", "value": o.persona}],
            llm_config={"model": a.chat_model, "model_endpoint_type": "openai",
                        "model_endpoint": a.base_url, "context_window": o.context_window,
                        "max_tokens": o.max_tokens, "temperature": 0.0},
            embedding_config={"embedding_endpoint_type": "openai",
                              "embedding_endpoint": a.base_url,
                              "embedding_model": a.embedding_model,
                              "embedding_dim": a.embedding_dim,
                              "embedding_chunk_size": o.chunk_tokens},
            # No greeting turns, and each episode starts from an empty buffer: what the agent
            # keeps between episodes is what it wrote to memory.
            initial_message_sequence=[], message_buffer_autoclear=True, timezone="UTC")
        return str(agent.id)

    def _archival_tools(self) -> list[str]:
        """The ids of Letta's archival memory tools. Letta 0.11 leaves them out of an agent's
        base tools when named (it lists them as deprecated names) but serves them when attached
        by id; without them an agent has core and recall memory only."""
        tools = self.client.tools.list(names=list(ARCHIVAL_TOOLS))
        found = {t.name: t.id for t in tools if t.name in ARCHIVAL_TOOLS}
        missing = sorted(set(ARCHIVAL_TOOLS) - set(found))
        if missing:
            raise RuntimeError(f"the Letta server has no tool {', '.join(missing)}; the "
                               f"adapter supports letta>=0.11.7,<0.12: {INSTALL}")
        return [found[name] for name in ARCHIVAL_TOOLS]

    def _agent(self) -> str:
        if self.agent_id is None:
            self.agent_id = self._new_agent()
        return self.agent_id

    def _drop_agent(self) -> None:
        agent_id, self.agent_id = self.agent_id, None
        if agent_id is not None:
            self.client.agents.delete(agent_id)

    def _all_passages(self, agent_id: str) -> list[Any]:
        return list(self.client.agents.passages.list(agent_id, limit=1_000_000))

    # -- the adapter contract -------------------------------------------------------------------
    def reset(self, scope_id: str) -> None:
        self._drop_agent()
        self.episodes, self.passages = {}, {}
        self.by_text, self.blocks = {}, {}

    def ingest(self, episode: Episode) -> None:
        agent_id = self._agent()
        text = episode.text[: self.opts.episode_chars]
        header = f"[{episode.episode_id}] {episode.timestamp.isoformat()}"
        if self.opts.ingest == "archival":
            self.client.agents.passages.create(agent_id, text=f"{header}\n{text}",
                                               created_at=episode.timestamp)
        else:
            try:
                reply = self.client.agents.messages.create(
                    agent_id, max_steps=self.opts.max_steps,
                    messages=[{"role": "user",
                               "content": f"{self.opts.instructions}\n\n{header}\n{text}"}])
            except self._api_error as exc:
                detail = exc.body.get("detail") if isinstance(exc.body, dict) else exc.body
                hint = ""
                if "tool call" in str(detail):
                    # Measured: a step cut at its output limit is the usual cause on small models.
                    hint = (f" (a reply cut at max_tokens, {self.opts.max_tokens} here, has no "
                            "tool call either: raise max_tokens when the checklist's 'memory "
                            "model replies cut at max_tokens' row warns)")
                raise RuntimeError(f"Letta's server refused episode {episode.episode_id} "
                                   f"(HTTP {exc.status_code}): {detail}{hint}") from None
            stop = getattr(reply.stop_reason, "stop_reason", None)
            if stop in _FAILED_STOPS:
                raise RuntimeError(f"Letta's agent stopped with '{stop}' on episode "
                                   f"{episode.episode_id} (the model did not follow Letta's "
                                   f"tool protocol, or a call failed); the server log ends:\n"
                                   f"{self.server.log_tail() if self.server else ''}")
        self.episodes[episode.episode_id] = episode
        # Letta has no tool that edits or deletes a passage: what is new was written now.
        for p in self._all_passages(agent_id):
            if p.id not in self.passages:
                self.passages[p.id] = _Passage(p.text, [episode.episode_id])
                self.by_text.setdefault(p.text, []).append(p.id)
        for block in self._memory_blocks(agent_id):
            value, sources = self.blocks.get(block.label, ("", []))
            if value != block.value:
                sources = [*sources, episode.episode_id]
            self.blocks[block.label] = (block.value, sources)

    def _memory_blocks(self, agent_id: str) -> list[Any]:
        """The agent's core memory blocks with a value (the persona is lens's instruction to the
        agent, not a memory it wrote)."""
        return [b for b in self.client.agents.blocks.list(agent_id)
                if b.label != "persona" and (b.value or "").strip()]

    def list_memory(self, scope_id: str, checkpoint: int) -> MemoryListing:
        """Letta's listing of the agent's memory: every archival passage (from the episode
        whose ingest wrote it) and every core memory block with a value (from the episodes whose
        ingest changed it), each changed at the newest of those episodes' timestamps."""
        if self.agent_id is None:
            return MemoryListing()
        items = []
        for p in self._all_passages(self.agent_id):
            known = self.passages.get(p.id)
            sources = list(known.episode_ids) if known else []
            items.append(MemoryItem(item_id=SYNTHETIC_PREFIX + p.id, text=p.text,
                                    source_episodes=sources,
                                    changed_at=self._changed(sources, p.created_at)))
        for block in self._memory_blocks(self.agent_id):
            sources = list(self.blocks.get(block.label, ("", []))[1])
            items.append(MemoryItem(item_id=f"{SYNTHETIC_PREFIX}block:{block.label}",
                                    text=f"{block.label}: {block.value}",
                                    source_episodes=sources,
                                    changed_at=self._changed(sources, None)))
        return MemoryListing(items=items)

    def _changed(self, episode_ids: list[str], fallback: datetime | None) -> datetime | None:
        stamps = [self.episodes[e].timestamp for e in episode_ids if e in self.episodes]
        return max(stamps) if stamps else fallback

    def _id_for(self, text: str, taken: set[str]) -> str | None:
        return next((pid for pid in self.by_text.get(text, ()) if pid not in taken), None)

    def search(self, query: str, filters: dict[str, Any] | None = None,
               limit: int | None = None) -> list[SearchResult]:
        if self.agent_id is None or not query.strip():
            return []
        k = min(limit or self.opts.max_results, self.opts.max_results)
        found = self.client.agents.passages.search(self.agent_id, query=query, top_k=k)
        out: list[SearchResult] = []
        taken: set[str] = set()
        for rank, hit in enumerate(found.results[:k]):
            # Letta's search answers with the passage text; its id is the stored passage's.
            pid = self._id_for(hit.content, taken)
            if pid is None:
                continue
            taken.add(pid)
            out.append(SearchResult(
                ref_id=SYNTHETIC_PREFIX + pid, text=hit.content, score=1.0 / (rank + 1),
                metadata={"episode_ids": list(self.passages[pid].episode_ids)}))
        return out

    def retrieve(self, ref_id: str) -> Document | None:
        if ref_id.startswith(SYNTHETIC_PREFIX):
            passage = self.passages.get(ref_id[len(SYNTHETIC_PREFIX):])
            if passage is None:
                return None
            return Document(ref_id=ref_id, text=passage.text,
                            metadata={"episode_ids": list(passage.episode_ids)})
        episode = self.episodes.get(ref_id)
        if episode is None:
            return None
        return Document(ref_id=ref_id, text=episode.text,
                        metadata={"timestamp": episode.timestamp.isoformat()})

    def standing_context(self, scope_id: str, checkpoint: int) -> str | None:
        if self.opts.ingest != "agent" or self.agent_id is None:
            return None
        text = "\n".join(f"<{b.label}>\n{b.value}\n</{b.label}>"
                         for b in self._memory_blocks(self.agent_id))
        return f"Letta core memory:\n{text}" if text else None

    def get_capabilities(self) -> CapabilityManifest:
        how = (f"written by a Letta agent with {self.opts.model}" if self.opts.ingest == "agent"
               else "holding each episode verbatim")
        return CapabilityManifest(
            search_modes=["semantic"], max_results=self.opts.max_results, memory_listing=True,
            synthetic_ref_prefixes=[SYNTHETIC_PREFIX],
            standing_context=self.opts.ingest == "agent",
            description=f"Letta archival memory {how} through lens's model gateway (its own "
                        f"server, SQLite), embedded with {self.access.embedding_model}")

    def close(self) -> None:
        try:
            if self.server is not None:
                self.server.stop()
                self.server = None
        finally:
            shutil.rmtree(self.home, ignore_errors=True)
