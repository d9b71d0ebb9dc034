"""``lens verify``: is a results bundle whole and untouched?

Every file is checked against the sha256 and size in ``BUNDLE.json`` (a changed, missing or
added file is named), the manifest's digest against its file list, the required files against
what is there, the bundled dataset's content hash against the one the run recorded, and the
scores against the records they score, and every claim ``BUNDLE.json`` makes beside its file
list against the hashed files: the run id, the lens version, the judges and the number of
verdicts each rests on (the ``judge_verdict`` events of ``run/events.jsonl``). A bundle edited
together with its ``BUNDLE.json`` passes the file checks: its digest then differs from the one
published with the result, which ``--digest`` compares.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from lens.core.distribution import DISTRIBUTION
from lens.core.errors import DatasetError
from lens.core.jsonguard import JsonRefused, loads_guarded
from lens.data.dataset_load import load_dataset
from lens.flow.bundle.archive import read_archive
from lens.flow.bundle.contents import (
    MANIFEST,
    REQUIRED,
    BundleManifest,
    check_digest,
    check_files,
)
from lens.scoring.foundations.types import RunScores


@dataclass
class Verification:
    manifest: BundleManifest | None
    # The bundle's folder inside the archive and its files (paths inside that folder).
    top: str = ""
    files: dict[str, bytes] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    # What passed but could not be checked in full; printed with the verdict.
    warnings: list[str] = field(default_factory=list)
    # Counted from the hashed files, not taken from BUNDLE.json: question records, and the
    # distinct judge verdicts run/events.jsonl records for each judge model.
    records: int = 0
    verdicts: dict[str, int] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.problems


def _split(members: dict[str, bytes], problems: list[str]) -> tuple[str, dict[str, bytes]]:
    tops = sorted({name.split("/", 1)[0] for name in members})
    if len(tops) != 1:
        problems.append(f"the archive must hold one bundle folder; it holds {len(tops)}: "
                        f"{', '.join(tops[:5]) or 'nothing'}")
        return "", {}
    top = tops[0]
    return top, {n.split("/", 1)[1]: b for n, b in members.items() if "/" in n}


def _check_dataset(manifest: BundleManifest, files: dict[str, bytes], problems: list[str]
                   ) -> None:
    data = files.get(manifest.dataset_file)
    raw = files.get("run/manifest.json")
    if data is None or raw is None:
        return
    run_manifest = _json_object(raw, "run/manifest.json", [])
    if run_manifest is None:
        return  # named by the claims check
    recorded = (run_manifest.get("dataset") or {}).get("content_hash")
    if recorded != manifest.dataset_hash:
        problems.append(f"{MANIFEST}: dataset_hash {manifest.dataset_hash} is not the run's "
                        f"({recorded})")
    with tempfile.TemporaryDirectory(prefix="lens-verify-") as tmp:
        path = Path(tmp) / Path(manifest.dataset_file).name
        path.write_bytes(data)
        try:
            ds = load_dataset(path)
        except DatasetError as exc:
            problems.append(f"{manifest.dataset_file}: not a valid dataset ({exc})")
            return
    from lens.flow.bundle.export import dataset_view

    got = dataset_view(ds, run_manifest.get("config") or {}).content_hash()
    if got != recorded:
        problems.append(f"{manifest.dataset_file}: content hash {got[:16]}… is not the "
                        f"dataset the run used ({str(recorded)[:16]}…)")


def _check_scores(files: dict[str, bytes], problems: list[str]) -> None:
    records, scores = files.get("run/records.jsonl"), files.get("run/scores.json")
    if records is None or scores is None:
        return
    from lens.runs.records import QuestionRecord

    try:
        keys = {QuestionRecord.model_validate_json(line).key
                for line in records.decode("utf-8").splitlines() if line.strip()}
        scored = RunScores.model_validate_json(scores)
    except (ValidationError, UnicodeDecodeError) as exc:
        problems.append(f"run/records.jsonl or run/scores.json: not readable ({exc})")
        return
    unknown = [q.key for q in scored.questions if q.key not in keys]
    if unknown:
        problems.append(f"run/scores.json: {len(unknown)} scored question(s) have no record "
                        f"(first: {unknown[0]})")


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 120 else text[:120] + "…"


def _check_claims(manifest: BundleManifest, files: dict[str, bytes],
                  recorded: dict[str, set[tuple[str, str]]], problems: list[str],
                  warnings: list[str]) -> None:
    """The claims ``BUNDLE.json`` makes beside its file list (run id, lens version, judges),
    each compared with the hashed files it stands for: an edited claim is named."""
    raw, versions = files.get("run/manifest.json"), files.get("versions.json")
    run_manifest = _json_object(raw, "run/manifest.json", problems) if raw is not None else None
    if run_manifest is not None and run_manifest.get("run_id") != manifest.run_id:
        problems.append(f"{MANIFEST}: run_id {_shown(manifest.run_id)} is not the run's "
                        f"({_shown(run_manifest.get('run_id'))} in run/manifest.json)")
    got = _json_object(versions, "versions.json", problems) if versions is not None else None
    if got is not None:
        _check_lens_version(manifest, got, problems, warnings)
    panel = _judges(files, problems)
    if panel is None:
        return
    judges = list(panel)
    if judges != manifest.judges:
        problems.append(f"{MANIFEST}: judges {_shown(manifest.judges)} are not the run's "
                        f"({_shown(judges)} from run/scores.json and run/judge_scores/)")
    if "run/events.jsonl" in files:
        _check_judge_events(panel, recorded, problems)


def verdict_events(raw: bytes) -> dict[str, set[tuple[str, str]]]:
    """The distinct judge verdicts recorded in ``events.jsonl``, by judge model: the
    ``(protocol, key)`` of each ``judge_verdict`` event. A line that is not a JSON object (a
    torn last line) is passed over as the run store passes it over."""
    out: dict[str, set[tuple[str, str]]] = {}
    for line in raw.splitlines():
        if b'"judge_verdict"' not in line:
            continue
        try:
            event = loads_guarded(line, what="run/events.jsonl line")
        except JsonRefused:
            continue
        if isinstance(event, dict) and event.get("kind") == "judge_verdict":
            out.setdefault(str(event.get("model")), set()).add(
                (str(event.get("protocol")), str(event.get("key"))))
    return out


def _check_judge_events(panel: dict[str, RunScores], recorded: dict[str, set[tuple[str, str]]],
                        problems: list[str]) -> None:
    """Each judge's scores rest on verdicts that the run's hashed events record: a judge whose
    scores count more verdicts than ``events.jsonl`` holds for it was not the one asked."""
    for label, scores in panel.items():
        model = scores.judge.model or label
        claimed, held = scores.judge.verdicts, len(recorded.get(model, ()))
        if held < claimed:
            problems.append(
                f"judges: {_shown(label)} rests on {claimed} verdict(s) in its scores, but "
                f"run/events.jsonl records {held} judge_verdict event(s) of {_shown(model)}: "
                "the judge claimed is not the one whose verdicts the run holds")


def _check_lens_version(manifest: BundleManifest, versions: dict[str, Any],
                        problems: list[str], warnings: list[str]) -> None:
    """``lens_version`` against ``versions.json``. Its ``lens`` entry names the lens that wrote
    the bundle; a bundle exported before that entry existed is checked against the installed
    distribution's entry where it recorded one, and otherwise passes with a warning that the
    claim is unchecked (its files are still checked in full)."""
    claimed = manifest.lens_version
    if "lens" in versions:
        if versions["lens"] != claimed:
            problems.append(f"{MANIFEST}: lens_version {_shown(claimed)} is not the one that "
                            f"wrote the bundle ({_shown(versions['lens'])} in versions.json)")
        return
    installed = versions.get(DISTRIBUTION)
    if isinstance(installed, str):
        if installed != claimed:
            problems.append(f"{MANIFEST}: lens_version {_shown(claimed)} is not the one that "
                            f"wrote the bundle ({_shown(installed)}, the {DISTRIBUTION} entry "
                            "of versions.json)")
            return
        warnings.append(f"versions.json has no 'lens' entry (a bundle from an older lens): "
                        f"lens_version checked against its {DISTRIBUTION} entry")
        return
    warnings.append(f"versions.json has no 'lens' entry and no installed {DISTRIBUTION} "
                    f"version (a bundle from an older lens, exported from a checkout): "
                    f"lens_version {_shown(claimed)} is NOT checked; every file is. To have it "
                    "checked, export the run again with this lens (lens export RUN_DIR)")


def _json_object(raw: bytes | None, name: str, problems: list[str]) -> dict[str, Any] | None:
    try:
        value = loads_guarded(raw or b"", what=name)
    except JsonRefused as exc:
        problems.append(f"{name}: not readable JSON ({exc})")
        return None
    if not isinstance(value, dict):
        problems.append(f"{name}: not a JSON object")
        return None
    return value


def _judges(files: dict[str, bytes], problems: list[str]) -> dict[str, RunScores] | None:
    """The judges of the bundled run and their scores, by label, found as ``lens export``
    found them."""
    from lens.scoring.judging.judge_panel import load_panel

    raw = files.get("run/scores.json")
    if raw is None:
        return None
    try:
        scores = RunScores.model_validate_json(raw)
    except ValidationError:
        return None  # named by the scores check
    with tempfile.TemporaryDirectory(prefix="lens-verify-") as tmp:
        root = Path(tmp)
        for rel, data in files.items():
            if rel.startswith("run/") and rel.endswith(".json"):
                target = root / rel.removeprefix("run/")
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(data)
        try:
            return dict(load_panel(root, scores).scores)
        except (ValueError, OSError) as exc:
            problems.append(f"run/: the judges' scores are not readable ({exc})")
            return None


def verify_bundle(path: Path, digest: str | None = None) -> Verification:
    members, problems = read_archive(path)
    top, files = _split(members, problems)
    raw = files.get(MANIFEST)
    if raw is None:
        if top:
            problems.append(f"{MANIFEST}: missing: not a lens results bundle, or truncated")
        return Verification(None, top, files, problems)
    try:
        manifest = BundleManifest.model_validate_json(raw)
    except ValidationError as exc:
        problems.append(f"{MANIFEST}: not a valid bundle manifest ({exc.errors()[0]['msg']})")
        return Verification(None, top, files, problems)
    check_files(manifest, files, (*REQUIRED, manifest.dataset_file), "a bundle", problems)
    warnings: list[str] = []
    recorded = verdict_events(files.get("run/events.jsonl", b""))
    _check_claims(manifest, files, recorded, problems, warnings)
    _check_dataset(manifest, files, problems)
    _check_scores(files, problems)
    records = sum(1 for line in files.get("run/records.jsonl", b"").splitlines() if line.strip())
    verdicts = {m: len(v) for m, v in recorded.items()}
    check_digest(manifest, digest, problems)
    return Verification(manifest, top, files, problems, warnings, records, verdicts)
