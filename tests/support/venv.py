"""A fresh virtualenv with this checkout installed editable (``pip install -e``), as a user
installs lens.

lens's dependencies are not downloaded again: the new environment reads them from the
interpreter running the tests through a ``.pth`` line (a folder named there is searched, its own
``.pth`` files are not run, so the test interpreter's own install of lens stays out). Everything
lens-specific, the distribution, its console script and the editable finder, is the new
environment's own.
"""

from __future__ import annotations

import subprocess
import sysconfig
import venv
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Venv:
    root: Path

    @property
    def python(self) -> Path:
        return self.root / "bin" / "python"

    @property
    def lens(self) -> Path:
        return self.root / "bin" / "lens"

    def pip(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(self.python), "-m", "pip", "--disable-pip-version-check",
                               "--no-input", *args],
                              capture_output=True, text=True, timeout=600, check=False)


def editable_lens(where: Path) -> Venv:
    """A virtualenv in ``where`` with lens installed editable from this checkout."""
    venv.EnvBuilder(with_pip=True).create(where)
    env = Venv(where)
    purelib = subprocess.run([str(env.python), "-c",
                              "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    deps = sysconfig.get_paths()["purelib"]
    (Path(purelib) / "zz_test_dependencies.pth").write_text(deps + "\n", encoding="utf-8")
    # Python 3.11's venv brings setuptools 65, older than the backend pyproject.toml needs (77,
    # the dev extra's): without it the build reads the test interpreter's through the .pth line.
    env.pip("uninstall", "--quiet", "--yes", "setuptools")
    done = env.pip("install", "--quiet", "--no-deps", "--no-build-isolation", "-e", str(ROOT))
    if done.returncode != 0:
        raise RuntimeError(f"pip install -e {ROOT} failed:\n{done.stdout}{done.stderr}")
    return env
