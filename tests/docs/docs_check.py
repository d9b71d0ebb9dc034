"""Checks that README.md and docs/*.md say what the code does, and regenerates their outputs.

Every fenced block of the documentation is one of:

- a **command block** (no language, or bash/sh/console): every line is a command or a comment.
  Each `lens`/`python -m lens` and `python -m goldevidence` command is read by the real argument
  parser: the subcommand and every `--option` must exist, and a command without synopsis
  notation (``[--x]``, ``A|B``, ``FILE...``) must parse as written.
- a **python** block: it compiles, and every name it imports from lens exists.
- a **yaml** block: it parses, and a run config (or a part of one) validates against
  ``RunConfig``'s fields; **toml** and **json** blocks parse.
- an **output** block, marked by the comment line ``<!-- docs:output COMMAND -->`` right above
  it: the check runs COMMAND (a `lens run` gets a temporary ``--out``) and compares the block
  with what it printed; ``<!-- docs:output report.md "HEADING" of COMMAND -->`` compares with
  that section of the run's ``report.md``. Run ids, temporary paths and timings are normalised
  away before comparing. ``--update`` rewrites the blocks from a fresh run.
- a block marked ``<!-- docs:test PATH -->``: a test in PATH produces the text and compares it
  with the block (for outputs that need more than one command);
  ``<!-- docs:measured PATH -->``: a measurement made by PATH (a script or config of this
  repository, which must exist), too long to repeat in CI; or ``<!-- docs:example -->``:
  illustrative text that is neither a command nor an output (a directory layout, a log format).

An unmarked block of any other shape is a problem, so no output can be pasted into the docs
without saying where it comes from.

    python tests/docs/docs_check.py            # list the problems; exit 1 if any
    python tests/docs/docs_check.py --update   # regenerate every docs:output block
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import importlib
import io
import json
import re
import shlex
import sys
import tempfile
import tomllib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
_FENCE = re.compile(r"^(?P<indent>[ ]*)```(?P<lang>[^\n`]*)\n(?P<body>.*?)^(?P=indent)```[ ]*$",
                    re.S | re.M)
_MARK = re.compile(r"<!--\s*docs:(?P<kind>output|measured|example|test)\b\s*(?P<arg>.*?)\s*-->\s*$")
_SECTION_ARG = re.compile(r'^report\.md\s+"(?P<title>[^"]+)"\s+of\s+(?P<command>.+)$')
_SHELL_LANGS = {"", "bash", "sh", "console", "shell"}
# Commands a reader may type that are not lens's own; their lines are accepted as they are.
_OTHER_COMMANDS = ("pip ", "python -m pip", "python3 -m pip", "ruff", "git ", "cd ", "export ",
                   "bash ", ".ci/run", "python -m pytest", "python3 -m venv", "python -m venv",
                   "source ", "ray ", "llama-server", "cmake", "apt-get", "curl ", "kill ",
                   "python -m bench.", "python bench/", "python tests/", "pytest", "mkdir ",
                   "cp ", "hyperfine", "python -c", "sudo ", "psql", "createdb", "python -m mypy")
_SYNOPSIS = re.compile(r"\[|\]|\||\.\.\.|…|<|>")
_RUN_ID = re.compile(r"\d{8}-\d{6}-[0-9a-f]{6}")
_TIMING = re.compile(r"in \d+(?:\.\d+)? s, \d+(?:\.\d+)? questions/s|\b\d+\.\d+s\b")
# Top-level fields that make a yaml block a run config (an errata file also has `dataset`).
_RUN_CONFIG_KEYS = {"adapters", "agent", "judge", "scoring", "concurrency", "executor", "cache",
                    "repeats", "max_cost_usd", "out_dir", "report"}


@dataclass(frozen=True)
class Block:
    path: Path
    line: int
    lang: str
    body: str
    start: int  # offsets of the body in the file's text
    end: int
    mark: str | None
    mark_arg: str

    @property
    def where(self) -> str:
        path = self.path.relative_to(ROOT) if self.path.is_relative_to(ROOT) else self.path
        return f"{path}:{self.line}"


def doc_files() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def blocks(path: Path) -> Iterator[Block]:
    text = path.read_text(encoding="utf-8")
    for m in _FENCE.finditer(text):
        before = text[:m.start()].rstrip("\n").rsplit("\n", 1)[-1]
        mark = _MARK.search(before)
        yield Block(path=path, line=text.count("\n", 0, m.start()) + 1,
                    lang=m.group("lang").strip().lower(), body=m.group("body"),
                    start=m.start("body"), end=m.end("body"),
                    mark=mark.group("kind") if mark else None,
                    mark_arg=mark.group("arg") if mark else "")


# --- commands ------------------------------------------------------------------------------------

def _parsers() -> dict[str, argparse.ArgumentParser]:
    import goldevidence.cli
    import lens.commands.cli
    return {"lens": lens.commands.cli.build_parser(),
            "goldevidence": goldevidence.cli.build_parser()}


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _commands(line: str) -> Iterator[tuple[str, list[str]]]:
    """(program, arguments) of each lens/goldevidence command on a shell line."""
    line = re.sub(r"^\$\s+", "", line.strip())
    line = re.sub(r"\s+#\s.*$", "", line)
    for part in re.split(r"\s*(?:&&|\|\||;)\s*", line):
        part = _strip_env(part)
        try:
            words = shlex.split(part)
        except ValueError:
            words = part.split()
        while words and re.match(r"^[A-Z_][A-Z0-9_]*=", words[0]):
            words = words[1:]
        if words[:3] in (["python", "-m", "lens"], ["python3", "-m", "lens"]):
            yield "lens", words[3:]
        elif words[:1] == ["lens"]:
            yield "lens", words[1:]
        elif words[:3] in (["python", "-m", "goldevidence"], ["python3", "-m", "goldevidence"]):
            yield "goldevidence", words[3:]


def _logical_lines(body: str) -> list[str]:
    """Lines with backslash continuations joined, and an indented line that continues a
    command's synopsis (``    [--x X]``) joined to the command."""
    out: list[str] = []
    for raw in body.replace("\\\n", " ").splitlines():
        if out and raw[:1] == " " and raw.strip()[:1] in ("[", "-") and out[-1].strip():
            out[-1] += " " + raw.strip()
        else:
            out.append(raw)
    return out


def _strip_env(line: str) -> str:
    """The line without leading VAR=value assignments (quoted values included)."""
    while m := re.match(r"^[A-Z_][A-Z0-9_]*=(?:\"[^\"]*\"|'[^']*'|\S*)\s+", line):
        line = line[m.end():]
    return line


def _is_command_line(line: str) -> bool:
    s = re.sub(r"^\$\s+", "", line.strip())
    if not s or s.startswith("#"):
        return True
    s = _strip_env(s)
    return (s.startswith(("python -m lens", "python3 -m lens", "lens ", "python -m goldevidence"))
            or s == "lens" or s.startswith(_OTHER_COMMANDS))


def check_command(program: str, args: list[str], parsers: dict[str, argparse.ArgumentParser],
                  original: str) -> list[str]:
    parser = parsers[program]
    words = [w.strip("[]") for w in args]
    # Global options before the subcommand.
    i = 0
    while i < len(words) and words[i].startswith("--"):
        i += 2 if "=" not in words[i] and words[i] != "--version" else 1
    current, path = parser, [program]
    while i < len(words):
        subs = _subcommands(current)
        if not subs:
            break
        if words[i] not in subs:
            if _SYNOPSIS.search(words[i]) or words[i].isupper():
                break
            return [f"`{original.strip()}`: {' '.join(path)} has no subcommand {words[i]!r} "
                    f"(it has: {', '.join(sorted(subs))})"]
        current = subs[words[i]]
        path.append(words[i])
        i += 1
    problems: list[str] = []
    known = set(current._option_string_actions)
    for w in words[i:]:
        if w.startswith("-") and len(w) > 1 and not w[1:2].isdigit():
            flag = w.split("=", 1)[0]
            if flag not in known:
                problems.append(f"`{original.strip()}`: {' '.join(path)} has no option {flag}")
    if problems or _SYNOPSIS.search(" ".join(args)):
        return problems
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            parser.parse_args(args)
    except SystemExit as exc:
        if exc.code not in (0, None):
            msg = err.getvalue().strip().splitlines()[-1:] or ["does not parse"]
            problems.append(f"`{original.strip()}`: {msg[0]}")
    return problems


# --- code and config blocks ----------------------------------------------------------------------

def check_python(block: Block) -> list[str]:
    try:
        tree = ast.parse(block.body)
    except SyntaxError as exc:
        return [f"{block.where}: python block does not compile: {exc.msg} (line {exc.lineno})"]
    problems = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0 and \
                node.module.split(".")[0] in ("lens", "goldevidence"):
            try:
                module = importlib.import_module(node.module)
            except ImportError as exc:
                problems.append(f"{block.where}: cannot import {node.module}: {exc}")
                continue
            for alias in node.names:
                if not hasattr(module, alias.name):
                    try:
                        importlib.import_module(f"{node.module}.{alias.name}")
                    except ImportError:
                        problems.append(f"{block.where}: {node.module} has no {alias.name}")
    return problems


def _config_fields() -> dict[str, object]:
    from lens.data.config import RunConfig
    return dict(RunConfig.model_fields)


def check_yaml(block: Block) -> list[str]:
    try:
        data = yaml.safe_load(block.body)
    except yaml.YAMLError as exc:
        return [f"{block.where}: yaml block does not parse: {exc}"]
    fields = _config_fields()
    if not isinstance(data, dict) or not set(data) & _RUN_CONFIG_KEYS:
        return []
    problems = [f"{block.where}: {key!r} is not a run config field" for key in data
                if key not in fields]
    if problems:
        return problems
    from pydantic import TypeAdapter, ValidationError
    for key, value in data.items():
        try:
            TypeAdapter(fields[key].annotation).validate_python(value)  # type: ignore[attr-defined]
        except ValidationError as exc:
            for err in exc.errors():
                loc = ".".join(str(p) for p in (key, *err["loc"]))
                problems.append(f"{block.where}: {loc}: {err['msg']}")
    return problems


def check_data(block: Block) -> list[str]:
    try:
        if block.lang == "toml":
            tomllib.loads(block.body)
        else:
            json.loads(block.body)
    except (ValueError, tomllib.TOMLDecodeError) as exc:
        return [f"{block.where}: {block.lang} block does not parse: {exc}"]
    return []


# --- outputs -------------------------------------------------------------------------------------

class Outputs:
    """Runs each command once per check and keeps what it printed and where its run went."""

    def __init__(self) -> None:
        self._tmp = tempfile.TemporaryDirectory(prefix="lens-docs-")
        self.base = Path(self._tmp.name)
        self._done: dict[str, tuple[str, Path | None]] = {}

    def close(self) -> None:
        self._tmp.cleanup()

    def run(self, command: str) -> tuple[str, Path | None]:
        if command not in self._done:
            self._done[command] = self._run(command)
        return self._done[command]

    def _run(self, command: str) -> tuple[str, Path | None]:
        [(program, args)] = list(_commands(command))
        out_dir = self.base / f"run{len(self._done)}"
        if program == "lens" and args[:1] == ["run"]:
            args = [*args, "--out", str(out_dir)]
        import lens.commands.cli
        stdout = io.StringIO()
        with _chdir(ROOT), contextlib.redirect_stdout(stdout), \
                contextlib.redirect_stderr(io.StringIO()):
            lens.commands.cli.main(args)
        runs = sorted(out_dir.glob("*/report.md")) if out_dir.exists() else []
        run_dir = runs[0].parent if runs else None
        text = stdout.getvalue()
        if run_dir is not None:
            text = text.replace(f"file://{run_dir.parent}", "file:///…/runs")
            text = text.replace(str(run_dir.parent), "runs")
        return text, run_dir

    def expected(self, block: Block) -> str:
        section = _SECTION_ARG.match(block.mark_arg)
        if section is None:
            printed = self.run(block.mark_arg)[0]
            # A block that shows the command as typed (`$ lens plan …`) shows it first.
            if block.body.startswith("$ "):
                return block.body.splitlines()[0] + "\n" + printed
            return printed
        _, run_dir = self.run(section.group("command"))
        if run_dir is None:
            raise ValueError(f"{section.group('command')} wrote no report.md")
        return report_section((run_dir / "report.md").read_text(encoding="utf-8"),
                              section.group("title"))


@contextlib.contextmanager
def _chdir(path: Path) -> Iterator[None]:
    import os
    old = os.getcwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(old)


def report_section(markdown: str, title: str) -> str:
    """The section of ``markdown`` whose heading contains ``title``, up to the next heading of
    the same or a higher level."""
    lines = markdown.splitlines()
    for i, line in enumerate(lines):
        m = re.match(r"^(#+)\s+(.*)$", line)
        if m and title in m.group(2):
            level = len(m.group(1))
            out = [line]
            for nxt in lines[i + 1:]:
                h = re.match(r"^(#+)\s", nxt)
                if h and len(h.group(1)) <= level:
                    break
                out.append(nxt)
            return "\n".join(out).strip() + "\n"
    raise ValueError(f"report.md has no section titled {title!r}")


def normalise(text: str) -> str:
    text = _RUN_ID.sub("<run id>", text)
    text = _TIMING.sub("in <time>", text)
    return "\n".join(line.rstrip() for line in text.strip().splitlines())


# --- the check -----------------------------------------------------------------------------------

def check_block(block: Block, parsers: dict[str, argparse.ArgumentParser],
                outputs: Outputs) -> list[str]:
    if block.mark == "example":
        return []
    if block.mark in ("measured", "test"):
        source = block.mark_arg.split("::")[0].split()[0] if block.mark_arg else ""
        if not source or not (ROOT / source).is_file():
            return [f"{block.where}: docs:{block.mark} must name a file of this repository that "
                    f"produced the text (got {block.mark_arg!r})"]
        return []
    if block.mark == "output":
        try:
            expected = outputs.expected(block)
        except (ValueError, OSError) as exc:
            return [f"{block.where}: cannot produce the output: {exc}"]
        if normalise(expected) != normalise(block.body):
            return [f"{block.where}: the output differs from what `{block.mark_arg}` prints "
                    "now; regenerate with `python tests/docs/docs_check.py --update`"]
        return []
    checks: dict[str, Callable[[Block], list[str]]] = {
        "python": check_python, "py": check_python, "yaml": check_yaml, "yml": check_yaml,
        "toml": check_data, "json": check_data}
    if block.lang in checks:
        return checks[block.lang](block)
    if block.lang not in _SHELL_LANGS:
        return [f"{block.where}: a ```{block.lang} block the docs check cannot read; mark it "
                "<!-- docs:example --> if it is illustrative"]
    problems: list[str] = []
    for line in _logical_lines(block.body):
        if not _is_command_line(line):
            return [f"{block.where}: a block that is not only commands: mark it "
                    "<!-- docs:output COMMAND -->, <!-- docs:measured PATH --> or "
                    f"<!-- docs:example --> (first line that is no command: {line.strip()!r})"]
        for program, args in _commands(line):
            problems += [f"{block.where}: {p}" for p in check_command(program, args, parsers, line)]
    return problems


def check(files: list[Path] | None = None) -> list[str]:
    parsers = _parsers()
    outputs = Outputs()
    try:
        return [p for path in (files or doc_files()) for b in blocks(path)
                for p in check_block(b, parsers, outputs)]
    finally:
        outputs.close()


def update(files: list[Path] | None = None) -> list[Path]:
    """Rewrite every docs:output block from a fresh run; returns the files changed."""
    outputs = Outputs()
    changed = []
    try:
        for path in files or doc_files():
            text = path.read_text(encoding="utf-8")
            for b in sorted((b for b in blocks(path) if b.mark == "output"),
                            key=lambda b: -b.start):
                new = outputs.expected(b).rstrip("\n") + "\n"
                text = text[:b.start] + new + text[b.end:]
            if text != path.read_text(encoding="utf-8"):
                path.write_text(text, encoding="utf-8")
                changed.append(path)
    finally:
        outputs.close()
    return changed


def main(argv: list[str]) -> int:
    if "--update" in argv:
        for path in update():
            print(f"updated {path.relative_to(ROOT)}")
    problems = check()
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.exit(main(sys.argv[1:]))
