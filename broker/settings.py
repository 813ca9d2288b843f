"""User settings: one pydantic model, versioned, stored as JSON under the home directory.

Everything the app writes lives under one home (`--home`, `CHAMBERLAIN_HOME`, or the platform's
data dir). Settings never hold secrets: API keys come from the environment or the keyring.

A broken settings.json (not JSON, a wrong value, a folder, unreadable) is reported with its line
and key. `load_settings` refuses it; `read_settings` works around it, its broken settings at
their defaults. This module never overwrites nor deletes a broken file: saving or resetting moves
it aside first (`settings.json.broken-<time>`). The file is hostile input: it is read with a size
limit, and only a regular file is read at all.
"""

from __future__ import annotations

import copy
import json
import logging
import os
import re
import stat
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

import platformdirs
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from broker import settings_seal as seal
from broker.profiles import ProfileOverrides
from broker.settings_seal import PendingChange
from core.errors import ConfigError, Remedy
from tools.mcp.config import McpSettings

log = logging.getLogger("chamberlain.broker.settings")

SCHEMA_VERSION = 3


def default_home() -> Path:
    env = os.environ.get("CHAMBERLAIN_HOME")
    if env:
        return Path(env).expanduser()
    return Path(platformdirs.user_data_dir("chamberlain", appauthor=False))


class LLMSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    # "auto": a local server on its usual loopback port if one answers, else the embedded model
    # (when `embedded_fallback`); "embedded": the bundled model; "none": no model; else a base URL.
    url: str = "auto"
    model: str | None = None
    api_key_env: str = "CHAMBERLAIN_API_KEY"
    # The deadline for one whole model call (connect, wait, stream), by the wall clock: a reply
    # that trickles in or a stream of keep-alives is cut off when it passes.
    timeout_s: float = Field(default=120.0, gt=0)
    stream: bool = True
    # Whether the server takes tools in the request: None finds out on the first request with
    # tools (a refusal naming tools switches to the prompt-based protocol); False always uses
    # the prompt protocol; True never falls back.
    native_tools: bool | None = None
    # The server model's context, in tokens (None: what a server on this machine says, else
    # 8192, broker.llm.budget.ASSUMED_CONTEXT_TOKENS): a request over it (less `reply_tokens`)
    # has its oldest tool results cut first, and the reply says so. Tokens are estimated from
    # the text (about 3 bytes a token).
    context_tokens: int | None = Field(default=None, ge=512)
    reply_tokens: int = Field(default=1024, ge=64)
    # Sampling temperature sent with every chat request; None leaves the server's default.
    temperature: float | None = Field(default=None, ge=0.0, le=2.0)
    # "auto" falls back to the embedded model when no local server answers.
    embedded_fallback: bool = True
    # The embedded model is unloaded after this long without use (it loads again when needed).
    embedded_idle_minutes: float = Field(default=10.0, gt=0, le=24 * 60)


class RouterSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    confidence_threshold: float = Field(default=0.5, ge=0.0, le=1.0)
    # None: on for external servers, off for the embedded model.
    model_refinement: bool | None = None
    # The learned intent classifier's weight file, None for the one shipped in resources/ (a
    # retrained model tried before it ships). One that cannot be used (damaged, or trained for
    # other intents) is said once and the rules route alone.
    intent_weights: Path | None = None

    @field_validator("intent_weights")
    @classmethod
    def _absolute_weights(cls, value: Path | None) -> Path | None:
        # A relative path would name another file from each working directory.
        if value is None:
            return None
        value = value.expanduser()
        if not value.is_absolute():
            raise ValueError("must be an absolute path (or start with ~)")
        return value


class ExecutorSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    max_iterations: int = Field(default=5, ge=1, le=10)
    stall_repeats: int = Field(default=3, ge=2, le=10)
    max_argument_bytes: int = Field(default=16 * 1024, ge=256)
    max_tool_errors: int = Field(default=3, ge=1, le=10)
    # All calls in one turn, however they are spread over the model's answers.
    max_tool_calls: int = Field(default=20, ge=1, le=200)
    # The model's answers a research task may take (several searches, pages read, the summary).
    research_iterations: int = Field(default=8, ge=1, le=20)


class PermissionSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    # Bounded: an endless question would never be denied (a day is more than anyone waits).
    prompt_timeout_s: float = Field(default=60.0, gt=0, le=24 * 3600, allow_inf_nan=False)
    timed_default_minutes: float = Field(default=5.0, gt=0, le=7 * 24 * 60, allow_inf_nan=False)


class IntentOverride(BaseModel):
    model_config = ConfigDict(extra="forbid")

    add: list[str] = Field(default_factory=list)
    deny: list[str] = Field(default_factory=list)


class PolicyOverrides(BaseModel):
    model_config = ConfigDict(extra="forbid")

    deny: list[str] = Field(default_factory=list)
    intents: dict[str, IntentOverride] = Field(default_factory=dict)


class ToolSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    file_read_max_bytes: int = Field(default=256 * 1024, ge=1024, le=16 * 1024 * 1024)
    screenshot_retention_days: float = Field(default=7.0, ge=0)
    # Send the screenshot itself to models that accept images (besides its OCR text).
    attach_images: bool = False
    command_timeout_s: float = Field(default=30.0, gt=0, le=3600)
    command_output_cap: int = Field(default=64 * 1024, ge=1024, le=16 * 1024 * 1024)
    # What one command may use (tools.limits): memory (MiB; per process where no cgroup holds
    # it), processes, CPU seconds per process, and the size of its /dev/shm (MiB).
    command_memory_mb: int = Field(default=1024, ge=64, le=1024 * 1024)
    command_max_processes: int = Field(default=128, ge=8, le=100_000)
    command_cpu_s: int = Field(default=60, ge=1, le=24 * 3600)
    command_shm_mb: int = Field(default=64, ge=1, le=64 * 1024)
    # Extra folders commands may run in (the home directory always may).
    command_roots: list[str] = Field(default_factory=list)
    # Where no sandbox can be had (no bubblewrap, no user namespaces, macOS, Windows): run
    # commands anyway, unconfined. Off by default; doctor and the README warn about it.
    unsandboxed_commands: bool = False


class WebSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    # A SearXNG instance with its JSON format enabled, e.g. "http://127.0.0.1:8888".
    searxng_url: str | None = None
    # Who answers web_search: "auto" is SearXNG when searxng_url is set, else DuckDuckGo
    # through the ddgs library; "ddgs" or "searxng" forces one.
    search_provider: Literal["auto", "ddgs", "searxng"] = "auto"
    max_bytes: int = Field(default=2 * 1024 * 1024, ge=1024, le=64 * 1024 * 1024)
    timeout_s: float = Field(default=15.0, gt=0, le=300)
    # Hosts that may resolve to loopback or private addresses ("*" for any); none by default.
    allow_private: list[str] = Field(default_factory=list)


class MemorySettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    # "keyring": a random key in the system keyring (else a passphrase); "passphrase": always a
    # passphrase; "off": plaintext, an explicit opt-in that Chamberlain warns about.
    encryption: Literal["keyring", "passphrase", "off"] = "keyring"
    # Pause: nothing new is remembered (recall and anchors still work).
    paused: bool = False
    # Ask the model for facts worth remembering from each message (None: on for external
    # servers, off for the embedded model).
    extract: bool | None = None
    recall_limit: int = Field(default=5, ge=0, le=50)
    anchor_budget_chars: int = Field(default=1500, ge=0, le=20000)
    # Model endpoints (base URLs) outside loopback that may see facts above `low`.
    allow_remote: list[str] = Field(default_factory=list)


# Modifiers a shortcut may hold, as the app writes them ("Meta" is the Super or Windows key).
SHORTCUT_MODIFIERS = ("Ctrl", "Alt", "Shift", "Meta")
DEFAULT_CHAT_SHORTCUT = "Ctrl+Alt+Space"


def check_shortcut(value: str) -> str:
    """`value` as a shortcut to keep ("" for none): modifiers, then one key. Without Ctrl, Alt
    or Meta a key pressed anywhere would be taken from whatever the person types in."""
    value = value.strip()
    if not value:
        return ""
    if value.endswith("++"):  # the + key itself: "Ctrl++"
        modifiers, key = value[:-2].split("+"), "+"
    else:
        *modifiers, key = value.split("+")
    if not key or key in SHORTCUT_MODIFIERS or any(m not in SHORTCUT_MODIFIERS for m in modifiers):
        raise ValueError(
            "must be modifiers (Ctrl, Alt, Shift, Meta) and one key, such as Ctrl+Alt+Space"
        )
    if not set(modifiers) & {"Ctrl", "Alt", "Meta"}:
        raise ValueError("needs Ctrl, Alt or Meta with it, or it would take keys you type")
    return value


class ChatSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    # How long a saved conversation is kept after it was last updated; 0 keeps it forever.
    # Temporary chats are never saved at all, whatever this says.
    retention_days: float = Field(default=90.0, ge=0)
    # The key that opens the chat from anywhere on the desktop, as modifiers and one key
    # ("Ctrl+Alt+Space"); "" turns it off. Desktops rarely bind Ctrl+Alt+Space themselves.
    shortcut: str = DEFAULT_CHAT_SHORTCUT

    @field_validator("shortcut")
    @classmethod
    def _a_chord(cls, value: str) -> str:
        return check_shortcut(value)


class ProfileSettings(ProfileOverrides):
    """The tool profile in use (resources/profiles.toml) and the user's changes to it."""

    model_config = ConfigDict(extra="forbid", frozen=False)

    name: str = "everything"

    @field_validator("name")
    @classmethod
    def _bundled(cls, value: str) -> str:
        from broker.profiles import ProfileError, load_profiles

        try:
            load_profiles().get(value)
        except ProfileError as exc:
            raise ValueError(str(exc)) from None
        return value


_ENV_PREFIX = "CHAMBERLAIN_"


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix=_ENV_PREFIX, env_nested_delimiter="__")

    schema_version: int = SCHEMA_VERSION
    llm: LLMSettings = Field(default_factory=LLMSettings)
    router: RouterSettings = Field(default_factory=RouterSettings)
    executor: ExecutorSettings = Field(default_factory=ExecutorSettings)
    permissions: PermissionSettings = Field(default_factory=PermissionSettings)
    policy: PolicyOverrides = Field(default_factory=PolicyOverrides)
    tools: ToolSettings = Field(default_factory=ToolSettings)
    memory: MemorySettings = Field(default_factory=MemorySettings)
    web: WebSettings = Field(default_factory=WebSettings)
    chat: ChatSettings = Field(default_factory=ChatSettings)
    # MCP servers whose tools Chamberlain may offer (tools/mcp/config.py).
    mcp: McpSettings = Field(default_factory=McpSettings)
    profile: ProfileSettings = Field(default_factory=ProfileSettings)

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # An environment variable overrides settings.json (which arrives as init values);
        # pydantic-settings' default order would let the file silently win.
        return env_settings, init_settings, dotenv_settings, file_secret_settings


class SettingsError(ConfigError):
    """A settings problem. `str()` is the sentence with any advice that is the same in every
    front end; `problem` is what is wrong without advice, and `path`, `line` and `keys` say
    where (`path` None: an environment variable, not the file), so a front end can offer its own
    way out. A settings file at fault carries `Remedy.FIX_SETTINGS` with the file as `subject`,
    which each front end words."""

    def __init__(
        self,
        problem: str,
        *,
        path: Path | None = None,
        line: int | None = None,
        keys: tuple[str, ...] = (),
        advice: str = "",
        remedy: Remedy | None = None,
    ) -> None:
        super().__init__(
            f"{problem}; {advice}" if advice else problem,
            remedy=remedy,
            subject=str(path) if path is not None and remedy is not None else "",
        )
        self.problem = problem
        self.path = path
        self.line = line
        self.keys = keys


def _v1_to_v2(raw: dict[str, Any]) -> dict[str, Any]:
    """Version 2 added the `chat` section (conversation retention); a version 1 file has none,
    so it gets the defaults. The version was raised so that an older Chamberlain meeting a
    file with `chat` says it is newer, instead of calling the section unknown."""
    return raw


def _v2_to_v3(raw: dict[str, Any]) -> dict[str, Any]:
    """Version 3 added `mcp` (MCP servers) and `profile` (the tool profile); a version 2 file
    has neither and gets the defaults: no servers, the `everything` profile."""
    return raw


# _STEPS[v] takes a file from schema_version v to v + 1. Append only.
_STEPS = {1: _v1_to_v2, 2: _v2_to_v3}


def _migrate(raw: dict[str, Any]) -> dict[str, Any]:
    """Bring an older settings file up to SCHEMA_VERSION. Version 1 is the first."""
    version = raw.get("schema_version", 1)
    if not isinstance(version, int) or isinstance(version, bool):
        raise SettingsError(
            f"schema_version {version!r} is not a version number",
            keys=("schema_version",),
            remedy=Remedy.FIX_SETTINGS,
        )
    if version > SCHEMA_VERSION:
        raise SettingsError(
            f"schema_version {version} is newer than this Chamberlain understands "
            f"({SCHEMA_VERSION})",
            keys=("schema_version",),
            advice="upgrade Chamberlain or move the file aside",
        )
    for step in range(max(version, 1), SCHEMA_VERSION):
        raw = _STEPS[step](raw)
    raw["schema_version"] = SCHEMA_VERSION
    return raw


SETTINGS_FILE = "settings.json"
# A settings file is a few kilobytes; anything past this is not one (and is not read into memory).
MAX_FILE_BYTES = 4 * 1024 * 1024
# Settings are a few levels deep. Deeper JSON is refused before it is parsed: Python's parser
# recurses once a level, and a garbage collection that runs thousands of frames down fails in
# its own way ("Exception ignored in sys.unraisablehook").
MAX_JSON_DEPTH = 64
_JSON_NESTING = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]')


class _FileOnly(Settings):
    """The settings as the file alone gives them, no environment variable applied: what decides
    whether the file itself is broken."""

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return (init_settings,)


def load_settings(home: Path) -> Settings:
    """Read `home/settings.json` (absent → defaults). A broken file is an error, never replaced:
    what a command that writes the settings uses (`read_settings` works around a broken file).
    A sealed setting changed outside Chamberlain is at its confirmed value (broker.settings_seal).
    """
    path = home / SETTINGS_FILE
    if not _present(path):
        return _with_environment(_sealed(home, {}).effective)
    raw, text = _read_file(path)
    _validate(raw, path, text)
    return _with_environment(_sealed(home, _migrate(copy.deepcopy(raw))).effective)


@dataclass(frozen=True)
class LoadedSettings:
    """What `read_settings` found: the settings in use, and what is wrong with the file."""

    settings: Settings
    # What is wrong with settings.json; None when nothing is.
    problem: SettingsError | None = None
    # With a problem: the file's keys now at their defaults ("section.key", or a whole section),
    # or `whole_file` when it could not be read at all and every setting is at its default.
    defaulted: tuple[str, ...] = ()
    whole_file: bool = False
    # With a problem: the part of the file still in use, as the file has it (no environment
    # variable in it); what `reset_settings` writes in its place.
    kept: dict[str, Any] = field(default_factory=dict)
    # Sealed settings the file changed outside Chamberlain: not in use until confirmed
    # (`confirm_pending`) or discarded (`discard_pending`).
    pending: tuple[PendingChange, ...] = ()
    # What is wrong with the seal itself (unreadable, damaged, entries it did not write).
    seal_problem: str | None = None


def read_settings(home: Path) -> LoadedSettings:
    """Like `load_settings`, but a broken settings.json does not stop anything: its broken keys
    (all of it, when it cannot be read as a JSON object) are left at their defaults, and
    `problem` says what is wrong and where. Nothing is written. A default never reaches further
    than the file did, except where the file's own broken value stood.

    An environment variable that is not a valid setting is still an error: it is this start's
    own input, and no default can stand in for what it meant."""
    path = home / SETTINGS_FILE
    if not _present(path):
        return _loaded(home, {})
    try:
        raw, text = _read_file(path)
    except SettingsError as problem:
        return _loaded(home, {}, problem, whole_file=True)
    try:
        _validate(raw, path, text)
    except SettingsError as problem:
        if problem.path is None:
            raise
        kept, defaulted = _salvage(raw)
        if kept is None:
            return _loaded(home, {}, problem, whole_file=True)
        return _loaded(home, kept, problem, defaulted, kept=kept)
    return _loaded(home, _migrate(copy.deepcopy(raw)))


def _loaded(
    home: Path,
    data: dict[str, Any],
    problem: SettingsError | None = None,
    defaulted: tuple[str, ...] = (),
    *,
    whole_file: bool = False,
    kept: dict[str, Any] | None = None,
) -> LoadedSettings:
    """`data` (the file's valid part, migrated) under the seal and then the environment."""
    sealed = _sealed(home, data)
    return LoadedSettings(
        _with_environment(sealed.effective),
        problem,
        defaulted,
        whole_file,
        kept or {},
        pending=sealed.pending,
        seal_problem=sealed.problem,
    )


def reset_settings(home: Path, loaded: LoadedSettings, now: datetime | None = None) -> Path | None:
    """Put the settings in use from the file (`loaded.kept`: its valid part, or the defaults) in
    place of a broken settings.json. The broken file is kept beside it (`keep_broken`), never
    overwritten; returns its new name (None when there was no file any more)."""
    home.mkdir(parents=True, exist_ok=True)
    path = home / SETTINGS_FILE
    kept_as = keep_broken(path, now) if _present(path) else None
    data = loaded.kept or {"schema_version": SCHEMA_VERSION}
    _write(path, json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    return kept_as


def save_settings(home: Path, settings: Settings) -> Path | None:
    """Write `settings` to `home/settings.json`, atomically, and seal its sealed settings: this
    is Chamberlain's own save (the Settings window, a CLI command), so what it writes is
    confirmed. A sealed setting the caller left at its confirmed value while the file holds a
    change made outside Chamberlain keeps that change in the file, still pending: a save never
    confirms what the person did not see. A broken file there is never lost: it is kept beside
    it (`keep_broken`) and its new name returned (None when there was none)."""
    home.mkdir(parents=True, exist_ok=True)
    key = _seal_key(home, required=True)
    assert key is not None
    with seal.changing(home):
        return _save(home, settings, key)


def _save(home: Path, settings: Settings, key: bytes) -> Path | None:
    path = home / SETTINGS_FILE
    kept_as = keep_broken(path) if _broken(path) else None
    data: dict[str, Any] = json.loads(settings.model_dump_json())
    file_data = _file_data(home)
    sealed = _sealed(home, file_data)
    # A setting an environment variable sets holds this process's value, not the person's
    # choice: the file keeps its own (or none, so the default), and a sealed one's seal its
    # confirmed value. Saving never turns a variable of one run into a setting for good.
    for name in environment_variables():
        seal.set_path(data, name, seal.get_path(file_data, name))
    kept = _set_by_environment(seal.sealed_keys(data, file_data, sealed.confirmed))
    for name in kept:
        seal.set_path(data, name, seal.get_path(file_data, name))
    for change in sealed.pending:
        if change.key in kept:
            continue
        if seal.same(change.key, seal.get_path(data, change.key), change.in_use):
            seal.set_path(data, change.key, change.value)
            kept.append(change.key)
    _write(path, json.dumps(data, indent=2, ensure_ascii=False))
    seal.write_seal(home, key, seal.confirmed_after_save(data, kept, sealed.confirmed))
    return kept_as


def environment_variables(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """Each setting a `CHAMBERLAIN_SECTION__KEY` (or `CHAMBERLAIN_SECTION`) variable sets, as a
    dotted path ("llm.url", "llm"), with the variable's name; a variable that names no setting
    (CHAMBERLAIN_HOME) is not one."""
    source = os.environ if environ is None else environ
    sections = set(Settings.model_fields) - {"schema_version"}
    found: dict[str, str] = {}
    for name in source:
        if not name.upper().startswith(_ENV_PREFIX):
            continue
        path = name[len(_ENV_PREFIX) :].lower().replace("__", ".")
        if path.split(".", 1)[0] in sections:
            found[path] = name
    return found


def _set_by_environment(keys: list[str], environ: Mapping[str, str] | None = None) -> list[str]:
    """The sealed `keys` a `CHAMBERLAIN_SECTION__KEY` variable sets (or sets a part of)."""
    source = os.environ if environ is None else environ
    paths = [
        name[len(_ENV_PREFIX) :].lower().replace("__", ".")
        for name in source
        if name.upper().startswith(_ENV_PREFIX)
    ]
    return [
        key
        for key in keys
        if any(key == p or key.startswith(p + ".") or p.startswith(key + ".") for p in paths)
    ]


def pending_changes(home: Path) -> LoadedSettings:
    """The settings as `load_settings` reads them (a broken file is an error), with what
    waits for confirmation in `pending`."""
    loaded = read_settings(home)
    if loaded.problem is not None:
        raise loaded.problem
    return loaded


def confirm_pending(
    home: Path, keys: Sequence[str] = (), shown: Sequence[PendingChange] | None = None
) -> list[PendingChange]:
    """Seal the file's values of the pending changes named by `keys` (all when empty): they are
    in use from now on; the values in use of the other sealed settings are sealed as they are.
    The settings file is not touched. Returns what was confirmed.

    `shown`: the changes as the person saw them. When the file changed since (a program wrote
    it again between showing and confirming), nothing is confirmed: a SettingsError says so."""
    key = _seal_key(home, required=True)
    assert key is not None
    with seal.changing(home):
        return _confirm(home, keys, shown, key)


def _confirm(
    home: Path, keys: Sequence[str], shown: Sequence[PendingChange] | None, key: bytes
) -> list[PendingChange]:
    chosen = _chosen(pending_changes(home).pending, keys)
    if shown is not None:
        _as_shown(chosen, shown)
    sealed = _sealed(home, _file_data(home))
    # The values in use are sealed as they are (a change that only narrowed reach included),
    # then the chosen changes on top.
    confirmed = seal.confirmed_after_save(sealed.effective, [], sealed.confirmed)
    for change in chosen:
        if change.value is seal.MISSING:
            confirmed.pop(change.key, None)
        else:
            confirmed[change.key] = change.value
    seal.write_seal(home, key, confirmed)
    return chosen


def discard_pending(home: Path, keys: Sequence[str] = ()) -> list[PendingChange]:
    """Put the values in use back into settings.json for the pending changes named by `keys`
    (all when empty); every other setting in the file stays as the file has it. Returns what
    was discarded."""
    with seal.changing(home):
        return _discard(home, keys)


def _discard(home: Path, keys: Sequence[str]) -> list[PendingChange]:
    chosen = _chosen(pending_changes(home).pending, keys)
    if chosen:
        path = home / SETTINGS_FILE
        raw: dict[str, Any] = _read_file(path)[0] if _present(path) else {}
        for change in chosen:
            seal.set_path(raw, change.key, change.in_use)
        _write(path, json.dumps(raw, indent=2, ensure_ascii=False))
    return chosen


def _as_shown(chosen: Sequence[PendingChange], shown: Sequence[PendingChange]) -> None:
    seen = {change.key: change for change in shown}
    for change in chosen:
        before = seen.get(change.key)
        if before is None or not seal.same(change.key, before.value, change.value):
            raise SettingsError(
                f"settings.json changed again after it was shown ({change.key}), so nothing "
                "was confirmed; review the changes again"
            )


def _chosen(pending: Sequence[PendingChange], keys: Sequence[str]) -> list[PendingChange]:
    if not keys:
        return list(pending)
    by_key = {change.key: change for change in pending}
    unknown = [k for k in keys if k not in by_key]
    if unknown:
        waiting = ", ".join(by_key) or "none"
        raise SettingsError(
            f"no change waits for confirmation under {', '.join(unknown)} (waiting: {waiting})"
        )
    return [by_key[k] for k in dict.fromkeys(keys)]


# --- the seal (broker.settings_seal) ------------------------------------------------------------

# The seal key of each home, once found: reading it may ask the keyring.
_seal_keys: dict[Path, bytes] = {}


def _seal_key(home: Path, *, required: bool = False) -> bytes | None:
    """The key of the seal's MACs; None when the install secret cannot be had (then nothing
    is confirmed), a SettingsError saying why when `required` (a save must seal)."""
    found = _seal_keys.get(home)
    if found is not None:
        return found
    from broker.keys import KeyFileError, load_install_secret

    try:
        secret = load_install_secret(home)
    except (KeyFileError, OSError) as exc:
        if required:
            unsaved = SettingsError(
                f"the settings were not saved, because Chamberlain's install secret cannot be "
                f"read: {exc}"
            )
            if isinstance(exc, KeyFileError):
                unsaved.remedy = exc.remedy  # a full disk: the front end says to free space
            raise unsaved from exc
        log.warning("the settings seal cannot be checked: %s", exc)
        return None
    _seal_keys[home] = found = seal.seal_key(secret.key)
    return found


@dataclass(frozen=True)
class _Sealed:
    effective: dict[str, Any]
    pending: tuple[PendingChange, ...]
    confirmed: dict[str, Any]
    problem: str | None


def _file_data(home: Path) -> dict[str, Any]:
    """The file's valid settings, migrated ({} when there is none or it is broken)."""
    path = home / SETTINGS_FILE
    if not _present(path):
        return {}
    try:
        raw, _ = _read_file(path)
    except SettingsError:
        return {}
    kept, _ = _salvage(raw)
    return kept or {}


def _sealed(home: Path, data: dict[str, Any]) -> _Sealed:
    """`data` (valid file settings, migrated, no environment) as normalised JSON, with every
    sealed setting changed outside Chamberlain at its confirmed value."""
    file_data: dict[str, Any] = _FileOnly.model_validate(data).model_dump(mode="json")
    defaults = _defaults()
    found = seal.Seal({})
    if (home / seal.SEAL_FILE).exists() or os.path.lexists(home / seal.SEAL_FILE):
        found = seal.read_seal(home, _seal_key(home))
    confirmed = _normalised_confirmed(found.confirmed)
    checked = seal.check(file_data, defaults, confirmed)
    problem = found.problem
    if found.untrusted:
        problem = (
            f"{home / seal.SEAL_FILE} holds entries Chamberlain did not sign (ignored): "
            + ", ".join(found.untrusted)
        )
    return _Sealed(checked.effective, checked.pending, confirmed, problem)


def _normalised_confirmed(confirmed: dict[str, Any]) -> dict[str, Any]:
    """Each confirmed value as today's settings model spells it (a field added since it was
    sealed at its default); one that is no longer valid counts as never confirmed."""
    if not confirmed:
        return {}
    # All at once (one validation), and one by one only when that fails.
    whole: dict[str, Any] = {}
    for key, value in confirmed.items():
        seal.set_path(whole, key, value)
    try:
        dumped = _FileOnly.model_validate(whole).model_dump(mode="json")
    except (ValidationError, ValueError, TypeError):
        pass
    else:
        found = {key: seal.get_path(dumped, key) for key in confirmed}
        return {key: value for key, value in found.items() if value is not seal.MISSING}
    result: dict[str, Any] = {}
    for key, value in confirmed.items():
        probe: dict[str, Any] = {}
        seal.set_path(probe, key, value)
        try:
            dumped = _FileOnly.model_validate(probe).model_dump(mode="json")
        except (ValidationError, ValueError, TypeError):
            log.warning("a confirmed value of %s is no longer a valid setting", key)
            continue
        normal = seal.get_path(dumped, key)
        if normal is not seal.MISSING:
            result[key] = normal
    return result


_default_data: dict[str, Any] | None = None


def _defaults() -> dict[str, Any]:
    global _default_data
    if _default_data is None:
        _default_data = _FileOnly().model_dump(mode="json")
    return _default_data


def keep_broken(path: Path, now: datetime | None = None) -> Path:
    """Move a broken settings file (or whatever stands in its place) to
    `settings.json.broken-<date>-<time>`, never over an earlier copy; returns the new name."""
    stamp = (now or datetime.now()).strftime("%Y%m%d-%H%M%S")
    for number in range(1000):
        suffix = f"-{number}" if number else ""
        candidate = path.with_name(f"{path.name}.broken-{stamp}{suffix}")
        try:
            # A hard link cannot replace an existing name, so two starts at the same second
            # never move one copy over the other.
            os.link(path, candidate, follow_symlinks=False)
        except FileExistsError:
            continue
        except OSError:
            # A folder, or a file system without hard links.
            if os.path.lexists(candidate):
                continue
            os.rename(path, candidate)
        else:
            os.unlink(path)
        log.warning("the broken settings file was kept as %s", candidate)
        return candidate
    raise SettingsError(f"{path} could not be moved aside: too many broken copies beside it")


def _present(path: Path) -> bool:
    """Whether something is at `path`: a name that cannot even be looked up (a folder the user
    cannot enter) may hide a file, and is for `_read_file` to name, not taken as no file."""
    try:
        os.lstat(path)
    except FileNotFoundError:
        return False
    except OSError:
        return True
    return True


def _write(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def _broken(path: Path) -> bool:
    """Whether the file at `path` exists and is not valid settings by itself."""
    if not _present(path):
        return False
    try:
        raw, _ = _read_file(path)
        _FileOnly.model_validate(_migrate(raw))
    except (SettingsError, ValidationError):
        return True
    return False


def _with_environment(data: dict[str, Any]) -> Settings:
    """`data` (the file's, valid) under the environment's overrides; an invalid variable is an
    error naming it."""
    try:
        return Settings.model_validate(data)
    except ValidationError as exc:
        raise _invalid(exc, None, "") from exc


def _read_file(path: Path) -> tuple[dict[str, Any], str]:
    """The file's JSON object and its text; a SettingsError saying what is wrong and where."""
    try:
        info = path.stat()
        if stat.S_ISDIR(info.st_mode):
            raise SettingsError(
                f"{path} is a folder, not a settings file", path=path, remedy=Remedy.FIX_SETTINGS
            )
        if not stat.S_ISREG(info.st_mode):
            # A pipe or a device would block the read or never end.
            raise SettingsError(
                f"{path} is not a regular file", path=path, remedy=Remedy.FIX_SETTINGS
            )
        with path.open("rb") as handle:
            data = handle.read(MAX_FILE_BYTES + 1)
    except PermissionError as exc:
        raise SettingsError(
            f"cannot read {path} ({exc.strerror or exc})",
            path=path,
            advice="give your user read access to it, or move it aside",
        ) from exc
    except OSError as exc:
        raise SettingsError(
            f"cannot read {path} ({exc.strerror or exc})", path=path, remedy=Remedy.FIX_SETTINGS
        ) from exc
    if len(data) > MAX_FILE_BYTES:
        raise SettingsError(
            f"{path} is larger than {MAX_FILE_BYTES // (1024 * 1024)} MB, too large to be settings",
            path=path,
            remedy=Remedy.FIX_SETTINGS,
        )
    try:
        # utf-8-sig: a byte-order mark, as some Windows editors write, is not an error.
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise SettingsError(
            f"{path} line {line}: not UTF-8 text", path=path, line=line, remedy=Remedy.FIX_SETTINGS
        ) from exc
    if not text.strip():
        raise SettingsError(f"{path} is empty", path=path, line=1, remedy=Remedy.FIX_SETTINGS)
    if _nested_deeper(text, MAX_JSON_DEPTH):
        raise SettingsError(
            f"{path}: its JSON is nested too deeply to be settings",
            path=path,
            remedy=Remedy.FIX_SETTINGS,
        )
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SettingsError(
            f"{path} line {exc.lineno}: not valid JSON ({exc.msg})",
            path=path,
            line=exc.lineno,
            remedy=Remedy.FIX_SETTINGS,
        ) from exc
    except RecursionError:
        # Python's JSON parser recurses once per level and gives up after a few thousand.
        raise SettingsError(
            f"{path}: its JSON is nested too deeply to be settings",
            path=path,
            remedy=Remedy.FIX_SETTINGS,
        ) from None
    if not isinstance(raw, dict):
        raise SettingsError(
            f"{path} must hold a JSON object {{…}}, not {_json_kind(raw)}",
            path=path,
            line=1,
            remedy=Remedy.FIX_SETTINGS,
        )
    return raw, text


def _nested_deeper(text: str, limit: int) -> bool:
    """Whether JSON `text` opens more than `limit` arrays or objects inside one another,
    counted without recursing (brackets inside strings do not count)."""
    depth = 0
    for token in _JSON_NESTING.finditer(text):
        mark = token.group()
        if mark in "[{":
            depth += 1
            if depth > limit:
                return True
        elif mark in "]}":
            depth -= 1
    return False


def _json_kind(value: object) -> str:
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return "a string"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true or false"
    return "a number"


def _validate(raw: dict[str, Any], path: Path, text: str) -> Settings:
    try:
        migrated = _migrate(copy.deepcopy(raw))
    except SettingsError as exc:
        line = _line_of(text, exc.keys)
        advice = str(exc).removeprefix(exc.problem).removeprefix("; ")
        raise SettingsError(
            f"{_where(path, line)}: {exc.problem}",
            path=path,
            line=line,
            keys=exc.keys,
            advice=advice,
            remedy=exc.remedy,
        ) from None
    try:
        return Settings.model_validate(migrated)
    except ValidationError as exc:
        raise _invalid(exc, path, text) from exc


def _salvage(raw: dict[str, Any]) -> tuple[dict[str, Any] | None, tuple[str, ...]]:
    """The file without its broken settings, and their names; None when nothing can be kept.

    A wrong value is dropped together with the setting it belongs to (`section.key`, or the
    section), never in part: a server's `args` less one element, or a list less one entry,
    could mean something the person never wrote."""
    try:
        kept = _migrate(copy.deepcopy(raw))
    except SettingsError:
        return None, ()
    dropped: list[str] = []
    # Each round drops at least one key, and a file has only so many.
    for _ in range(100):
        try:
            _FileOnly.model_validate(kept)
        except ValidationError as exc:
            keys = dict.fromkeys(tuple(str(p) for p in e["loc"][:2]) for e in exc.errors())
            removed = [key for key in keys if _drop(kept, key)]
            if not removed:
                return None, ()
            dropped += [".".join(key) for key in removed]
            continue
        return kept, tuple(dict.fromkeys(dropped))
    return None, ()


def _drop(data: dict[str, Any], key: tuple[str, ...]) -> bool:
    if not key:
        return False
    node: Any = data
    for part in key[:-1]:
        node = node.get(part) if isinstance(node, dict) else None
    if isinstance(node, dict) and key[-1] in node:
        del node[key[-1]]
        return True
    return False


def _invalid(exc: ValidationError, path: Path | None, text: str) -> SettingsError:
    """One line naming the wrong setting and where it came from: an environment variable
    overrides the file, so one that names the setting is the culprit."""
    errors = exc.errors()
    present = {name.upper() for name in os.environ}
    culprits: list[tuple[str, str]] = []
    for error in errors:
        loc = [str(part).upper() for part in error["loc"]]
        for end in range(len(loc), 0, -1):
            name = "CHAMBERLAIN_" + "__".join(loc[:end])
            if name in present:
                culprits.append((name, _describe(error)))
                break
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    if culprits:
        names = ", ".join(sorted({name for name, _ in culprits}))
        return SettingsError(
            f"the environment variable {names} is not a valid setting: {culprits[0][1]}{more}",
            keys=tuple(_dotted(e["loc"]) for e in errors),
            advice=f"change or unset {names}",
        )
    first = _describe(errors[0])
    if path is None:
        return SettingsError(f"the settings are not valid: {first}{more}")
    line = _line_of(text, errors[0]["loc"])
    return SettingsError(
        f"{_where(path, line)}: {first}{more}",
        path=path,
        line=line,
        keys=tuple(dict.fromkeys(_dotted(e["loc"]) for e in errors)),
        remedy=Remedy.FIX_SETTINGS,
    )


def _dotted(loc: Sequence[int | str]) -> str:
    return ".".join(str(part) for part in loc) or "(the whole file)"


def _describe(error: Any) -> str:
    key = _dotted(error["loc"])
    if error["type"] == "extra_forbidden":
        return f"{key} is not a setting this Chamberlain knows"
    return f"{key}: {str(error['msg']).removeprefix('Value error, ')}"


def _where(path: Path, line: int | None) -> str:
    return f"{path} line {line}" if line else str(path)


# --- finding a key's line in the file's text ---------------------------------------------------

_SPACE = re.compile(r"[ \t\n\r]*")


def _line_of(text: str, loc: Sequence[int | str]) -> int | None:
    """The line of the deepest part of `loc` (a setting's path, as a validation error gives it)
    found in the JSON `text`: the line of the wrong value's key, or of its section's. None when
    not even the first part is in the file."""
    decoder = json.JSONDecoder()
    at: int | None = None
    start = _SPACE.match(text).end()  # type: ignore[union-attr]
    for part in loc:
        try:
            found = _member(text, start, part, decoder)
        except (ValueError, IndexError):
            break
        if found is None:
            break
        at, start = found
    return None if at is None else text.count("\n", 0, at) + 1


def _member(
    text: str, start: int, part: int | str, decoder: json.JSONDecoder
) -> tuple[int, int] | None:
    """Where the member `part` of the JSON object (or array) starting at `start` is: its key's
    offset and its value's. The last of repeated keys, as the parser takes it."""

    def space(i: int) -> int:
        return _SPACE.match(text, i).end()  # type: ignore[union-attr]

    opening = text[start]
    found: tuple[int, int] | None = None
    i = space(start + 1)
    index = 0
    while i < len(text) and text[i] not in "}]":
        key_at = i
        key: int | str = index
        if opening == "{":
            key, end = json.decoder.scanstring(text, i + 1)  # type: ignore[attr-defined]
            i = space(space(end) + 1)  # past the colon
        elif opening != "[":
            return None
        _, after = decoder.raw_decode(text, i)
        if str(key) == str(part):
            found = (key_at, i)
        index += 1
        i = space(after)
        if i < len(text) and text[i] == ",":
            i = space(i + 1)
    return found
