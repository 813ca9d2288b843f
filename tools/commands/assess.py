"""`assess_command`: a command line parsed and every rule applied, and what the rules say about it.

The line is parsed (`parse`) and each stage unwrapped (`wrappers`); a program is checked under
the name it is written with and, when a link gives it another, under its real name too
(`locate`). The code runners (`code_runners`), the hard-deny rules (`hard_deny`) and the paths
(`paths`) refuse; the rest is classified: code (it runs code the line cannot show, `kinds`),
read-only (a session grant covers it, `readonly`), or a command that asks, with its
reversibility, the stages that need the network, the ports of this computer it reaches and the
paths it names. `command_target` is the scope of exactly one line in one folder.

This module must never run anything, and when in doubt it refuses or classifies a command as
one that asks: never as read-only.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from tools.commands.characters import fold
from tools.commands.code_runners import FETCHERS, check_code_runner, code_consumer
from tools.commands.grammar import refuse
from tools.commands.hard_deny import deny_invocation
from tools.commands.kinds import runs_code, runs_piped_commands, uses_network
from tools.commands.locate import default_search_path, locate_program
from tools.commands.options import has_flag, options_and_operands, program_name
from tools.commands.parse import argv_text, check_spelling, parse_command_words
from tools.commands.paths import (
    RuleContext,
    check_private,
    is_disk_device,
    protected_hit,
    resolved_args,
    sensitive_hit,
)
from tools.commands.readonly import readonly_problem
from tools.commands.wrappers import MULTI_CALL, Invocation, unwrap, unwrap_once
from tools.manual import Reversibility
from tools.netns import loopback_ports
from tools.paths import resolve_path
from tools.private import PrivatePlaces, private_places
from tools.scopes import exact_command_scope

log = logging.getLogger("chamberlain.tools.commands")

# Programs that act on whole folder trees: refused on any folder above a protected file.
_WHOLE_TREE = frozenset(
    {"rm", "rmdir", "shred", "srm", "wipe", "trash", "trash-put", "chmod", "chown", "chgrp",
     "chattr", "setfacl", "chcon", "mv", "rsync", "rename", "find", "tar", "cpio", "unzip"}
)  # fmt: skip
# Programs whose effect cannot be undone: a command running one is irreversible.
_IRREVERSIBLE = frozenset(
    {"rm", "rmdir", "unlink", "shred", "srm", "wipe", "dd", "truncate", "kill", "pkill",
     "killall", "mail", "mailx", "sendmail", "mutt"}
)  # fmt: skip


@dataclass(frozen=True)
class CommandCheck:
    """What the rules say about one command line that they did not refuse."""

    stages: tuple[tuple[str, ...], ...]
    target: str
    readonly: bool
    reversibility: Reversibility
    reason: str
    programs: tuple[str, ...] = field(default=())
    # Why the command runs code the line does not show (None: it does not).
    code: str | None = None
    # Whether it needs the network (the sandbox has none otherwise), and which stages do: only
    # those get a network (of their own, tools.netns); `curl … | tar x` gives tar none.
    network: bool = False
    network_stages: tuple[int, ...] = ()
    # (stage, TCP port) of this computer's own services a networked stage names: it reaches
    # exactly those ports of the loopback (tools.netns), and the prompt says so.
    local_ports: tuple[tuple[int, int], ...] = ()
    # Where it runs, and the resolved paths its arguments name (what the sandbox mounts).
    cwd: Path | None = None
    paths: tuple[Path, ...] = field(default=())

    @property
    def argv(self) -> list[list[str]]:
        return [list(stage) for stage in self.stages]

    @property
    def kind(self) -> str:
        """ "code", "readonly" or "command": the class a grant is asked for."""
        if self.code is not None:
            return "code"
        return "readonly" if self.readonly else "command"


def _check_paths(
    chain: Sequence[Invocation], stage: Sequence[str], readonly: bool, ctx: RuleContext
) -> str | None:
    """Refuse writes to protected files and disks; return why a read-only stage must ask.

    Any program that is not read-only and is given a protected file (or the folder holding
    one) is refused, whatever it would do with it: the rules cannot know which arguments a
    program writes to. Programs that act on whole trees (deleters, movers, permission changers)
    are refused on any folder above a protected file as well.
    """
    inner = chain[-1]
    mv_destination = options_and_operands(inner.args)[1][-1:] if inner.name == "mv" else []
    ask: str | None = None
    for arg, path in resolved_args(stage[1:], ctx):
        hit = protected_hit(path, ctx)
        if hit is not None:
            protected, how = hit
            if readonly:
                if how == "is":
                    ask = ask or f"it reads Chamberlain's own file {protected}"
            elif how != "contains" or (inner.name in _WHOLE_TREE and arg not in mv_destination):
                raise refuse(
                    f"{arg!r} leads to Chamberlain's own {protected.name} ({protected}), which "
                    "commands may not change"
                )
        if is_disk_device(path):
            if not readonly:
                raise refuse(f"{arg!r} is a disk device, which commands may not write to")
            ask = ask or f"it reads the device {path}"
        if path == Path("/proc/sysrq-trigger") and not readonly:
            raise refuse("/proc/sysrq-trigger can crash or restart the machine")
        if readonly:
            sensitive = sensitive_hit(path)
            if sensitive is not None:
                ask = ask or f"it reads {sensitive}"
    return ask


def assess_command(
    command_line: str,
    *,
    cwd: Path | None = None,
    home: Path | None = None,
    protected: Sequence[Path] = (),
    private: PrivatePlaces | None = None,
    own_pids: Iterable[int] | None = None,
    search_path: str | None = None,
) -> CommandCheck:
    """Parse `command_line` and apply every rule; raises ToolRefused with the reason.

    `cwd` is where relative paths lead (default: `home`); `home` is `~` (default: the real
    one). `protected` are files no command may write (the app's own grants, settings, audit and
    memory), resolved here. `private` (default: the credential stores of `home`) are places no
    command may name at all: the sandbox never mounts them. `search_path` is the PATH the
    command will run with (default: this process's, absolute entries only): it decides which
    file a name runs.
    """
    path = search_path if search_path is not None else default_search_path()
    home_path = resolve_path(os.fspath(home)) if home is not None else Path.home()
    cwd_path = resolve_path(os.fspath(cwd)) if cwd is not None else home_path
    protected_paths: list[Path] = []
    for p in protected:
        try:
            protected_paths.append(resolve_path(os.fspath(p)))
        except ValueError:
            log.warning("a protected path could not be resolved; it is skipped")
    pids = set(own_pids) if own_pids is not None else {os.getpid(), 1}
    ctx = RuleContext(
        cwd=cwd_path,
        home=home_path,
        protected=tuple(protected_paths),
        private=private if private is not None else private_places(home_path),
        own_pids=frozenset(pids),
    )
    if ctx.private is not None and (hit := ctx.private.hit(cwd_path)) is not None:
        raise refuse(f"commands may not run in {cwd_path}: {hit.describe()}")
    words = parse_command_words(command_line, home=home_path)
    stages = [[decoded for _, decoded in stage] for stage in words]

    chains = [unwrap(stage) for stage in stages]
    for stage_words, chain in zip(words, chains, strict=True):
        for inv in chain[1:]:
            index = len(stage_words) - len(inv.argv)
            check_spelling(stage_words[index][0], inv.written)
    for i, chain in enumerate(chains):
        for later in chains[i + 1 :]:
            fetcher = next((inv for inv in chain if inv.name in FETCHERS), None)
            runner = next((inv for inv in later if code_consumer(inv)), None)
            if fetcher is not None and runner is not None:
                raise refuse(
                    f"fetch-and-run: `{fetcher.name}` output piped into `{runner.name}` runs "
                    "downloaded code unseen; download it, read it, then run the file"
                )
    for i, chain in enumerate(chains):
        fed = next((inv for inv in chain if runs_piped_commands(inv.name, inv.args)), None)
        if i > 0 and fed is not None:
            raise refuse(
                f"`{fed.name}` would run commands that arrive through the pipe, made only when "
                "the command runs, so nobody can read them first; put them in a file you can read"
            )
    code: str | None = None
    for chain in chains:
        for inv in chain:
            checked = [inv]
            real = locate_program(inv.written, path, cwd_path)
            real_name = program_name(real.name) if real is not None else inv.name
            if real_name != inv.name and not real_name.startswith(("coreutils", *MULTI_CALL)):
                # `del -rf ~` where del is a link to rm: the rules see rm as well.
                alias = Invocation(real_name, (real_name, *inv.args), wrapper=inv.wrapper)
                unwrap_once(alias.argv)
                checked.append(alias)
            for each in checked:
                check_code_runner(each, ctx)
                folded = [fold(a) for a in each.args]
                deny_invocation(each, each.args, ctx)
                if folded != list(each.args):
                    deny_invocation(each, folded, ctx)
                why = runs_code(each.name, each.args)
                if why is None and code_consumer(each):
                    why = "runs a program file written in a programming language"
                if why is not None and code is None:
                    code = f"`{each.name}` {why}"
    network_stages = tuple(
        index
        for index, chain in enumerate(chains)
        if any(uses_network(inv.name, inv.args) for inv in chain)
    )
    network = bool(network_stages)
    local_ports: list[tuple[int, int]] = []
    for index in network_stages:
        for named_local in loopback_ports(stages[index][1:]):
            if named_local.port is None:
                raise refuse(
                    f"{named_local.arg!r} names this computer itself (loopback) without a port; "
                    "a command reaches only the internet and, when its line names one, a port "
                    "of this computer (as http://127.0.0.1:8080/ or localhost:8080)"
                )
            local_ports.append((index, named_local.port))

    named: list[Path] = []
    for stage in stages:
        for arg, resolved in resolved_args(stage[1:], ctx):
            check_private(arg, resolved, ctx)
            named.append(resolved)

    readonly = not network
    reasons: list[str] = []
    if network:
        reasons.append("it uses the network")
    for port in dict.fromkeys(port for _, port in local_ports):
        reasons.append(f"it reaches port {port} of this computer itself")
    for stage, chain in zip(stages, chains, strict=True):
        problem = readonly_problem(chain, lambda word: locate_program(word, path, cwd_path))
        stage_ro = problem is None
        ask = _check_paths(chain, stage, stage_ro, ctx)
        if problem is not None:
            reasons.append(problem)
            readonly = False
        elif ask is not None:
            reasons.append(ask)
            readonly = False
    if code is not None:
        readonly = False
        reasons.insert(0, f"it runs code that cannot be shown here: {code}")

    reversibility: Reversibility = "easy"
    if not readonly:
        reversibility = "effort"
        for chain in chains:
            inner = chain[-1]
            if inner.name in _IRREVERSIBLE or (inner.name == "find" and "-delete" in inner.args):
                reversibility = "irreversible"
            if inner.name in ("curl", "wget") and has_flag(
                inner.args, "dFTX", ("data", "form", "upload-file", "request", "post-data")
            ):
                reversibility = "irreversible"
        if code is not None:
            reversibility = "irreversible"
    text = argv_text(stages)
    kind = "code" if code is not None else ("readonly" if readonly else "command")
    reason = (
        "read-only: a session grant for read-only commands in its folder covers it"
        if readonly
        else "; ".join(dict.fromkeys(reasons)) + f" (reversibility: {reversibility})"
    )
    log.debug("command classified %s (%d stage(s))", kind, len(stages))
    return CommandCheck(
        stages=tuple(tuple(s) for s in stages),
        target=f"{kind}:{text}",
        readonly=readonly,
        reversibility=reversibility,
        reason=reason,
        programs=tuple(chain[-1].name for chain in chains),
        code=code,
        network=network,
        network_stages=network_stages,
        local_ports=tuple(dict.fromkeys(local_ports)),
        cwd=cwd_path,
        paths=tuple(dict.fromkeys(named)),
    )


def command_target(
    command_line: str,
    *,
    cwd: Path | None = None,
    home: Path | None = None,
    protected: Sequence[Path] = (),
    search_path: str | None = None,
) -> str:
    """The scope of exactly this command line in exactly this folder (default: the home).

    Raises ToolRefused with the reason when the rules never allow it. The broker uses this as
    the scope the user's own message names: a call of that line in that folder is the user's.
    """
    check = assess_command(
        command_line, cwd=cwd, home=home, protected=protected, search_path=search_path
    )
    where = check.cwd if check.cwd is not None else Path.home()
    return exact_command_scope(argv_text(check.stages), os.fspath(where))
