"""The sandbox's walls as built (tools/sandbox.py), and what happens where there is none.

The walls themselves are attacked in tests/security/test_sandbox.py; here: the plan a call gets
(what is mounted, covered, writable, networked), the allowlisted environment, the refusal
without a sandbox and the warned opt-in, and the untested macOS profile's shape.
"""

from __future__ import annotations

import logging
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from tools.manual import ToolRefused
from tools.netns import NetworkHelper, NetworkUnavailable, StageNetwork
from tools.private import private_places
from tools.registry import ToolConfig
from tools.sandbox import (
    USERNS_WAYS,
    SandboxPlan,
    SandboxStatus,
    bwrap_args,
    command_environment,
    macos_profile,
    probe_bubblewrap,
    sandbox_status,
)
from tools.system import make_system_tools

NO_SANDBOX = SandboxStatus(
    False,
    None,
    "bubblewrap (bwrap) is not installed",
    "install the bubblewrap package and start Chamberlain again",
)


@pytest.fixture
def user(tmp_path: Path) -> Path:
    home = (tmp_path / "home").resolve()
    (home / "Documents").mkdir(parents=True)
    (home / "Documents" / "notes.txt").write_text("x")
    (home / ".ssh").mkdir()
    (home / ".ssh" / "id_rsa").write_text("key")
    (home / ".netrc").write_text("machine x password y")
    (home / ".local" / "share" / "chamberlain").mkdir(parents=True)
    return home


def _pairs(args: list[str], flag: str) -> list[str]:
    return [args[i + 1] for i, a in enumerate(args) if a == flag]


def test_a_plan_hides_every_home_and_mounts_only_what_the_call_names(user):
    app = user / ".local" / "share" / "chamberlain"
    plan = SandboxPlan(
        cwd=user,
        home=user,
        read=(user,),
        private=private_places(user, [app]),
        hide=(app,),
    )
    args = bwrap_args(plan, ["/bin/ls"])
    tmpfs = _pairs(args, "--tmpfs")
    for hidden in ("/home", "/root", "/run", "/tmp", "/mnt", "/media"):
        if Path(hidden).is_dir():
            assert hidden in tmpfs
    assert _pairs(args, "--ro-bind")[:2] == ["/", str(user)]
    assert "--bind" not in args  # read-only: nothing writable
    # Private places inside the mounted home are covered: folders by an empty tmpfs, files by
    # an empty file; Chamberlain's folder too.
    assert str(user / ".ssh") in tmpfs
    assert str(app) in tmpfs
    assert args[args.index(str(user / ".netrc")) - 1] == "/dev/null"
    # The covers come after the mount they cover (bubblewrap applies them in order).
    assert args.index(str(user / ".ssh")) > args.index(str(user))
    assert "--share-net" not in args
    assert args[-2:] == ["--", "/bin/ls"]


def test_a_write_plan_binds_its_folder_writable_and_network_only_when_asked(user):
    docs = user / "Documents"
    plan = SandboxPlan(cwd=docs, home=user, read=(docs,), write=(docs,), network=True)
    # The network is one of its own (tools/netns.py), never the host's: without it, no walls.
    with pytest.raises(NetworkUnavailable):
        bwrap_args(plan, ["/bin/touch", "x"])
    with StageNetwork(NetworkHelper(True, "slirp4netns", "/bin/true", "stand-in")) as network:
        args = bwrap_args(plan, ["/bin/touch", "x"], network=network)
    assert _pairs(args, "--bind") == [str(docs)]
    assert str(docs) not in _pairs(args, "--ro-bind")
    assert "--share-net" not in args
    assert "--block-fd" in args  # the command waits for its network
    assert plan.describe() == "can change files in ~/Documents; uses the network"
    read_only = SandboxPlan(cwd=docs, home=user, read=(docs,))
    assert read_only.describe() == "reads ~/Documents; changes nothing; no network"


def test_the_environment_is_an_allowlist(user):
    environ = {
        "PATH": ".:/usr/bin::relative:/bin",
        "LANG": "C.UTF-8",
        "LC_TIME": "de_DE.UTF-8",
        "DB_PASS": "hunter2",
        "MYSQL_PWD": "hunter2",
        "SERVICE_JWT": "eyJ",
        "SENTRY_DSN": "https://key@sentry.example/1",
        "REDIS_URL": "redis://:pw@host",
        "LD_PRELOAD": "/tmp/x.so",
        "SSH_AUTH_SOCK": "/run/user/1000/ssh",
        "DISPLAY": ":0",
    }
    env = command_environment(environ, home=user, cwd=user / "Documents")
    assert env == {
        "PATH": "/usr/bin:/bin",
        "LANG": "C.UTF-8",
        "LC_TIME": "de_DE.UTF-8",
        "HOME": str(user),
        "TMPDIR": "/tmp",
        "PWD": str(user / "Documents"),
    }
    assert command_environment(environ, home=user, keep=["DISPLAY"])["DISPLAY"] == ":0"


def test_without_a_sandbox_commands_are_refused_with_the_reason(user):
    config = ToolConfig(command_roots=(user,))
    tool = make_system_tools(config, home=user, sandbox=NO_SANDBOX)[0]
    with pytest.raises(ToolRefused) as refused:
        tool.targets({"command": "ls"})
    assert "bubblewrap (bwrap) is not installed" in str(refused.value)
    assert "To get one: install the bubblewrap package" in str(refused.value)
    # Giving up the walls is not a fix: the refusal never steers to the unsafe setting.
    assert "unsandboxed" not in str(refused.value)


def test_without_a_sandbox_doctor_says_what_is_missing_and_how_to_get_it(user):
    config = ToolConfig(command_roots=(user,))
    tool = make_system_tools(config, home=user, sandbox=NO_SANDBOX)[0]
    assert tool.health is not None
    walls = next(c for c in tool.health() if c.name == "command sandbox")
    assert not walls.ok
    assert "not installed" in walls.detail
    assert walls.fix == "install the bubblewrap package and start Chamberlain again"
    assert "unsandboxed" not in walls.detail + walls.fix


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX commands")
def test_the_unsandboxed_opt_in_runs_commands_and_says_so(user, caplog):
    config = ToolConfig(command_roots=(user,), unsandboxed_commands=True)
    tool = make_system_tools(
        config, home=user, environ={"PATH": "/usr/bin:/bin"}, sandbox=NO_SANDBOX
    )[0]
    with caplog.at_level(logging.WARNING, logger="chamberlain.tools.system"):
        result = tool.run({"command": "ls Documents", "cwd": str(user)})
    assert result.data["stdout"] == "notes.txt\n"
    assert result.data["sandbox"] == "no sandbox"
    assert "WITHOUT a sandbox" in caplog.text


@pytest.mark.skipif(not sandbox_status().available, reason="no working bubblewrap here")
def test_doctor_reports_the_sandbox(tmp_path):
    from broker.doctor import run_checks

    checks = {c.name: c for c in run_checks(tmp_path / "home", llm_url="none")}
    assert checks["command sandbox"].ok
    assert "bubblewrap" in checks["command sandbox"].detail


def test_the_macos_profile_denies_by_default_and_private_places_last(user):
    """UNTESTED on macOS itself (no Mac here): only the profile's shape is checked."""
    docs = user / "Documents"
    plan = SandboxPlan(
        cwd=docs, home=user, read=(docs,), write=(docs,), private=private_places(user)
    )
    profile = macos_profile(plan)
    lines = profile.splitlines()
    assert lines[1] == "(deny default)"
    assert f'(allow file-read* file-write* (subpath "{docs}"))' in lines
    assert "(allow network*)" not in lines
    denials = [i for i, line in enumerate(lines) if line.startswith("(deny file-read*")]
    assert denials
    assert min(denials) > max(i for i, line in enumerate(lines) if line.startswith("(allow"))
    assert any(os.fspath(user / ".ssh") in lines[i] for i in denials)


# --- how the walls are built on this machine, and what is said where they cannot be -----------


@pytest.mark.skipif(not sandbox_status().available, reason="no working bubblewrap here")
def test_the_probe_forbids_user_namespaces_the_way_that_works_here(user):
    """--disable-userns is never passed without --unshare-user (bubblewrap 0.8.0 refuses it: every
    command of a normal user was refused), and the walls commands get are the ones probed."""
    status = sandbox_status()
    assert status.userns in USERNS_WAYS
    args = bwrap_args(SandboxPlan(cwd=user, home=user, read=(user,)), ["/bin/true"])
    assert args[args.index("--cap-drop") + 1] == "ALL"
    if "--disable-userns" in args:
        assert "--unshare-user" in args
    assert "--disable-userns" in args or "--assert-userns-disabled" in args
    done = subprocess.run([status.program or "bwrap", *args], capture_output=True, check=False)
    assert done.returncode == 0, done.stderr


def _fake_bwrap(tmp_path: Path, script: str, *, setuid: bool = False) -> str:
    """A stand-in for bubblewrap that fails the way it does where user namespaces are off: a
    kernel switch this shared machine cannot turn (fakes only at that edge)."""
    program = tmp_path / "bwrap"
    program.write_text("#!/bin/sh\n" + script)
    program.chmod(0o755 | (stat.S_ISUID if setuid else 0))
    return str(program)


def _sysctl(tmp_path: Path, **values: str) -> Path:
    root = tmp_path / "sys"
    for name, value in values.items():
        path = root / name.replace("__", "/")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(value + "\n")
    return root


UID_MAP_DENIED = "echo 'bwrap: setting up uid map: Permission denied' >&2; exit 1\n"


def test_with_apparmors_restriction_the_sandbox_message_says_to_give_bubblewrap_a_profile(
    tmp_path,
):
    program = _fake_bwrap(tmp_path, UID_MAP_DENIED)
    sysctl = _sysctl(tmp_path, kernel__apparmor_restrict_unprivileged_userns="1")
    status = probe_bubblewrap(program, sysctl)
    assert not status.available
    assert "AppArmor" in status.why
    assert "setting up uid map: Permission denied" in status.why  # what bubblewrap itself said
    assert "/etc/apparmor.d/bwrap" in status.remedy
    assert f"profile bwrap {program} flags=(unconfined) {{ userns, }}" in status.remedy
    assert "unsandboxed" not in status.why + status.remedy


@pytest.mark.parametrize(
    ("switch", "turn_on"),
    [
        ("kernel__unprivileged_userns_clone", "kernel.unprivileged_userns_clone=1"),
        ("user__max_user_namespaces", "user.max_user_namespaces=15000"),
    ],
)
def test_with_user_namespaces_turned_off_the_message_names_the_switch_and_how_to_turn_it_on(
    tmp_path, switch, turn_on
):
    program = _fake_bwrap(
        tmp_path,
        "echo 'bwrap: No permissions to create a new namespace, likely because the kernel does "
        "not allow non-privileged user namespaces.' >&2; exit 1\n",
    )
    status = probe_bubblewrap(program, _sysctl(tmp_path, **{switch: "0"}))
    assert not status.available
    assert "turned off for normal users" in status.why
    assert f"sudo sysctl -w {turn_on}" in status.remedy
    assert "/etc/sysctl.d/" in status.remedy
    assert "unsandboxed" not in status.why + status.remedy


def test_a_bubblewrap_too_old_to_forbid_user_namespaces_is_named_with_the_version_needed(tmp_path):
    program = _fake_bwrap(tmp_path, 'echo "bwrap: Unknown option $5" >&2; exit 1\n')
    status = probe_bubblewrap(program, _sysctl(tmp_path))
    assert not status.available
    assert "too old" in status.why
    assert "0.8.0 or newer" in status.remedy


def test_inside_a_container_that_masks_proc_the_message_says_so(tmp_path):
    program = _fake_bwrap(
        tmp_path,
        'echo "bwrap: Can\'t mount proc on /newroot/proc: Operation not permitted" >&2; exit 1\n',
    )
    status = probe_bubblewrap(program, _sysctl(tmp_path))
    assert "container" in status.why
    assert "unsandboxed" not in status.why + status.remedy


def test_a_setuid_bubblewrap_is_used_where_the_kernel_already_forbids_user_namespaces(tmp_path):
    """Setuid bubblewrap has no --disable-userns and refuses --size: the probe falls back to
    --assert-userns-disabled (bubblewrap checks at every start) and commands get no --size."""
    program = _fake_bwrap(
        tmp_path,
        'for a in "$@"; do case "$a" in --disable-userns|--size)'
        " echo 'bwrap: not in setuid mode' >&2; exit 1;; esac; done; exit 0\n",
        setuid=True,
    )
    status = probe_bubblewrap(program, _sysctl(tmp_path, user__max_user_namespaces="0"))
    assert status.available
    assert status.userns == ("--assert-userns-disabled",)
    plan = SandboxPlan(cwd=tmp_path, home=tmp_path)
    args = bwrap_args(plan, ["/bin/true"], status=status)
    assert "--assert-userns-disabled" in args
    assert "--disable-userns" not in args
    assert "--size" not in args


def test_a_setuid_bubblewrap_that_cannot_forbid_user_namespaces_is_refused_with_the_reason(
    tmp_path,
):
    program = _fake_bwrap(
        tmp_path,
        "echo 'bwrap: creation of new user namespaces was not disabled as requested' >&2; exit 1\n",
        setuid=True,
    )
    status = probe_bubblewrap(program, _sysctl(tmp_path, kernel__unprivileged_userns_clone="0"))
    assert not status.available
    assert "setuid" in status.why
    assert "not setuid" in status.remedy


# --- startup places held inside a writable folder ------------------------------------------------


def _after(args: list[str], flag: str, path: Path) -> int:
    """The index of `flag path path` in the arguments (bubblewrap applies them in order)."""
    for index, arg in enumerate(args[:-2]):
        if arg == flag and args[index + 1] == args[index + 2] == os.fspath(path):
            return index
    raise AssertionError(f"no {flag} {path} in {args}")


def test_a_startup_place_in_a_writable_folder_is_bound_read_only_over_itself(user):
    repo = user / "Documents" / "repo"
    (repo / ".git" / "hooks").mkdir(parents=True)
    plan = SandboxPlan(cwd=repo, home=user, read=(repo,), write=(repo,), keep=(repo / ".git",))
    args = bwrap_args(plan, ["true"], status=sandbox_status())
    # After the writable bind, so it wins; nothing created on the host.
    assert _after(args, "--ro-bind", repo / ".git") > _after(args, "--bind", repo)
    assert sorted(p.name for p in repo.iterdir()) == [".git"]


def test_a_missing_startup_place_makes_the_folder_it_would_be_made_in_read_only(user):
    docs = user / "Documents"
    (user / ".config").mkdir()
    plan = SandboxPlan(
        cwd=user,
        home=user,
        read=(user,),
        write=(user,),
        keep=(user / ".config" / "autostart", user / ".zshrc"),
    )
    args = bwrap_args(plan, ["true"], status=sandbox_status())
    # autostart: its folder .config is read-only. .zshrc: the home's own top level is
    # read-only, and each entry in it is bound writable again (but .config).
    sealed = _after(args, "--ro-bind", user)
    assert sealed > _after(args, "--bind", user)
    assert _after(args, "--bind", docs) > sealed
    assert _after(args, "--ro-bind", user / ".config") > sealed
    config = os.fspath(user / ".config")
    assert all(args[i : i + 3] != ["--bind", config, config] for i in range(len(args)))
    assert not (user / ".zshrc").exists()
    assert not (user / ".config" / "autostart").exists()


def test_the_macos_profile_denies_writing_a_startup_place(user):
    docs = user / "Documents"
    plan = SandboxPlan(cwd=docs, home=user, write=(docs,), keep=(docs / ".git",))
    assert f'(deny file-write* (subpath "{docs / ".git"}"))' in macos_profile(plan)
