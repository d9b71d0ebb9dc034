"""The runner benchmark's harness is sound: the fake server process answers the scripted
pattern, both lens and the bare-SDK baseline make exactly the calls they claim, and lens really
keeps hundreds of model calls in flight at once."""

from __future__ import annotations

import tempfile
from pathlib import Path

import anyio
import pytest

from bench.common import fake_server, spread
from bench.runner_efficiency import CALLS_PER_QUESTION, lens_once, raw_once, write_dataset
from lens.data.dataset_load import load_dataset


def test_lens_and_baseline_make_the_scripted_calls(tmp_path: Path) -> None:
    dataset = write_dataset(tmp_path / "d.json", 10)
    with fake_server(latency_ms=0) as server:
        lens = anyio.run(lens_once, dataset, load_dataset(dataset), server.base_url, 4, tmp_path,
                         False)
        cached = anyio.run(lens_once, dataset, load_dataset(dataset), server.base_url, 4,
                           tmp_path, True)
        raw = anyio.run(raw_once, 10, server.base_url, 4, "sdk")
        bare = anyio.run(raw_once, 10, server.base_url, 4, "aiohttp")
    assert lens.questions == cached.questions == raw.questions == bare.questions == 10
    assert lens.calls == cached.calls == raw.calls == bare.calls == 10 * CALLS_PER_QUESTION
    assert server.final["SERVED"] == 4 * 10 * CALLS_PER_QUESTION
    assert lens.cpu_s > 0 and raw.cpu_s > 0 and bare.cpu_s > 0


@pytest.mark.slow
def test_lens_keeps_hundreds_of_calls_in_flight() -> None:
    n = 200
    with tempfile.TemporaryDirectory() as tmp, fake_server(latency_ms=3000) as server:
        dataset = write_dataset(Path(tmp) / "d.json", n)
        result = anyio.run(lens_once, dataset, load_dataset(dataset), server.base_url, n,
                           Path(tmp), False)
    assert result.questions == n
    # Every question was waiting on the provider at the same moment.
    assert server.final["PEAK_IN_FLIGHT"] == n


def test_spread_reports_median_and_range() -> None:
    s = spread([3.0, 1.0, 2.0, 10.0])
    assert (s.median, s.low, s.high, s.n) == (2.5, 1.0, 10.0, 4)
    assert s.fmt(1) == "2.5 [1.0–10.0, n=4]"
    assert spread([4.0]).fmt(2, " s") == "4.00 s (n=1)"
