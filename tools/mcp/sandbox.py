"""The sandbox an MCP server's program runs in: what it sees, what it may change, how it starts.

A stdio server is a program of someone else's that Chamberlain starts with the person's rights;
it must not have them. Every such server runs in bubblewrap, built from tools/sandbox.py's
`SandboxPlan` the way commands are:

- the system read-only, a fresh /proc in a PID namespace of its own that ends with Chamberlain
  (the lifetime tools/mcp/lifetime.py otherwise gives: one bubblewrap does both), a private /tmp;
- the person's home, /home, /root, /run, /mnt, /media hidden; of their files only the server's
  *roots*: the paths its settings name (each existing path in `args`, also `--opt=PATH`, and
  `cwd`), read-only unless the entry says `"write": true`. A root that is a program or script
  (`server.py`, `index.js`) stays read-only even then: a server does not rewrite its own code;
  and in a writable root the startup places (tools/startup_places.py: shell rc files,
  autostart, `.git/config` and hooks, `.pth` files …) stay read-only, so a server cannot plant
  what runs at the person's next login or git command (a root too big to search for them, or
  one that is itself such a place, stays read-only whole);
- the program's own installation (a node or Python under the home: `~/.nvm`, a venv) read-only;
- credential stores and Chamberlain's own folder (token.key, settings, grants, audit, memory)
  never mounted: a root that is one is left out, and one inside a root is covered over;
- `HOME` is the person's home, as the model and the person mean `~` (inside, an empty folder
  but for the roots in it); a cache folder of its own, kept per server under Chamberlain's
  folder (`mcp/NAME`), holds what npx, uvx and pip fetch (`npm_config_cache`,
  `XDG_CACHE_HOME`): never the person's ~/.npm, and one server cannot plant code in another's;
- no network unless the entry says `"network": true`, and then a network namespace of its own
  with user-mode networking (tools/netns.py: internet egress, no host loopback, no abstract
  sockets), never the host's; without it, npm and uv are told to stay offline, so a server they
  must first fetch fails at once, saying so, instead of after retries;
- the environment rebuilt from an allowlist (`command_environment`) plus the entry's `env`.

`"sandbox": false` in an entry runs that server as before, with the person's full rights: their
explicit choice in settings, warned about wherever the server is shown; no message offers it as
the way out. Where no sandbox works here a server is not started, and its status says what is
missing and how to get it.

This module never decides which calls may run (broker/runner.py does) nor reads a file; it
builds the walls of one server's program from its settings.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from tools.mcp.config import McpServerConfig
from tools.mcp.lifetime import containment, wrapped
from tools.netns import StageNetwork
from tools.paths import resolve_path
from tools.private import PrivatePlaces, private_places, within
from tools.sandbox import (
    HIDDEN_TOP,
    SandboxPlan,
    SandboxStatus,
    bwrap_args,
    command_environment,
    installation_places,
    macos_profile,
    sandbox_status,
)
from tools.startup_places import place_of, places_in

log = logging.getLogger("chamberlain.tools.mcp.sandbox")

# A root with one of these endings is a program's code: mounted read-only whatever `write` says.
CODE_SUFFIXES = frozenset(
    {".py", ".pyc", ".pyz", ".js", ".mjs", ".cjs", ".ts", ".mts", ".jar", ".rb", ".pl", ".sh",
     ".php", ".lua", ".wasm"}
)  # fmt: skip
# Told to package runners when the server has no network: use what is cached, fail at once.
_OFFLINE_ENV = {"npm_config_offline": "true", "UV_OFFLINE": "1", "PIP_NO_INDEX": "1"}
_OPTION_VALUE = re.compile(r"^--?[A-Za-z0-9][A-Za-z0-9_.-]*=(.+)$", re.DOTALL)


class SandboxUnavailable(PermissionError):
    """The server is not started: MCP servers run only in a sandbox, and there is none here."""


@dataclass(frozen=True)
class ServerPlaces:
    """Where servers' sandboxes stand: the person's home (hidden from every server), Chamberlain's
    own folders (never mounted, never named by a call), and the folder that keeps each server's
    own cache (None: a temporary folder of this process's, removed with the hub)."""

    home: Path
    app_dirs: tuple[Path, ...] = ()
    scratch: Path | None = None

    @classmethod
    def for_install(cls, chamberlain_home: Path, home: Path | None = None) -> ServerPlaces:
        """The places of an installation whose data lives in `chamberlain_home`."""
        return cls(
            home=Path(home) if home is not None else Path.home(),
            app_dirs=(Path(chamberlain_home),),
            scratch=Path(chamberlain_home) / "mcp",
        )

    def private(self) -> PrivatePlaces:
        return private_places(self.home, self.app_dirs)


@dataclass(frozen=True)
class ServerRoots:
    """What a server's settings name: the folders and files it is given (resolved), whether it
    may change them, what was left out and why, and its working folder inside the sandbox."""

    roots: tuple[Path, ...] = ()
    # Roots that are a program's code: read-only, whatever `write` says.
    code: tuple[Path, ...] = ()
    writable: bool = False
    left_out: tuple[tuple[str, str], ...] = ()
    cwd: Path | None = None
    # (where the settings name a root, where it really is) for a root named through a symlink
    # (`~/notes` -> /data/notes): shown at the written place too, read-only (writes go to the
    # real place, where the startup places in it are held).
    aliases: tuple[tuple[Path, Path], ...] = ()


@dataclass(frozen=True)
class Launch:
    """How one server's program is started: the full command line, its environment and the
    working folder to start it in, and what it may reach (`plan`: None when unsandboxed)."""

    argv: tuple[str, ...]
    env: dict[str, str]
    cwd: str | None
    plan: SandboxPlan | None
    words: str
    cache: Path | None = None
    roots: ServerRoots = field(default_factory=ServerRoots)
    # The server's own network, attached once its sandbox has started (`"network": true`).
    network: StageNetwork | None = None


def _option_value(arg: str) -> str:
    """The path-like part of an argument: `--root=/srv/notes` gives `/srv/notes`."""
    found = _OPTION_VALUE.match(arg)
    return found.group(1) if found else arg


def _looks_like_path(text: str) -> bool:
    return text.startswith(("/", "~", "./", "../", "file://")) or text in (".", "..")


def expanded_args(args: tuple[str, ...], home: Path) -> tuple[str, ...]:
    """`args` with a leading `~/` expanded to the person's home (also after `--opt=`): no shell
    expands them, and inside the sandbox `~` is the server's own home, not the person's."""
    out: list[str] = []
    for arg in args:
        value = _option_value(arg)
        if value == "~" or value.startswith("~/"):
            full = os.fspath(home) + value[1:]
            arg = arg[: len(arg) - len(value)] + full
        out.append(arg)
    return tuple(out)


def server_roots(config: McpServerConfig, places: ServerPlaces) -> ServerRoots:
    """The existing paths a server's settings name, each checked: a private place, a folder
    above the person's home (which would show every other user's), or `/` is left out."""
    private = places.private()
    home = _real(places.home)
    base: Path | None = None
    found: list[Path] = []
    code: list[Path] = []
    left: list[tuple[str, str]] = []
    named: list[tuple[Path, Path]] = []

    def consider(raw: str, *, shown: str | None = None, is_cwd: bool = False) -> Path | None:
        """`raw` resolved, if it is a root; a left-out one is said as `shown` (as written)."""
        said = shown if shown is not None else raw
        text = raw.removeprefix("file://")
        try:
            path = resolve_path(text, home=places.home, cwd=base)
        except ValueError:
            return None
        if not os.path.lexists(path):
            return None
        hit = private.hit(path)
        if hit is not None:
            left.append((said, hit.describe()))
            return None
        if path == Path("/") or (path != home and within(home, path)):
            left.append((said, f"{path} holds your whole home folder and others; name a folder"))
            return None
        if not is_cwd and path.is_file() and (path.suffix in CODE_SUFFIXES or _executable(path)):
            code.append(path)
        else:
            found.append(path)
        written = Path(os.path.normpath(os.path.join(base or "/", os.path.expanduser(text))))
        if written.is_absolute() and written != path and private.hit(written) is None:
            named.append((written, path))
        return path

    cwd: Path | None = None
    if config.cwd:
        cwd = consider(config.cwd, is_cwd=True)
        if cwd is not None and not cwd.is_dir():
            cwd = None
        base = cwd
    for written, arg in zip(config.args, expanded_args(config.args, places.home), strict=True):
        value = _option_value(arg)
        if _looks_like_path(value) or (base is not None and os.path.lexists(base / value)):
            consider(value, shown=written)
    shown = (*found, *code)
    # A written place inside another root is seen there already (through its symlink).
    aliases = [(w, r) for w, r in named if not any(within(w, other) for other in shown)]
    return ServerRoots(
        roots=tuple(dict.fromkeys(found)),
        code=tuple(dict.fromkeys(p for p in code if p not in found)),
        writable=config.write,
        left_out=tuple(left),
        cwd=cwd,
        aliases=tuple(dict.fromkeys(aliases)),
    )


def _writable(
    roots: ServerRoots, places: ServerPlaces
) -> tuple[tuple[Path, ...], tuple[Path, ...], tuple[Path, ...]]:
    """(the roots made writable, the startup places in them held read-only, the roots kept
    read-only whole: a startup place themselves, or too big to search)."""
    private = places.private().all()
    writable: list[Path] = []
    keep: list[Path] = []
    whole: list[Path] = []
    for root in roots.roots:
        if place_of(root, places.home, places.app_dirs) is not None:
            whole.append(root)
            continue
        if not root.is_dir():
            writable.append(root)
            continue
        found = places_in(root, places.home, places.app_dirs, skip=private)
        if found is None:
            whole.append(root)
            continue
        writable.append(root)
        keep += [p.path for p in found]
    return tuple(writable), tuple(dict.fromkeys(keep)), tuple(whole)


def _package_of(script: Path, home: Path) -> Path:
    """What a server's script needs shown read-only to run: the package it lies in (the folder
    holding the outermost `node_modules` above it, where node finds its dependencies), else its
    own folder (a Python script's sibling modules); the script alone where that folder would
    be the home, a folder above it, or a whole hidden area such as /tmp."""
    parts = script.parts
    folder = script.parent
    if "node_modules" in parts:
        folder = Path(*parts[: parts.index("node_modules")])
    real_home = _real(home)
    too_wide = {Path("/"), *(Path(p) for p in HIDDEN_TOP)}
    if folder in too_wide or within(real_home, folder) or within(home, folder):
        return script
    return folder


def _executable(path: Path) -> bool:
    return os.access(path, os.X_OK)


def _real(path: Path) -> Path:
    try:
        return Path(os.path.realpath(path))
    except (OSError, ValueError):
        return path


def find_program(command: str, path: str) -> str:
    """The program to start, found on `path` (the server's PATH), or FileNotFoundError."""
    if os.sep in command:
        if not os.access(command, os.X_OK):
            raise FileNotFoundError(f"{command} is not an executable program")
        return command
    found = shutil.which(command, path=path)
    if found is None:
        raise FileNotFoundError(f"the program {command!r} is not installed (not on PATH)")
    return found


_FROM_OUR_ENV = re.compile(r"^\$\{env:([A-Za-z_][A-Za-z0-9_]*)\}$")


def settings_env(extra: dict[str, str]) -> dict[str, str]:
    """The entry's own `env`; a value `${env:NAME}` is taken from Chamberlain's environment when
    the program starts (so a token need not be written into settings.json); unset, empty."""
    out: dict[str, str] = {}
    for name, value in extra.items():
        named = _FROM_OUR_ENV.match(value)
        out[name] = os.environ.get(named.group(1), "") if named else value
    return out


class ScratchHomes:
    """Each server's own cache folder: `places.scratch/NAME`, or, without one, in a temporary
    folder of this process's (removed by `close`)."""

    def __init__(self, places: ServerPlaces) -> None:
        self.places = places
        self._temporary: Path | None = None

    def of(self, server: str) -> Path:
        base = self.places.scratch
        if base is None:
            if self._temporary is None:
                self._temporary = Path(tempfile.mkdtemp(prefix="chamberlain-mcp-"))
            base = self._temporary
        folder = base / server
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        for step in (base, folder):
            # Only Chamberlain's user may look into a server's cache.
            with contextlib.suppress(OSError):
                os.chmod(step, 0o700)
        return folder

    def close(self) -> None:
        if self._temporary is not None:
            shutil.rmtree(self._temporary, ignore_errors=True)
            self._temporary = None


def _short(path: Path, home: Path) -> str:
    if within(path, home):
        rest = path.relative_to(home)
        return "~" if rest == Path(".") else f"~/{rest}"
    return os.fspath(path)


def describe(
    roots: ServerRoots,
    network: bool,
    home: Path,
    writable: tuple[Path, ...] = (),
    kept: tuple[Path, ...] = (),
) -> str:
    """What a sandboxed server sees, for `mcp test`, doctor and the log: its roots, which it may
    change (`writable`), and which stay read-only although it may write (`kept`: a startup place
    or too big to search for one)."""
    changed = [_short(p, home) for p in roots.roots if p in writable]
    read = [_short(p, home) for p in roots.roots if p not in writable and p not in kept]
    held = [_short(p, home) for p in kept]
    parts = [f"{', '.join(changed)} (read and change)"] if changed else []
    parts += [f"{', '.join(read)} (read only)"] if read else []
    if held:
        parts.append(
            f"{', '.join(held)} (read only: it runs code at login or in git, or holds too many "
            "folders to check for such places)"
        )
    sees = f"sees {'; '.join(parts)}" if parts else "sees none of your files"
    words = (
        f"runs in a sandbox: {sees}; your home, credentials and Chamberlain's own files are "
        f"hidden; {'a network of its own (internet only)' if network else 'no network'}"
    )
    if roots.left_out:
        words += "; left out: " + ", ".join(f"{raw} ({why})" for raw, why in roots.left_out)
    return words


UNSANDBOXED_WORDS = (
    'runs WITHOUT a sandbox, as its settings say ("sandbox": false): it can read and change '
    "everything you can, Chamberlain's own files included"
)


def server_launch(
    name: str,
    config: McpServerConfig,
    places: ServerPlaces,
    homes: ScratchHomes,
    *,
    status: SandboxStatus | None = None,
) -> Launch:
    """How to start server `name`'s program: in its sandbox, or (its settings say
    `"sandbox": false`) with the person's rights, contained only in its lifetime."""
    assert config.command is not None
    roots = server_roots(config, places)
    args = expanded_args(config.args, places.home)
    extra = settings_env(config.env)
    search_path = extra.get("PATH") or os.environ.get("PATH", os.defpath)
    program = find_program(config.command, search_path)
    if not config.sandbox:
        from tools.mcp.transport import server_environment

        env = server_environment(config.env)
        bare = wrapped(containment(), [program, *args])
        log.warning("MCP server %s %s", name, UNSANDBOXED_WORDS)
        return Launch(tuple(bare), env, config.cwd, None, UNSANDBOXED_WORDS, None, roots)
    status = status if status is not None else sandbox_status()
    if not status.available or status.program is None:
        remedy = f" To get one: {status.remedy}." if status.remedy else ""
        raise SandboxUnavailable(
            f"MCP servers run only inside a sandbox, and there is none here: {status.why}.{remedy}"
        )
    cache = homes.of(name)
    writable, keep, kept_whole = _writable(roots, places) if roots.writable else ((), (), ())
    packages = tuple(dict.fromkeys(_package_of(script, places.home) for script in roots.code))
    visible = (*roots.roots, *packages)
    programs = installation_places([program], places.home, visible)
    cwd = roots.cwd if roots.cwd is not None else Path("/")
    plan = SandboxPlan(
        cwd=cwd,
        home=_real(places.home),
        read=(*roots.roots, *packages, *programs),
        write=writable,
        keep=keep,
        network=config.network,
        private=places.private(),
        hide=tuple(_real(d) for d in places.app_dirs),
    )
    env = command_environment(os.environ, home=plan.home, cwd=cwd, search_path=search_path)
    env.update({"npm_config_cache": os.fspath(cache / "npm"), "XDG_CACHE_HOME": os.fspath(cache)})
    if not config.network:
        env.update(_OFFLINE_ENV)
    env.update(extra)
    words = describe(roots, config.network, places.home, writable, kept_whole)
    if os.path.basename(status.program) == "sandbox-exec":
        # UNTESTED, as tools/sandbox.py's macOS profile is: no macOS machine here.
        profile = macos_profile(plan)
        argv_mac = (status.program, "-p", profile, program, *args)
        return Launch(argv_mac, env, os.fspath(cwd), plan, words, cache, roots)
    # Never the host's network: a namespace of its own (NetworkUnavailable, an OSError, says
    # what is missing where none can be had; the server is then not started).
    network = StageNetwork() if config.network else None
    try:
        walls = bwrap_args(plan, [], status=status, network=network)
    except BaseException:
        if network is not None:
            network.close()
        raise
    if not walls or walls[-1] != "--":
        raise RuntimeError("the sandbox's arguments do not end where the program begins")
    seen = [
        arg
        for written, real in roots.aliases
        for arg in ("--ro-bind", os.fspath(real), os.fspath(written))
    ]
    # The server's cache last: after the covers over Chamberlain's folder, which holds it.
    walls = [*walls[:-1], *seen, "--bind", os.fspath(cache), os.fspath(cache), "--"]
    argv = (status.program, *walls, program, *args)
    return Launch(argv, env, None, plan, words, cache, roots, network)
