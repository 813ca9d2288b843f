"""`chamberlain mcp list | tools [NAME] | test NAME`: the user's MCP servers, from the terminal.

What is configured (settings.json `mcp.servers`), whether each server connects, which tools it
offers, how Chamberlain classified each one and which intents would show it. Headless like the
rest of the CLI: no Qt here.

It must never leave a server's program running: every command connects through one `McpHub`
and closes it on the way out, whatever ends the command (an error, Ctrl-C, SIGTERM or SIGHUP).
Nothing here runs a server's tool: connecting lists the tools, and that is all.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from app.terminal import json_text
from core.errors import UsageError

if TYPE_CHECKING:
    from broker.settings import Settings
    from tools.mcp.config import McpServerConfig
    from tools.mcp.failures import McpLeftOut
    from tools.mcp.hub import McpHub, ServerStatus

EXIT_OK, EXIT_FAILED = 0, 1

# What `mcp list` suggests when no server is configured: the shape other MCP clients use.
EXAMPLE = {
    "mcp": {
        "servers": {
            "notes": {
                "command": "npx",
                "args": ["-y", "@modelcontextprotocol/server-filesystem", "/home/you/notes"],
                "env": {},
            }
        }
    }
}


class McpUsageError(UsageError):
    """The command line names something that is not there (a server); the message says what is."""


def _emit(data: Any, as_json: bool, text: str) -> None:
    if as_json:
        sys.stdout.write(json_text(data, indent=2) + "\n")
    else:
        sys.stdout.write(text + "\n")


class _Ended(BaseException):
    """SIGTERM or SIGHUP arrived: unwind (closing the hub) and exit with 128 + the signal."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


@contextmanager
def _hub(servers: dict[str, McpServerConfig], home: Path) -> Iterator[McpHub]:
    """A hub for `servers` whose tools go into a registry of the builtin tools, closed on the
    way out however the command ends. A terminal closed or a `kill` unwinds through here too,
    so the servers' programs (in process groups of their own, out of reach of the terminal's
    signals) end with the command. Failed connections are read from and written to the home's
    record, as `chamberlain ask` does: `list` does not wait again for a server that just failed,
    and `test` (which always tries) clears it when the server connects."""
    from tools.mcp.failures import FailureBook
    from tools.mcp.hub import McpHub
    from tools.mcp.sandbox import ServerPlaces
    from tools.registry import builtin_registry

    def end(signum: int, _frame: object) -> None:
        raise _Ended(signum)

    previous = {sig: signal.signal(sig, end) for sig in (signal.SIGTERM, signal.SIGHUP)}
    previous[signal.SIGINT] = signal.getsignal(signal.SIGINT)
    try:
        failures = FailureBook.in_home(home) if home.is_dir() else None
        places = ServerPlaces.for_install(home)
        hub = McpHub(servers, builtin_registry(), failures=failures, places=places)
        try:
            yield hub
        finally:
            # Closing is bounded (each server gets a few seconds, then its group is killed,
            # connected or still connecting); a second Ctrl-C or kill meanwhile would leave the
            # programs running instead.
            for sig in previous:
                signal.signal(sig, signal.SIG_IGN)
            hub.close()
    except _Ended as ended:
        raise SystemExit(128 + ended.signum) from None
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _servers(settings: Settings) -> dict[str, McpServerConfig]:
    return dict(settings.mcp.servers)


def _pick(servers: dict[str, McpServerConfig], name: str) -> McpServerConfig:
    if name in servers:
        return servers[name]
    if servers:
        known = ", ".join(sorted(servers))
        raise McpUsageError(f"no MCP server named {name!r}; configured: {known}")
    raise McpUsageError(
        f"no MCP server named {name!r}: none are configured (see `chamberlain mcp list`)"
    )


def _server_data(config: McpServerConfig, status: ServerStatus) -> dict[str, Any]:
    return {
        "name": status.name,
        "enabled": config.enabled,
        "transport": config.transport,
        "endpoint": config.describe(),
        "state": status.state,
        "status": _summary(config, status),
        "server_info": status.server_info,
        "error": status.last_error if status.state == "failed" else None,
        "tools": list(status.tools),
        "skipped": [_skipped(entry) for entry in status.skipped],
        # What the server's program may reach (its sandbox), in words; None for HTTP.
        "sandboxed": status.sandboxed,
        "sandbox": status.sandbox,
    }


def _summary(config: McpServerConfig, status: ServerStatus) -> str:
    if status.state == "disabled":
        return "disabled (enabled: false in settings.json)"
    if status.state in ("idle", "connecting"):
        # ensure() waited out the connect timeout and the attempt has still not ended.
        return f"no answer within {config.connect_timeout_s:g} s"
    if status.remembered:
        # Not tried now: an earlier command recorded the failure.
        now = time.time()
        ago = _span(now - status.failed_at) if status.failed_at is not None else "lately"
        again = (
            f"; tried again by itself in {_span(status.retry_at - now)}"
            if status.retry_at is not None and status.retry_at > now
            else ""
        )
        return (
            f"failed {ago} ago, not tried now: {status.last_error or 'it did not connect'}"
            f"{again}, or now with `chamberlain mcp test {status.name}`"
        )
    return status.summary()


def _span(seconds: float) -> str:
    """A short span for a person: "40 s", "3 min", "2 h"."""
    seconds = max(seconds, 0.0)
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.0f} h"


def left_out_line(notice: McpLeftOut, retry: str | None = None) -> str:
    """A turn's notice that a server's tools were left out, as the terminal says it; `retry`
    names how to try the server again (the chat window names Settings' Test)."""
    name = notice.server
    retry = retry or f"`chamberlain mcp test {name}`"
    if notice.kind == "timeout":
        now_said, then_said = "did not answer at start", "did not answer when it was last started"
        why = f"timed out after {notice.connect_timeout_s:g} s"
    else:
        what = _FAILED.get(notice.kind, "failed to connect")
        now_said, then_said, why = what, f"{what} last time", notice.detail
    if not notice.earlier:
        said = f"{now_said} ({why})" if why else now_said
        return (
            f"the MCP server '{name}' {said}; its tools were left out of this request — "
            f"{retry} tries again"
        )
    now = time.time()
    parts = [f"{_span(now - notice.failed_at)} ago"] if notice.failed_at is not None else []
    parts += [why] if why else []
    said = f"{then_said} ({', '.join(parts)})" if parts else then_said
    again = (
        f"it is tried again by itself in {_span(notice.retry_at - now)}, or now with {retry}"
        if notice.retry_at is not None and notice.retry_at > now
        else f"{retry} tries again"
    )
    return (
        f"the MCP server '{name}' {said}, so this request did not wait for it and its tools "
        f"were left out — {again}"
    )


# How a failed start is said, by its kind (a timeout is said with its time).
_FAILED = {
    "not_started": "could not be started",
    "unreachable": "could not be reached",
    "stopped": "stopped as it started",
    "flooded": "was stopped as it started",
}


def _skipped(entry: str) -> dict[str, str]:
    """`remote: why` as the hub records a tool it does not offer."""
    tool, _, why = entry.partition(": ")
    return {"tool": tool, "why": why}


# --- mcp list -----------------------------------------------------------------------------------


def _list(args: argparse.Namespace, home: Path, settings: Settings) -> int:
    servers = _servers(settings)
    if not servers:
        text = (
            f'No MCP servers are configured. Add one under "mcp" in {home / "settings.json"}, '
            "in the shape other MCP clients use:\n"
            f"  {json.dumps(EXAMPLE)}\n"
            'or, for a server already running on this computer: {"url": '
            '"http://127.0.0.1:PORT/mcp"}\n'
            "Then `chamberlain mcp list` shows whether it connects."
        )
        _emit([], args.json, text)
        return EXIT_OK
    with _hub(servers, home) as hub:
        hub.ensure()  # every enabled server at once, each bounded by its connect timeout
        statuses = hub.status()
    data = [_server_data(servers[s.name], s) for s in statuses]
    lines: list[str] = []
    for entry in data:
        info = f" ({entry['server_info']})" if entry["server_info"] else ""
        skipped = len(entry["skipped"])
        more = (
            f"; {skipped} not offered (`chamberlain mcp tools {entry['name']}`)" if skipped else ""
        )
        lines.append(f"{entry['name']}: {entry['status']}{info}{more}")
        lines.append(f"    {entry['transport']}: {entry['endpoint']}")
        if entry["sandbox"]:
            lines.append(f"    it {entry['sandbox']}")
    _emit(data, args.json, "\n".join(lines))
    return EXIT_OK


# --- mcp tools ----------------------------------------------------------------------------------


def _tools(args: argparse.Namespace, home: Path, settings: Settings) -> int:
    from broker.policy import decide, load_policy_table
    from broker.profiles import load_profiles, resolve
    from broker.types import RouterOutput
    from tools.mcp.hub import McpToolManual

    servers = _servers(settings)
    names = sorted(servers)
    if args.name is not None:
        config = _pick(servers, args.name)
        if not config.enabled:
            sys.stderr.write(
                f"chamberlain: the MCP server {args.name!r} is disabled (enabled: false in "
                f"settings.json), so none of its tools is offered; `chamberlain mcp test "
                f"{args.name}` connects it anyway to try it\n"
            )
            return EXIT_FAILED
        names = [args.name]
    if not servers:
        _emit({"profile": settings.profile.name, "servers": []}, args.json, _NONE_CONFIGURED)
        return EXIT_OK

    with _hub(servers, home) as hub:
        hub.ensure(names=names)
        statuses = [hub.server_status(n) for n in names]
        manuals = {tool.name: tool.manual for tool in hub.registry}
    table = load_policy_table()
    capabilities = {name: manual.capability for name, manual in manuals.items()}
    mcp_classes = {n: m.category for n, m in manuals.items() if m.source == "mcp"}
    # Which intents show each tool, by the policy table and the user's policy overrides; the
    # tool profile is applied apart, so the listing can say which of the two leaves a tool out.
    shown_by: dict[str, list[str]] = {}
    for intent in table.intents:
        decision = decide(
            RouterOutput(intent=intent), table, capabilities, settings.policy, mcp_tools=mcp_classes
        )
        for name in decision.allowed_tools:
            shown_by.setdefault(name, []).append(intent.value)
    profile = resolve(settings.profile.name, load_profiles(), manuals, settings.profile)

    servers_data: list[dict[str, Any]] = []
    for status in statuses:
        entry = _server_data(servers[status.name], status)
        tools: list[dict[str, Any]] = []
        for name in status.tools:
            manual = manuals.get(name)
            if not isinstance(manual, McpToolManual):
                continue
            left_out = None if name in profile.tools else profile.dropped.get(name, "not in it")
            intents = shown_by.get(name, [])
            tools.append(
                {
                    "name": name,
                    "remote": manual.extra_remote,
                    "class": manual.category,
                    "capability": manual.capability.value,
                    "risk": manual.risk,
                    "why": manual.why,
                    "description": manual.description,
                    "intents": intents,
                    "left_out_by_profile": left_out,
                    "shown_for": [] if left_out else intents,
                }
            )
        entry["tools"] = tools
        servers_data.append(entry)
    data = {"profile": profile.profile, "servers": servers_data}
    _emit(data, args.json, _tools_text(data))
    failed = [s for s in servers_data if s["state"] != "connected"]
    if args.name is not None and failed:
        sys.stderr.write(f"chamberlain: the MCP server {args.name!r}: {failed[0]['status']}\n")
        return EXIT_FAILED
    return EXIT_OK


_NONE_CONFIGURED = "No MCP servers are configured (`chamberlain mcp list` says how to add one)."


def _tools_text(data: dict[str, Any]) -> str:
    profile = data["profile"]
    lines: list[str] = []
    for server in data["servers"]:
        lines.append(f"{server['name']}: {server['status']}")
        for tool in server["tools"]:
            lines.append(
                f"  {tool['name']}  (the server's {tool['remote']})  {tool['class']}, "
                f"{tool['capability']}, risk {tool['risk']}"
            )
            lines.append(f"      why {tool['class']}: {tool['why']}")
            if tool["left_out_by_profile"]:
                lines.append(
                    f"      shown for: none; the tool profile {profile!r} leaves it out: "
                    f"{tool['left_out_by_profile']}"
                )
            else:
                lines.append(f"      shown for: {', '.join(tool['intents']) or 'no intent'}")
        if server["skipped"]:
            lines.append("  not offered:")
            lines.extend(f"    {s['tool']}: {s['why']}" for s in server["skipped"])
    return "\n".join(lines)


# --- mcp test -----------------------------------------------------------------------------------


def _test(args: argparse.Namespace, home: Path, settings: Settings) -> int:
    servers = _servers(settings)
    config = _pick(servers, args.name)
    # Trying a disabled server is how one finds out whether to enable it: this connects it
    # (and only it) for the test, and nothing is offered to a turn.
    trial = config if config.enabled else config.model_copy(update={"enabled": True})
    with _hub({args.name: trial}, home) as hub:
        started = time.monotonic()
        status = hub.test(args.name)
        seconds = time.monotonic() - started
    data = _server_data(config, status)
    ok = status.state == "connected"
    data.update(ok=ok, seconds=round(seconds, 3), status=_summary(trial, status))
    note = "" if config.enabled else " (disabled in settings.json; connected only for this test)"
    if ok:
        info = f", server {status.server_info}" if status.server_info else ""
        text = (
            f"{args.name}: connected in {seconds:.2f} s, {len(status.tools)} tool"
            f"{'' if len(status.tools) == 1 else 's'}{info}{note}"
        )
        if status.sandbox:
            text += f"\n    it {status.sandbox}"
        _emit(data, args.json, text)
        return EXIT_OK
    text = f"{args.name}: {data['status']} (after {seconds:.2f} s){note}"
    if args.json:
        _emit(data, True, text)
    sys.stderr.write(f"chamberlain: MCP server {text}\n")
    return EXIT_FAILED


# --- wiring -------------------------------------------------------------------------------------

_HANDLERS: dict[str, Callable[[argparse.Namespace, Path, Settings], int]] = {
    "list": _list,
    "tools": _tools,
    "test": _test,
}


def cmd_mcp(args: argparse.Namespace, home: Path) -> int:
    from app.settings_notice import settings_for_reading

    return _HANDLERS[args.mcp_cmd](args, home, settings_for_reading(home))


def add_mcp_parser(sub: Any, common: argparse.ArgumentParser, parser_class: type) -> Any:
    mcp = sub.add_parser(
        "mcp", parents=[common], help="the MCP servers in settings.json and their tools"
    )
    msub = mcp.add_subparsers(dest="mcp_cmd", required=True, parser_class=parser_class)
    msub.add_parser(
        "list", parents=[common], help="every configured server and whether it connects"
    )
    tl = msub.add_parser(
        "tools", parents=[common], help="each server's tools: class, risk, which intents show it"
    )
    tl.add_argument("name", nargs="?", help="only this server")
    te = msub.add_parser("test", parents=[common], help="connect one server now and report")
    te.add_argument("name")
    return mcp
