"""Reading a tool's arguments defensively, after the runner's schema check.

The runner validates arguments against each tool's JSON schema; tools still read them through
these helpers so that a tool called directly (or with a looser schema) fails with a plain
message instead of a TypeError. Nothing here does I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tools.manual import ToolError


def str_arg(args: Mapping[str, Any], key: str, *, max_len: int) -> str | None:
    value = args.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise ToolError(f"'{key}' must be text")
    if len(value) > max_len:
        raise ToolError(f"'{key}' is longer than {max_len} characters")
    return value


def required_str(args: Mapping[str, Any], key: str, *, max_len: int) -> str:
    value = str_arg(args, key, max_len=max_len)
    if value is None or not value.strip():
        raise ToolError(f"'{key}' is required")
    return value


def int_arg(args: Mapping[str, Any], key: str, default: int, lo: int, hi: int) -> int:
    value = args.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ToolError(f"'{key}' must be a whole number")
    if not lo <= value <= hi:
        raise ToolError(f"'{key}' must be between {lo} and {hi}")
    return value


def bool_arg(args: Mapping[str, Any], key: str, default: bool) -> bool:
    value = args.get(key, default)
    if not isinstance(value, bool):
        raise ToolError(f"'{key}' must be true or false")
    return value
