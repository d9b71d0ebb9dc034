"""The guarded read of a prompt file named in a config (``scoring.judge_prompt_file``,
``agent.reader_prompt_file``): a regular file under a size cap, read as UTF-8 text, with one
message naming the field, the file and the fix when it cannot be."""

from __future__ import annotations

from pathlib import Path

from lens.core.errors import UserError

# A prompt file: the official evaluation scripts are tens of kilobytes.
MAX_PROMPT_FILE_BYTES = 1024 * 1024


def read_prompt_text(path: Path, field: str, *, missing_fix: str, large_fix: str
                     ) -> tuple[str, bytes]:
    """The text of the prompt file at ``path`` and its bytes (for its sha256); a UserError
    starting with ``field`` when it is not a regular file, too large or not UTF-8."""
    if not path.is_file():
        what = ("a folder" if path.is_dir() else "not a regular file (a device, pipe or socket)"
                if path.exists() else "file not found")
        raise UserError(f"{field}: {path}: {what}; {missing_fix}")
    size = path.stat().st_size
    if size > MAX_PROMPT_FILE_BYTES:
        raise UserError(f"{field}: {path}: {size} bytes, over the {MAX_PROMPT_FILE_BYTES} "
                        f"byte limit of a prompt file; {large_fix}")
    raw = path.read_bytes()[:MAX_PROMPT_FILE_BYTES + 1]
    try:
        return raw.decode("utf-8"), raw
    except UnicodeDecodeError:
        raise UserError(f"{field}: {path}: not UTF-8 text; re-save it as UTF-8") from None
