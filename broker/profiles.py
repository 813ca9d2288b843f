"""Tool profiles: named narrowings of which tools may be offered, and the resolver that applies
one (with the user's own overrides) to the installed tools. Pure data in, data out.

A profile only ever narrows. The policy gate will intersect its allowed list with what
`resolve()` returns; the policy's `forbidden` lists and the user's global deny list always win.
This module must never widen what the policy gate allows (it knows nothing of intents and hands
back a set to intersect with, never one to add), and never runs or imports a tool: it reads
manuals only.

`resolve()` applies, in this order, and records why each tool was left out:

(a) category filter: keep the tools whose category is one of the profile's `categories`;
(b) explicit deny: remove the profile's `deny` tools;
(c) explicit require: bring back the profile's `require` tools, even from outside its categories
    (a profile may not both deny and require a tool, so (b) and (c) never disagree);
(d) the user's overrides, all of them here, after the profile: `add_categories` and
    `remove_categories` re-filter by category every tool the profile did not require or deny;
    then `add_tools` brings back tools by name, even ones the profile denied (the user's own
    explicit choice beats the bundled profile, and it still cannot get past the policy gate);
    then `deny_tools` removes tools, even required or added ones: a user deny always wins;
then `max_tools`: when more remain, the profile's required tools are kept first, then the tools
the user added by name, then the rest, each group sorted by name; the others are dropped.

Names that match no installed tool are reported in `Resolved.unknown`, never an error: an MCP
server may simply be offline.
"""

from __future__ import annotations

import functools
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Annotated, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    ValidationError,
    model_validator,
)

from core.errors import ConfigError
from tools.manual import ToolManual

# The ToolManual name pattern: MCP tools, namespaced `server__tool`, fit it as well.
ToolName = Annotated[str, StringConstraints(pattern=r"^[a-z][a-z0-9_]{1,63}$")]
# Categories are opaque ("files", "web", later MCP's "read", "write", "execute"), but well formed.
CategoryName = Annotated[str, StringConstraints(pattern=r"^[a-z][a-z0-9_]{0,63}$")]
ProfileName = Annotated[str, StringConstraints(pattern=r"^[a-z][a-z0-9_]{0,63}$")]


class ProfileError(ConfigError):
    """A profile file that cannot be used, or a profile name that names none."""


class Profile(BaseModel):
    """One named narrowing of the tools: categories to keep, tools to deny and to require."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: ProfileName
    description: str
    categories: frozenset[CategoryName]
    deny: frozenset[ToolName] = frozenset()
    require: frozenset[ToolName] = frozenset()
    max_tools: int | None = Field(default=None, ge=1)

    @model_validator(mode="after")
    def _consistent(self) -> Profile:
        both = self.deny & self.require
        if both:
            raise ValueError(f"tools both denied and required: {', '.join(sorted(both))}")
        if self.max_tools is not None and len(self.require) > self.max_tools:
            raise ValueError(
                f"requires {len(self.require)} tools but allows at most {self.max_tools}"
            )
        return self


class ProfileOverrides(BaseModel):
    """The user's own changes to whichever profile is in use (from their settings)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    add_categories: frozenset[CategoryName] = frozenset()
    remove_categories: frozenset[CategoryName] = frozenset()
    add_tools: frozenset[ToolName] = frozenset()
    deny_tools: frozenset[ToolName] = frozenset()

    @model_validator(mode="after")
    def _consistent(self) -> ProfileOverrides:
        both = self.add_tools & self.deny_tools
        if both:
            raise ValueError(f"tools both added and denied: {', '.join(sorted(both))}")
        both = self.add_categories & self.remove_categories
        if both:
            raise ValueError(f"categories both added and removed: {', '.join(sorted(both))}")
        return self


class ProfileTable(BaseModel):
    """Every named profile, as `resources/profiles.toml` lists them."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    version: Literal[1] = 1
    profiles: tuple[Profile, ...]

    @model_validator(mode="after")
    def _unique_names(self) -> ProfileTable:
        if not self.profiles:
            raise ValueError("no profiles: at least one is needed")
        seen: set[str] = set()
        twice: set[str] = set()
        for profile in self.profiles:
            (twice if profile.name in seen else seen).add(profile.name)
        if twice:
            raise ValueError(f"profile names used more than once: {', '.join(sorted(twice))}")
        return self

    def names(self) -> tuple[str, ...]:
        return tuple(sorted(p.name for p in self.profiles))

    def get(self, name: str) -> Profile:
        """The profile called `name`, or a `ProfileError` listing the known names."""
        for profile in self.profiles:
            if profile.name == name:
                return profile
        raise ProfileError(f"no profile named {name!r}; known profiles: {', '.join(self.names())}")


def load_profiles(path: Path | None = None) -> ProfileTable:
    """The bundled table (read once per process: it is frozen), or one at `path`. An invalid
    table fails loudly, naming the file."""
    return _bundled_profiles() if path is None else _read_profiles(path)


@functools.cache
def _bundled_profiles() -> ProfileTable:
    return _read_profiles(None)


def _read_profiles(path: Path | None) -> ProfileTable:
    origin = "the bundled profiles.toml" if path is None else str(path)
    try:
        if path is None:
            text = resources.files("resources").joinpath("profiles.toml").read_text("utf-8")
        else:
            text = path.read_text("utf-8")
        return ProfileTable.model_validate(tomllib.loads(text))
    except (OSError, UnicodeDecodeError) as exc:
        raise ProfileError(f"cannot read {origin}: {exc}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ProfileError(f"{origin} is not valid TOML: {exc}") from exc
    except ValidationError as exc:
        raise ProfileError(f"{origin} is invalid: {_problems(exc)}") from exc


def _problems(exc: ValidationError) -> str:
    """One line per problem, located as in the file (`profiles[2].name: ...`)."""
    lines: list[str] = []
    for error in exc.errors():
        where = ""
        for part in error["loc"]:
            where += f"[{part}]" if isinstance(part, int) else (f".{part}" if where else part)
        if error["type"] == "extra_forbidden":
            message = "unknown key"
        elif error["type"] == "string_pattern_mismatch":
            message = f"{error['input']!r} is not a name (a-z, then a-z, 0-9 or _)"
        else:
            message = str(error["msg"]).removeprefix("Value error, ")
        lines.append(f"{where or 'the file'}: {message}")
    return "; ".join(lines)


@dataclass(frozen=True)
class Resolved:
    """What a profile leaves of the installed tools, and why each other tool is gone.

    `tools` (sorted) and `dropped` together name every installed tool exactly once. `steps` is
    the explanation, in the order the steps ran.
    """

    profile: str
    tools: tuple[str, ...]
    # tool -> the step that removed it, in words
    dropped: dict[str, str] = field(default_factory=dict)
    # names in require, deny, add_tools or deny_tools that match no installed tool
    unknown: tuple[str, ...] = ()
    steps: tuple[str, ...] = ()


def resolve(
    profile_name: str,
    table: ProfileTable,
    tools: Mapping[str, ToolManual] | Sequence[ToolManual],
    overrides: ProfileOverrides | None = None,
) -> Resolved:
    """Apply profile `profile_name` and the user's `overrides` to the installed `tools`.

    The result is a set to intersect with the policy gate's allowed tools, never to add to it.
    """
    profile = table.get(profile_name)
    overrides = overrides or ProfileOverrides()
    manuals = _by_name(tools)
    unknown: set[str] = set()
    dropped: dict[str, str] = {}
    steps: list[str] = []
    label = f"profile {profile.name!r}"

    # (a) category filter
    kept = {name for name, manual in manuals.items() if manual.category in profile.categories}
    for name in sorted(manuals.keys() - kept):
        dropped[name] = (
            f"(a) its category {manuals[name].category!r} is not among the categories of {label}"
        )
    steps.append(
        f"(a) categories {', '.join(sorted(profile.categories)) or '(none)'}: "
        f"{len(kept)} of {len(manuals)} tools kept"
    )

    # (b) explicit deny
    for name in sorted(profile.deny):
        if name not in manuals:
            unknown.add(name)
        elif name in kept:
            kept.discard(name)
            dropped[name] = f"(b) denied by {label}"
            steps.append(f"(b) {name}: denied by {label}")

    # (c) explicit require
    for name in sorted(profile.require):
        if name not in manuals:
            unknown.add(name)
        elif name not in kept:
            kept.add(name)
            dropped.pop(name, None)
            steps.append(f"(c) {name}: required by {label}, kept outside its categories")

    # (d) the user's overrides: categories, then tools added by name, then tools denied.
    categories = (profile.categories | overrides.add_categories) - overrides.remove_categories
    if categories != profile.categories:
        for name in sorted(manuals.keys() - profile.require):
            category = manuals[name].category
            if name in profile.deny:
                # Only naming the tool (add_tools, below) overrides the profile's deny.
                if category in categories:
                    dropped[name] = f"(b) denied by {label}; adding its category does not undo it"
                continue
            if category in categories and name not in kept:
                kept.add(name)
                dropped.pop(name, None)
                steps.append(f"(d) {name}: your settings add category {category!r}")
            elif category not in categories and name in kept:
                kept.discard(name)
                dropped[name] = f"(d) your settings remove category {category!r}"
                steps.append(f"(d) {name}: your settings remove category {category!r}")
    for name in sorted(overrides.add_tools):
        if name not in manuals:
            unknown.add(name)
        elif name not in kept:
            kept.add(name)
            dropped.pop(name, None)
            steps.append(f"(d) {name}: added by your settings")
    for name in sorted(overrides.deny_tools):
        if name not in manuals:
            unknown.add(name)
        elif name in kept:
            kept.discard(name)
            dropped[name] = "(d) denied by your settings"
            steps.append(f"(d) {name}: denied by your settings")

    # max_tools: required first, then the user's named additions, then the rest; each by name.
    if profile.max_tools is not None and len(kept) > profile.max_tools:
        order = sorted(
            kept, key=lambda n: (n not in profile.require, n not in overrides.add_tools, n)
        )
        for name in order[profile.max_tools :]:
            kept.discard(name)
            dropped[name] = f"(max) over the limit of {profile.max_tools} tools of {label}"
        steps.append(
            f"(max) {len(order) - profile.max_tools} tools over the limit of "
            f"{profile.max_tools} dropped"
        )

    return Resolved(
        profile=profile.name,
        tools=tuple(sorted(kept)),
        dropped=dict(sorted(dropped.items())),
        unknown=tuple(sorted(unknown)),
        steps=tuple(steps),
    )


def _by_name(tools: Mapping[str, ToolManual] | Sequence[ToolManual]) -> dict[str, ToolManual]:
    if isinstance(tools, Mapping):
        for key, manual in tools.items():
            if key != manual.name:
                raise ValueError(f"tool {manual.name!r} is listed under the name {key!r}")
        return dict(tools)
    manuals: dict[str, ToolManual] = {}
    for manual in tools:
        if manual.name in manuals:
            raise ValueError(f"tool {manual.name!r} is listed twice")
        manuals[manual.name] = manual
    return manuals
