"""The realistic-provider benchmark's harness through the real fake server process: the provider
enforces its limits with 429s, and lens on a short run loses and repeats nothing, stays under
the limits it was told or learnt, and keeps the provider busy."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from bench.provider_limits import one_mode


def short_args(**kw: object) -> argparse.Namespace:
    # Compressed latencies and a small burst, so the limits bind within seconds.
    base = dict(questions=12, concurrency=16, latency_ms=20.0, latency_p99_ms=150.0, rpm=6000.0,
                tpm=1_500_000.0, burst_s=1.0, seed=3, loop="asyncio")
    return argparse.Namespace(**(base | kw))


@pytest.mark.parametrize("mode", ["told", "untold"])
def test_short_run_within_the_limits(tmp_path: Path, mode: str) -> None:
    out = one_mode(mode, short_args(), tmp_path)
    assert out.answered == 12 and out.lost == 0 and out.duplicated == 0
    assert out.calls == 12 * 4
    assert out.rate_limited_share <= 0.05, out
    # The provider's own count: tokens booked per minute of the run, against the limit. A short
    # run pays the first call's probe and the last calls' tail, so the bar is lower here than
    # the benchmark's 0.95 over 2,000 questions.
    assert 0.6 <= out.token_rate <= 1.3, out
    if mode == "untold":
        assert out.learned == {"requests_per_minute": 6000.0, "tokens_per_minute": 1_500_000.0}


def test_the_fake_provider_refuses_what_exceeds_its_limits(tmp_path: Path) -> None:
    """Adversary for the benchmark itself: a provider that never refuses would make any client
    look efficient. Told limits far above the provider's, lens overruns them and meets 429s,
    which it retries without losing a question."""
    out = one_mode("told", short_args(questions=4, tpm=300_000.0), tmp_path,
                   told=(60_000.0, 30_000_000.0))
    assert out.rate_limited > 0
    assert out.lost == 0 and out.duplicated == 0
