"""``lens adapters``: list every adapter lens can create; ``lens adapters check`` runs the
conformance suite on one of them (a registered name or ``package.module:Class``);
``lens adapters new NAME`` writes a package for a new one."""

from __future__ import annotations

import argparse
import importlib.metadata
import importlib.util
import itertools
import json
import keyword
import re
import shutil
import sys
from pathlib import Path
from typing import Any

import anyio

from lens.commands import adapter_template
from lens.core import plugins
from lens.core.distribution import DISTRIBUTION
from lens.core.errors import ConfigError, UserError
from lens.core.jsonguard import JsonRefused, loads_guarded
from lens.core.redact import quoted, shown
from lens.core.safenames import new_folder_problems
from lens.data.config import CacheConfig
from lens.memory.adapter import (
    BUILTIN_ADAPTERS,
    ENTRY_POINT_GROUP,
    CapabilityManifest,
    adapter_names,
    create_adapter,
    resolve_adapter,
    validate_options,
)
from lens.memory.gateway_access import EmbeddingGatewayOptions, NoGateway, wants_gateway


def register(sub: Any) -> None:
    p = sub.add_parser("adapters", help="list memory adapters; check one against the contract")
    p.add_argument("--json", action="store_true", help="print the list as JSON")
    p.set_defaults(handler=_list)
    asub = p.add_subparsers(dest="adapters_command", metavar="ACTION")
    c = asub.add_parser("check", help="run the conformance suite on an adapter")
    c.add_argument("adapter", metavar="NAME|package.module:Class")
    c.add_argument("--options", default="{}", metavar="JSON",
                   help="adapter options as a JSON object, as under 'options:' in a config")
    c.add_argument("--only", action="append", metavar="CHECK",
                   help="run only this check (repeatable)")
    c.add_argument("--timeout", type=float, default=600.0, metavar="SECONDS",
                   help="time limit per check (default 600)")
    c.set_defaults(handler=_check)
    n = asub.add_parser("new", help="write a new adapter package that passes the check")
    n.add_argument("name", metavar="NAME",
                   help="the adapter's name (and module): lowercase letters, digits and _")
    n.add_argument("--out", type=Path, metavar="DIR",
                   help="the package's folder (default ./lens-NAME, dashes for _); must not "
                        "exist yet")
    n.set_defaults(handler=_new)


def _source(name: str, eps: dict[str, str]) -> str:
    if name in BUILTIN_ADAPTERS:
        return "built-in"
    if name in eps:
        return f"entry point {eps[name]}"
    return "registered in this process"


async def _capabilities(name: str) -> CapabilityManifest:
    adapter = create_adapter(name)
    try:
        return await adapter.get_capabilities()
    finally:
        await adapter.aclose()


def describe(name: str) -> dict[str, Any]:
    """One adapter's listing: its capabilities with default options, or why it is unavailable."""
    eps = plugins.targets(ENTRY_POINT_GROUP)
    row: dict[str, Any] = {"name": name, "source": _source(name, eps)}
    try:
        caps = anyio.run(_capabilities, name)
    except NoGateway:
        # Installed, but its capabilities come with a unit's gateway access (`lens run`).
        row["available"] = True
        row["capabilities"] = None
        row["note"] = ("its memory system calls models through lens's model gateway, opened "
                       "by `lens run` and `lens adapters check`")
        return row
    except Exception as exc:  # a missing optional dependency must not hide the other adapters
        row["available"] = False
        row["reason"] = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        return row
    row["available"] = True
    row["capabilities"] = caps.model_dump(mode="json")
    return row


def _list(args: argparse.Namespace) -> int:
    rows = [describe(n) for n in adapter_names()]
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    for row in rows:
        if not row["available"]:
            print(f"{row['name']}  [{row['source']}]  unavailable: {row['reason']}")
            continue
        caps = row["capabilities"]
        if caps is None:
            print(f"{row['name']}  [{row['source']}]")
            print(f"    {row['note']}")
            continue
        modes = ",".join(caps["search_modes"]) or "none"
        filters = ",".join(caps["filter_fields"]) or "none"
        tools = ",".join(t["name"] for t in caps["extra_tools"]) or "none"
        print(f"{row['name']}  [{row['source']}]")
        print(f"    search: {modes}; filters: {filters}; max_results: {caps['max_results']}; "
              f"extra tools: {tools}")
        if caps["description"]:
            print(f"    {caps['description']}")
    return 0


async def _check_through_gateway(args: argparse.Namespace, cls: Any,
                                 options: dict[str, Any]) -> list[Any]:
    """The suite for an adapter whose memory system calls models: each instance gets a key of
    its own to a model gateway opened for the check, with the chat model its options name, or
    the embedding model alone when its options declare embeddings only."""
    from lens.adapters.embedding import INSTALL_HINT
    from lens.models.runtime import ModelRuntime
    from lens.runner.gateway.server import ModelGateway
    from lens.testing import run_conformance

    opts = cls.Options.model_validate(options)
    model = None if isinstance(opts, EmbeddingGatewayOptions) else opts.model_config_for_gateway()
    runtime = ModelRuntime(cache=CacheConfig(enabled=False))
    gateway = ModelGateway(runtime)
    if model is None and not gateway.has_embeddings():
        await runtime.aclose()
        raise UserError(f"{args.adapter}: it embeds through lens's model gateway, which has no "
                        f"embedding model: {INSTALL_HINT}")
    await gateway.start()
    made = itertools.count()

    def factory() -> Any:
        unit = f"check|{next(made)}"
        access = (gateway.grant_embeddings(args.adapter, unit, 0) if model is None
                  else gateway.grant(args.adapter, unit, 0, model))
        return create_adapter(args.adapter, {**options, "gateway": access.model_dump()})

    try:
        return await run_conformance(factory, args.only, args.timeout)
    finally:
        adapter_calls = runtime.usage()["by_role"].get("adapter")
        chats = adapter_calls["calls"] if adapter_calls is not None else 0
        # Only what the memory called: a line naming a model it never called would mislead.
        if chats and model is not None:
            print(f"model gateway: {chats} chat calls to {model.model}")
        embeddings, tokens = gateway.embedding_totals()
        if embeddings and gateway.embeddings is not None:
            print(f"model gateway: {embeddings} embedding calls ({tokens} input tokens) to "
                  f"{gateway.embeddings.name}")
        await gateway.aclose()
        await runtime.aclose()


_NEW_NAME = re.compile(r"[a-z][a-z0-9_]{0,62}")


def _new(args: argparse.Namespace) -> int:
    name: str = args.name
    project = f"lens-{name.replace('_', '-')}"
    # Not ./NAME: a folder named like the module, in the folder lens runs from, would be
    # imported as a namespace package in place of the installed module.
    out: Path = args.out if args.out is not None else Path(project)
    problems = []
    if not _NEW_NAME.fullmatch(name) or keyword.iskeyword(name):
        problems.append(f"NAME {quoted(name)}: must be a Python module name in lowercase (a "
                        "letter, then letters, digits or _), e.g. my_memory")
    elif name in adapter_names() or importlib.util.find_spec(name) is not None:
        problems.append(f"NAME {quoted(name)}: an adapter or module of that name exists already; "
                        "choose another (configs name adapters by it)")
    if _same_distribution(project, DISTRIBUTION):
        problems.append(f"NAME {quoted(name)}: its package would be {shown(project)}, lens's own "
                        "distribution, and installing it would replace lens; choose another")
    elif _installed(project):
        problems.append(f"NAME {quoted(name)}: a distribution {shown(project)} is installed "
                        "already; installing this package would replace it; choose another")
    problems += new_folder_problems(out, "--out")
    if problems:
        raise UserError(["cannot write the adapter package:", *(f"  - {p}" for p in problems)])
    cls = "".join(part.capitalize() for part in name.split("_") if part) or "Memory"
    written = adapter_template.files(name, cls, project, DISTRIBUTION)
    try:
        out.mkdir(parents=True)
    except OSError as exc:
        raise UserError(f"--out {shown(out, 200)}: cannot create the folder ({exc.strerror})"
                        ) from None
    try:
        for file, text in written.items():
            (out / file).write_text(text, encoding="utf-8")
    except OSError as exc:
        shutil.rmtree(out, ignore_errors=True)  # nothing half-written
        raise UserError(f"--out {shown(out, 200)}: cannot write the package ({exc.strerror})"
                        ) from None
    print(f"wrote {out}/: {', '.join(written)}")
    print("next, in the virtualenv where lens is installed:")
    print(f"  pip install -e {out}")
    print(f"  lens adapters check {name}")
    print(f"  cd {out} && lens datasets generate --domain ops --seed 1 --out dataset.json "
          "&& lens run first-run.yaml")
    return 0


def _same_distribution(a: str, b: str) -> bool:
    """Whether two distribution names are one (PEP 503: case, and runs of -_. alike)."""
    def norm(n: str) -> str:
        return re.sub(r"[-_.]+", "-", n).lower()
    return norm(a) == norm(b)


def _installed(project: str) -> bool:
    try:
        importlib.metadata.distribution(project)
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


def _check(args: argparse.Namespace) -> int:
    from lens.testing import CHECKS, run_conformance

    try:
        options = loads_guarded(args.options, what="--options", max_bytes=1024 * 1024)
    except JsonRefused as exc:
        raise ConfigError(f"--options: not valid JSON ({str(exc).removeprefix('--options: ')})"
                          ) from None
    if not isinstance(options, dict):
        raise ConfigError("--options: must be a JSON object such as '{\"path\": \"m.db\"}'")
    if args.only:
        unknown = [c for c in args.only if c not in CHECKS]
        if unknown:
            raise UserError(f"--only: unknown check(s) {', '.join(quoted(c) for c in unknown)}; "
                            f"known: {', '.join(CHECKS)}")
    cls = resolve_adapter(args.adapter)
    validate_options(cls, options, "--options")
    print(f"checking {args.adapter} ({cls.__module__}:{cls.__qualname__})")
    if wants_gateway(cls):
        results = anyio.run(_check_through_gateway, args, cls, options)
    else:
        results = anyio.run(lambda: run_conformance(lambda: create_adapter(args.adapter,
                                                                           options),
                                                    args.only, args.timeout))
    width = max(len(r.name) for r in results)
    for r in results:
        mark = {"passed": "PASS", "failed": "FAIL", "skipped": "SKIP"}[r.status]
        detail = f"  {r.detail}" if r.detail else ""
        print(f"  {mark}  {r.name:<{width}}  {r.seconds:6.2f}s{detail}")
    failed = [r for r in results if r.status == "failed"]
    passed = sum(r.status == "passed" for r in results)
    skipped = sum(r.status == "skipped" for r in results)
    print(f"{passed} passed, {len(failed)} failed, {skipped} skipped")
    sys.stdout.flush()
    return 1 if failed else 0
