"""Bundles and imports under hostile input, through the real CLI: nothing outside the run is
packed or written, a bundle's claims are checked against its contents, links in archives are
refused, and an import never overwrites its source."""

from __future__ import annotations

import json
import shutil
import stat
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from lens.flow.bundle.archive import read_archive, write_archive
from tests.report.test_bundle_cli import setup  # noqa: F401  (the module's run and bundle)

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "datasets" / "fixtures"


def _lens(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "lens", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)


def test_export_packs_no_file_a_link_points_to(setup: dict, tmp_path: Path) -> None:  # noqa: F811
    outside = tmp_path / "outside.txt"
    outside.write_text("OUTSIDE-THE-RUN-7f3a", encoding="utf-8")
    run = tmp_path / "run"
    shutil.copytree(setup["run"], run)
    (run / "linked.txt").symlink_to(outside)
    bundle = tmp_path / "b.zip"
    proc = _lens("export", str(run), "--out", str(bundle))
    assert proc.returncode == 0, proc.stderr[-2000:]
    with zipfile.ZipFile(bundle) as zf:
        assert not any(n.endswith("linked.txt") for n in zf.namelist())
        assert all(b"OUTSIDE-THE-RUN-7f3a" not in zf.read(n) for n in zf.namelist())


def test_a_run_id_that_leaves_its_folder_is_refused(setup: dict, tmp_path: Path) -> None:  # noqa: F811
    run = tmp_path / "deep" / "er" / "run"
    shutil.copytree(setup["run"], run)
    manifest = json.loads((run / "manifest.json").read_text(encoding="utf-8"))
    manifest["run_id"] = "../../escaped"
    (run / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    proc = _lens("export", str(run))
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "run_id" in proc.stderr and "Traceback" not in proc.stderr
    assert not list(tmp_path.rglob("escaped*"))


@pytest.mark.parametrize("field", ["run_id", "lens_version", "judges"])
def test_an_edited_claim_fails_verification_and_is_named(setup: dict, tmp_path: Path,  # noqa: F811
                                                         field: str) -> None:
    members, _ = read_archive(setup["bundle"])
    name = next(n for n in members if n.endswith("/BUNDLE.json"))
    claims = json.loads(members[name])
    claims[field] = ["openai/gpt-4o"] if field == "judges" else "someone-elses"
    members[name] = json.dumps(claims).encode()
    forged = tmp_path / "forged.tar.gz"
    write_archive(forged, members)
    proc = _lens("verify", str(forged))
    assert proc.returncode != 0, proc.stdout
    assert field.split("_")[0] in (proc.stdout + proc.stderr)
    assert "bundle OK" not in proc.stdout


def test_a_zip_entry_that_is_a_link_is_refused(setup: dict, tmp_path: Path) -> None:  # noqa: F811
    forged = tmp_path / "linked.zip"
    members, _ = read_archive(setup["bundle"])
    with zipfile.ZipFile(forged, "w") as zf:
        for n, data in members.items():
            zf.writestr(n, data)
        link = zipfile.ZipInfo(next(iter(members)).split("/", 1)[0] + "/run/evil")
        link.external_attr = (stat.S_IFLNK | 0o777) << 16
        zf.writestr(link, "/etc/passwd")
    proc = _lens("verify", str(forged))
    # A bundle that fails verification exits 1, as a tar link or a tampered member does.
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "run/evil: a link in the archive" in proc.stdout
    assert "Traceback" not in proc.stderr


def test_an_import_never_overwrites_its_source(tmp_path: Path) -> None:
    source = tmp_path / "locomo.json"
    shutil.copy(FIXTURES / "locomo_small.json", source)
    before = source.read_bytes()
    proc = _lens("datasets", "import", "--format", "locomo", str(source), "--out", str(source))
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert source.read_bytes() == before
    assert "Traceback" not in proc.stderr


def test_a_failed_import_leaves_no_folder_behind(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"not": "locomo"}', encoding="utf-8")
    out = tmp_path / "made" / "for" / "it.json"
    proc = _lens("datasets", "import", "--format", "locomo", str(bad), "--out", str(out))
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert not (tmp_path / "made").exists()
    folder = tmp_path / "folder"
    folder.mkdir()
    proc = _lens("datasets", "import", "--format", "locomo", str(FIXTURES / "locomo_small.json"),
                 "--out", str(folder))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert list(folder.iterdir()) == []
