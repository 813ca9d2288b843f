"""User settings: one pydantic model, versioned, stored as JSON under the home directory.

Everything the app writes lives under one home (`--home`, `CHAMBERLAIN_HOME`, or the platform's
data dir). Settings never hold secrets: API keys come from the environment or the keyring.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any, Literal

import platformdirs
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from broker.profiles import ProfileOverrides
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
    # The server model's context, in tokens, when known (None: not known, nothing is cut): a
    # request over it (less `reply_tokens`) has its oldest tool results cut first, and the
    # reply says so. Tokens are estimated from the text (about 3 bytes a token).
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


class ExecutorSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    max_iterations: int = Field(default=5, ge=1, le=10)
    stall_repeats: int = Field(default=3, ge=2, le=10)
    max_argument_bytes: int = Field(default=16 * 1024, ge=256)
    max_tool_errors: int = Field(default=3, ge=1, le=10)
    # All calls in one turn, however they are spread over the model's answers.
    max_tool_calls: int = Field(default=20, ge=1, le=200)


class PermissionSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    prompt_timeout_s: float = Field(default=60.0, gt=0)
    timed_default_minutes: float = Field(default=5.0, gt=0)


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


class ChatSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    # How long a saved conversation is kept after it was last updated; 0 keeps it forever.
    # Temporary chats are never saved at all, whatever this says.
    retention_days: float = Field(default=90.0, ge=0)


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


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="CHAMBERLAIN_", env_nested_delimiter="__")

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


class SettingsError(Exception):
    pass


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
    if not isinstance(version, int) or version > SCHEMA_VERSION:
        raise SettingsError(
            f"settings.json has schema_version {version!r}, newer than this Chamberlain "
            f"understands ({SCHEMA_VERSION}); upgrade Chamberlain or move the file away"
        )
    for step in range(max(version, 1), SCHEMA_VERSION):
        raw = _STEPS[step](raw)
    raw["schema_version"] = SCHEMA_VERSION
    return raw


def load_settings(home: Path) -> Settings:
    """Read `home/settings.json` (absent → defaults). A broken file is an error, never replaced."""
    path = home / "settings.json"
    if not path.exists():
        try:
            return Settings()
        except ValidationError as exc:
            raise SettingsError(_invalid(exc, None)) from exc
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise SettingsError(f"cannot read {path}: {exc}; fix or remove the file") from exc
    except RecursionError:
        # Python's JSON parser recurses once per level and gives up after a few thousand.
        raise SettingsError(
            f"cannot read {path}: its JSON is nested too deeply to be settings; fix or remove "
            "the file"
        ) from None
    if not isinstance(raw, dict):
        raise SettingsError(f"{path} must hold a JSON object")
    try:
        return Settings.model_validate(_migrate(raw))
    except ValidationError as exc:
        raise SettingsError(_invalid(exc, path)) from exc


def _invalid(exc: ValidationError, path: Path | None) -> str:
    """Name where a bad value came from: an environment variable overrides the file."""
    present = {name.upper() for name in os.environ}
    variables: list[str] = []
    for error in exc.errors():
        loc = [str(part).upper() for part in error["loc"]]
        for end in range(len(loc), 0, -1):
            name = "CHAMBERLAIN_" + "__".join(loc[:end])
            if name in present:
                variables.append(name)
                break
    if variables:
        names = ", ".join(sorted(set(variables)))
        return f"the environment variable {names} is not a valid setting: {exc}"
    if path is None:
        return f"the settings are not valid: {exc}"
    return f"{path} is not valid: {exc}"


def save_settings(home: Path, settings: Settings) -> None:
    home.mkdir(parents=True, exist_ok=True)
    path = home / "settings.json"
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(settings.model_dump_json(indent=2), encoding="utf-8")
    os.replace(tmp, path)
