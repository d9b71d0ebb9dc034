"""Results bundles through the real CLI: lens export → lens verify → lens score BUNDLE, tamper
detection, and secrets kept out of the archive."""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import yaml

from lens.commands.cli import main
from lens.flow.bundle.archive import read_archive, write_archive
from lens.flow.bundle.contents import MANIFEST, BundleManifest, FileEntry, files_digest, sha256
from tests.core.helpers import make_dataset, write_json

ROOT = Path(__file__).resolve().parents[2]
SECRET = "sk-bundle-SECRET-9f8e7d6c5b4a"
URL_PASSWORD = "pw-URLSECRET-1234"


def _lens(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "lens", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=300, env={**os.environ, **(env or {})})


def _cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """In-process ``lens …`` (the same parser and error handling as the command)."""
    code = main(list(args))
    out = capsys.readouterr()
    return code, out.out, out.err


def _judge(path: Path, grade: str) -> str:
    path.write_text(yaml.safe_dump({"rules": [{"contains": "Criterion:",
                                               "text": '{"verdict": "TIE"}'}],
                                    "default": json.dumps({"grade": grade})}), encoding="utf-8")
    return f"scripted/{path}"


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> dict:
    tmp = tmp_path_factory.mktemp("bundle")
    ds = write_json(tmp / "ds.json", make_dataset(n_episodes=4, checkpoints=(4,),
                                                  questions_per_checkpoint=3))
    cfg = tmp / "cfg.yaml"
    cfg.write_text(yaml.safe_dump({
        "name": "b", "dataset": {"path": str(ds)}, "adapters": [{"name": "sqlite_fts"}],
        "agent": {"model": "scripted/policy", "api_key_env": "BUNDLE_TEST_API_KEY",
                  "base_url": f"http://user:{URL_PASSWORD}@127.0.0.1:9"},
        "judge": {"model": _judge(tmp / "present.yaml", "present")},
        "out_dir": str(tmp / "runs"), "cache": {"enabled": False}}), encoding="utf-8")
    env = {"BUNDLE_TEST_API_KEY": SECRET}
    proc = _lens("run", str(cfg), "--quiet", env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    run = sorted((tmp / "runs").glob("b-*"))[-1]
    # A file an adapter or a plugin left in the run directory, holding the key verbatim.
    (run / "sections").mkdir(exist_ok=True)
    (run / "sections" / "adapter_log.json").write_text(
        json.dumps({"title": "log", "notes": [f"connected with key {SECRET}"]}), encoding="utf-8")
    bundle = tmp / "out" / "b.tar.gz"
    bundle.parent.mkdir()
    exported = _lens("export", str(run), "--out", str(bundle), env=env)
    assert exported.returncode == 0, exported.stderr[-3000:]
    return {"run": run, "bundle": bundle, "tmp": tmp, "stdout": exported.stdout, "env": env,
            "absent": _judge(tmp / "absent.yaml", "absent")}


def _unpacked_bytes(bundle: Path) -> bytes:
    return gzip.decompress(bundle.read_bytes())


def test_export_holds_what_rejudging_needs(setup: dict) -> None:
    members, problems = read_archive(setup["bundle"])
    assert problems == []
    names = {n.split("/", 1)[1] for n in members}
    for wanted in ("BUNDLE.json", "run/manifest.json", "run/records.jsonl", "run/events.jsonl",
                   "run/scores.json", "dataset/ds.json", "answers.jsonl", "prompts.json",
                   "versions.json"):
        assert wanted in names
    top = next(iter(members)).split("/", 1)[0]
    manifest = BundleManifest.model_validate_json(members[f"{top}/{MANIFEST}"])
    assert manifest.digest in setup["stdout"]
    for path, entry in manifest.files.items():
        assert sha256(members[f"{top}/{path}"]) == entry.sha256
    answers = [json.loads(x) for x in members[f"{top}/answers.jsonl"].decode().splitlines()]
    assert len(answers) == 3
    first = answers[0]
    assert first["answer"] and first["ground_truth"]["key_facts"] and first["scores"]
    assert first["retrieved_context"] and first["transcript"]
    versions = json.loads(members[f"{top}/versions.json"])
    assert versions["lens-memory-eval"] and versions["pydantic"] and versions["python"]
    prompts = json.loads(members[f"{top}/prompts.json"])
    assert "judge_fact_grade" in prompts["templates"] and prompts["prompts_hash"]


def test_secrets_never_enter_the_bundle(setup: dict) -> None:
    data = _unpacked_bytes(setup["bundle"])
    assert SECRET.encode() not in data
    assert URL_PASSWORD.encode() not in data
    assert b"connected with key ***" in data


def test_export_verify_rescore_round_trip(setup: dict, capsys) -> None:
    bundle = setup["bundle"]
    before = hashlib.sha256(bundle.read_bytes()).hexdigest()
    proc = _lens("verify", str(bundle))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "bundle OK" in proc.stdout
    digest = proc.stdout.split("digest: ")[1].split()[0]
    assert _cli(capsys, "verify", str(bundle), "--digest", digest)[0] == 0
    rescored = _lens("score", str(bundle), "--judge", setup["absent"])
    assert rescored.returncode == 0, rescored.stderr[-3000:]
    out = bundle.with_name("b.rescored")
    assert f"re-judged copy of {bundle.name} (the bundle is unchanged)" in rescored.stdout
    assert hashlib.sha256(bundle.read_bytes()).hexdigest() == before
    summary = json.loads((out / "run" / "summary.json").read_text(encoding="utf-8"))
    panel = summary["judges"]
    assert len(panel["judges"]) == 2
    fr = panel["ranges"]["sqlite_fts"]["fact_recall"]
    assert (fr["low"], fr["high"]) == (0.0, 1.0)
    # The output folder is never overwritten.
    code, _, err = _cli(capsys, "score", str(bundle), "--judge", setup["absent"])
    assert code == 2 and "already exists" in err


def test_zip_bundle(setup: dict, tmp_path: Path, capsys,
                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BUNDLE_TEST_API_KEY", SECRET)
    target = tmp_path / "b.zip"
    assert _cli(capsys, "export", str(setup["run"]), "--out", str(target))[0] == 0
    code, out, _ = _cli(capsys, "verify", str(target))
    assert code == 0, out
    with zipfile.ZipFile(target) as zf:
        assert all(SECRET.encode() not in zf.read(n) for n in zf.namelist())
    code, _, err = _cli(capsys, "export", str(setup["run"]), "--out", str(tmp_path / "b.rar"))
    assert code == 2 and ".tar.gz, .tgz or .zip" in err


def _rewrite(src: Path, dst: Path, change) -> Path:
    members, _ = read_archive(src)
    change(members)
    write_archive(dst, members)
    return dst


def _find(members: dict[str, bytes], suffix: str) -> str:
    return next(n for n in members if n.endswith(suffix))


def test_tampering_is_detected(setup: dict, tmp_path: Path, capsys) -> None:
    src = setup["bundle"]

    def edit_answer(m: dict[str, bytes]) -> None:
        key = _find(m, "run/records.jsonl")
        m[key] = m[key].replace(b"Based on", b"Based upon")

    def add_file(m: dict[str, bytes]) -> None:
        m[_find(m, MANIFEST).replace(MANIFEST, "run/extra.txt")] = b"planted"

    def drop_scores(m: dict[str, bytes]) -> None:
        del m[_find(m, "run/scores.json")]

    cases = [(edit_answer, "run/records.jsonl: its content differs"),
             (add_file, "run/extra.txt: in the archive but not listed"),
             (drop_scores, "run/scores.json: listed in BUNDLE.json but missing")]
    for i, (change, says) in enumerate(cases):
        bad = _rewrite(src, tmp_path / f"bad{i}.tar.gz", change)
        code, out, _ = _cli(capsys, "verify", str(bad))
        assert code == 1, out
        assert "bundle FAILED" in out and says in out
    # Through a real process once: the exit status a script sees.
    proc = _lens("verify", str(tmp_path / "bad0.tar.gz"))
    assert proc.returncode == 1 and "bundle FAILED" in proc.stdout
    code, _, err = _cli(capsys, "score", str(tmp_path / "bad0.tar.gz"), "--judge",
                        setup["absent"])
    assert code == 2 and "does not verify" in err
    assert not (tmp_path / "bad0.rescored").exists()


def test_a_consistent_forgery_fails_on_the_dataset_or_the_digest(setup: dict, tmp_path: Path,
                                                                 capsys) -> None:
    """Changing a file and its hash in BUNDLE.json together: the dataset's content hash still
    gives a changed ground truth away, and the published digest gives away anything else."""
    src = setup["bundle"]
    published = BundleManifest.model_validate_json(
        next(v for k, v in read_archive(src)[0].items() if k.endswith(MANIFEST))).digest

    def forge(target: str, old: bytes, new: bytes):
        def change(m: dict[str, bytes]) -> None:
            key, man = _find(m, target), _find(m, MANIFEST)
            m[key] = m[key].replace(old, new)
            manifest = BundleManifest.model_validate_json(m[man])
            files = dict(manifest.files)
            rel = key.split("/", 1)[1]
            files[rel] = FileEntry(sha256=sha256(m[key]), bytes=len(m[key]))
            m[man] = manifest.model_copy(update={"files": files,
                                                 "digest": files_digest(files)}
                                         ).model_dump_json().encode()
        return change

    gold = _rewrite(src, tmp_path / "gold.tar.gz",
                    forge("dataset/ds.json", b"GOLDSECRET-fact", b"GOLDSECRET-fakt"))
    code, out, _ = _cli(capsys, "verify", str(gold))
    assert code == 1 and "is not the dataset the run used" in out
    answers = _rewrite(src, tmp_path / "answers.tar.gz",
                       forge("answers.jsonl", b"Based on", b"Based upon"))
    assert _cli(capsys, "verify", str(answers))[0] == 0
    code, out, _ = _cli(capsys, "verify", str(answers), "--digest", published)
    assert code == 1 and "is not the published one" in out


def test_not_a_bundle(tmp_path: Path, capsys) -> None:
    code, _, err = _cli(capsys, "verify", str(tmp_path / "none.tar.gz"))
    assert code == 2 and "no such bundle file" in err
    junk = tmp_path / "junk.tar.gz"
    junk.write_bytes(b"not an archive")
    code, _, err = _cli(capsys, "verify", str(junk))
    assert code == 2 and "not a readable tar.gz archive" in err
