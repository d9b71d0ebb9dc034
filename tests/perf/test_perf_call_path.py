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

# name -> (what is counted, most allowed per model call); measured 1,026-1,031 [1,121] Python
# calls in all, 2.9 [6.9] JSON encodes, 0.9 [1.7] anyio cancel scopes, 0.25 [3.75] generator
# context managers, 10.1 pydantic validations, 1.07 model copies.
Key = tuple[str, int, str]
BOUNDS: dict[str, tuple[Callable[[Key], bool], float]] = {
    "Python-level calls": (lambda k: True, 1080.0),
    "JSON encodes (stdlib encoder)": (
        lambda k: k[0].endswith("json/encoder.py") and k[2] == "encode", 3.2),
    "anyio cancel scopes entered": (
        lambda k: "anyio/_backends" in k[0] and k[2] == "__enter__", 1.1),
    "generator-based context managers": (
        lambda k: k[0].endswith("contextlib.py") and k[2] == "helper", 0.5),
    "pydantic validations": (lambda k: "validate_python" in k[2], 10.5),
    "pydantic model copies": (lambda k: k[2] == "model_copy", 1.2),
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
