"""What lens does per model call, counted rather than timed: the benchmark's workload (runner,
agent, model stack, aiohttp transport, run store) against the loopback fake provider, under
cProfile, which counts every Python-level call exactly. The counts do not depend on the load of
the machine, so a change that adds work to every call fails here even where a timed
benchmark could not see it (``bench/runner_efficiency.py`` measures the time, docs/performance.md
"What keeps lens's cost per call low").

The bounds are the counts measured when the per-call path was last trimmed (in brackets, the
count before that), with a little room for timing: how many questions finish in one batch
varies from run to run."""

from __future__ import annotations

import cProfile
import pstats
from collections.abc import Callable
from pathlib import Path

from bench.common import fake_server
from bench.runner_efficiency import CALLS_PER_QUESTION, lens_once, write_dataset
from lens.core import eventloop
from lens.data.dataset_load import load_dataset

QUESTIONS = 64
CONCURRENCY = 16

# name -> (what is counted, most allowed per model call); measured 964-976 [1,026-1,041]
# Python calls in all, 2.9 [6.9] JSON encodes, 0.9 [1.7] anyio cancel scopes, 0.25 [3.75]
# generator context managers, 10.1 pydantic validations, 1.07 model copies, 2.27 [3.20] timers
# armed, 0.10 [0.63] capacity-limiter acquisitions, 0 [1.0] JSON texts decoded from bytes by
# json.loads, 0 [2.18] retry wrappers, 0.06 [1.0] endpoint slots booked through the general
# path, 0 [2.0] reply chunks iterated.
Key = tuple[str, int, str]
BOUNDS: dict[str, tuple[Callable[[Key], bool], float]] = {
    "Python-level calls": (lambda k: True, 1000.0),
    "JSON encodes (stdlib encoder)": (
        lambda k: k[0].endswith("json/encoder.py") and k[2] == "encode", 3.2),
    "anyio cancel scopes entered": (
        lambda k: "anyio/_backends" in k[0] and k[2] == "__enter__", 1.1),
    "generator-based context managers": (
        lambda k: k[0].endswith("contextlib.py") and k[2] == "helper", 0.5),
    "pydantic validations": (lambda k: "validate_python" in k[2], 10.5),
    "pydantic model copies": (lambda k: k[2] == "model_copy", 1.2),
    # The model call's deadline and a tool call's; aiohttp's own per-request timer is off.
    "timers armed on the event loop": (
        lambda k: k[0].endswith("asyncio/base_events.py") and k[2] == "call_at", 2.5),
    # The question slots are a semaphore; the units' limiter and worker threads remain.
    "capacity-limiter acquisitions": (
        lambda k: "anyio/_backends" in k[0] and k[2] == "acquire_on_behalf_of", 0.2),
    # A reply's JSON is decoded from UTF-8 once, not through json.loads's encoding detection.
    "JSON texts decoded from bytes by json.loads": (
        lambda k: k[0].endswith("json/__init__.py") and k[2] == "detect_encoding", 0.1),
    # The first attempt runs bare; the retry machinery only after a failure.
    "retry wrappers entered": (lambda k: k[2] == "retry_after_failure", 0.05),
    # A free endpoint's slot is taken without a coroutine.
    "endpoint slots booked through the general path": (
        lambda k: k[0].endswith("lens/models/limits.py") and k[2] == "_book", 0.1),
    # A reply with Content-Length is read in one call, not chunk by chunk.
    "reply chunks iterated": (
        lambda k: "aiohttp/streams.py" in k[0] and k[2] == "__anext__", 0.1),
}


def test_work_per_model_call_does_not_grow(tmp_path: Path) -> None:
    dataset = write_dataset(tmp_path / "bench.json", QUESTIONS)
    with fake_server(0.0) as server:
        # The first run imports the transport and fills the caches; the second is counted.
        warm = tmp_path / "warm"
        warm.mkdir()
        eventloop.run(lens_once, dataset, load_dataset(dataset), server.base_url, CONCURRENCY,
                      warm, False, loop="asyncio")
        work = tmp_path / "counted"
        work.mkdir()
        profile = cProfile.Profile()
        profile.enable()
        try:
            measure = eventloop.run(lens_once, dataset, load_dataset(dataset), server.base_url,
                                    CONCURRENCY, work, False, loop="asyncio")
        finally:
            profile.disable()
    assert measure.calls == QUESTIONS * CALLS_PER_QUESTION
    stats = pstats.Stats(profile).stats  # type: ignore[attr-defined]
    over = {}
    for name, (counted, bound) in BOUNDS.items():
        per_call = sum(v[1] for k, v in stats.items() if counted(k)) / measure.calls
        if per_call > bound:
            over[name] = round(per_call, 2)
    assert not over, (f"more work per model call than allowed {({n: BOUNDS[n][1] for n in over})}"
                      f": {over}; find what was added to the per-call path (docs/performance.md)")
