"""``lens cache stats|clear``: look at and empty the model-call cache."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from lens.core.errors import UserError, bounded
from lens.core.visible import visible
from lens.models.cache import ModelCache, default_cache_path

_NAME_CHARS = 200
T = TypeVar("T")


def register(sub: Any) -> None:
    p = sub.add_parser("cache", help="show or clear the model-call cache")
    csub = p.add_subparsers(dest="cache_command", metavar="ACTION", required=True)
    s = csub.add_parser("stats", help="entries per model, size on disk, hits and misses per run")
    _where(s)
    s.add_argument("--json", action="store_true", help="print JSON instead of a table")
    s.set_defaults(handler=_stats)
    c = csub.add_parser("clear", help="delete cached completions")
    _where(c)
    c.add_argument("--model", metavar="PROVIDER/MODEL",
                   help="only this model's entries (e.g. openai/gpt-4o-mini)")
    c.set_defaults(handler=_clear)


def _where(p: argparse.ArgumentParser) -> None:
    g = p.add_mutually_exclusive_group()
    g.add_argument("--path", type=Path, help="the cache file (default: the per-user cache)")
    g.add_argument("--config", type=Path, metavar="CONFIG",
                   help="use the cache location of this run config")


def _path(args: argparse.Namespace) -> Path:
    if args.path is not None:
        return Path(args.path)
    if args.config is not None:
        from lens.data.config import load_config

        cfg = load_config(args.config)
        if cfg.cache.path is not None:
            return Path(cfg.cache.path)
    return default_cache_path()


def _existing(path: Path) -> bool:
    """Whether ``path`` holds a cache to act on; refuses (exit 2, the file untouched) a folder,
    a special file or a file that is not lens's cache."""
    if path.is_dir():
        raise UserError(f"{path}: is a folder; give the cache file (e.g. {path}/models.sqlite)")
    if path.exists() and not path.is_file():
        raise UserError(f"{path}: not a regular file; give the cache file")
    try:
        return ModelCache.kind(path) not in ("new", "empty")
    except OSError as exc:
        raise UserError(f"{path}: cannot open the model cache: {exc}") from None


def _open(path: Path, *, read_only: bool) -> ModelCache:
    try:
        return ModelCache(path, read_only=read_only)
    except UserError:
        raise
    except Exception as exc:  # sqlite3.DatabaseError and OS errors alike
        raise UserError(f"{path}: cannot open the model cache: {exc}") from None


def _once(path: Path, call: Callable[[ModelCache], T], *, read_only: bool) -> T:
    """What ``call`` answers on the cache at ``path``, the cache closed afterwards."""
    cache = _open(path, read_only=read_only)
    try:
        return call(cache)
    finally:
        cache.close()


def _stats(args: argparse.Namespace) -> int:
    path = _path(args)
    if not _existing(path):
        print(f"{path}: no cache yet (0 entries)")
        return 0
    stats = _once(path, ModelCache.stats, read_only=True)
    if args.json:
        print(json.dumps(stats, indent=2))
        return 0
    print(f"cache: {stats['path']}")
    print(f"entries: {stats['entries']}   on disk: {stats['bytes_on_disk'] / 1e6:.2f} MB")
    for m in stats["models"]:
        print(f"  {_shown(m['model']):<48} {m['entries']:>8} entries")
    if stats["runs"]:
        print("runs (most recent first):")
        for r in stats["runs"][:20]:
            total = r["hits"] + r["misses"]
            rate = f"{100 * r['hits'] / total:.0f}%" if total else "n/a"
            print(f"  {_shown(r['run_id']):<48} hits {r['hits']:>6}  misses {r['misses']:>6}  "
                  f"hit rate {rate}")
    return 0


def _shown(name: str) -> str:
    # Names come from the file: a control character is shown, a huge one is cut.
    return visible(bounded(name, _NAME_CHARS))


def _clear(args: argparse.Namespace) -> int:
    path = _path(args)
    if not _existing(path):
        print(f"{path}: no cache; nothing to clear")
        return 0
    n = _once(path, lambda cache: cache.clear(args.model), read_only=False)
    what = f" of {args.model}" if args.model else ""
    print(f"{path}: deleted {n} cached completion(s){what}")
    return 0
