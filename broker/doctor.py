"""`chamberlain doctor`: what works on this machine, checked for real, in plain words.

Each check is cheap and has no side effect beyond creating the home directory and the token
secret (which the first real use would create anyway). The only network access is the model
endpoint probe on loopback (or the URL the user configured).
"""

from __future__ import annotations

import importlib.util
import platform
from dataclasses import dataclass
from pathlib import Path

from broker.audit.verify import verify
from broker.keys import load_install_secret, recorded_keying
from broker.llm.base import ChatModel, ModelError
from broker.policy import PolicyError, load_policy_table
from broker.runner import SelfTestError, self_test
from broker.settings import Settings, SettingsError, load_settings, read_settings
from core.errors import ChamberlainError, Remedy
from tools.registry import builtin_registry


@dataclass
class Check:
    name: str
    ok: bool
    detail: str
    # A failed required check makes `doctor` exit 1; optional ones only inform.
    required: bool = True
    # What a person does to make a failed check pass (a structured hint the front end words).
    fix: str = ""
    # What a person can do, when a front end words it (a CLI command, a window): after `detail`.
    remedy: Remedy | None = None


def _home(home: Path) -> Check:
    try:
        home.mkdir(parents=True, exist_ok=True)
        probe = home / ".doctor-probe"
        probe.write_text("ok")
        probe.unlink()
    except OSError as exc:
        return Check("home", False, f"{home} is not writable: {exc}")
    return Check("home", True, str(home))


def _settings(home: Path) -> Check:
    try:
        load_settings(home)
    except SettingsError as exc:
        return Check("settings", False, str(exc), remedy=exc.remedy)
    # Changes made outside Chamberlain to sealed settings (broker.settings_seal) are not used.
    loaded = read_settings(home)
    if loaded.pending or loaded.seal_problem:
        waiting = "; ".join(c.describe() for c in loaded.pending)
        detail = " ".join(
            part
            for part in (
                f"changed outside Chamberlain and not used until confirmed: {waiting};"
                if waiting
                else "",
                f"{loaded.seal_problem};" if loaded.seal_problem else "",
            )
            if part
        )
        return Check("settings", False, detail.rstrip(";"), remedy=Remedy.REVIEW_SETTINGS)
    return Check("settings", True, "defaults" if not (home / "settings.json").exists() else "ok")


def _self_test() -> Check:
    try:
        registry = builtin_registry()
        self_test(registry, load_policy_table())
    except (SelfTestError, PolicyError) as exc:
        return Check("policy self-test", False, str(exc))
    return Check("policy self-test", True, f"{len(registry.names())} tools, all covered")


def _secret(home: Path) -> Check:
    try:
        secret = load_install_secret(home)
    except (OSError, ValueError) as exc:
        remedy = exc.remedy if isinstance(exc, ChamberlainError) else None
        return Check("token secret", False, f"cannot load the token secret: {exc}", remedy=remedy)
    return Check(
        "token secret",
        True,
        secret.source if secret.in_keyring else f"fallback: {secret.source}",
    )


def _embedded(model: ChatModel) -> Check:
    """The embedded model, run for real: its worker finds the llama.cpp CPU build that runs on
    this processor with a real prompt of a few hundred tokens (what crashed is skipped)."""
    from broker.llm.embedded import EmbeddedChatModel

    advice = (
        "A larger local model gives better answers: start Ollama or LM Studio and Chamberlain "
        "uses it (or set llm.url)."
    )
    if not isinstance(model, EmbeddedChatModel):
        detail = f"embedded: {model.name}, offline. {advice}"
        return Check("model backend", True, detail, required=False)
    try:
        report = model.probe()
    except ModelError as exc:
        return Check("model backend", False, f"embedded: {model.name}: {exc}", required=False)
    finally:
        model.close()
    build = (
        f"llama.cpp's {report.variant} CPU build (of {len(report.installed)} installed)"
        if report.variant
        else "llama.cpp"
    )
    crashed = (
        "; crashed here: " + ", ".join(f"{n} ({why})" for n, why in sorted(report.failed.items()))
        if report.failed
        else ""
    )
    return Check(
        "model backend",
        True,
        f"embedded: {model.name}, offline; {build} answered a {report.tokens}-token probe in "
        f"{report.seconds:.1f} s{crashed}. {advice}",
        required=False,
    )


def _model(home: Path, url: str | None) -> Check:
    """The backend a turn would use now, named: a local or hosted server, the embedded model, or
    none and why. Nothing is contacted but the usual loopback ports ("auto")."""
    from broker.llm.endpoints import InvalidEndpoint
    from broker.session import connect_model

    try:
        # What the app and `ask` use: a broken settings.json's broken keys at their defaults.
        settings = read_settings(home).settings
    except SettingsError:
        settings = Settings()
    setting = url or settings.llm.url
    if setting == "none":
        return Check(
            "model backend", False, "disabled", required=False, remedy=Remedy.MODEL_TURNED_OFF
        )
    try:
        choice = connect_model(settings, url, home=home)
    except InvalidEndpoint as exc:
        return Check("model backend", False, str(exc), required=False)
    model = choice.model
    if model is None:
        # What to do is the remedy the front end words after it: the choice's own (name a
        # model the server has), else start a server or name one.
        return Check(
            "model backend",
            False,
            choice.problem or "",
            required=False,
            remedy=choice.remedy or Remedy.START_MODEL,
        )
    if model.is_embedded:
        return _embedded(model)
    where = getattr(model, "base_url", "")
    name = model.name or "the server's default model"
    return Check("model backend", True, f"{name} at {where}", required=False)


def _audit(home: Path) -> Check:
    try:
        key: bytes | None = load_install_secret(home).audit_key
    except (OSError, ValueError):
        key = None  # the secret check above says what is wrong with it
    result = verify(home / "audit.jsonl", key=key)
    if result.ok:
        signed = ", head signed" if key is not None and result.lines else ""
        return Check("audit log", True, f"{result.lines} lines, chain intact{signed}")
    where = f"line {result.first_bad_line}: " if result.first_bad_line is not None else ""
    return Check("audit log", False, f"{where}{result.reason}")


def _grants(home: Path) -> Check:
    from broker.permissions import GrantStore, PermissionStoreError
    from core.clock import SystemClock

    try:
        key = load_install_secret(home).grants_key
        store = GrantStore(home / "grants.json", SystemClock(), key=key)
    except (OSError, ValueError, PermissionStoreError) as exc:
        return Check("saved grants", False, str(exc))
    if store.problems:
        return Check("saved grants", False, "; ".join(store.problems))
    return Check("saved grants", True, f"{len(store)} saved, each signed by this install")


def _memory(home: Path) -> Check:
    from broker.keys import PASSPHRASE_ENV, MemoryKeyUnavailable
    from broker.memory_hooks import open_memory
    from core.clock import SystemClock
    from memory.db import MemoryStoreError

    try:
        settings = read_settings(home).settings
        store = open_memory(home, settings.memory, SystemClock())
    except MemoryKeyUnavailable as exc:
        if not exc.needs_passphrase:
            return Check("memory", False, str(exc), required=False)
        # The doctor never prompts, terminal or not: say what it did not do, and how to let it.
        if recorded_keying(home) == "passphrase":
            detail = (
                "encrypted with a passphrase, which the doctor does not ask for, so it was not "
                f"opened and its integrity was not checked (give it in {PASSPHRASE_ENV} to "
                "check it here)"
            )
        else:
            detail = (
                "no system keyring here, so memory is encrypted with a passphrase: it is asked "
                "for (typed twice, the first time) when a request first needs memory, or read "
                f"from {PASSPHRASE_ENV}"
            )
        return Check("memory", False, detail, required=False)
    except (MemoryStoreError, SettingsError) as exc:
        return Check("memory", False, str(exc), required=False)
    try:
        integrity = store.integrity_check()
        facts = store.count()
        keyed = recorded_keying(home) or "unknown"
    finally:
        store.close()
    how = {
        "keyring": "encrypted, key in the keyring",
        "passphrase": "encrypted, passphrase",
        "none": "NOT encrypted (memory.encryption = off)",
    }.get(keyed, keyed)
    ok = integrity == "ok"
    return Check("memory", ok, f"{how}; {facts} facts; integrity {integrity}", required=False)


def _tray() -> Check:
    if importlib.util.find_spec("PySide6") is None:
        return Check("tray app", False, "PySide6 is not installed in this build", required=False)
    return Check("tray app", True, "PySide6 available", required=False)


def run_checks(home: Path, llm_url: str | None = None) -> list[Check]:
    return [
        Check("python", True, f"{platform.python_version()} on {platform.platform()}", False),
        _home(home),
        _settings(home),
        _self_test(),
        _secret(home),
        _audit(home),
        _grants(home),
        _memory(home),
        _model(home, llm_url),
        _intent_model(home),
        *_tool_checks(home),
        *_mcp(home),
        _tray(),
    ]


def _intent_model(home: Path) -> Check:
    """The learned intent classifier's weights, loaded as a turn loads them; optional: without
    them the rules route alone."""
    from broker.router.classifier import classifier_problem

    try:
        weights = read_settings(home).settings.router.intent_weights
    except SettingsError:
        weights = None
    problem = classifier_problem(weights)
    if problem is None:
        return Check("intent model", True, str(weights or "shipped weights"), required=False)
    why = "the weights do not match this version's intents" if problem.mismatch else problem.detail
    return Check("intent model", False, f"{why}; routing by rules", required=False)


def _mcp(home: Path) -> list[Check]:
    """Each configured MCP server, connected for real (in parallel, within each one's connect
    timeout) and then disconnected; optional: a server that fails only loses its tools."""
    try:
        servers = read_settings(home).settings.mcp.servers
    except SettingsError:
        return []
    if not servers:
        return []
    from tools.registry import ToolRegistry, mcp_hub

    hub = mcp_hub(home, servers, ToolRegistry(), remember_failures=False)
    try:
        hub.ensure()
        statuses = hub.status()
    finally:
        hub.close()
    return [
        Check(
            f"MCP server {status.name}",
            status.state in ("connected", "disabled"),
            f"{status.summary()} ({status.transport})"
            + (f"; it {status.sandbox}" if status.sandbox else ""),
            required=False,
        )
        for status in statuses
    ]


def _tool_checks(home: Path) -> list[Check]:
    """Each tool group reports on itself (`Tool.health`): the doctor knows no tool."""
    from broker.session import tool_config

    try:
        settings = read_settings(home).settings
    except SettingsError:
        settings = Settings()
    checks: list[Check] = []
    for tool in builtin_registry(tool_config(home, settings)):
        if tool.health is not None:
            checks.extend(Check(c.name, c.ok, c.detail, c.required, c.fix) for c in tool.health())
    return checks
