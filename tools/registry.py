"""The set of tools Chamberlain knows about, keyed by name, and the one seam through which the
broker reaches tool groups: the builtin tools (`builtin_registry`) and MCP servers (`mcp_hub`).

The registry only holds tools; it never decides who may call them (that is the policy gate and
the runner). The broker imports no concrete tool and no part of `tools.mcp` but its settings
and failure records (an import contract holds it to that); what it needs of MCP it gets here.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from tools.limits import CommandLimits
from tools.manual import Tool, ToolManual

if TYPE_CHECKING:
    from collections.abc import Mapping

    from tools.mcp.config import McpServerConfig
    from tools.mcp.hub import McpHub as McpHub


class ToolRegistry:
    """Thread-safe: an MCP server's tools come and go on the hub's thread while turns read."""

    def __init__(self, tools: Iterable[Tool] = ()) -> None:
        self._tools: dict[str, Tool] = {}
        # Tools that arrive and leave together (an MCP server's): group → their names.
        self._groups: dict[str, set[str]] = {}
        self._lock = threading.RLock()
        for tool in tools:
            self.register(tool)

    def register(self, tool: Tool) -> None:
        with self._lock:
            if tool.name in self._tools:
                raise ValueError(f"tool {tool.name!r} is registered twice")
            self._tools[tool.name] = tool

    def replace_group(self, group: str, tools: Iterable[Tool]) -> dict[str, str]:
        """Make `tools` the group's tools, dropping the ones it had before. A tool whose name
        another tool (a builtin, another group's) already has is not registered: the returned
        map names each such tool with why."""
        refused: dict[str, str] = {}
        with self._lock:
            for name in self._groups.pop(group, set()):
                self._tools.pop(name, None)
            kept: set[str] = set()
            for tool in tools:
                if tool.name in self._tools or tool.name in kept:
                    refused[tool.name] = "another tool already has this name"
                    continue
                self._tools[tool.name] = tool
                kept.add(tool.name)
            if kept:
                self._groups[group] = kept
        return refused

    def get(self, name: str) -> Tool | None:
        with self._lock:
            return self._tools.get(name)

    def __contains__(self, name: object) -> bool:
        with self._lock:
            return name in self._tools

    def __iter__(self) -> Iterator[Tool]:
        with self._lock:
            return iter(list(self._tools.values()))

    def names(self) -> list[str]:
        with self._lock:
            return sorted(self._tools)

    def manuals(self, names: Iterable[str] | None = None) -> list[ToolManual]:
        with self._lock:
            wanted = sorted(self._tools) if names is None else sorted(set(names))
            return [self._tools[n].manual for n in wanted if n in self._tools]


@dataclass(frozen=True)
class ToolConfig:
    """What the user's settings say about the tools (the broker fills it from Settings).

    Tools never read settings themselves: they are built from this.
    """

    file_read_max_bytes: int = 256 * 1024
    # Where screenshots are kept, and for how long (None: the tools' own temp dir, no retention).
    screenshot_dir: Path | None = None
    screenshot_retention_days: float = 7.0
    # Attach the image itself for models that accept images, besides the OCR text.
    attach_images: bool = False
    command_timeout_s: float = 30.0
    command_output_cap: int = 64 * 1024
    # What one command may use: memory, processes, CPU time, /dev/shm (tools.limits).
    command_limits: CommandLimits = field(default_factory=CommandLimits)
    # Folders a command may run in (resolved); None: the user's home directory.
    command_roots: tuple[Path, ...] | None = None
    # Run commands without a sandbox where none can be had (an explicit, warned opt-in).
    unsandboxed_commands: bool = False
    # Files a command must never write: the app's own grants, settings and audit files.
    protected_paths: tuple[Path, ...] = ()
    # Chamberlain's own folders (its data home): no tool reads, lists or writes inside them,
    # and the command sandbox never mounts them (tools.private).
    app_dirs: tuple[Path, ...] = ()
    web_max_bytes: int = 2 * 1024 * 1024
    web_timeout_s: float = 15.0
    # Hosts (or "*") that may be on loopback or private addresses; by default none may.
    web_allow_private: tuple[str, ...] = ()
    searxng_url: str | None = None
    # "auto" (SearXNG when searxng_url is set, else ddgs), "ddgs" or "searxng".
    search_provider: str = "auto"
    extra: dict[str, object] = field(default_factory=dict)


def builtin_registry(config: ToolConfig | None = None) -> ToolRegistry:
    """Every builtin tool, built from `config`."""
    from tools.files import make_file_tools
    from tools.private import private_places
    from tools.system_info import SYSTEM_INFO_TOOLS

    config = config or ToolConfig()
    # What no file tool may reach, whatever is granted: credentials and Chamberlain's own files.
    private = private_places(Path.home(), app_dirs=config.app_dirs)
    tools: list[Tool] = [
        *make_file_tools(config.file_read_max_bytes, private=private),
        *SYSTEM_INFO_TOOLS,
    ]
    for factory in _optional_factories():
        tools.extend(factory(config))
    return ToolRegistry(tools)


def _optional_factories() -> list[Callable[[ToolConfig], list[Tool]]]:
    """Tool groups added by later modules (screen, commands, web), each `make_*_tools(config)`."""
    found: list[Callable[[ToolConfig], list[Tool]]] = []
    for module, name in (
        ("tools.screen", "make_screen_tools"),
        ("tools.system", "make_system_tools"),
        ("tools.web", "make_web_tools"),
    ):
        try:
            imported = importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if exc.name != module:
                raise  # a real missing dependency inside the module: fail loudly
            continue
        found.append(getattr(imported, name))
    return found


def mcp_hub(
    home: Path,
    servers: Mapping[str, McpServerConfig],
    registry: ToolRegistry,
    *,
    on_change: Callable[[], None] | None = None,
    remember_failures: bool = True,
) -> McpHub:
    """A hub for `servers` that adds their tools to `registry`, each server sandboxed away from
    `home` (Chamberlain's data) and the person's own files. With `remember_failures`, a server
    that failed to connect is remembered in `home`, so the next process (each one-shot command)
    skips it for a while instead of waiting again."""
    from tools.mcp.failures import FailureBook
    from tools.mcp.hub import McpHub
    from tools.mcp.sandbox import ServerPlaces

    return McpHub(
        servers,
        registry,
        on_change=on_change,
        failures=FailureBook.in_home(home) if remember_failures else None,
        places=ServerPlaces.for_install(home),
    )
