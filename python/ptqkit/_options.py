"""Python values of the keywords that are not option-table entries (the picker's, the model path)."""
from __future__ import annotations

import os


def names(value, option: str) -> list[str]:
    """A list option (op types, node selectors, providers, plugins); one string is one name."""
    if value is None:
        return []
    if isinstance(value, (str, os.PathLike)):
        return [os.fspath(value)]
    try:
        return [os.fspath(v) for v in value]
    except TypeError:
        raise TypeError(f"{option}: expected a list of strings, got {value!r}") from None


def path(value) -> str:
    """An optional file option; None = not given (the CLI's empty string)."""
    return "" if value is None else os.fsdecode(os.fspath(value))
