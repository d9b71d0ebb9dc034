import sys


def _shadowed() -> str | None:
    """Why ``python -m lens`` cannot run this lens, or None. ``python -m`` puts the current
    folder first on the import path; a ``lens/`` folder there without ``__init__.py`` (a clone
    of lens, seen from its parent folder) becomes a namespace package that hides an editable
    install, and this module is then found through the install's finder while ``lens`` is not."""
    package = sys.modules.get("lens")
    if package is None or getattr(package, "__file__", None) is not None:
        return None
    where = ", ".join(str(p) for p in getattr(package, "__path__", [])) or "the current folder"
    return (f"lens: cannot start: Python imported the folder {where} as the package 'lens' "
            "(python -m looks in the current folder first, and that folder has no "
            "__init__.py), not the lens that is installed.\n"
            "  Run lens from another folder, or use the `lens` command, which does not look in "
            "the current folder.")


if __name__ == "__main__":
    problem = _shadowed()
    if problem is not None:
        print(problem, file=sys.stderr)
        raise SystemExit(2)
    from lens.commands.cli import main

    raise SystemExit(main())
