"""The command list in ``lens/commands/cli.py`` is the one place subcommands are named: every
command module is on it, and ``lens --help`` shows each of them."""

from __future__ import annotations

import importlib
import pkgutil

import lens.commands
from lens.commands.cli import COMMANDS, build_parser


def test_every_command_module_is_listed() -> None:
    # A module of the package with a register() is a command; the others are its helpers.
    modules = {m.name for m in pkgutil.iter_modules(lens.commands.__path__)
               if hasattr(importlib.import_module(f"lens.commands.{m.name}"), "register")}
    listed = {m.__name__.rsplit(".", 1)[1] for m in COMMANDS}
    assert modules == listed, f"unlisted: {modules - listed}; listed but absent: {listed - modules}"


def test_help_shows_each_listed_command() -> None:
    help_text = build_parser().format_help()
    for module in COMMANDS:
        name = module.__name__.rsplit(".", 1)[1]
        assert f"    {name} " in help_text or f"    {name}\n" in help_text, name
