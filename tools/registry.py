"""The set of tools Chamberlain knows about, keyed by name.

The registry only holds tools; it never decides who may call them (that is the policy gate and
the runner).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from tools.manual import Tool, ToolManual


class ToolRegistry:
    def __init__(self, tools: Iterable[Tool] = ()) -> None:
        self._tools: dict[str, Tool] = {}
        for tool in tools:
            self.register(tool)

    def register(self, tool: Tool) -> None:
        if tool.name in self._tools:
            raise ValueError(f"tool {tool.name!r} is registered twice")
        self._tools[tool.name] = tool

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __iter__(self) -> Iterator[Tool]:
        return iter(self._tools.values())

    def names(self) -> list[str]:
        return sorted(self._tools)

    def manuals(self, names: Iterable[str] | None = None) -> list[ToolManual]:
        wanted = self.names() if names is None else sorted(set(names))
        return [self._tools[n].manual for n in wanted if n in self._tools]


def builtin_registry(*, file_read_max_bytes: int | None = None) -> ToolRegistry:
    """Every builtin tool. Imported lazily so a broken optional tool cannot break start-up."""
    from tools.files import FILE_TOOLS, make_file_tools
    from tools.system_info import SYSTEM_INFO_TOOLS

    files = FILE_TOOLS if file_read_max_bytes is None else make_file_tools(file_read_max_bytes)
    return ToolRegistry([*files, *SYSTEM_INFO_TOOLS])
