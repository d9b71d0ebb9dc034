"""``lens verify`` checks what it prints against the hashed files, through the real CLI: the
judges against the judge verdicts of ``run/events.jsonl`` (and their counts), ``lens_version``
of a bundle exported before ``versions.json`` carried ``lens``, and a huge run id is printed
cut, never whole. Each forged bundle is resealed (its ``BUNDLE.json`` file list and digest made
consistent again), so only the claim check can catch it."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from lens.flow.bundle.archive import read_archive, write_archive
from lens.flow.bundle.contents import MANIFEST, FileEntry, files_digest, sha256
from tests.report.test_bundle_cli import setup  # noqa: F401  (the module's run and bundle)

ROOT = Path(__file__).resolve().parents[2]


def _lens(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "lens", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)


def forged(bundle: Path, out: Path, edit: Callable[[dict[str, bytes], dict], None]) -> Path:
    """``bundle`` with its files edited by ``edit(files, claims)`` and resealed."""
    members, problems = read_archive(bundle)
    assert problems == []
    top = next(iter(members)).split("/", 1)[0]
    files = {n.split("/", 1)[1]: b for n, b in members.items()}
    claims = json.loads(files.pop(MANIFEST))
    edit(files, claims)
    entries = {p: FileEntry(sha256=sha256(b), bytes=len(b)) for p, b in files.items()}
    claims["files"] = {p: e.model_dump() for p, e in entries.items()}
    claims["digest"] = files_digest(entries)
    members = {f"{top}/{p}": b for p, b in files.items()}
    members[f"{top}/{MANIFEST}"] = json.dumps(claims).encode()
    write_archive(out, members)
    return out


def _json(files: dict[str, bytes], name: str) -> dict:
    return json.loads(files[name])


def _put(files: dict[str, bytes], name: str, value: dict) -> None:
    files[name] = json.dumps(value).encode()


def test_the_ok_line_counts_from_the_hashed_files(setup: dict) -> None:  # noqa: F811
    proc = _lens("verify", str(setup["bundle"]))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "3 question records" in proc.stdout
    assert "(9 verdicts)" in proc.stdout and "warning" not in proc.stdout


def test_a_judge_whose_verdicts_the_events_do_not_hold_is_named(setup: dict,  # noqa: F811
                                                               tmp_path: Path) -> None:
    """scores.json and BUNDLE.json agree on a judge that never judged this run."""
    def relabel(files: dict[str, bytes], claims: dict) -> None:
        scores = _json(files, "run/scores.json")
        scores["judge"]["model"] = "openai/gpt-4o"
        scores["condition"]["judge_model"] = "openai/gpt-4o"
        _put(files, "run/scores.json", scores)
        claims["judges"] = ["openai/gpt-4o"]

    proc = _lens("verify", str(forged(setup["bundle"], tmp_path / "f.tar.gz", relabel)))
    assert proc.returncode == 1, proc.stdout
    assert "bundle OK" not in proc.stdout
    assert "judges: 'openai/gpt-4o' rests on 9 verdict(s)" in proc.stdout
    assert "records 0 judge_verdict event(s)" in proc.stdout


def test_verdict_events_removed_are_counted_short(setup: dict,  # noqa: F811
                                                  tmp_path: Path) -> None:
    def drop(files: dict[str, bytes], claims: dict) -> None:
        lines = files["run/events.jsonl"].splitlines(keepends=True)
        kept, dropped = [], 0
        for line in lines:
            if b'"judge_verdict"' in line and dropped < 4:
                dropped += 1
                continue
            kept.append(line)
        files["run/events.jsonl"] = b"".join(kept)

    proc = _lens("verify", str(forged(setup["bundle"], tmp_path / "f.tar.gz", drop)))
    assert proc.returncode == 1, proc.stdout
    assert "rests on 9 verdict(s)" in proc.stdout and "records 5 judge_verdict" in proc.stdout


def _old_versions(installed: str | None) -> Callable[[dict[str, bytes], dict], None]:
    """versions.json as a lens before the ``lens`` entry wrote it, its ``lens-memory-eval``
    entry ``installed`` ("same": the version BUNDLE.json claims; None: run from a checkout)."""
    def edit(files: dict[str, bytes], claims: dict) -> None:
        versions = _json(files, "versions.json")
        version = versions.pop("lens")
        versions["lens-memory-eval"] = version if installed == "same" else installed
        _put(files, "versions.json", versions)
    return edit


def test_a_bundle_from_before_the_lens_entry(setup: dict, tmp_path: Path) -> None:  # noqa: F811
    checked = _lens("verify", str(forged(setup["bundle"], tmp_path / "a.tar.gz",
                                         _old_versions("same"))))
    assert checked.returncode == 0, checked.stdout
    assert "warning: versions.json has no 'lens' entry" in checked.stdout
    assert "checked against its lens-memory-eval entry" in checked.stdout

    unchecked = _lens("verify", str(forged(setup["bundle"], tmp_path / "b.tar.gz",
                                           _old_versions(None))))
    assert unchecked.returncode == 0, unchecked.stdout
    assert "is NOT checked" in unchecked.stdout and "lens export RUN_DIR" in unchecked.stdout

    other = _lens("verify", str(forged(setup["bundle"], tmp_path / "c.tar.gz",
                                       _old_versions("0.0.1"))))
    assert other.returncode == 1, other.stdout
    assert "lens_version" in other.stdout and "'0.0.1', the lens-memory-eval entry" in other.stdout


HUGE = hashlib.shake_256(b"a 20 MB run id").hexdigest(10_000_000)  # 20 MB, barely compressible


@pytest.mark.parametrize("consistent", [True, False])
def test_a_huge_run_id_is_never_printed_whole(setup: dict, tmp_path: Path,  # noqa: F811
                                              consistent: bool) -> None:
    def edit(files: dict[str, bytes], claims: dict) -> None:
        claims["run_id"] = HUGE
        if consistent:
            manifest = _json(files, "run/manifest.json")
            manifest["run_id"] = HUGE
            _put(files, "run/manifest.json", manifest)

    proc = _lens("verify", str(forged(setup["bundle"], tmp_path / "h.tar.gz", edit)))
    assert proc.returncode == (0 if consistent else 1), proc.stdout[:3000]
    assert ("bundle OK" in proc.stdout) is consistent
    assert len(proc.stdout) + len(proc.stderr) < 20_000
    assert HUGE[:100] in proc.stdout and HUGE[1000:1100] not in proc.stdout
