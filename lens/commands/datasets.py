"""``lens datasets …``: validate (optionally strictly), generate, inspect and import datasets."""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path
from typing import Any

from lens.core.errors import MAX_PROBLEMS_SHOWN, DatasetError, UserError
from lens.data.dataset import QuestionType
from lens.data.dataset_check import validate_raw
from lens.data.dataset_load import check_dataset_file, load_dataset
from lens.data.scoring_names import PROTOCOL_NAMES


def register(sub: Any) -> None:
    p = sub.add_parser("datasets", help="validate, inspect and build datasets")
    dsub = p.add_subparsers(dest="datasets_command", metavar="ACTION", required=True)

    v = dsub.add_parser("validate", help="check LENS dataset files and list every problem")
    v.add_argument("paths", nargs="+", metavar="PATH")
    v.add_argument("--strict", action="store_true",
                   help="also check the ground truth against the episodes: key facts stated in "
                        "their refs, spread across episodes, answers changing over checkpoints")
    v.set_defaults(handler=_validate)

    g = dsub.add_parser("generate", help="generate longitudinal scopes with exact ground truth")
    g.add_argument("--domain", required=True, action="append", metavar="D",
                   help="ops, clinical, finance or support; repeat or comma-separate for "
                        "several scopes in one file (e.g. ops,clinical,ops)")
    g.add_argument("--seed", type=int, required=True, metavar="N")
    g.add_argument("--episodes", type=int, default=120, metavar="E",
                   help="episodes per scope (default 120)")
    g.add_argument("--signal-episodes", type=int, default=None, metavar="S",
                   help="episodes per scope that carry the storyline, one per reporting period "
                        "(default: a third of --episodes, at least 14)")
    g.add_argument("--style", choices=["full", "short"], default="full",
                   help="'short' writes brief episodes for small local models")
    g.add_argument("--plan", choices=["standard", "compact"], default="standard",
                   help="question plan: 'standard' (25 per scope) or 'compact' (11 per scope)")
    g.add_argument("--id", dest="dataset_id", help="dataset_id written into the file "
                   "(default: the output file's stem)")
    g.add_argument("--out", required=True, type=Path, metavar="FILE")
    g.set_defaults(handler=_generate)

    s = dsub.add_parser("stats", help="episodes, words and questions per type and checkpoint")
    s.add_argument("paths", nargs="+", metavar="FILE")
    s.add_argument("--json", action="store_true", help="print the statistics as JSON")
    s.set_defaults(handler=_stats)

    i = dsub.add_parser("import", help="convert LoCoMo, LongMemEval (V1, V2), BEAM or "
                        "MemoryAgentBench data to LENS JSON, or add conclusions to a published "
                        "LENS file")
    # A benchmark's data is imported under its scoring protocol's name.
    i.add_argument("--format", required=True, choices=PROTOCOL_NAMES)
    i.add_argument("source", type=Path, metavar="SRC",
                   help="the source file (a BEAM folder: a conversation, a tier or chats/; "
                   "LongMemEval-V2: a haystack file or its data root)")
    i.add_argument("--chunk-tokens", type=int, default=None, metavar="N",
                   help="memoryagentbench: tokens per context chunk (default 4096)")
    i.add_argument("--out", required=True, type=Path, metavar="FILE")
    i.set_defaults(handler=_import)

    c = dsub.add_parser("certify", help="mark the questions that need memory: run each with "
                        "no memory (null) and with every episode (full_context)")
    c.add_argument("dataset", type=Path, metavar="DATASET")
    c.add_argument("--model", required=True, metavar="M",
                   help="the agent model, provider/name (e.g. llama_cpp/default)")
    c.add_argument("--threshold", type=float, default=0.5, metavar="T",
                   help="fact_recall at or above which a question counts as answered "
                        "(default 0.5)")
    c.add_argument("--context-bytes", type=int, default=64_000, metavar="B",
                   help="how much episode text full_context may hand the agent (default 64000)")
    c.add_argument("--runs-dir", type=Path, default=Path("runs"), metavar="DIR",
                   help="where the two-arm run is kept (default runs/)")
    c.add_argument("--out", type=Path, default=None, metavar="FILE",
                   help="default: DATASET's folder, <stem>.certification.json")
    c.set_defaults(handler=_certify)


def _certify(args: argparse.Namespace) -> int:
    from lens.flow.certify import certify
    from lens.runs.certification import REASONS

    if not args.dataset.is_file():
        raise UserError(f"{args.dataset}: dataset file not found")
    if args.context_bytes < 1000:
        raise UserError(f"--context-bytes must be at least 1000 (got {args.context_bytes})")
    cert, path = certify(args.dataset, args.model, runs_dir=args.runs_dir, out=args.out,
                         threshold=args.threshold, context_bytes=args.context_bytes)
    counts = cert.counts()
    print(f"{path}: {counts.get('certified', 0)} of {len(cert.questions)} question(s) certified "
          f"with {cert.model}")
    for status, reason in REASONS.items():
        if counts.get(status):
            print(f"  {counts[status]} {status}: {reason}")
    print(f"  run: {cert.run_dir}")
    return 0


def _validate(args: argparse.Namespace) -> int:
    bad = 0
    for path in args.paths:
        problems = check_dataset_file(path)
        if not problems and args.strict:
            from lens.data.datagen.checks import strict_problems

            problems = strict_problems(load_dataset(path), str(path))
        if problems:
            bad += 1
            print(f"{path}: {len(problems)} problem(s)")
            for pr in problems[:MAX_PROBLEMS_SHOWN]:
                print(f"  - {pr}")
            if len(problems) > MAX_PROBLEMS_SHOWN:
                print(f"  ... and {len(problems) - MAX_PROBLEMS_SHOWN} more")
        else:
            print(f"{path}: ok{' (strict)' if args.strict else ''}")
    return 2 if bad else 0


def _generate(args: argparse.Namespace) -> int:
    from lens.data.datagen.generate import ScopeSpec, generate_dataset, write_dataset
    from lens.data.datagen.storyline import MIN_SIGNAL

    domains = [d.strip() for arg in args.domain for d in arg.split(",") if d.strip()]
    if not domains:
        raise UserError("--domain: give at least one domain")
    signal = args.signal_episodes
    if signal is None:
        signal = max(MIN_SIGNAL, args.episodes // 3)
    specs = [ScopeSpec(domain=d, seed=args.seed, index=i, episodes=args.episodes,
                       signal_episodes=signal, style=args.style, plan=args.plan)
             for i, d in enumerate(domains)]
    for spec in specs:
        spec.check()
    data = generate_dataset(specs, args.dataset_id or args.out.stem)
    ds = write_dataset(data, args.out)
    print(f"wrote {args.out}: {len(ds.scopes)} scope(s), "
          f"{sum(len(s.episodes) for s in ds.scopes)} episodes, {len(ds.questions)} questions "
          "(validated, strict checks passed)")
    return 0


def dataset_stats(path: str | Path) -> dict[str, Any]:
    ds = load_dataset(path)
    scopes = []
    for scope in ds.scopes:
        qs = ds.questions_for(scope.scope_id)
        words = [len(e.text.split()) for e in scope.episodes]
        scopes.append({
            "scope_id": scope.scope_id,
            "episodes": len(scope.episodes),
            "words": sum(words),
            "words_per_episode": round(sum(words) / len(words), 1) if words else None,
            "questions": len(qs),
            "per_checkpoint": dict(sorted(Counter(q.checkpoint_after for q in qs).items())),
        })
    per_type = Counter(q.question_type.value for q in ds.questions)
    return {
        "file": str(path),
        "dataset_id": ds.dataset_id,
        "content_hash": ds.content_hash(),
        "scopes": len(ds.scopes),
        "episodes": sum(s["episodes"] for s in scopes),
        "words": sum(s["words"] for s in scopes),
        "questions": len(ds.questions),
        "per_type": {t.value: per_type.get(t.value, 0) for t in QuestionType},
        "per_scope": scopes,
    }


def _stats(args: argparse.Namespace) -> int:
    for path in args.paths:
        st = dataset_stats(path)
        if args.json:
            print(json.dumps(st, indent=2))
            continue
        print(f"{st['file']}  (dataset_id {st['dataset_id']}, sha256 {st['content_hash'][:12]})")
        print(f"  scopes {st['scopes']}  episodes {st['episodes']}  words {st['words']}  "
              f"questions {st['questions']}")
        print("  questions per type:")
        for name, n in st["per_type"].items():
            print(f"    {name:<24}{n:>5}")
        for sc in st["per_scope"]:
            print(f"  scope {sc['scope_id']}: {sc['episodes']} episodes, {sc['words']} words "
                  f"({sc['words_per_episode']} per episode), {sc['questions']} questions")
            cps = ", ".join(f"after {cp}: {n}" for cp, n in sc["per_checkpoint"].items())
            print(f"    questions per checkpoint: {cps or 'none'}")
    return 0


def _import_notes(counts: dict[str, Any]) -> list[str]:
    """What a streaming import left out or changed, in words (LongMemEval-V2's text-only
    import: screenshots, question images, questions without a haystack, long trajectories;
    LongMemEval's questions with evidence dated after the question)."""
    notes = []
    if "screenshots_not_passed" in counts:
        notes.append(f"text only: {counts['screenshots_not_passed']} trajectory screenshot(s) "
                     f"and {counts['question_images_not_passed']} question image(s) are not "
                     "passed (LENS episodes and prompts are text)")
    if counts.get("questions_left_out"):
        notes.append(f"{counts['questions_left_out']} question(s) have no entry in the haystack "
                     "file and are not imported (listed in the dataset's "
                     "meta.source.questions_left_out)")
    if "evidence_after_question" in counts:
        notes.append(f"{counts['evidence_after_question']} of {counts['questions']} question(s) "
                     "have evidence dated after their question date: kept and asked after the "
                     "whole haystack, as the benchmark's official generation does (marked "
                     "allow_later_episodes; the run's checklist counts them)")
    if counts.get("trajectories_split"):
        notes.append(f"{counts['trajectories_split']} trajectory(ies) longer than an episode "
                     "may be are split into parts at state boundaries (meta.part, meta.parts)")
    notes.extend(str(n) for n in counts.get("notes", []))
    if counts.get("states_cut"):
        notes.append(f"{counts['states_cut']} state(s) longer than an episode may be alone have "
                     "their page text cut")
    return notes


def _import(args: argparse.Namespace) -> int:
    from lens.data.datagen.generate import dumps
    from lens.data.importers import IMPORTERS, STREAMING_IMPORTERS
    from lens.data.importers.writer import check_out, make_parents, remove_parents

    if args.chunk_tokens is not None and args.format != "memoryagentbench":
        raise UserError("--chunk-tokens applies to --format memoryagentbench only")
    check_out(args.out, [args.source])
    if args.format in STREAMING_IMPORTERS:
        extra = {"chunk_tokens": args.chunk_tokens} if args.chunk_tokens is not None else {}
        # Folders made for --out are taken back when the import fails: it leaves nothing.
        created = make_parents(args.out)
        try:
            counts = STREAMING_IMPORTERS[args.format](args.source, args.out, **extra)
        except BaseException:
            remove_parents(created)
            raise
        print(f"wrote {args.out}: {counts['scopes']} scope(s), {counts['episodes']} episodes, "
              f"{counts['questions']} questions")
        for line in _import_notes(counts):
            print(line)
        return 0
    data = IMPORTERS[args.format](args.source)
    ds, problems = validate_raw(data, str(args.source))
    if ds is None or problems:
        raise DatasetError(f"{args.source}: the imported data is not valid LENS "
                           f"({len(problems)} problem(s))", problems[:20])
    created = make_parents(args.out)
    tmp = args.out.with_name(args.out.name + ".tmp")
    try:
        tmp.write_text(dumps(data), encoding="utf-8")
        tmp.replace(args.out)
    except BaseException:
        tmp.unlink(missing_ok=True)
        remove_parents(created)
        raise
    unresolved = data.get("meta", {}).get("source", {}).get("unresolved_evidence")
    note = f"; {unresolved} evidence id(s) matched no turn (kept in question meta)" \
        if unresolved else ""
    print(f"wrote {args.out}: {len(ds.scopes)} scope(s), "
          f"{sum(len(s.episodes) for s in ds.scopes)} episodes, {len(ds.questions)} "
          f"questions{note}")
    return 0
