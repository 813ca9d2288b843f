"""The sandbox's walls as built (tools/sandbox.py), and what happens where there is none.

The walls themselves are attacked in tests/security/test_sandbox.py; here: the plan a call gets
(what is mounted, covered, writable, networked), the allowlisted environment, the refusal
without a sandbox and the warned opt-in, and the untested macOS profile's shape.
"""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path

import pytest

from tools.manual import ToolRefused
from tools.private import private_places
from tools.registry import ToolConfig
from tools.sandbox import (
    SandboxPlan,
    SandboxStatus,
    bwrap_args,
    command_environment,
    macos_profile,
    sandbox_status,
)
from tools.system import make_system_tools

NO_SANDBOX = SandboxStatus(False, None, "bubblewrap (bwrap) is not installed")


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
    args = bwrap_args(plan, ["/bin/touch", "x"])
    assert _pairs(args, "--bind") == [str(docs)]
    assert str(docs) not in _pairs(args, "--ro-bind")
    assert "--share-net" in args
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
    assert "tools.unsandboxed_commands" in str(refused.value)


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX commands")
def test_the_unsandboxed_opt_in_runs_commands_and_says_so(user, caplog):
    config = ToolConfig(command_roots=(user,), unsandboxed_commands=True)
    tool = make_system_tools(
        config, home=user, environ={"PATH": "/usr/bin:/bin"}, sandbox=NO_SANDBOX
    )[0]
    with caplog.at_level(logging.WARNING, logger="chamberlain.tools.system"):
        result = tool.run({"command": "ls Documents"})
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
