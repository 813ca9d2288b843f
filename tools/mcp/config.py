"""What the user's settings say about MCP servers (`mcp.servers` in settings.json).

The shape is the one people already paste between MCP clients — `command`, `args`, `env`, or
`url` — plus Chamberlain's own keys: which tools to allow or deny, how to classify them, and the
limits a server's calls run under. Validated strictly: a typo is an error that names the key.
"""

from __future__ import annotations

import ipaddress
from typing import Annotated, Literal
from urllib.parse import urlsplit

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    field_validator,
    model_validator,
)

# What an MCP tool does, as far as Chamberlain can tell: the tool's category and, through it, the
# capability a grant must carry. Ordered from least to most restrictive.
McpCategory = Literal["read", "write", "execute"]
CATEGORY_ORDER: dict[str, int] = {"read": 0, "write": 1, "execute": 2}


# A server's name is the first half of its tools' names (`notes__read_file`), so it must fit the
# tool-name pattern and leave room for the tool's own name; no "__" inside, so the split is clear.
def _server_name(value: str) -> str:
    if "__" in value or value.endswith("_"):
        raise ValueError(f"a server name may not hold '__' or end with '_': {value!r}")
    return value


ServerName = Annotated[
    str, StringConstraints(pattern=r"^[a-z][a-z0-9_]{0,23}$"), AfterValidator(_server_name)
]
# A tool's name as its server spells it (mapped to ours by `classify.local_name`).
RemoteToolName = Annotated[str, StringConstraints(min_length=1, max_length=128)]


class McpToolSetting(BaseModel):
    """The user's word on one tool: its category (beats everything the server says)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    category: McpCategory


class McpServerConfig(BaseModel):
    """One MCP server: a command to run (stdio) or a loopback URL (streamable HTTP)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    command: str | None = Field(default=None, min_length=1, max_length=4096)
    args: tuple[str, ...] = ()
    env: dict[str, str] = Field(default_factory=dict)
    cwd: str | None = None
    url: str | None = None
    # Accepted from configurations pasted from other MCP clients; the transport follows from
    # `command` or `url` either way.
    type: Literal["stdio", "http", "streamable-http", "streamableHttp"] | None = None
    enabled: bool = True
    # Tools to offer (None: all the server lists) and tools never to offer.
    allow_tools: tuple[RemoteToolName, ...] | None = None
    deny_tools: tuple[RemoteToolName, ...] = ()
    # The category of this server's tools that `tools` does not name (None: read it from each
    # tool's name, and where the name says nothing, take the most restrictive: execute).
    default_category: McpCategory | None = None
    tools: dict[RemoteToolName, McpToolSetting] = Field(default_factory=dict)
    # One call's deadline, and the most text a call's result may hand back.
    timeout_s: float = Field(default=30.0, gt=0, le=3600)
    output_cap: int = Field(default=64 * 1024, ge=1024, le=16 * 1024 * 1024)
    # How long connecting (start, handshake, first listing) may take.
    connect_timeout_s: float = Field(default=30.0, gt=0, le=600)
    # The server's sandbox (tools/mcp/sandbox.py): the paths its `args` and `cwd` name are
    # mounted read-only unless `write`; it has a network only with `network`. `sandbox: false`
    # runs it with the person's full rights: their explicit choice, warned about where shown.
    write: bool = False
    network: bool = False
    sandbox: bool = True

    @field_validator("env")
    @classmethod
    def _env_names(cls, value: dict[str, str]) -> dict[str, str]:
        for name, text in value.items():
            if not name or "=" in name or "\0" in name or "\0" in text:
                raise ValueError(f"not a usable environment variable: {name!r}")
        return value

    @field_validator("args")
    @classmethod
    def _no_nul(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        if any("\0" in arg for arg in value):
            raise ValueError("an argument holds a NUL character")
        return value

    @field_validator("url")
    @classmethod
    def _loopback_only(cls, value: str | None) -> str | None:
        if value is None:
            return None
        loopback_url(value)
        return value

    @model_validator(mode="after")
    def _one_transport(self) -> McpServerConfig:
        if (self.command is None) == (self.url is None):
            raise ValueError("give either `command` (a program to run) or `url` (loopback HTTP)")
        if self.allow_tools is not None:
            both = set(self.allow_tools) & set(self.deny_tools)
            if both:
                raise ValueError(f"tools both allowed and denied: {', '.join(sorted(both))}")
        return self

    @property
    def transport(self) -> Literal["stdio", "http"]:
        return "stdio" if self.command is not None else "http"

    def describe(self) -> str:
        """The command line or the URL, for a person."""
        if self.command is not None:
            import shlex

            return shlex.join([self.command, *self.args])
        return str(self.url)

    def offers(self, remote_name: str) -> tuple[bool, str]:
        """Whether the settings let this tool be offered at all, and if not, why."""
        if remote_name in self.deny_tools:
            return False, "denied in this server's settings"
        if self.allow_tools is not None and remote_name not in self.allow_tools:
            return False, "not in this server's allow_tools"
        return True, ""


def loopback_url(value: str) -> str:
    """`value` if it is an http(s) URL on this computer (127.0.0.0/8, ::1, localhost), else a
    ValueError saying so: an MCP server elsewhere would see every tool call's arguments."""
    try:
        parts = urlsplit(value)
        host = parts.hostname
        parts.port  # noqa: B018 - raises on a port that is not a number
    except ValueError as exc:
        raise ValueError(f"not a URL: {value!r} ({exc})") from None
    if parts.scheme not in ("http", "https") or not host:
        raise ValueError(f"an MCP server URL must be http:// or https:// with a host: {value!r}")
    if parts.username or parts.password:
        raise ValueError("an MCP server URL may not hold a user name or password")
    if host.lower() == "localhost":
        return value
    try:
        loopback = ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = False
    if not loopback:
        raise ValueError(
            f"MCP servers over HTTP must be on this computer (127.0.0.1, ::1 or localhost), "
            f"not {host!r}"
        )
    return value


class McpSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    servers: dict[ServerName, McpServerConfig] = Field(default_factory=dict)
