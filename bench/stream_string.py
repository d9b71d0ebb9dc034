"""The streamed JSON reader's CPU time on one long string: linear, or quadratic in its length?

    python -m bench.stream_string                      # 4 and 32 MB, 3 repetitions
    python -m bench.stream_string --sizes-mb 4 32 --repeat 5 --workdir /tmp/x

A LENS dataset whose one episode text is a string of 4 or 32 MB (the issue measured 2.1 and
36.9 CPU s before the reader fed yajl whole tokens: a string cut by the 4 kB buffer was re-read
from its start at every buffer). Three readers, each timed in CPU seconds of this process
(``time.process_time``, so another job's load changes wall time more than these):

- ``dataset stream``: ``lens.data.dataset_stream.stream_dataset``, the reader ``lens run`` and
  ``lens datasets validate`` use for files over the whole-file limit, to its verdict (a text
  that long is over the episode cap: the verdict is a refusal naming the field, reached after
  the whole string);
- ``import events``: ``lens.data.importers.common.guarded_events``, the token stream the
  LongMemEval and MemoryAgentBench importers read, to its end;
- ``json.loads`` of the same bytes: the baseline, Python's C parser, linear.

Two kinds of string: ``plain`` (words, no escapes) and ``escaped`` (one escape in eight bytes:
``\\n`` and ``\\u00e9``, the case of the lone-surrogate scan over every chunk's escapes).
Linear reading gives a 32 MB / 4 MB ratio near 8; quadratic, near 64.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import machine_line, md_table, spread

WORD = b"widget "
ESCAPED = b"ab\\ncd\\u00e9 "  # 12 bytes, two escapes


def make_file(folder: Path, size_mb: int, kind: str) -> Path:
    """A LENS dataset of one scope, one episode whose text is ``size_mb`` MB, one question."""
    unit = WORD if kind == "plain" else ESCAPED
    text = unit * (size_mb * 1_000_000 // len(unit))
    head = {"version": "0.1.0", "scopes": [{"scope_id": "s", "episodes": [
        {"episode_id": "s_ep_1", "scope_id": "s", "timestamp": "2024-01-01T00:00:00",
         "text": "TEXT", "meta": {}}]}],
        "questions": [{"question_id": "q1", "scope_id": "s", "checkpoint_after": 1,
                       "question_type": "longitudinal", "prompt": "What?",
                       "ground_truth": {"canonical_answer": "x", "key_facts": ["x"],
                                        "required_evidence_refs": ["s_ep_1"]}}]}
    before, after = json.dumps(head).encode().split(b'"TEXT"')
    path = folder / f"one-string-{kind}-{size_mb}mb.json"
    path.write_bytes(before + b'"' + text + b'"' + after)
    return path


def dataset_stream(path: Path) -> str:
    from lens.core.errors import DatasetError
    from lens.data.dataset_stream import StreamProblem, stream_dataset

    try:
        stream_dataset(path)
    except StreamProblem as exc:
        return f"refused at {exc.location}"
    except DatasetError as exc:
        return f"refused: {str(exc)[:60]}"
    return "read"


def import_events(path: Path) -> str:
    from lens.data.importers.common import guarded_events

    with path.open("rb") as fh:
        n = sum(1 for _ in guarded_events(fh))
    return f"{n} events"


def loads(path: Path) -> str:
    json.loads(path.read_bytes())
    return "parsed"


READERS: dict[str, Callable[[Path], str]] = {
    "dataset stream": dataset_stream, "import events": import_events, "json.loads": loads}


def cpu_seconds(fn: Callable[[Path], str], path: Path) -> tuple[float, str]:
    start = time.process_time()
    verdict = fn(path)
    return time.process_time() - start, verdict


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes-mb", type=int, nargs="+", default=[4, 32])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--workdir", type=Path, default=None,
                    help="where the files are written (default: a temporary folder)")
    args = ap.parse_args(argv)
    # Imported before any timing: the first reader timed must not pay for loading lens.
    import lens.data.dataset_stream
    import lens.data.importers.common  # noqa: F401
    print(machine_line(("ijson",)))
    with tempfile.TemporaryDirectory(prefix="lens-bench-stream-", dir=args.workdir) as tmp:
        rows = []
        medians: dict[tuple[str, str, int], float] = {}
        for kind in ("plain", "escaped"):
            for size in args.sizes_mb:
                path = make_file(Path(tmp), size, kind)
                for name, fn in READERS.items():
                    runs = [cpu_seconds(fn, path) for _ in range(args.repeat)]
                    s = spread([t for t, _ in runs])
                    medians[(kind, name, size)] = s.median
                    rows.append([kind, f"{size} MB", name, s.fmt(3, " s"), runs[0][1]])
                path.unlink()
        print(md_table(["string", "size", "reader", "CPU time", "verdict"], rows))
        if len(args.sizes_mb) >= 2:
            small, large = min(args.sizes_mb), max(args.sizes_mb)
            print(f"\nratio of CPU time, {large} MB / {small} MB (linear: {large / small:.0f}, "
                  f"quadratic: {(large / small) ** 2:.0f}):")
            for kind in ("plain", "escaped"):
                for name in READERS:
                    a, b = medians[(kind, name, small)], medians[(kind, name, large)]
                    print(f"  {kind:<8} {name:<15} {b / a if a else float('nan'):.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
