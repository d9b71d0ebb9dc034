"""A claims folder (``lens claims check --out``) in ``lens view``: listed beside the runs on the
index, its page the one table with the inputs' hashes and each figure's condition, over real
HTTP on loopback; a broken claims.json is named, never a 500."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from pathlib import Path

import pytest

from tests.claims.test_claims_bundle import EXCERPT
from tests.report.runfactory import RunSpec, make_run
from tests.support.cli import Lens, cli_runner
from tests.view.server import get, lens_view, require_view_extra


@pytest.fixture
def lens(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
         capsys: pytest.CaptureFixture[str]) -> Lens:
    return cli_runner(tmp_path, monkeypatch, capsys)


def _text(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


def test_claims_folder_listed_beside_runs_and_shown(lens: Lens, tmp_path: Path) -> None:
    require_view_extra()
    folder = tmp_path / "runs"
    folder.mkdir()
    run = make_run(folder, RunSpec(name="alpha", questions_per_scope=3))
    r = lens("claims", "check", str(EXCERPT), "--reader", "memobase", "--published",
             "memobase-0.0.37", "--limit", "5", "--out", str(folder / "memobase-check"))
    assert r.returncode == 0, r.stderr
    data = json.loads((folder / "memobase-check" / "claims.json").read_text(encoding="utf-8"))
    broken = folder / "broken-check"
    broken.mkdir()
    (broken / "claims.json").write_text("{not json", encoding="utf-8")
    # A link to a claims folder outside the served folder is named, never read.
    (folder / "linked-check").symlink_to(folder / "memobase-check")
    outside = shutil.copytree(folder / "memobase-check", tmp_path / "elsewhere")
    (folder / "outside-check").symlink_to(outside)
    with lens_view(folder) as base:
        status, _, body = get(base + "/")
        assert status == 200
        assert run.name in body and "/claims/memobase-check" in body
        assert "Published claims checked" in body and "broken-check: cannot be read" in body
        status, _, api = get(base + "/api/runs")
        listed = json.loads(api)
        assert [c["name"] for c in listed["claims"]] == ["linked-check", "memobase-check"]
        assert listed["claims"][0]["reproduced"] == \
            f"{data['reproduced']['overall']['percent']:.2f}"
        status, headers, page = get(base + "/claims/memobase-check")
        assert status == 200 and "default-src 'none'" in headers["content-security-policy"]
        text = _text(page)
        sha = hashlib.sha256(EXCERPT.read_bytes()).hexdigest()
        assert sha in text and data["inputs"][0]["sha256"] == sha
        for head in ("published", "reproduced", "kappa vs publisher", "leniency",
                     "condition"):
            assert head in text
        for scorer in data["scorers"]:
            assert scorer["name"] in text
            cond = ", ".join(f"{k}={v}" for k, v in scorer["condition"].items())
            assert cond in text
        assert f"{data['reproduced']['overall']['percent']:.2f}" in text
        assert "75.78" in text  # the published figure beside it
        assert get(base + "/claims/broken-check")[0] == 422
        assert "outside-check: cannot be read" in body and "outside" in body
        status, _, page = get(base + "/claims/outside-check")
        assert status == 422 and "outside" in page and "75.78" not in page
        assert get(base + "/claims/nothing-here")[0] == 404
        assert get(base + "/claims/" + run.name)[0] == 404  # a run is not a claims folder
