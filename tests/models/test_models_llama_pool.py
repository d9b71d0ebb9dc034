"""The llama_cpp backend's pool of model instances (``options.parallel``), without a model: the
instances are stand-ins that record when they are loaded and who holds them."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from lens.core.errors import ConfigError
from lens.data.config import ModelConfig
from lens.models import llama_backend
from lens.models.llama_backend import LlamaCppClient, LlamaSettings, ModelPool


class _Instance:
    loads = 0
    fail_next = False

    def __init__(self, settings: LlamaSettings) -> None:
        if _Instance.fail_next:
            _Instance.fail_next = False
            raise RuntimeError("cannot load")
        _Instance.loads += 1
        self.settings = settings
        self.llm = object()


@pytest.fixture
def stand_ins(monkeypatch: pytest.MonkeyPatch) -> None:
    _Instance.loads = 0
    _Instance.fail_next = False
    monkeypatch.setattr(llama_backend, "LoadedModel", _Instance)


def _settings(parallel: int) -> LlamaSettings:
    return LlamaSettings(path=Path("m.gguf"), n_ctx=512, n_threads=1, n_batch=64, seed=0,
                         parallel=parallel)


def test_calls_one_at_a_time_load_one_instance(stand_ins: None) -> None:
    pool = ModelPool(_settings(parallel=2))
    seen = []
    for _ in range(3):
        with pool.lend() as instance:
            seen.append(instance)
    assert pool.instances == 1 and _Instance.loads == 1
    assert seen[0] is seen[1] is seen[2]  # the same context, so its prefix is re-used


def test_concurrent_calls_get_their_own_instance_up_to_parallel(stand_ins: None) -> None:
    pool = ModelPool(_settings(parallel=2))
    holding = threading.Barrier(3)
    release = threading.Event()
    held: list[object] = []
    third_started = threading.Event()
    third_got: list[float] = []

    def hold() -> None:
        with pool.lend() as instance:
            held.append(instance)
            holding.wait()
            release.wait(5)

    def third() -> None:
        third_started.set()
        with pool.lend():
            third_got.append(time.monotonic())

    workers = [threading.Thread(target=hold) for _ in range(2)]
    for w in workers:
        w.start()
    holding.wait(5)
    assert len({id(i) for i in held}) == 2 and pool.instances == 2
    late = threading.Thread(target=third)
    late.start()
    third_started.wait(5)
    time.sleep(0.2)
    # Both instances are lent: the third call waits rather than loading a third copy.
    assert third_got == [] and _Instance.loads == 2
    released_at = time.monotonic()
    release.set()
    for w in [*workers, late]:
        w.join(5)
    assert third_got and third_got[0] >= released_at and _Instance.loads == 2


def test_a_failed_load_frees_its_place(stand_ins: None) -> None:
    pool = ModelPool(_settings(parallel=1))
    _Instance.fail_next = True
    with pytest.raises(RuntimeError, match="cannot load"), pool.lend():
        pass
    assert pool.instances == 0
    with pool.lend() as instance:  # would block forever had the slot leaked
        assert isinstance(instance, _Instance)
    assert pool.instances == 1


def _client(tmp_path: Path, **options: object) -> LlamaCppClient:
    model = tmp_path / "model.gguf"
    model.write_bytes(b"GGUF")
    return LlamaCppClient(ModelConfig(model=f"llama_cpp/{model}", options=dict(options)))


def test_parallel_shares_the_idle_cores_among_instances(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(llama_backend, "default_threads", lambda: 2)
    assert _client(tmp_path).settings.n_threads == 2
    two = _client(tmp_path, parallel=2).settings
    assert (two.parallel, two.n_threads) == (2, 1)
    assert _client(tmp_path, parallel=4).settings.n_threads == 1
    assert _client(tmp_path, parallel=2, n_threads=3).settings.n_threads == 3


def test_parallel_below_one_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"options\.parallel must be 1 or more"):
        _client(tmp_path, parallel=0)
