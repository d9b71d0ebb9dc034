"""``lens adapters check`` on an adapter that calls models through lens's gateway: the aclose
check passes every time (the server side of lens's own gateway sockets, which closes a moment
after the adapter's end, is not the adapter's leak), and the check names a model only when the
memory chatted. Through the CLI, twenty times in a row."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from tests.support.cli import Lens, cli_runner

ADAPTER = "tests.gateway.gateway_adapter:GatewayNotesAdapter"


@pytest.fixture
def lens(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
         capsys: pytest.CaptureFixture[str]) -> Lens:
    return cli_runner(tmp_path, monkeypatch, capsys)


@pytest.mark.slow  # twenty checks of a chatting memory: about 40 s on 2 cores
def test_aclose_passes_twenty_times_in_a_row_with_the_gateway(lens: Lens,
                                                              tmp_path: Path) -> None:
    facts = tmp_path / "facts.yaml"
    facts.write_text(yaml.safe_dump({"rules": [], "default": json.dumps({"facts": ["x"]})}),
                     encoding="utf-8")
    options = json.dumps({"model": f"scripted/{facts}", "embed_queries": False})
    # One gateway, the check twenty times over (each on fresh adapters).
    done = lens("adapters", "check", ADAPTER, *["--only", "aclose_releases_resources"] * 20,
                "--options", options)
    assert done.returncode == 0, (done.stdout, done.stderr)
    assert done.stdout.count("aclose_releases_resources") >= 20, done.stdout
    assert "chat calls to scripted/" in done.stdout  # this memory chats while ingesting


def test_the_pytest_form_says_what_it_cannot_check_without_a_gateway(tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[2]
    (tmp_path / "test_gateway_memory.py").write_text(
        "from lens.testing import AdapterConformance\n\n\n"
        "class TestGatewayNotes(AdapterConformance):\n"
        f"    adapter_name = {ADAPTER!r}\n"
        "    adapter_options = {'model': 'scripted/policy'}\n", encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(root), "LENS_CACHE_DIR": str(tmp_path / "cache")}
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider",
                           "test_gateway_memory.py"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert " passed" not in done.stdout and " failed" not in done.stdout, done.stdout
    assert "not checked here: the adapter calls models through lens's model gateway" \
        in done.stdout
    assert "lens adapters check NAME --options JSON" in done.stdout
