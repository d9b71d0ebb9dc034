"""Settings of data-model fields that several records share."""

from __future__ import annotations


def unset(value: object) -> bool:
    """For ``Field(exclude_if=unset)``: a field added to a record that existed before it is
    written only when it holds something (not None, empty or false), so that a record without
    it dumps, and hashes, as it did before the field existed."""
    return not value
