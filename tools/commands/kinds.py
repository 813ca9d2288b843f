"""Which commands run code nobody can see on the line, and which need the network.

A program "runs code" when what it does is decided by text the rules cannot read in full: a
script (sed, awk, SQL, a Makefile, a package's install scripts), a configuration value that names
a program (`git -c alias.x=!cmd`, `ssh -o ProxyCommand=…`, `tar --to-command`), or its own
input (`sed e` runs the lines it reads). Such a command is never run on the model's word alone;
when the user typed it, the prompt says it runs code that cannot be shown here and offers no
lasting grant. The sandbox still contains whatever it does.

"Needs the network" decides whether the sandbox keeps a network at all: a command that does not
need one gets none, and the prompt says which.

This module only classifies (name, arguments); it never runs, resolves or refuses anything.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence

from tools.commands.options import has_flag, long_matches, options_and_operands, short_cluster

# Programs that always run code given to them: their own language, or recipes and scripts.
_ALWAYS: dict[str, str] = {
    **dict.fromkeys(
        ("awk", "gawk", "mawk", "nawk", "busybox-awk"),
        "runs an awk program, which can run commands and write files",
    ),
    **dict.fromkeys(
        ("vim", "vi", "nvim", "view", "vimdiff", "rvim", "ex", "ed", "red", "emacs", "emacsclient"),
        "is an editor whose commands can run other programs",
    ),
    "sqlite3": "runs SQL and dot-commands, which can run programs (.system) and write files",
    **dict.fromkeys(
        ("make", "gmake", "bmake", "ninja", "just", "rake", "scons", "meson", "cmake", "ant"),
        "runs the recipes of a build file",
    ),
    **dict.fromkeys(
        (
            "npm",
            "npx",
            "pnpm",
            "pnpx",
            "yarn",
            "yarnpkg",
            "pip",
            "pip3",
            "pipx",
            "uv",
            "uvx",
            "poetry",
            "pdm",
            "hatch",
            "cargo",
            "go",
            "gem",
            "bundle",
            "composer",
            "mvn",
            "gradle",
            "dotnet",
            "conda",
            "mamba",
        ),
        "installs, builds or runs packages, which runs their scripts",
    ),
    **dict.fromkeys(("ssh", "slogin"), "runs commands on another machine"),
    "m4": "runs macros, which can run commands (syscmd)",
    "dc": "runs a calculator program, which can run commands (!)",
    "sqlplus": "runs SQL scripts",
    "psql": "runs SQL and meta-commands, which can run programs (\\!)",
    "mysql": "runs SQL and client commands, which can run programs (system)",
}
_LOADER_RE = re.compile(r"ld(-linux[\w.-]*|64)?\.so(\.\d+)*|ld-musl[\w.-]*")

# sed scripts Chamberlain can read in full: substitutions without the e/w flags, and p/d/q/=
# with a line-number or pattern address. Anything else (e, w, r, R, W, commands in braces, …)
# counts as code.
_SED_ADDRESS = r"(?:\d+|\$|/(?:[^/\\]|\\.)*/)"
_SED_SIMPLE = re.compile(
    rf"\s*(?:{_SED_ADDRESS}(?:\s*,\s*{_SED_ADDRESS})?\s*)?"
    r"(?:[pdq=]|s(?P<d>[/|:#,@])(?:(?!(?P=d))[^\\]|\\.)*(?P=d)(?:(?!(?P=d))[^\\]|\\.)*(?P=d)[gIip0-9]*)"
    r"\s*"
)

_GIT_KNOWN = frozenset(
    {
        "add", "am", "annotate", "apply", "archive", "bisect", "blame", "branch", "bundle",
        "cat-file", "check-ignore", "checkout", "cherry", "cherry-pick", "clean", "clone",
        "commit", "config", "count-objects", "describe", "diff", "diff-tree", "difftool",
        "fetch", "for-each-ref", "format-patch", "fsck", "gc", "grep", "help", "init", "log",
        "ls-files", "ls-remote", "ls-tree", "maintenance", "merge", "merge-base", "mergetool",
        "mv", "name-rev", "notes", "pull", "push", "range-diff", "rebase", "reflog", "remote",
        "repack", "replace", "reset", "restore", "rev-list", "rev-parse", "revert", "rm",
        "shortlog", "show", "show-ref", "sparse-checkout", "stash", "status", "submodule",
        "switch", "tag", "var", "verify-commit", "version", "whatchanged", "worktree",
        "filter-branch",
    }
)  # fmt: skip
_GIT_VALUED_GLOBALS = ("-C", "-c", "--git-dir", "--work-tree", "--namespace", "--config-env")
_GIT_NETWORK = frozenset({"clone", "fetch", "pull", "push", "ls-remote", "submodule", "remote"})


def _git_subcommand(args: Sequence[str]) -> tuple[list[str], str | None, list[str]]:
    """(global options, subcommand, its arguments) of a git command line."""
    options: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        if not arg.startswith("-"):
            return options, arg, list(args[i + 1 :])
        options.append(arg)
        if arg in _GIT_VALUED_GLOBALS:
            if i + 1 < len(args):
                options.append(args[i + 1])
            i += 2
            continue
        i += 1
    return options, None, []


def _git_code(args: Sequence[str]) -> str | None:
    options, sub, rest = _git_subcommand(args)
    for option in options:
        if option == "-c" or option.startswith(("--config-env", "--exec-path")):
            return "sets git configuration for the command, which can name programs git runs"
    if sub is None:
        return None
    if sub == "credential" or sub.startswith("credential-"):
        return "reads or stores credentials"
    if sub not in _GIT_KNOWN:
        return (
            f"`git {sub}` is not a git command Chamberlain knows; it may be an alias that runs "
            "a program"
        )
    if sub == "config":
        reading = ("--get", "--get-all", "--get-regexp", "--list", "-l", "--show-origin", "get",
                   "list")  # fmt: skip
        if not any(a in reading or a.startswith("--get") for a in rest):
            return "changes git configuration, which can name programs git runs later"
    if sub == "rebase" and (has_flag(rest, "x", ("exec",))):
        return "runs a command after each rebased commit"
    if sub == "bisect" and "run" in rest:
        return "runs a command to test each commit"
    if sub == "submodule" and "foreach" in rest:
        return "runs a command in every submodule"
    if sub == "filter-branch":
        return "runs filter commands over the history"
    if sub in ("difftool", "mergetool") and has_flag(rest, "xt", ("extcmd", "tool")):
        return "runs an external program on each file"
    if any(
        long_matches(a, ("upload-pack", "receive-pack", "exec", "template", "config"))
        or a.startswith(("-u", "-c"))
        for a in rest
    ) and sub in ("clone", "fetch", "pull", "push", "ls-remote", "archive"):
        return "names a program to run on either end of the transfer"
    return None


def _tar_code(args: Sequence[str]) -> str | None:
    first = args[0] if args else ""
    clusters = [short_cluster(a) for a in args]
    if first and not first.startswith("-"):
        clusters.append(first)  # old style: `tar xIf …`
    if any(long_matches(a, ("to-command", "use-compress-program", "checkpoint-action",
                            "info-script", "new-volume-script", "rsh-command", "rmt-command"))
           for a in args):  # fmt: skip
        return "runs a program it is given (--to-command, -I, --checkpoint-action, …)"
    if any(c and ("I" in c or "F" in c) for c in clusters):
        return "runs a program it is given (-I or -F)"
    return None


def _sed_code(args: Sequence[str]) -> str | None:
    scripts: list[str] = []
    i = 0
    explicit = False
    while i < len(args):
        arg = args[i]
        if arg in ("-f", "--file") or arg.startswith(("--file=", "-f")):
            return "runs a sed script from a file"
        if arg in ("-e", "--expression"):
            explicit = True
            if i + 1 < len(args):
                scripts.append(args[i + 1])
            i += 2
            continue
        if arg.startswith("--expression="):
            explicit = True
            scripts.append(arg.split("=", 1)[1])
        elif arg.startswith("-e") and len(arg) > 2:
            explicit = True
            scripts.append(arg[2:])
        elif not arg.startswith("-") and not explicit and not scripts:
            scripts.append(arg)
        i += 1
    for script in scripts:
        parts = [part for part in re.split(r";|\n", script) if part.strip()]
        if not parts or not all(_SED_SIMPLE.fullmatch(part) for part in parts):
            return (
                "runs a sed script Chamberlain cannot read in full (it can run commands or "
                "write files)"
            )
    return None


def runs_code(name: str, args: Sequence[str]) -> str | None:
    """Why `name args` runs code the line does not show, or None."""
    if name in _ALWAYS:
        return _ALWAYS[name]
    if _LOADER_RE.fullmatch(name):
        return "loads and runs any program it is given"
    if name == "sed":
        return _sed_code(args)
    if name == "git":
        return _git_code(args)
    if name in ("tar", "bsdtar", "gtar"):
        return _tar_code(args)
    if name == "zip" and any(
        a.startswith("-TT") or long_matches(a, ("unzip-command",)) for a in args
    ):
        return "runs the program given to -TT to test the archive"
    if name == "rsync" and (
        has_flag(args, "e", ("rsh", "rsync-path"))
        or any(long_matches(a, ("rsync-path",)) for a in args)
    ):
        return "runs a program it is given (-e, --rsync-path)"
    if name in ("scp", "sftp") and has_flag(options_and_operands(args)[0], "oFSD", ()):
        return "takes ssh options that can name programs to run"
    return None


# Programs that exist to talk to other machines.
_NETWORK_ALWAYS = frozenset(
    {
        "curl", "wget", "wget2", "aria2c", "http", "https", "httpie", "xh", "lwp-request", "nc",
        "ncat", "netcat", "socat", "ftp", "tftp", "lftp", "ssh", "slogin", "scp", "sftp",
        "telnet", "ping", "ping6", "traceroute", "traceroute6", "tracepath", "mtr", "dig",
        "nslookup", "host", "whois", "nmap", "youtube-dl", "yt-dlp", "gh", "glab", "npm", "npx",
        "pnpm", "pnpx", "yarn", "yarnpkg", "pip", "pip3", "pipx", "uv", "uvx", "poetry", "gem",
        "bundle", "composer", "cargo", "go", "mvn", "gradle", "conda", "mamba", "apt", "apt-get",
        "rclone", "s3cmd", "aws", "gcloud", "az", "kubectl", "helm", "docker", "podman",
        "openssl", "ntpdate", "sntp",
    }
)  # fmt: skip


def uses_network(name: str, args: Sequence[str]) -> bool:
    """Whether `name args` needs the network to do what it says."""
    if name in _NETWORK_ALWAYS:
        return True
    if name == "git":
        _, sub, _ = _git_subcommand(args)
        return sub in _GIT_NETWORK
    if name == "rsync":
        operands = options_and_operands(args)[1]
        return any(re.match(r"^(rsync://|[^/]*:)", op) for op in operands)
    return False


# Programs that read commands from their standard input when no script is named: fed by an
# earlier stage of a pipeline, they run text that is produced (decoded, downloaded) only when the
# command runs, so nobody can read it beforehand.
_READS_COMMANDS = frozenset(
    {"sqlite3", "ed", "red", "ex", "vi", "vim", "nvim", "dc", "bc", "m4", "psql", "mysql",
     "sqlplus", "sed", "awk", "gawk", "mawk", "nawk"}
)  # fmt: skip
STDIN_NAMES = ("-", "/dev/stdin", "/dev/fd/0", "/proc/self/fd/0")


def runs_piped_commands(name: str, args: Sequence[str]) -> bool:
    """Whether `name args`, given a pipe as input, may run what arrives through it."""
    if name not in _READS_COMMANDS:
        return False
    if name == "sed":
        return _sed_code(args) is not None
    if name in ("awk", "gawk", "mawk", "nawk"):
        return any(
            a in ("-f", "--file") and b in STDIN_NAMES for a, b in itertools.pairwise(args)
        ) or any(a.startswith("--file=") and a.split("=", 1)[1] in STDIN_NAMES for a in args)
    return True
