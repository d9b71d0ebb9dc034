"""The one guard for YAML from outside lens (configs, ``--set`` values, prompt files, errata):
no aliases (the vector of "billion laughs"), bounded nesting depth and size, refused before the
composer could exhaust recursion or memory.

A refusal names the line and column and never quotes the text: PyYAML's own messages carry a
snippet of the offending line, which for a file that is not YAML at all (a credentials file
behind a symlink) would print its content.
"""

from __future__ import annotations

from typing import Any

import yaml

from lens.core.jsonguard import MAX_JSON_DEPTH

MAX_YAML_DEPTH = MAX_JSON_DEPTH


class YamlRefused(ValueError):
    """YAML refused by the guard; the message locates the problem without quoting the text."""


class YamlSyntaxError(YamlRefused):
    """Text that is not YAML at all (as opposed to YAML refused for its shape)."""


class GuardedLoader(yaml.SafeLoader):
    """A safe loader that refuses aliases and nesting deeper than :data:`MAX_YAML_DEPTH`."""

    max_depth = MAX_YAML_DEPTH

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0

    # The arguments pass through to the loader's own method.
    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            raise YamlRefused(f"line {event.start_mark.line + 1}: YAML aliases (*name) are not "
                              "allowed here; write the value out")
        self._depth += 1
        try:
            if self._depth > self.max_depth:
                mark = self.peek_event().start_mark
                raise YamlRefused(f"line {mark.line + 1}: YAML nested more than "
                                  f"{self.max_depth} levels deep")
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


def syntax_message(exc: yaml.YAMLError) -> str:
    """Where a YAML syntax error is and what it is, without the snippet PyYAML quotes."""
    mark = getattr(exc, "problem_mark", None)
    where = f"line {mark.line + 1} column {mark.column + 1}: " if mark else ""
    problem = getattr(exc, "problem", None) or type(exc).__name__
    return f"YAML syntax error: {where}{problem}"


def load_yaml(text: str, *, max_bytes: int | None = None) -> Any:
    """``text`` read as YAML through the guard; :class:`YamlRefused` for anything refused or
    unreadable (syntax, aliases, depth, size, a number too long to convert)."""
    if max_bytes is not None and len(text.encode("utf-8", "surrogatepass")) > max_bytes:
        raise YamlRefused(f"over the {max_bytes} byte limit")
    try:
        return yaml.load(text, Loader=GuardedLoader)  # GuardedLoader is a SafeLoader
    except yaml.YAMLError as exc:
        raise YamlSyntaxError(syntax_message(exc)) from None
    except RecursionError:
        raise YamlRefused("YAML nested too deeply") from None
    except YamlRefused:
        raise
    except ValueError as exc:
        # A number too long to convert (over Python's 4,300-digit limit), an invalid date, ...
        reason = ("a number is too long to read (over 4,300 digits)" if "digits" in str(exc)
                  else "a value cannot be read (an invalid date or number)")
        raise YamlRefused(reason) from None
