"""Command-line changes to a run config: ``lens run CONFIG --set agent.budget.max_turns=4
--arms sqlite_fts,null --limit 20``.

Each change is applied to the config as read from its file, before validation, so a bad value
is refused exactly as the same value written in the file would be, with the change named
instead of a line of the file. The changes are recorded in the run's manifest.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict

from lens.core.errors import Problem
from lens.core.redact import quoted
from lens.core.yamlguard import YamlRefused, YamlSyntaxError, load_yaml

COMMAND_LINE = "command line"
# One --set value: a list of labels or a prompt is a few kilobytes.
MAX_SET_BYTES = 64 * 1024


def named(change: str) -> str:
    """How a message names one ``--set FIELD=VALUE``: the field only, since the value may be a
    key or a URL with a password."""
    key, eq, _ = change.partition("=")
    return f"--set {key.strip()}" + ("=…" if eq else "")


class Overrides(BaseModel):
    """What the command line changes: ``sets`` are ``dotted.field=value`` (the value read as
    YAML: ``4``, ``true``, ``[a, b]``); ``arms`` the adapters to run, each the label of one of
    the config's adapters (kept with its options) or a registered adapter name (its defaults);
    ``limit`` a seeded sample of that many questions (``dataset.limit``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    sets: tuple[str, ...] = ()
    arms: tuple[str, ...] | None = None
    limit: int | None = None

    def __bool__(self) -> bool:
        return bool(self.sets) or self.arms is not None or self.limit is not None

    def as_args(self) -> list[str]:
        """The command-line arguments that give these changes (for a resume command)."""
        out = [x for s in self.sets for x in ("--set", s)]
        if self.arms is not None:
            out += ["--arms", ",".join(self.arms)]
        if self.limit is not None:
            out += ["--limit", str(self.limit)]
        return out

    def fields(self) -> dict[str, str]:
        """Each changed field's dotted path → how the command line changed it."""
        out: dict[str, str] = {}
        for s in self.sets:
            key = s.partition("=")[0].strip()
            out[key] = named(s)
        if self.arms is not None:
            out["adapters"] = f"--arms {','.join(self.arms)}"
        if self.limit is not None:
            out["dataset.limit"] = f"--limit {self.limit}"
        return out


def _set(data: dict[str, Any], path: list[str], value: Any) -> str | None:
    """Set ``data[path]``, creating sections; why not, when a part of the path is no section."""
    node: Any = data
    for i, part in enumerate(path[:-1]):
        if isinstance(node, list):
            if not part.isdigit() or int(part) >= len(node):
                return (f"{'.'.join(path[:i])} is a list of {len(node)}; give an index "
                        f"0–{len(node) - 1} (e.g. adapters.0.options.k=5)")
            node = node[int(part)]
            continue
        nxt = node.get(part)
        if nxt is None:
            nxt = node[part] = {}
        if not isinstance(nxt, dict | list):
            return f"{'.'.join(path[:i + 1])} is a value ({quoted(nxt)}), not a section"
        node = nxt
    last = path[-1]
    if isinstance(node, list):
        if not last.isdigit() or int(last) >= len(node):
            return f"{'.'.join(path[:-1])} is a list of {len(node)}; give an index"
        node[int(last)] = value
    else:
        node[last] = value
    return None


def _arms(data: dict[str, Any], arms: Sequence[str]) -> list[Any]:
    raw = data.get("adapters")
    configured: list[Any] = raw if isinstance(raw, list) else []
    by_label: dict[str, object] = {}
    for entry in configured:
        if isinstance(entry, dict) and isinstance(entry.get("name"), str):
            by_label.setdefault(str(entry.get("label") or entry["name"]), entry)
    return [by_label.get(arm, {"name": arm}) for arm in arms]


def apply(data: Any, overrides: Overrides) -> tuple[Any, list[Problem]]:
    """``data`` (the config as read) with the changes made, and every change that could not be
    made (a malformed ``--set``, a path through a value)."""
    if not overrides or not isinstance(data, dict):
        return data, []
    problems: list[Problem] = []
    for s in overrides.sets:
        key, eq, raw = s.partition("=")
        key = key.strip()
        where = named(s)
        if not eq or not key or any(not part for part in key.split(".")):
            problems.append(Problem(COMMAND_LINE, where, "give FIELD=VALUE with a dotted field "
                                    "path, e.g. --set agent.budget.max_turns=4"))
            continue
        try:
            value = load_yaml(raw, max_bytes=MAX_SET_BYTES) if raw.strip() else ""
        except YamlSyntaxError:
            value = raw  # not YAML: the text as given
        except YamlRefused as exc:
            problems.append(Problem(COMMAND_LINE, where, f"{exc}; give a plain value"))
            continue
        why = _set(data, key.split("."), value)
        if why is not None:
            problems.append(Problem(COMMAND_LINE, where, why))
    if overrides.arms is not None:
        if overrides.arms:
            data["adapters"] = _arms(data, overrides.arms)
        else:
            problems.append(Problem(COMMAND_LINE, "--arms", "name at least one adapter "
                                    "(a label of the config's adapters or a registered name)"))
    if overrides.limit is not None:
        dataset = data.get("dataset")
        if isinstance(dataset, dict):
            dataset["limit"] = overrides.limit
    return data, problems


def origin(where: str, overrides: Overrides) -> str | None:
    """The command-line change that wrote the field at ``where`` (a dotted path, list indexes
    as ``[i]`` or ``.i``), or None when the field comes from the file."""
    plain = where.replace("[", ".").replace("]", "")
    for key, how in overrides.fields().items():
        if plain == key or plain.startswith(key + "."):
            return how
    return None
