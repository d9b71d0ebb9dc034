"""The classes behind the hostile-input cases, held by a search of lens/: JSON and YAML from
users and servers are read through the guards (lens/core/jsonguard.py, lens/core/yamlguard.py),
never by a bare ``json.loads`` or ``yaml.safe_load``; a name that becomes part of a path goes
through lens/core/safenames.py; a pair of arms is never a joined string.

The readers left below are each named with why they are not user or server data, or how they
are bounded on their own; a new bare reader fails this test until it is routed through a guard
or named here with its reason."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

LENS = Path(__file__).resolve().parents[2] / "lens"
GUARDS = {"core/jsonguard.py", "core/yamlguard.py"}
BARE = re.compile(r"\byaml\.(safe_load|load|full_load|unsafe_load)\(|\bjson\.loads\(")

# file (under lens/) → (readers, why it is not read through a guard).
ALLOWED: dict[str, tuple[int, str]] = {
    "data/config.py": (1, "yaml.load with the guard's own GuardedLoader (and its messages)"),
    "flow/plan_cost.py": (1, "a round trip of lens's own dataclass"),
    "flow/certify.py": (1, "scores.json that this process has just written"),
    "flow/look_reader.py": (1, "events.jsonl that this run is writing, read at each look"),
    "models/local_models.py": (1, "lens's own marker in its model folder"),
    "models/pricing.py": (1, "litellm's installed price table"),
    "core/distribution.py": (1, "pip's direct_url.json of lens's own installation"),
    "adapters/embedding.py": (2, "config.json of a model package shipped with lens"),
    "adapters/static_embedding.py": (1, "config.json of a model package shipped with lens"),
    "memory/executor/worker.py": (2, "lens's own pipe between the run and its adapter worker"),
    "memory/executor/process.py": (1, "lens's own pipe between the run and its adapter worker"),
    "runs/store.py": (1, "events.jsonl a line at a time (an unreadable or too deep line is "
                         "skipped); the manifest is read through the guard"),
    "runner/memory_states.py": (1, "the memory listings lens wrote into the run directory, a "
                                   "line at a time (an unreadable line is skipped)"),
    "scoring/grading/offline_grader.py": (1, "lens's own model cache"),
    # Model output: a reply's text, already read through the client's size cap; depth is
    # refused by each reader (RecursionError) as an unreadable verdict.
    "models/base.py": (1, "tool-call arguments of the model's reply, depth refused"),
    "models/local_prompt.py": (6, "the local model's own output, bounded by max_tokens"),
    "models/openai_backend.py": (2, "a provider's reply, size-capped; depth and long integers "
                                    "refused as a malformed response"),
    "models/scripted.py": (1, "the scripted test model's own canned content"),
    "claims/rescore.py": (1, "a judge's verdict text, bounded by max_tokens"),
    "scoring/protocols/memoryagentbench.py": (1, "a judge's verdict text, bounded by "
                                                 "max_tokens"),
}


def _bare_readers() -> Counter[str]:
    found: Counter[str] = Counter()
    for path in LENS.rglob("*.py"):
        rel = path.relative_to(LENS).as_posix()
        if rel in GUARDS:
            continue
        for line in path.read_text(encoding="utf-8").splitlines():
            code = line.split("#", 1)[0]
            if BARE.search(code) and not code.lstrip().startswith(('"', "'")):
                found[rel] += 1
    return found


def test_no_bare_json_or_yaml_reader_outside_the_guards() -> None:
    found = _bare_readers()
    unexpected = {f: n for f, n in found.items() if n > ALLOWED.get(f, (0, ""))[0]}
    assert not unexpected, (
        "read user or server JSON/YAML through lens.core.jsonguard.loads_guarded or "
        f"lens.core.yamlguard.load_yaml (or name the reader and why in ALLOWED): {unexpected}")
    stale = {f: (n, found.get(f, 0)) for f, (n, _) in ALLOWED.items() if found.get(f, 0) < n}
    assert not stale, f"ALLOWED names readers that are gone; lower its counts: {stale}"


def test_the_readers_named_in_the_brief_use_the_guards() -> None:
    for rel in ("data/overrides.py", "scoring/protocols/base.py", "commands/plan_from.py",
                "commands/facts.py", "scoring/judging/batch_judge.py",
                "scoring/foundations/errata.py",
                "models/openai_batch.py", "report/sections/registry.py", "data/dataset_json.py",
                "data/importers/beam.py", "data/importers/memoryagentbench.py",
                "data/importers/longmemeval_v2_source.py"):
        text = (LENS / rel).read_text(encoding="utf-8")
        assert not BARE.search(text), rel
        assert "loads_guarded" in text or "load_yaml" in text, rel


# Paths made from names: only lens/core/safenames.py (and the run store's own sanitizer) joins a
# name from outside onto a folder.
JOIN = re.compile(r'/ ?f"\{')
JOIN_ALLOWED = {
    "core/safenames.py": "the one helper",
    "runs/store.py": "run and error file names through its own _safe / _error_name",
    "scoring/judging/judge_panel.py": "judge_slug: a readable part and a hash",
    "scoring/judging/calibration.py": "a slug of alphanumerics and a hash",
    "flow/bundle/export.py": "bundle_id, checked by safenames.checked_name",
}


def test_names_become_paths_in_one_place() -> None:
    offenders = []
    for path in LENS.rglob("*.py"):
        rel = path.relative_to(LENS).as_posix()
        if rel in JOIN_ALLOWED:
            continue
        for no, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if JOIN.search(line.split("#", 1)[0]):
                offenders.append(f"{rel}:{no}: {line.strip()}")
    assert not offenders, ("join names from outside onto a folder with "
                           f"lens.core.safenames.child: {offenders}")


def test_pairs_of_arms_are_never_joined_strings() -> None:
    text = (LENS / "flow" / "stopping.py").read_text(encoding="utf-8")
    assert '|{' not in text and 'split("|"' not in text
