"""The tests that press Ctrl-C (send SIGINT) start ``lens`` as a terminal would, whatever the
disposition of the test run itself: a suite launched as a shell's background job has SIGINT
ignored, and a child started plainly would inherit that and never see the signal."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from tests.conftest import ROOT


def test_an_interrupted_child_gets_sigint_even_from_a_run_that_ignores_it() -> None:
    # A parent that ignores SIGINT, as `pytest … &` from a script does, starts two children:
    # one plainly (it inherits the ignore) and one through the helper (it gets the default,
    # which its Python turns into KeyboardInterrupt).
    script = textwrap.dedent("""
        import signal, subprocess, sys
        from tests.support.signals import as_from_a_terminal
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        probe = [sys.executable, "-c",
                 "import signal; print(signal.getsignal(signal.SIGINT) is signal.SIG_IGN)"]
        plain = subprocess.run(probe, capture_output=True, text=True).stdout.strip()
        helped = subprocess.run(probe, capture_output=True, text=True,
                                **as_from_a_terminal()).stdout.strip()
        print(plain, helped)
    """)
    out = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True,
                         text=True, timeout=60, env={"PYTHONPATH": str(ROOT)})
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["True", "False"]
