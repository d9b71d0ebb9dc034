"""README.md and docs/ say what the code does: every command parses, every config validates,
every output is what lens prints now (tests/docs/docs_check.py), and the texts the check cannot
produce from one command are produced here."""

from __future__ import annotations

import contextlib
import io
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.docs import docs_check

ROOT = docs_check.ROOT


def test_docs_say_what_the_code_does() -> None:
    problems = docs_check.check()
    assert problems == [], "\n".join(problems)


def test_check_catches_drift(tmp_path: Path) -> None:
    doc = tmp_path / "doc.md"
    doc.write_text(
        "```\npython -m lens run CONFIG --no-such-flag\nlens nosuch\n```\n\n"
        "```yaml\nagent:\n  modle: x\nscoring: {}\n```\n\n"
        "```\nresult: 0.5\n```\n\n"
        "<!-- docs:output lens plan --baseline 0.85 --delta 0.05 -->\n```\nstale\n```\n",
        encoding="utf-8")
    problems = "\n".join(docs_check.check([doc]))
    assert "has no option --no-such-flag" in problems
    assert "has no subcommand 'nosuch'" in problems
    assert "agent.modle" in problems
    assert "not only commands" in problems
    assert "the output differs" in problems


def _block_after(path: Path, marker: str) -> str:
    found = [b for b in docs_check.blocks(path) if b.mark == "test" and marker in b.mark_arg]
    assert found, f"{path} has no block marked docs:test {marker}"
    return found[0].body


def _scripted_run(tmp_path: Path, seed: int) -> Path:
    config = yaml.safe_load((ROOT / "configs" / "scripted.yaml").read_text(encoding="utf-8"))
    config.update(name=f"seed{seed}", seed=seed, out_dir=str(tmp_path / "runs"),
                  dataset={"path": str(ROOT / "datasets" / "quickstart.json")})
    path = tmp_path / f"seed{seed}.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    from lens.commands.cli import main
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        assert main(["run", str(path), "--quiet"]) == 0
    return next((tmp_path / "runs").glob(f"seed{seed}-*"))


def test_compare_refusal_in_reports_doc(tmp_path: Path) -> None:
    a, b = _scripted_run(tmp_path, 0), _scripted_run(tmp_path, 1)
    from lens.commands.cli import main
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        assert main(["compare", str(a), str(b)]) == 2
    documented = _block_after(ROOT / "docs" / "reports.md", "tests/docs/test_docs_outputs.py")
    assert docs_check.normalise(err.getvalue()) == docs_check.normalise(documented)


def test_readme_adapter_passes_the_conformance_suite(tmp_path: Path) -> None:
    readme = ROOT / "README.md"
    [code] = [b.body for b in docs_check.blocks(readme) if b.lang == "python"]
    module = re.search(r"^# (\w+)\.py$", code, re.M)
    assert module, "the README's adapter block names its file in a first comment"
    (tmp_path / f"{module.group(1)}.py").write_text(code, encoding="utf-8")
    cls = re.search(r"^class (\w+)\(", code, re.M)
    assert cls
    target = f"{module.group(1)}:{cls.group(1)}"
    assert f"lens adapters check {target}" in readme.read_text(encoding="utf-8")
    proc = subprocess.run([sys.executable, "-m", "lens", "adapters", "check", target],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300,
                          env={**_env(), "PYTHONPATH": f"{tmp_path}:{ROOT}"})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert re.search(r"\b\d+ passed, 0 failed", proc.stdout), proc.stdout


def _env() -> dict[str, str]:
    import os
    return {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}


@pytest.mark.parametrize("path", docs_check.doc_files(), ids=lambda p: p.name)
def test_every_doc_link_resolves(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    missing = []
    for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text):
        if "://" in target or target.startswith("mailto:"):
            continue
        if not (path.parent / target).exists():
            missing.append(target)
    assert missing == [], f"{path.name} links to missing files: {missing}"
