"""The seal on settings that widen Chamberlain's reach: a change made outside it is not acted on.

Some settings decide what runs and where data goes: each MCP server (`mcp.servers.<name>`: a
program Chamberlain starts), `tools.unsandboxed_commands`, `tools.command_roots`, the model
endpoint (`llm.url`, and `llm.api_key_env`, whose variable is sent to it), the hosts that may see
more (`memory.allow_remote`, `web.allow_private`, `web.searxng_url`), the tool profile (`profile`)
and the policy's per-intent changes (`policy.intents`). Their last confirmed values live in
`settings.seal.json` beside settings.json, each with a MAC: HMAC-SHA256 under a key derived from
the install secret (`derive_key(secret, SEAL_KEY_PURPOSE)`, never the raw secret) over the
setting's name and value, so a MAC copied from another entry, or made without the secret, does not
match. Chamberlain's own saves (the Settings window, `chamberlain models use`, the CLI's
`settings confirm`) seal what they write.

When settings.json is read, each sealed setting whose value differs from its confirmed one (the
default, when none was ever confirmed) is a `PendingChange`: the confirmed value stays in use, and
the front ends say so until the person confirms or discards it. A change that only narrows reach
applies at once with no confirmation: a server removed or disabled, unsandboxed commands turned
off, fewer entries in a list of hosts or folders, a model on this machine (the embedded one, or
a server on loopback, which "auto" would use anyway) instead of one elsewhere. Every
other setting (timeouts, limits, how much is shown) carries no MAC and applies as the file says.

The environment (`CHAMBERLAIN_SECTION__KEY`) is the person's own shell for this one start: it
overrides the file, sealed keys included, and is not sealed (a planted shell profile is a startup
place, guarded elsewhere).

This module must never write settings.json, never take an unverified entry as confirmed, and
never log or return the key.
"""

from __future__ import annotations

import contextlib
import copy
import hashlib
import hmac
import json
import logging
import os
import secrets
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from broker.filelock import held, keep_folder_owner

log = logging.getLogger("chamberlain.broker.settings_seal")

SEAL_FILE = "settings.seal.json"
SEAL_KEY_PURPOSE = "settings seal v1"
SEAL_VERSION = 1
# A seal lists a few dozen settings; anything past this is not one.
MAX_SEAL_BYTES = 4 * 1024 * 1024

SERVERS = "mcp.servers"
# The sealed settings besides each MCP server, as dotted paths into the settings' JSON.
SEALED_KEYS: tuple[str, ...] = (
    "llm.url",
    "llm.api_key_env",
    "tools.unsandboxed_commands",
    "tools.command_roots",
    "memory.allow_remote",
    "web.allow_private",
    "web.searxng_url",
    "policy.intents",
    # Another weight file reads messages as other intents, so other tools are offered.
    "router.intent_weights",
    "profile",
)
# Lists whose fewer entries only narrow reach.
_HOST_LISTS = frozenset({"tools.command_roots", "memory.allow_remote", "web.allow_private"})
# Model endpoints that keep everything on this machine.
_LOCAL_MODELS = frozenset({"auto", "embedded", "none"})
# The profile's fields that are sets: their order in the file means nothing.
_SET_FIELDS = frozenset({"add_categories", "remove_categories", "add_tools", "deny_tools"})


class _Missing:
    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()


def seal_key(secret: bytes) -> bytes:
    """The key of the seal's MACs, derived from the install secret for this purpose only."""
    from broker.keys import derive_key

    return derive_key(secret, SEAL_KEY_PURPOSE)


@dataclass(frozen=True)
class PendingChange:
    """A sealed setting that settings.json changed outside Chamberlain, not acted on yet.

    `key` is the dotted path ("mcp.servers.notes", "tools.unsandboxed_commands"); `value` is what
    the file says (MISSING: the file dropped it); `in_use` the value used meanwhile (MISSING: no
    such server); `confirmed` whether `in_use` was ever confirmed (else it is the default)."""

    key: str
    value: Any
    in_use: Any
    confirmed: bool

    @property
    def kind(self) -> str:
        if self.in_use is MISSING:
            return "added"
        if self.value is MISSING:
            return "removed"
        return "changed"

    def describe(self) -> str:
        """One line naming the change in full: a server's whole command line, a list's items."""
        if self.key.startswith(SERVERS + "."):
            name = self.key[len(SERVERS) + 1 :]
            what = describe_server(self.value) if self.value is not MISSING else ""
            if self.kind == "added":
                return f"MCP server {name!r} added: {what}"
            if self.kind == "removed":
                return f"MCP server {name!r} removed"
            return f"MCP server {name!r} changed to: {what}"
        if self.key == "tools.unsandboxed_commands" and self.value is True:
            return "tools.unsandboxed_commands turned on (commands would run with no sandbox)"
        if self.value is MISSING:
            return f"{self.key} removed (was {_shown(self.in_use)})"
        return f"{self.key} set to {_shown(self.value)} (in use: {_shown(self.in_use)})"

    def as_dict(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "kind": self.kind,
            "value": None if self.value is MISSING else self.value,
            "in_use": None if self.in_use is MISSING else self.in_use,
            "confirmed": self.confirmed,
            "description": self.describe(),
        }


def describe_server(entry: Any) -> str:
    """An MCP server's entry as one line: its full command line (or URL), environment and
    folder, nothing cut."""
    if not isinstance(entry, Mapping):
        return _shown(entry)
    if entry.get("url"):
        text = f"the URL {entry['url']}"
    else:
        import shlex

        argv = [str(entry.get("command") or "")] + [str(a) for a in entry.get("args") or ()]
        text = f"the command {shlex.join(argv)}"
    env = entry.get("env") or {}
    if env:
        text += " with " + " ".join(f"{k}={v}" for k, v in sorted(env.items()))
    if entry.get("cwd"):
        text += f" in {entry['cwd']}"
    if entry.get("enabled") is False:
        text += " (disabled)"
    from tools.mcp.config import McpServerConfig

    fields = McpServerConfig.model_fields
    shown = ("command", "args", "env", "url", "cwd", "enabled")
    rest = {
        k: v
        for k, v in entry.items()
        if k not in shown
        and not (k in fields and not fields[k].is_required() and v == _default_of(fields[k]))
    }
    if rest:
        text += f"; its other settings: {_shown(rest)}"
    return text


def _default_of(info: Any) -> Any:
    value = info.get_default(call_default_factory=True)
    return list(value) if isinstance(value, tuple) else value


def _shown(value: Any) -> str:
    if value is MISSING:
        return "nothing"
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


# --- paths into the settings' JSON --------------------------------------------------------------


def get_path(data: Mapping[str, Any], key: str) -> Any:
    node: Any = data
    for part in _parts(key):
        if not isinstance(node, Mapping) or part not in node:
            return MISSING
        node = node[part]
    return node


def set_path(data: dict[str, Any], key: str, value: Any) -> None:
    parts = _parts(key)
    node = data
    for part in parts[:-1]:
        child = node.get(part)
        if not isinstance(child, dict):
            child = node[part] = {}
        node = child
    if value is MISSING:
        node.pop(parts[-1], None)
    else:
        node[parts[-1]] = copy.deepcopy(value)


def _parts(key: str) -> list[str]:
    # A server's name may hold dots; it is everything after "mcp.servers.".
    if key.startswith(SERVERS + "."):
        return ["mcp", "servers", key[len(SERVERS) + 1 :]]
    return key.split(".")


def sealed_keys(*datas: Mapping[str, Any]) -> list[str]:
    """Every sealed path the given settings (normalised JSON) and seals name."""
    names: dict[str, None] = {}
    for data in datas:
        servers = get_path(data, SERVERS)
        if isinstance(servers, Mapping):
            names.update(dict.fromkeys(servers))
    return list(SEALED_KEYS) + [f"{SERVERS}.{name}" for name in names]


def canonical(key: str, value: Any) -> Any:
    """`value` in one spelling: a profile's sets sorted (their order means nothing)."""
    if key == "profile" and isinstance(value, Mapping):
        return {
            k: sorted(v) if k in _SET_FIELDS and isinstance(v, list) else v
            for k, v in value.items()
        }
    return value


def same(key: str, a: Any, b: Any) -> bool:
    if a is MISSING or b is MISSING:
        return a is b
    return _body(key, a) == _body(key, b)


def _body(key: str, value: Any) -> str:
    return json.dumps(
        {"key": key, "value": canonical(key, value)},
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=True,
    )


def narrows(key: str, value: Any, baseline: Any) -> bool:
    """Whether `value` (the file's) only narrows what `baseline` (the confirmed one, or the
    default) reaches, so it may apply with no confirmation."""
    if key.startswith(SERVERS + "."):
        # A server gone narrows; so does the confirmed entry turned off, and only that: a
        # disabled entry with anything else changed is still started by `mcp test` and turned
        # on with one tick in Settings, so what it would run waits for confirmation.
        if value is MISSING:
            return True
        if not isinstance(value, Mapping) or value.get("enabled") is not False:
            return False
        if not isinstance(baseline, Mapping):
            return False
        return same(key, {**value, "enabled": True}, {**baseline, "enabled": True})
    if key == "tools.unsandboxed_commands":
        return value is False
    if key in _HOST_LISTS:
        return (
            isinstance(value, list)
            and isinstance(baseline, list)
            and all(item in baseline for item in value)
        )
    if key == "llm.url":
        # A server on loopback is what "auto" would find anyway; any other host sees every
        # conversation.
        from broker.llm.endpoints import is_loopback_url

        return isinstance(value, str) and (
            value.strip().lower() in _LOCAL_MODELS or is_loopback_url(value)
        )
    if key in ("web.searxng_url", "router.intent_weights"):
        return value is None
    return False


# --- comparing the file with the seal ------------------------------------------------------------


@dataclass(frozen=True)
class SealCheck:
    """What the file's sealed settings come to: the settings to use and what waits."""

    effective: dict[str, Any]
    pending: tuple[PendingChange, ...]


def check(
    file_data: Mapping[str, Any], defaults: Mapping[str, Any], confirmed: Mapping[str, Any]
) -> SealCheck:
    """`file_data` (the file's settings, normalised JSON, no environment) with every sealed
    setting that was changed outside Chamberlain put back to its confirmed value (`confirmed`:
    the seal's verified entries), or its default (`defaults`) when none was ever confirmed."""
    effective = copy.deepcopy(dict(file_data))
    pending: list[PendingChange] = []
    for key in sealed_keys(file_data):
        value = get_path(file_data, key)
        was = key in confirmed
        if key.startswith(SERVERS + "."):
            baseline = confirmed.get(key, MISSING)
        else:
            baseline = confirmed[key] if was else get_path(defaults, key)
            if value is MISSING:
                value = get_path(defaults, key)
        if same(key, value, baseline) or narrows(key, value, baseline):
            continue
        set_path(effective, key, baseline)
        pending.append(PendingChange(key, value, baseline, was))
    return SealCheck(effective, tuple(pending))


# --- the seal file ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Seal:
    """The seal as read: verified entries, and the names of the ones that are not."""

    confirmed: dict[str, Any]
    untrusted: tuple[str, ...] = ()
    problem: str | None = None


def read_seal(home: Path, key: bytes | None) -> Seal:
    """The verified entries of `home/settings.seal.json`. A missing file is an empty seal; an
    unreadable or damaged one confirms nothing (and says why); an entry whose MAC is missing or
    wrong is left out and named in `untrusted`."""
    path = home / SEAL_FILE
    try:
        with path.open("rb") as handle:
            raw = handle.read(MAX_SEAL_BYTES + 1)
    except FileNotFoundError:
        return Seal({})
    except OSError as exc:
        return Seal({}, problem=f"cannot read {path} ({exc.strerror or exc})")
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError):
        return Seal({}, problem=f"{path} is not a seal Chamberlain wrote")
    entries = data.get("entries") if isinstance(data, dict) else None
    if len(raw) > MAX_SEAL_BYTES or not isinstance(entries, dict):
        return Seal({}, problem=f"{path} is not a seal Chamberlain wrote")
    confirmed: dict[str, Any] = {}
    untrusted: list[str] = []
    for name, entry in entries.items():
        if key is not None and isinstance(entry, dict) and _verified(key, name, entry):
            confirmed[name] = entry["value"]
        else:
            untrusted.append(str(name))
    if untrusted:
        log.warning("ignored seal entries Chamberlain did not write: %s", ", ".join(untrusted))
    return Seal(confirmed, tuple(untrusted))


def _mac(key: bytes, name: str, value: Any) -> str:
    return hmac.new(key, _body(name, value).encode("ascii"), hashlib.sha256).hexdigest()


def _verified(key: bytes, name: str, entry: Mapping[str, Any]) -> bool:
    mac = entry.get("mac")
    if not isinstance(mac, str) or "value" not in entry:
        return False
    expected = _mac(key, name, entry["value"]).encode()
    return hmac.compare_digest(expected, mac.encode("utf-8", "surrogatepass"))


def write_seal(home: Path, key: bytes, confirmed: Mapping[str, Any]) -> None:
    """Replace the seal with `confirmed` (each entry signed), atomically: a private temporary
    file, fsynced, renamed over it."""
    entries = {
        name: {"value": canonical(name, value), "mac": _mac(key, name, value)}
        for name, value in sorted(confirmed.items())
    }
    text = json.dumps({"version": SEAL_VERSION, "entries": entries}, indent=2, ensure_ascii=False)
    path = home / SEAL_FILE
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        # `sudo chamberlain settings confirm` in someone's home: the seal stays theirs.
        keep_folder_owner(fd, home)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text + "\n")
            handle.flush()
            # A confirmation is a decision the person made: it must survive a crash.
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


@contextlib.contextmanager
def changing(home: Path) -> Iterator[None]:
    """The exclusive lock every change of settings.json and its seal is made under (a save, a
    confirm, a discard), so two Chamberlains saving at once never leave a file and a seal that
    disagree (`settings.json.lock`; never removed, see broker.filelock)."""
    home.mkdir(parents=True, exist_ok=True)
    fd = os.open(home / "settings.json.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        keep_folder_owner(fd, home)
        with held(fd, shared=False):
            yield
    finally:
        os.close(fd)


def confirmed_after_save(
    saved: Mapping[str, Any], kept_pending: Iterable[str], previous: Mapping[str, Any]
) -> dict[str, Any]:
    """The seal after Chamberlain saved `saved` (normalised JSON): every sealed setting as saved,
    except those left pending in the file (`kept_pending`), which keep their earlier entry."""
    kept = set(kept_pending)
    result: dict[str, Any] = {}
    for key in sealed_keys(saved, previous):
        if key in kept:
            if key in previous:
                result[key] = previous[key]
            continue
        value = get_path(saved, key)
        if value is not MISSING:
            result[key] = value
    return result
