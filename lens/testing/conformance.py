"""The adapter conformance suite: what every MemoryAdapter must do, as runnable checks.

Each check receives a factory that makes a fresh adapter and raises ``AssertionError`` (with a
message saying what the adapter did wrong) or :class:`Skip` (the adapter declares it does not do
that thing). The same checks run from pytest (:class:`lens.testing.AdapterConformance`) and from
``lens adapters check``.

The checks use a small corpus of short synthetic episodes, each with one distinctive phrase, so
any keyword, semantic or recency store holds all of them and can be asked for each.
"""

from __future__ import annotations

import contextlib
import gc
import json
import os
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Literal

import anyio

from lens.data.dataset import Episode
from lens.memory.adapter import (
    CapabilityManifest,
    Document,
    MemoryAdapter,
    SearchResult,
    SyncMemoryAdapter,
    ThreadedAdapter,
)
from lens.memory.listing import MemoryListing, read_listing, state_digest

AdapterFactory = Callable[[], MemoryAdapter | SyncMemoryAdapter]
Status = Literal["passed", "failed", "skipped"]

SCOPE_A = "conformance_scope_a"
SCOPE_B = "conformance_scope_b"
_T0 = datetime(2024, 3, 1, 9, 0, tzinfo=UTC)

# Distinctive facts, one per episode, phrased like operational logs. The shared word "ledger"
# lets the limit check ask a query every episode matches.
_FACTS = [
    "The ledger shows the billing queue stalled after the kafka broker rebooted.",
    "The ledger notes that warehouse robot seven dropped a pallet of lemon soap.",
    "The ledger records a certificate renewal for the payments gateway in Lisbon.",
    "The ledger says the nightly backup of the orders database took 94 minutes.",
    "The ledger flags a spike of login failures from the Montreal office VPN.",
    "The ledger lists the migration of search indexes to the new SSD cluster.",
    "The ledger reports that the mobile app crash rate doubled after release 5.2.",
    "The ledger mentions an invoice dispute with the vendor Halvorsen Freight.",
]
_FILLER = (" Routine checks passed. Nothing else of note happened during this period; the team "
           "reviewed dashboards, closed two low-priority tickets and handed over the shift.")


def corpus(scope_id: str = SCOPE_A, prefix: str = "conf") -> list[Episode]:
    """The suite's episodes for ``scope_id``: one a day from 2024-03-01, in time order."""
    return [
        Episode(episode_id=f"{prefix}_ep_{i:03d}", scope_id=scope_id,
                timestamp=_T0 + timedelta(days=i), text=fact + _FILLER)
        for i, fact in enumerate(_FACTS)
    ]


class Skip(Exception):
    """The adapter declares it does not support what this check tests."""


@dataclass(frozen=True)
class CheckResult:
    name: str
    status: Status
    detail: str = ""
    seconds: float = 0.0


def as_async(adapter: MemoryAdapter | SyncMemoryAdapter) -> MemoryAdapter:
    return ThreadedAdapter(adapter) if isinstance(adapter, SyncMemoryAdapter) else adapter


def episode_of(ref: str) -> str:
    """A chunk ref ``episode_id#cN`` belongs to ``episode_id``."""
    return ref.split("#", 1)[0]


async def _filled(factory: AdapterFactory, episodes: list[Episode] | None = None,
                  scope_id: str = SCOPE_A) -> MemoryAdapter:
    adapter = as_async(factory())
    await adapter.reset(scope_id)
    await _ingest(adapter, scope_id, episodes if episodes is not None else corpus(scope_id))
    return adapter


async def _ingest(adapter: MemoryAdapter, scope_id: str, episodes: list[Episode]) -> None:
    """Ingest ``episodes`` and prepare the checkpoint after the last of them."""
    for ep in episodes:
        await adapter.ingest(ep)
    await adapter.prepare(scope_id, len(episodes))


async def _next_scope(adapter: MemoryAdapter, prefix: str, at: int) -> list[Episode]:
    """Reset ``adapter`` to scope B and ingest the one episode of it at index ``at``."""
    await adapter.reset(SCOPE_B)
    fresh = corpus(SCOPE_B, prefix=prefix)[at:at + 1]
    await _ingest(adapter, SCOPE_B, fresh)
    return fresh


def _search_phrase(ep: Episode) -> str:
    """What the checks search for a corpus episode: its first sentence without 'The ledger'."""
    return ep.text.split(".")[0].removeprefix("The ledger ")


async def _caps(adapter: MemoryAdapter) -> CapabilityManifest:
    caps = await adapter.get_capabilities()
    assert isinstance(caps, CapabilityManifest), (
        f"get_capabilities returned {type(caps).__name__}, not a CapabilityManifest")
    return caps


async def _searchable(adapter: MemoryAdapter) -> CapabilityManifest:
    caps = await _caps(adapter)
    if not caps.search_modes:
        raise Skip("declares no search modes")
    return caps


def _check_results(results: Any, where: str) -> list[SearchResult]:
    assert isinstance(results, list), f"{where}: search returned {type(results).__name__}"
    for r in results:
        assert isinstance(r, SearchResult), f"{where}: a result is {type(r).__name__}"
    return results


# --- the checks --------------------------------------------------------------------------------


async def check_capabilities(factory: AdapterFactory) -> None:
    """Capabilities are a well-formed CapabilityManifest, JSON-serialisable, stable."""
    async with contextlib.aclosing(as_async(factory())) as adapter:
        caps = await _caps(adapter)
        CapabilityManifest.model_validate(caps.model_dump())
        json.dumps(caps.model_dump(mode="json"))
        names = [t.name for t in caps.extra_tools]
        assert len(names) == len(set(names)), f"extra tool names repeat: {names}"
        reserved = {"memory_search", "memory_retrieve", "answer"} & set(names)
        assert not reserved, f"extra tools shadow the built-in tools: {sorted(reserved)}"
        assert all(isinstance(m, str) and m for m in caps.search_modes), "empty search mode"
        again = await _caps(adapter)
        assert again == caps, "get_capabilities changed between two calls with nothing ingested"


async def check_exact_phrase(factory: AdapterFactory) -> None:
    """After ingest, searching an episode's distinctive phrase returns that episode."""
    async with contextlib.aclosing(await _filled(factory)) as adapter:
        caps = await _searchable(adapter)
        missed = []
        for ep in corpus():
            phrase = _search_phrase(ep)
            hits = _check_results(await adapter.search(phrase), f"search({phrase!r})")
            assert len(hits) <= caps.max_results, (
                f"search returned {len(hits)} results; capabilities declare max_results="
                f"{caps.max_results}")
            if ep.episode_id not in {episode_of(h.ref_id) for h in hits}:
                missed.append(ep.episode_id)
        assert not missed, f"searching each episode's own phrase did not return {missed}"


async def check_retrieve_referenced(factory: AdapterFactory) -> None:
    """Every ref a search returned can be retrieved, and holds the text that matched."""
    async with contextlib.aclosing(await _filled(factory)) as adapter:
        await _searchable(adapter)
        episodes = {ep.episode_id: ep for ep in corpus()}
        for ep in corpus()[:4]:
            phrase = _search_phrase(ep)
            for hit in await adapter.search(phrase):
                doc = await adapter.retrieve(hit.ref_id)
                assert isinstance(doc, Document), (
                    f"retrieve({hit.ref_id!r}) returned {doc!r} for a ref search just returned")
                assert doc.ref_id == hit.ref_id, (
                    f"retrieve({hit.ref_id!r}) returned a document with ref_id {doc.ref_id!r}")
                source = episodes.get(episode_of(hit.ref_id))
                if source is not None:
                    assert (doc.text and doc.text in source.text) or source.text in doc.text, (
                        f"retrieve({hit.ref_id!r}) text is not part of episode "
                        f"{source.episode_id}")
            whole = await adapter.retrieve(ep.episode_id)
            if whole is not None:
                assert ep.text.split(".")[0] in whole.text, (
                    f"retrieve({ep.episode_id!r}) does not contain the episode's text")


async def check_unknown_ref(factory: AdapterFactory) -> None:
    """Retrieving a ref the adapter never handed out returns None (not an exception)."""
    async with contextlib.aclosing(await _filled(factory)) as adapter:
        for ref in ("no-such-ref", "conf_ep_999", "conf_ep_000#c999", "x" * 300):
            doc = await adapter.retrieve(ref)
            assert doc is None, f"retrieve({ref[:40]!r}) returned {doc!r}, expected None"


async def check_reset_isolates(factory: AdapterFactory) -> None:
    """After reset to another scope, nothing of the previous scope can be found or retrieved."""
    old = corpus(SCOPE_A, prefix="olda")
    new = corpus(SCOPE_B, prefix="newb")[4:]
    async with contextlib.aclosing(await _filled(factory, old, SCOPE_A)) as adapter:
        await adapter.reset(SCOPE_B)
        await _ingest(adapter, SCOPE_B, new)
        leaked = set()
        for ep in old:
            phrase = _search_phrase(ep)
            for hit in await adapter.search(phrase):
                if episode_of(hit.ref_id).startswith("olda_"):
                    leaked.add(hit.ref_id)
            if await adapter.retrieve(ep.episode_id) is not None:
                leaked.add(ep.episode_id)
        assert not leaked, f"episodes of the previous scope survived reset: {sorted(leaked)}"
        caps = await _caps(adapter)
        if caps.search_modes:
            found = {episode_of(h.ref_id) for h in await adapter.search(
                _search_phrase(new[0]))}
            assert new[0].episode_id in found, "after reset, a new scope's episode is not found"


async def check_limit(factory: AdapterFactory) -> None:
    """``limit`` caps the number of results; no limit means at most ``max_results``."""
    async with contextlib.aclosing(await _filled(factory)) as adapter:
        caps = await _searchable(adapter)
        for limit in (1, 3):
            hits = await adapter.search("ledger", limit=limit)
            assert len(hits) <= limit, f"search(limit={limit}) returned {len(hits)} results"
        hits = await adapter.search("ledger")
        assert len(hits) <= caps.max_results, (
            f"search() returned {len(hits)} results; max_results is {caps.max_results}")
        assert hits, "search('ledger') found nothing although every episode says 'ledger'"


async def check_json(factory: AdapterFactory) -> None:
    """Search results and documents survive a JSON round trip unchanged."""
    async with contextlib.aclosing(await _filled(factory)) as adapter:
        await _searchable(adapter)
        hits = await adapter.search("billing queue kafka broker")
        assert hits, "search found nothing to serialise"
        for hit in hits:
            text = json.dumps(hit.model_dump(mode="json"))
            assert SearchResult.model_validate_json(text) == hit, (
                f"result {hit.ref_id!r} changes in a JSON round trip (metadata types?)")
            doc = await adapter.retrieve(hit.ref_id)
            if doc is not None:
                assert Document.model_validate_json(json.dumps(doc.model_dump(mode="json"))) \
                    == doc, f"document {hit.ref_id!r} changes in a JSON round trip"


async def check_filters(factory: AdapterFactory) -> None:
    """A declared date filter excludes what it should and keeps what it should."""
    async with contextlib.aclosing(await _filled(factory)) as adapter:
        caps = await _searchable(adapter)
        known = {"start_date", "end_date"} & set(caps.filter_fields)
        if not known:
            other = ", ".join(caps.filter_fields) or "none"
            raise Skip(f"declares no date filter (declared: {other}); not checked")
        inside = corpus()[2:5]
        filters, allowed = _date_filters(known, corpus(), inside)
        hits = await adapter.search("ledger", filters=filters, limit=caps.max_results)
        outside = {episode_of(h.ref_id) for h in hits} - allowed
        assert not outside, f"filters {filters} let through episodes {sorted(outside)}"
        target = inside[1]
        phrase = _search_phrase(target)
        got = {episode_of(h.ref_id) for h in await adapter.search(phrase, filters=filters)}
        assert target.episode_id in got, (
            f"filters {filters} hid {target.episode_id}, which lies inside the range")


def _date_filters(known: set[str], eps: list[Episode],
                  inside: list[Episode]) -> tuple[dict[str, str], set[str]]:
    """The filters, on the ``known`` date fields, of the days from the first to the last of
    ``inside``, and the ids of the episodes of ``eps`` they let through."""
    filters: dict[str, str] = {}
    if "start_date" in known:
        filters["start_date"] = inside[0].timestamp.date().isoformat()
    if "end_date" in known:
        filters["end_date"] = inside[-1].timestamp.date().isoformat()
    lo = inside[0].timestamp if "start_date" in known else eps[0].timestamp
    hi = inside[-1].timestamp if "end_date" in known else eps[-1].timestamp
    return filters, {e.episode_id for e in eps if lo <= e.timestamp <= hi}


async def check_concurrent_search(factory: AdapterFactory) -> None:
    """Many searches at once give the same answers as one at a time, and none fails."""
    async with contextlib.aclosing(await _filled(factory)) as adapter:
        await _searchable(adapter)
        queries = [_search_phrase(ep) for ep in corpus()]
        expected = [[h.ref_id for h in await adapter.search(q)] for q in queries]
        got: dict[int, list[str]] = {}

        async def one(i: int) -> None:
            got[i] = [h.ref_id for h in await adapter.search(queries[i % len(queries)])]

        async with anyio.create_task_group() as tg:
            for i in range(3 * len(queries)):
                tg.start_soon(one, i)
        for i, refs in got.items():
            want = expected[i % len(queries)]
            assert refs == want, (
                f"concurrent search for {queries[i % len(queries)]!r} gave {refs}, alone {want}")


def _fd_targets() -> dict[int, str] | None:
    """This process's open file descriptors and what each names (a path, ``socket:[inode]``),
    or None where /proc is not there."""
    try:
        fds = os.listdir("/proc/self/fd")
    except OSError:
        return None
    out: dict[int, str] = {}
    for fd in fds:
        with contextlib.suppress(OSError):
            out[int(fd)] = os.readlink(f"/proc/self/fd/{fd}")
    return out


def _tcp_sockets() -> dict[str, tuple[str, str, bool]]:
    """Each TCP socket of this process's network namespace by inode: (local address, remote
    address, listening)."""
    out: dict[str, tuple[str, str, bool]] = {}
    for table in ("/proc/self/net/tcp", "/proc/self/net/tcp6"):
        try:
            lines = Path(table).read_text(encoding="ascii").splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            cols = line.split()
            if len(cols) > 9:
                out[cols[9]] = (_address(cols[1]), _address(cols[2]), cols[3] == "0A")
    return out


def _address(hex_address: str) -> str:
    """``0100007F:1F90`` as ``127.0.0.1:8080`` (IPv6 shown by its port alone)."""
    ip, _, port = hex_address.partition(":")
    number = int(port, 16)
    if len(ip) == 8:
        return ".".join(str(b) for b in reversed(bytes.fromhex(ip))) + f":{number}"
    return f"[…]:{number}"


def _own_server_sides(fds: dict[int, str]) -> dict[int, str]:
    """The descriptors that are the server side of a connection to a server of this very
    process (lens's own model gateway, in ``lens adapters check``), with their description.
    They close when the server sees the adapter's end closed, which may come a moment after
    ``aclose``: not the adapter's descriptors, so never counted as its leak."""
    sockets = _tcp_sockets()
    mine = {target[8:-1]: fd for fd, target in fds.items() if target.startswith("socket:[")}
    listening = {sockets[inode][0].rsplit(":", 1)[1] for inode in mine
                 if inode in sockets and sockets[inode][2]}
    out: dict[int, str] = {}
    for inode, fd in mine.items():
        local, remote, listens = sockets.get(inode, ("", "", True))
        if not listens and local.rsplit(":", 1)[-1] in listening:
            out[fd] = f"lens's own server side of {remote} → {local}"
    return out


def _describe(fd: int, target: str) -> str:
    if target.startswith("socket:["):
        found = _tcp_sockets().get(target[8:-1])
        if found is not None:
            return f"fd {fd}: socket {found[0]} → {found[1]}"
    return f"fd {fd}: {target}"


async def check_aclose(factory: AdapterFactory) -> None:
    """``aclose`` succeeds and leaves no file descriptors open (files, sockets)."""
    # A first instance warms up lazy, process-wide state (models, pools) that is not a leak.
    warm = await _filled(factory)
    await warm.aclose()
    del warm
    gc.collect()
    before = _fd_targets()
    adapter = await _filled(factory)
    await adapter.search("ledger")
    await adapter.aclose()
    del adapter
    gc.collect()
    after = _fd_targets()
    if before is None or after is None:
        raise Skip("cannot count open file descriptors on this platform; aclose ran cleanly")
    own = _own_server_sides(after)
    counted = {fd: t for fd, t in after.items() if fd not in own}
    baseline = {fd: t for fd, t in before.items() if fd not in _own_server_sides(before)}
    if len(counted) > len(baseline):
        new = [_describe(fd, t) for fd, t in sorted(counted.items())
               if baseline.get(fd) != t]
        raise AssertionError(
            f"{len(counted) - len(baseline)} file descriptor(s) still open after aclose: "
            + "; ".join(new[:5]) + ("" if not own else
                                    f" (not counted: {len(own)} of lens's own server's sockets)"))


async def check_standing_context(factory: AdapterFactory) -> None:
    """A declared standing context is text (or None), holds nothing of a later episode or of a
    previous scope, and an undeclared one is None."""
    episodes = corpus(SCOPE_A, prefix="stand")
    half = len(episodes) // 2
    async with contextlib.aclosing(as_async(factory())) as adapter:
        caps = await _first_half(adapter, episodes)
        text = await adapter.standing_context(SCOPE_A, half)
        if not caps.standing_context:
            assert text is None, ("standing_context returned text but the capabilities do not "
                                  "declare standing_context: lens would never show it")
            raise Skip("declares no standing context")
        assert text is None or isinstance(text, str), (
            f"standing_context returned {type(text).__name__}, not str or None")
        json.dumps(text)
        later = _mentioned(episodes[half:], text or "")
        assert not later, f"the standing context mentions episodes not yet ingested: {later}"
        fresh = await _next_scope(adapter, "standb", half)
        after = (await adapter.standing_context(SCOPE_B, len(fresh))) or ""
        leaked = _mentioned(episodes[:half], after)
        assert not leaked, f"after reset the standing context still holds: {leaked}"


async def _first_half(adapter: MemoryAdapter, episodes: list[Episode]) -> CapabilityManifest:
    """Reset ``adapter`` to scope A, read its capabilities, then ingest the first half of
    ``episodes``; the capabilities."""
    await adapter.reset(SCOPE_A)
    caps = await _caps(adapter)
    await _ingest(adapter, SCOPE_A, episodes[:len(episodes) // 2])
    return caps


def _sources(listing: MemoryListing) -> set[str]:
    """The episodes a listing's items name as their sources."""
    return {s for i in listing.items for s in i.source_episodes}


def _listed_text(listing: MemoryListing) -> str:
    return " ".join(i.text for i in listing.items)


async def _listing(adapter: MemoryAdapter, scope_id: str, checkpoint: int) -> MemoryListing:
    raw = await adapter.list_memory(scope_id, checkpoint)
    assert raw is not None, ("list_memory returned None but the capabilities declare "
                             "memory_listing: return a MemoryListing (empty when nothing is "
                             "stored)")
    try:
        listing = read_listing(raw)
    except ValueError as exc:
        raise AssertionError(f"list_memory returned a malformed listing: {exc}") from None
    assert listing is not None
    json.dumps(listing.model_dump(mode="json"))
    ids = [i.item_id for i in listing.items]
    assert len(ids) == len(set(ids)), "item ids repeat in the listing: each item needs its own id"
    return listing


async def check_memory_listing(factory: AdapterFactory) -> None:
    """A declared memory listing is a MemoryListing with unique item ids, names only episodes
    already ingested, holds nothing of a later episode, reads the same twice (listing does not
    change the memory) and nothing of a previous scope after reset; an undeclared one is None."""
    episodes = corpus(SCOPE_A, prefix="list")
    half = len(episodes) // 2
    async with contextlib.aclosing(as_async(factory())) as adapter:
        caps = await _first_half(adapter, episodes)
        if not caps.memory_listing:
            assert await adapter.list_memory(SCOPE_A, half) is None, (
                "list_memory returned a listing but the capabilities do not declare "
                "memory_listing: lens would never read it")
            raise Skip("declares no memory listing")
        first = await _listing(adapter, SCOPE_A, half)
        given = {ep.episode_id for ep in episodes[:half]}
        unknown = sorted(_sources(first) - given)
        assert not unknown, f"items name episodes never ingested: {unknown[:5]}"
        later = _mentioned(episodes[half:], _listed_text(first))
        assert not later, f"the listing holds episodes not yet ingested: {later}"
        again = await _listing(adapter, SCOPE_A, half)
        assert state_digest(again) == state_digest(first), (
            "two listings in a row differ: listing (or something running in the background) "
            "changed the memory; list_memory must read the state, never write it")
        fresh = await _next_scope(adapter, "listb", half)
        after = await _listing(adapter, SCOPE_B, len(fresh))
        stale = sorted(_sources(after) & given)
        leaked = _mentioned(episodes[:half], _listed_text(after))
        assert not stale and not leaked, (
            f"after reset the listing still holds the previous scope: {stale or leaked}")


# Valid queries an agent writes, which a search engine's own query language may choke on: the
# operators and syntax of FTS5, Lucene, tantivy and Elasticsearch, unbalanced quotes and
# brackets, non-ASCII text and a 10 kB query. The agent's words are a query, never a program.
HOSTILE_QUERIES: tuple[str, ...] = (
    "what stalled the billing queue?",
    "kafka broker: rebooted!",
    "it's the ledger's entry, isn't it",
    '"billing queue"',
    '"billing queue',
    "'lemon soap'",
    "billing AND queue",
    "billing OR NOT queue",
    "NEAR(billing queue)",
    "NEAR(billing queue, 5)",
    "billing*",
    "*",
    "title:ledger",
    "ledger^2",
    "ledger~1",
    "(billing",
    "billing)",
    "-ledger",
    "+ledger -queue",
    "ledger && queue || !broker",
    "ledger [TO] {x}",
    "/regex.*/",
    "ledger\\ queue \\",
    "ledger@example.com C++ C# #1 50% $9,740 a/b a.b a|b a;b a=b <b> `b` ?",
    "- : ^ ~ ( ) * \" ' ' \"",
    "café Zürich — naïve “smart quotes” 東京 ✓ 🚀",
    "ledger\tqueue\nbroker",
    ("billing queue kafka broker " * 400)[:10_000],
)


async def check_hostile_queries(factory: AdapterFactory) -> None:
    """Queries with punctuation, quotes, query-language operators (AND OR NOT NEAR * " : ^ ~
    ( ) -), non-ASCII text or 10 kB are answered with results (possibly none), never an error:
    a search that raises gives the agent nothing for that question."""
    async with contextlib.aclosing(await _filled(factory)) as adapter:
        await _searchable(adapter)
        failures = []
        for query in HOSTILE_QUERIES:
            shown = query if len(query) <= 60 else f"{query[:40]}… ({len(query)} chars)"
            try:
                _check_results(await adapter.search(query), f"search({shown!r})")
            except AssertionError as exc:
                failures.append(str(exc))
            except Exception as exc:
                failures.append(f"search({shown!r}) raised {type(exc).__name__}: "
                                f"{str(exc)[:200]}")
        assert not failures, (
            f"{len(failures)} of {len(HOSTILE_QUERIES)} valid queries failed: "
            + "; ".join(failures) + ". The agent's words reach search() as they are: quote or "
            "escape them for the engine's query language (docs/writing-an-adapter.md)")


def _phrase(ep: Episode) -> str:
    """The distinctive part of a corpus episode (its first sentence without 'The ledger')."""
    return ep.text.split(".")[0].split(" ", 3)[3]


def _mentioned(episodes: list[Episode], text: str) -> list[str]:
    """The distinctive phrases of ``episodes`` that ``text`` holds, in any case."""
    lowered = text.lower()
    return [_phrase(ep) for ep in episodes if _phrase(ep).lower() in lowered]


CHECKS: dict[str, Callable[[AdapterFactory], Awaitable[None]]] = {
    "capabilities_well_formed": check_capabilities,
    "exact_phrase_found": check_exact_phrase,
    "retrieve_returns_referenced": check_retrieve_referenced,
    "unknown_ref_is_none": check_unknown_ref,
    "reset_isolates_scopes": check_reset_isolates,
    "limit_respected": check_limit,
    "results_json_serialisable": check_json,
    "hostile_queries_answered": check_hostile_queries,
    "declared_filters_work": check_filters,
    "concurrent_searches_safe": check_concurrent_search,
    "standing_context_well_formed": check_standing_context,
    "memory_listing_well_formed": check_memory_listing,
    "aclose_releases_resources": check_aclose,
}


async def run_check(name: str, factory: AdapterFactory, timeout_s: float = 600.0) -> CheckResult:
    """Run one check; an exception other than AssertionError/Skip counts as a failure too."""
    start = time.perf_counter()
    try:
        with anyio.fail_after(timeout_s):
            await CHECKS[name](factory)
    except Skip as exc:
        return CheckResult(name, "skipped", str(exc), time.perf_counter() - start)
    except AssertionError as exc:
        return CheckResult(name, "failed", str(exc) or "assertion failed",
                           time.perf_counter() - start)
    except TimeoutError:
        return CheckResult(name, "failed", f"did not finish within {timeout_s:.0f} s",
                           time.perf_counter() - start)
    except Exception as exc:
        return CheckResult(name, "failed", f"{type(exc).__name__}: {exc}",
                           time.perf_counter() - start)
    return CheckResult(name, "passed", "", time.perf_counter() - start)


async def run_conformance(factory: AdapterFactory, only: list[str] | None = None,
                          timeout_s: float = 600.0) -> list[CheckResult]:
    """Every check (or those named in ``only``), one after another, each on fresh adapters."""
    names = only or list(CHECKS)
    unknown = [n for n in names if n not in CHECKS]
    if unknown:
        raise ValueError(f"unknown check(s) {unknown}; known: {', '.join(CHECKS)}")
    return [await run_check(n, factory, timeout_s) for n in names]
