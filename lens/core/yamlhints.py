"""Plain-language hints for YAML's own traps, added to config errors.

YAML 1.1 (what PyYAML reads) turns some unquoted words into other types before lens sees them:
``null``, ``~`` and an empty value become nothing, ``yes/no/on/off/y/n/true/false`` become
booleans, ``0123`` becomes the octal number 83, ``2024-01-01`` a date. A validation error on
such a value ("Input should be a valid string") is then true but baffling, so the message says
what YAML did and how to quote the value. Tabs cannot indent YAML at all.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Sequence
from typing import Any

import yaml


def locate(text: str, loc: Sequence[Any]) -> yaml.Node | None:
    """The YAML node at a validation error's location, for its line and original spelling."""
    try:
        node: yaml.Node | None = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError:
        return None
    for part in loc:
        if isinstance(node, yaml.MappingNode):
            node = next((v for k, v in node.value if _same_key(k, part)), None)
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int):
            node = node.value[part] if 0 <= part < len(node.value) else None
        else:
            return None
    return node


def locate_key(text: str, loc: Sequence[Any]) -> yaml.Node | None:
    """The key node of the last part of ``loc`` (for an unknown-field error)."""
    parent = locate(text, loc[:-1]) if loc else None
    if isinstance(parent, yaml.MappingNode):
        return next((k for k, _ in parent.value if _same_key(k, loc[-1])), None)
    return None


def _same_key(node: yaml.Node, part: Any) -> bool:
    if not isinstance(node, yaml.ScalarNode):
        return False
    if isinstance(part, bool):
        return _as_bool(node) is part
    return bool(node.value == str(part))


def _as_bool(node: yaml.ScalarNode) -> bool | None:
    if node.tag != "tag:yaml.org,2002:bool":
        return None
    return node.value.lower() in ("yes", "y", "on", "true")


def spelled(node: yaml.Node | None) -> str | None:
    """The value as written in the file, when it is a plain scalar."""
    if isinstance(node, yaml.ScalarNode):
        return str(node.value)
    return None


def value_hint(field: str, value: Any, written: str | None, *,
               wants_text: bool = True) -> str | None:
    """Why YAML gave ``field`` this value when the user most likely meant text (or, for a
    missing value, any value), or None."""
    key = field.rsplit(".", 1)[-1]
    if value is None:
        if not written or not wants_text:
            shown = f"an unquoted {written}" if written else "an empty value"
            return f"YAML reads {shown} as no value at all (null); write the value after '{key}:'"
        return (f"YAML reads an unquoted {written} as no value at all (null); to mean the text, "
                f"quote it: {key}: \"{written}\"")
    if isinstance(value, bool):
        word = written or str(value).lower()
        return (f"YAML reads an unquoted {word} as the boolean {str(value).lower()} "
                f"(so are yes/no/on/off/y/n); quote it to keep the text: {key}: \"{word}\"")
    if isinstance(value, int | float):
        word = written if written is not None else str(value)
        octal = " (a leading 0 makes it octal)" if re.fullmatch(r"[-+]?0[0-7_]+", word) else ""
        return (f"YAML reads {word} as the number {value}{octal}; quote it to keep the text: "
                f"{key}: \"{word}\"")
    if isinstance(value, dt.date):
        word = written or value.isoformat()
        return f"YAML reads {word} as a date; quote it to keep the text: {key}: \"{word}\""
    return None


def key_hint(key: Any, written: str | None) -> str | None:
    """An unknown field whose name YAML turned into a boolean or number (``on:``, ``no:``)."""
    if isinstance(key, bool | int | float):
        word = written or str(key)
        return (f"YAML reads the unquoted key {word} as {str(key).lower()}; quote the key: "
                f"\"{word}\":")
    return None


def tab_hint(text: str, line: int | None) -> str | None:
    """The tab advice for a YAML syntax error on (or just after) a line holding a tab."""
    lines = text.splitlines()
    near = lines[max(0, (line or 0) - 1):(line or 0) + 1] if line is not None else lines
    if any("\t" in ln for ln in near):
        return ("YAML does not allow tab characters for indentation; indent with spaces "
                "(2 per level)")
    return None
