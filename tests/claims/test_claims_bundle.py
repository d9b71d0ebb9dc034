"""A claims check's bundle: ``lens verify`` checks its hashes and recomputes the reproduced
figure from the bundled inputs; ``lens compare`` refuses a claims folder beside runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lens.flow.bundle.archive import read_archive, write_archive
from lens.flow.bundle.contents import MANIFEST, files_digest, sha256
from tests.support.cli import Lens, cli_runner

EXCERPT = Path(__file__).parent / "data" / "memobase" / "memobase_eval_0710_excerpt.json"


@pytest.fixture
def lens(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
         capsys: pytest.CaptureFixture[str]) -> Lens:
    return cli_runner(tmp_path, monkeypatch, capsys)


def _bundle(lens: Lens, tmp_path: Path) -> Path:
    r = lens("claims", "check", str(EXCERPT), "--reader", "memobase", "--limit", "5",
             "--no-leniency", "--out", "out", "--bundle")
    assert r.returncode == 0, r.stderr
    return tmp_path / "out" / "claims-bundle.tar.gz"


def _rewrite(bundle: Path, change: str, data: bytes) -> None:
    """Replace one file and re-hash BUNDLE.json, as someone editing both would."""
    members, problems = read_archive(bundle)
    assert not problems
    top = next(iter(members)).split("/", 1)[0]
    members[f"{top}/{change}"] = data
    manifest = json.loads(members[f"{top}/{MANIFEST}"])
    manifest["files"][change] = {"sha256": sha256(data), "bytes": len(data)}
    from lens.flow.bundle.contents import FileEntry

    manifest["digest"] = files_digest({k: FileEntry(**v) for k, v in manifest["files"].items()})
    members[f"{top}/{MANIFEST}"] = json.dumps(manifest).encode()
    write_archive(bundle, members)


def test_verify_recomputes_the_figure_from_the_bundled_inputs(lens: Lens,
                                                             tmp_path: Path) -> None:
    bundle = _bundle(lens, tmp_path)
    data = json.loads((tmp_path / "out" / "claims.json").read_text())
    overall = data["reproduced"]["overall"]
    r = lens("verify", str(bundle))
    assert r.returncode == 0, r.stdout
    assert f"give the recorded figure ({overall['correct']:g} of {overall['n']})" in r.stdout
    digest = r.stdout.split("digest: ", 1)[1].split()[0]
    assert lens("verify", str(bundle), "--digest", digest).returncode == 0
    assert lens("verify", str(bundle), "--digest", "0" * 64).returncode == 1


def test_a_claim_edited_with_its_manifest_is_caught(lens: Lens, tmp_path: Path) -> None:
    bundle = _bundle(lens, tmp_path)
    data = json.loads((tmp_path / "out" / "claims.json").read_text())
    data["reproduced"]["overall"]["correct"] += 3
    _rewrite(bundle, "claims.json", json.dumps(data).encode())
    r = lens("verify", str(bundle))
    assert r.returncode == 1
    assert "claims bundle FAILED" in r.stdout and "but its inputs give" in r.stdout


def test_an_input_changed_after_export_is_named(lens: Lens, tmp_path: Path) -> None:
    bundle = _bundle(lens, tmp_path)
    members, _ = read_archive(bundle)
    name = next(n for n in members if "/inputs/" in n)
    members[name] = members[name].replace(b'"llm_score": 0', b'"llm_score": 1', 1)
    write_archive(bundle, members)
    r = lens("verify", str(bundle))
    assert r.returncode == 1 and "changed after export" in r.stdout


def test_compare_refuses_a_claims_folder(lens: Lens, tmp_path: Path) -> None:
    _bundle(lens, tmp_path)
    r = lens("compare", "out")
    assert r.returncode == 2
    assert "a re-scored published claim (lens claims check), not a run" in r.stderr
    assert "memobase_eval_0710_excerpt.json (sha256" in r.stderr
    assert lens("claims", "check", str(EXCERPT), "--reader", "memobase", "--bundle"
                ).returncode == 2
