"""A tool's arguments as a pydantic model: one definition for what the model is shown and what
is accepted.

Each tool declares a `ToolArguments` subclass. Its JSON schema (`parameters()`, cleaned of
pydantic's titles) is what the language model sees in the tool's manual, and the same class
validates what the model sends: strictly, as JSON means it (a string is not a number, true is not
1), with unknown fields refused. A tool reads its values from the validated model, never from the
raw arguments. Nothing here does I/O, and nothing here may echo a rejected value back: the error
text names the field and the rule, never the input.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any, Self

from pydantic import AfterValidator, BaseModel, ConfigDict, ValidationError

# How much of a field name (the model's own text) an error message repeats.
_LOCATION_CHARS = 80
# The most errors one message lists, and its length.
_MAX_ERRORS = 3
ERROR_TEXT_CHARS = 300


class ToolArguments(BaseModel):
    """The base of every tool's arguments: strict, closed, immutable."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    @classmethod
    def parameters(cls) -> dict[str, Any]:
        """The JSON schema shown to the model (generated from the fields, titles removed)."""
        return _parameters(cls)

    @classmethod
    def read(cls, arguments: Mapping[str, Any]) -> Self:
        """The validated values; `pydantic.ValidationError` (see `explain`) when they are not."""
        return cls.model_validate(dict(arguments))


@functools.cache
def _parameters(model: type[ToolArguments]) -> dict[str, Any]:
    schema = _clean(model.model_json_schema())
    assert isinstance(schema, dict)
    return schema


def _clean(node: object, *, names: bool = False) -> object:
    """Drop pydantic's `title`s and show an optional field (`X | None = None`) as just X.

    `names` marks a `properties` mapping, whose keys are field names (a field may be called
    "title"), not schema keywords.
    """
    if isinstance(node, list):
        return [_clean(item) for item in node]
    if not isinstance(node, dict):
        return node
    if names:
        return {key: _clean(value) for key, value in node.items()}
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "title":
            continue
        out[key] = _clean(value, names=key == "properties")
    options = out.get("anyOf")
    optional = isinstance(options, list) and len(options) == 2 and {"type": "null"} in options
    if optional and "default" in out and out["default"] is None:
        # "Not given" is how a model leaves it out; null is still accepted, as not given.
        (shown,) = [o for o in out.pop("anyOf") if o != {"type": "null"}]
        del out["default"]
        out = {**shown, **out}
    return out


def explain(exc: ValidationError) -> str:
    """What was wrong, field by field ("path: String should have at most 4096 characters"),
    capped; never the rejected value itself."""
    parts: list[str] = []
    for error in exc.errors(include_url=False, include_input=False)[:_MAX_ERRORS]:
        where = ".".join(str(part) for part in error["loc"]) or "arguments"
        if len(where) > _LOCATION_CHARS:
            where = where[:_LOCATION_CHARS] + "…"
        parts.append(f"{where}: {error['msg']}")
    more = exc.error_count() - len(parts)
    text = "; ".join(parts) + (f" (and {more} more)" if more > 0 else "")
    return text if len(text) <= ERROR_TEXT_CHARS else text[:ERROR_TEXT_CHARS] + "…"


def _not_blank(value: str) -> str:
    if not value.strip():
        raise ValueError("must not be blank")
    return value


# A required text that must say something: "" and "   " are refused (not shown in the schema).
NOT_BLANK = AfterValidator(_not_blank)


def _unique(values: list[Any]) -> list[Any]:
    if len(set(values)) != len(values):
        raise ValueError("must not repeat an item")
    return values


# A list whose items are all different (shown to the model as `uniqueItems`).
UNIQUE = AfterValidator(_unique)
