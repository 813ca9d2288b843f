"""system_execute, open_path and open_url, with real processes and real files in tmp dirs.

Commands really run (echo, printf, sort, seq, python scripts written here); nothing destructive
runs for real (the hard-deny rules are asserted as refusals in tests/security/). The desktop is
the one edge faked: open_path/open_url get a recording opener, and the default opener is pointed
at a stand-in xdg-open script on a PATH made for the test.
"""

from __future__ import annotations

import json
import os
import shlex
import stat
import sys
import textwrap
import time
import uuid
from pathlib import Path
from typing import Any

import psutil
import pytest

from tools.manual import Capability, Tool, ToolError, ToolRefused
from tools.registry import ToolConfig, builtin_registry
from tools.sandbox import command_environment
from tools.system import (
    KILL_GRACE_S,
    SCRATCH,
    make_system_tools,
    normalise_url,
    system_opener,
)

posix_only = pytest.mark.skipif(sys.platform == "win32", reason="runs POSIX processes")


class RecordingOpener:
    """Stands in for the desktop: records what would have been opened."""

    def __init__(self) -> None:
        self.opened: list[str] = []

    def __call__(self, target: str) -> None:
        self.opened.append(target)


@pytest.fixture
def user_home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    (home / "proj").mkdir(parents=True)
    (home / "notes.txt").write_text("hello notes\n")
    return home.resolve()


def build(
    home: Path,
    *,
    environ: dict[str, str] | None = None,
    opener: RecordingOpener | None = None,
    **config: Any,
) -> dict[str, Tool]:
    tools = make_system_tools(
        ToolConfig(**config), home=home, opener=opener or RecordingOpener(), environ=environ
    )
    return {tool.name: tool for tool in tools}


def execute(tool: Tool, command: str, **args: Any) -> dict[str, Any]:
    """As the runner calls a tool: targets() first, then run() on the same arguments."""
    arguments = {"command": command, **args}
    tool.targets(arguments)
    result = tool.run(arguments)
    assert isinstance(result.data, dict)
    return result.data


def _gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def _wait_gone(pid: int, within_s: float = 3.0) -> bool:
    # The kernel delivers SIGKILL at once, but a re-parented child is reaped by init a moment
    # later; a zombie counts as gone.
    end = time.monotonic() + within_s
    while time.monotonic() < end:
        if _gone(pid):
            return True
        time.sleep(0.02)
    return _gone(pid)


# --- the tools' manuals -------------------------------------------------------------------------


def test_manuals_describe_capability_risk_and_limits(user_home):
    tools = build(user_home, command_timeout_s=7.0, command_output_cap=1000)
    execute_tool = tools["system_execute"].manual
    assert execute_tool.capability is Capability.SYSTEM_EXECUTE
    assert execute_tool.category == "system"
    assert execute_tool.risk == "dangerous"
    assert execute_tool.mutating is True
    # The tool, not the runner, must do the killing: its limit is a little longer.
    assert 7.0 + KILL_GRACE_S < execute_tool.timeout_s <= 7.0 + KILL_GRACE_S + 10
    for name in ("open_path", "open_url"):
        assert tools[name].manual.capability is Capability.OPEN_EXTERNAL


def test_the_builtin_registry_includes_the_system_tools():
    names = builtin_registry(ToolConfig()).names()
    assert {"system_execute", "open_path", "open_url"} <= set(names)


# --- running: no shell, real processes ---------------------------------------------------------


@posix_only
def test_arguments_reach_the_program_exactly_as_quoted(user_home):
    tool = build(user_home)["system_execute"]
    data = execute(tool, r"""printf '[%s]\n' 'a b' "c\"d" $'e\tf' g\ h '' '$HOME' '*'""")
    assert data["stdout"] == '[a b]\n[c"d]\n[e\tf]\n[g h]\n[]\n[$HOME]\n[*]\n'
    assert data["exit_code"] == 0
    assert data["argv"] == [["printf", "[%s]\\n", "a b", 'c"d', "e\tf", "g h", "", "$HOME", "*"]]


@posix_only
def test_a_pipeline_runs_as_connected_processes(user_home):
    tool = build(user_home)["system_execute"]
    data = execute(tool, r"printf 'b\na\nc\n' | sort | head -n 2")
    assert data["stdout"] == "a\nb\n"
    assert data["exit_codes"] == [0, 0, 0]
    assert data["argv"] == [["printf", "b\\na\\nc\\n"], ["sort"], ["head", "-n", "2"]]


@posix_only
def test_a_pipeline_ends_when_its_reader_does(user_home):
    """`yes` only stops on SIGPIPE: that needs every stray copy of the pipe closed."""
    tool = build(user_home, command_timeout_s=20)["system_execute"]
    started = time.monotonic()
    data = execute(tool, "yes | head -n 1")
    assert data["stdout"] == "y\n"
    assert not data["timed_out"]
    assert time.monotonic() - started < 10


@posix_only
def test_the_command_gets_no_input(user_home):
    tool = build(user_home, command_timeout_s=20)["system_execute"]
    data = execute(tool, "cat")
    assert data["stdout"] == ""
    assert data["exit_code"] == 0
    assert not data["timed_out"]


@posix_only
def test_a_failing_command_reports_its_exit_code_and_errors(user_home):
    tool = build(user_home)["system_execute"]
    result_args = {"command": "ls /definitely/not/here"}
    tool.targets(result_args)
    result = tool.run(result_args)
    assert result.data["exit_code"] not in (0, None)
    assert "not/here" in result.data["stderr"]
    assert "--- error output ---" in result.text
    assert f"exit code {result.data['exit_code']}" in result.text
    assert result.meta["target"] == "readonly:ls /definitely/not/here"
    assert result.meta["reversibility"] == "easy"


@posix_only
def test_a_missing_program_is_a_clear_error_before_anyone_is_asked(user_home):
    tool = build(user_home)["system_execute"]
    with pytest.raises(ToolError, match="'no-such-program-here' was not found") as caught:
        tool.targets({"command": "no-such-program-here --flag"})
    assert not isinstance(caught.value, ToolRefused)
    with pytest.raises(ToolError, match="was not found"):
        tool.run({"command": "no-such-program-here"})


# --- the time limit and the process group ------------------------------------------------------

_SPAWNER = textwrap.dedent(
    """
    import os, signal, subprocess, sys, time
    if sys.argv[2] == "ignore-term":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    child = subprocess.Popen([sys.executable, "-c",
        "import signal, sys, time\\n"
        "if sys.argv[1] == 'ignore-term': signal.signal(signal.SIGTERM, signal.SIG_IGN)\\n"
        "time.sleep(100)", sys.argv[2], sys.argv[4]],
        start_new_session=sys.argv[2] == "setsid")
    with open(sys.argv[1], "w") as f:
        f.write(f"{os.getpid()} {child.pid}")
    print("started", flush=True)
    if sys.argv[3] == "stay":
        time.sleep(100)
    """
)


def _spawner(home: Path, mode: str, stay: str) -> tuple[str, str]:
    """The command line, and a word only its processes carry (the sandbox has its own PIDs,
    so the host's process table is searched for that word instead)."""
    # In a folder of the home: a command may not create files directly in the home (a new
    # .bash_profile there would run at the next login), only inside its folders.
    work = home / "work"
    work.mkdir(exist_ok=True)
    script = work / "spawner.py"
    script.write_text(_SPAWNER)
    pids = work / f"pids-{mode}-{stay}.txt"
    mark = f"mark-{uuid.uuid4().hex}"
    return shlex.join([sys.executable, str(script), str(pids), mode, stay, mark]), mark


def _carrying(mark: str) -> list[psutil.Process]:
    found = []
    for proc in psutil.process_iter(["cmdline", "status"]):
        cmdline = proc.info.get("cmdline") or []
        if mark in cmdline and proc.info.get("status") != psutil.STATUS_ZOMBIE:
            found.append(proc)
    return found


def _wait_none_carry(mark: str, within_s: float = 3.0) -> bool:
    end = time.monotonic() + within_s
    while time.monotonic() < end:
        if not _carrying(mark):
            return True
        time.sleep(0.02)
    return not _carrying(mark)


@posix_only
@pytest.mark.parametrize("mode", ["plain", "ignore-term", "setsid"])
def test_the_time_limit_kills_the_whole_process_group(user_home, mode):
    tool = build(user_home, command_timeout_s=1.5)["system_execute"]
    command, mark = _spawner(user_home, mode, "stay")
    started = time.monotonic()
    data = execute(tool, command)
    elapsed = time.monotonic() - started

    assert data["timed_out"] is True
    assert data["stdout"] == "started\n"  # what it printed before it was stopped is kept
    assert data["exit_code"] is not None
    assert data["exit_code"] < 0
    # A child in a session of its own (setsid) is no exception: the sandbox's PID namespace
    # ends with the command.
    assert _wait_none_carry(mark), "a process the command started outlived the time limit"
    # SIGTERM first; SIGKILL after the grace only when it is ignored.
    limit = 1.5 + (KILL_GRACE_S if mode == "ignore-term" else 0) + 3.0
    assert elapsed < limit


@posix_only
def test_processes_a_finished_command_left_behind_are_ended(user_home):
    tool = build(user_home, command_timeout_s=30)["system_execute"]
    command, mark = _spawner(user_home, "plain", "leave")
    started = time.monotonic()
    data = execute(tool, command)

    assert data["timed_out"] is False
    assert data["exit_code"] == 0
    assert time.monotonic() - started < 15  # not held until the time limit by the child
    assert _wait_none_carry(mark)


# --- output cap --------------------------------------------------------------------------------


@posix_only
def test_output_is_capped_per_stream_and_marked(user_home):
    tool = build(user_home, command_output_cap=1000)["system_execute"]
    data = execute(tool, "seq 1 100000")
    assert data["truncated"] is True
    head, _, marker = data["stdout"].partition("\n… [truncated:")
    assert head.startswith("1\n2\n3\n")
    assert len(head.encode()) <= 1000
    assert "588,895 bytes" in marker
    assert data["exit_code"] == 0  # drained, not cut off: the program ran to its end

    script = user_home / "noisy.py"
    script.write_text("import sys\nsys.stderr.write('e' * 5000)\nprint('fine')\n")
    data = execute(tool, shlex.join([sys.executable, str(script)]))
    assert data["stdout"] == "fine\n"
    assert data["stderr"].startswith("e" * 1000 + "\n… [truncated: 5,000 bytes")
    assert data["truncated"] is True


# --- environment ---------------------------------------------------------------------------------


@posix_only
def test_secret_looking_variables_never_reach_a_command(user_home, monkeypatch):
    monkeypatch.setenv("FAKE_API_KEY", "fake-secret-value-123")
    monkeypatch.setenv("MY_SESSION_COOKIE", "cookie-value-456")
    monkeypatch.setenv("GITHUB_PAT", "ghp-value-789")
    monkeypatch.setenv("DATABASE_URL", "postgres://me:hunter2@db.example/x")
    monkeypatch.setenv("LD_PRELOAD", "")
    monkeypatch.setenv("PLAIN_SETTING", "visible-value")
    tool = build(user_home)["system_execute"]
    output = execute(tool, "env")["stdout"]
    for secret in ("fake-secret-value-123", "cookie-value-456", "ghp-value-789", "hunter2"):
        assert secret not in output
    for name in ("FAKE_API_KEY", "MY_SESSION_COOKIE", "GITHUB_PAT", "DATABASE_URL", "LD_PRELOAD"):
        assert f"{name}=" not in output
    # An allowlist, not a denylist: a variable with an innocent name does not pass either.
    assert "PLAIN_SETTING" not in output
    assert f"HOME={user_home}" in output
    # No folder named: it runs in an empty scratch folder, never the home.
    assert f"PWD={SCRATCH}" in output


@pytest.mark.parametrize(
    "name",
    [
        "OPENAI_API_KEY", "AWS_ACCESS_KEY_ID", "GITHUB_TOKEN", "CHAMBERLAIN_HOME", "MY_PASSWORD",
        "DB_PASSWD", "APP_SECRET", "GOOGLE_APPLICATION_CREDENTIALS", "SSH_AUTH_SOCK",
        "HTTP_COOKIE", "XDG_SESSION_ID", "gpg_passphrase", "BASH_ENV", "BASH_FUNC_ls%%",
        "PYTHONSTARTUP", "GIT_SSH_COMMAND", "DYLD_INSERT_LIBRARIES",
    ],
)  # fmt: skip
def test_scrub_drops(name, tmp_path):
    env = command_environment({name: "x", "LANG": "C.UTF-8"}, home=tmp_path)
    assert name not in env
    assert env["LANG"] == "C.UTF-8"


def test_scrub_keeps_only_absolute_path_entries(tmp_path):
    env = command_environment({"PATH": ":.:bin:/usr/bin::/bin"}, home=tmp_path)
    assert env["PATH"] == "/usr/bin:/bin"


@posix_only
def test_a_program_in_the_working_folder_is_not_found_by_name(user_home):
    sneaky = user_home / "sneaky"
    sneaky.write_text("#!/bin/sh\necho ran-from-cwd\n")
    sneaky.chmod(0o755)
    environ = {"PATH": f".::{os.environ.get('PATH', '/usr/bin:/bin')}"}
    tool = build(user_home, environ=environ)["system_execute"]
    here = {"cwd": str(user_home)}
    with pytest.raises(ToolError, match="was not found"):
        tool.targets({"command": "sneaky", **here})
    # By path it runs, and it is not read-only.
    wanted = ["command:./sneaky", f"cwd:{user_home}"]
    assert tool.targets({"command": "./sneaky", **here})[:2] == wanted
    assert tool.run({"command": "./sneaky", **here}).data["stdout"] == "ran-from-cwd\n"


# --- working folder ------------------------------------------------------------------------------


@posix_only
def test_with_no_folder_named_a_command_runs_in_an_empty_scratch_folder_never_the_home(
    user_home,
):
    (user_home / "notes.txt").write_text("private notes\n")
    tool = build(user_home)["system_execute"]
    assert execute(tool, "pwd")["stdout"] == f"{SCRATCH}\n"
    listing = execute(tool, "ls -A")
    assert listing["stdout"] == ""
    assert listing["exit_code"] == 0
    assert listing["cwd"] is None
    assert tool.targets({"command": "pwd"}) == ["readonly:pwd", "cwd:"]
    # What one call leaves in its scratch folder is gone before the next one.
    assert execute(tool, "mkdir left-behind")["exit_code"] == 0
    assert execute(tool, "ls -A")["stdout"] == ""


@posix_only
def test_a_named_working_folder_may_be_the_home_or_inside_it(user_home):
    tool = build(user_home)["system_execute"]
    assert execute(tool, "pwd", cwd="~")["stdout"] == f"{user_home}\n"
    assert execute(tool, "pwd", cwd="~/proj")["stdout"] == f"{user_home}/proj\n"
    assert execute(tool, "pwd", cwd="proj")["stdout"] == f"{user_home}/proj\n"


def test_a_working_folder_outside_the_roots_is_refused(user_home, tmp_path):
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (user_home / "escape").symlink_to(outside)
    tool = build(user_home)["system_execute"]
    for cwd in (str(outside), "~/escape", "~/..", "/"):
        with pytest.raises(ToolRefused, match="commands may only run in"):
            tool.targets({"command": "pwd", "cwd": cwd})
        with pytest.raises(ToolRefused):
            tool.run({"command": "pwd", "cwd": cwd})


def test_a_missing_working_folder_is_an_error(user_home):
    tool = build(user_home)["system_execute"]
    with pytest.raises(ToolError, match="not an existing folder"):
        tool.targets({"command": "pwd", "cwd": "~/nope"})


@posix_only
def test_command_roots_replace_the_home(user_home, tmp_path):
    work = tmp_path / "work"
    (work / "sub").mkdir(parents=True)
    tool = build(user_home, command_roots=(work,))["system_execute"]
    assert execute(tool, "pwd", cwd=str(work))["stdout"] == f"{work.resolve()}\n"
    assert execute(tool, "pwd", cwd=str(work / "sub"))["stdout"] == f"{work.resolve()}/sub\n"
    with pytest.raises(ToolRefused):
        tool.targets({"command": "pwd", "cwd": str(user_home)})


# --- checked once, run as checked ----------------------------------------------------------------


@posix_only
def test_a_link_changed_after_the_check_is_not_followed(user_home, tmp_path):
    app = tmp_path / "app"
    app.mkdir()
    grants = app / "grants.json"
    grants.write_text('{"grants": []}')
    tool = build(user_home, protected_paths=(grants,))["system_execute"]
    link = user_home / "link"
    link.symlink_to(user_home / "notes.txt")

    args = {"command": "cat link", "cwd": str(user_home)}
    prepared = tool.prepare(args)
    # The home is the folder: only a grant for exactly this line covers it (`home:`).
    assert list(prepared.targets) == ["readonly:cat link", f"cwd:{user_home}", "home:"]
    link.unlink()
    link.symlink_to(grants)  # swapped while the user looked at the prompt
    with pytest.raises(ToolError, match="means something else now"):
        tool.execute(prepared)

    link.unlink()
    link.symlink_to(user_home / "notes.txt")
    args = {"command": "tee link", "cwd": str(user_home)}
    assert tool.targets(args)[:2] == ["command:tee link", f"cwd:{user_home}"]
    link.unlink()
    link.symlink_to(grants)
    with pytest.raises(ToolRefused, match=r"Chamberlain's own grants\.json"):
        tool.run(args)
    assert grants.read_text() == '{"grants": []}'  # tee never ran (it would have emptied it)


# --- open_path / open_url -------------------------------------------------------------------------


def test_open_path_hands_the_resolved_path_to_the_opener(user_home):
    opener = RecordingOpener()
    tools = build(user_home, opener=opener)
    (user_home / "doc.pdf").write_bytes(b"%PDF-1.4")
    (user_home / "alias.pdf").symlink_to(user_home / "doc.pdf")
    tool = tools["open_path"]

    assert tool.targets({"path": "~/alias.pdf"}) == [f"path:{user_home}/doc.pdf"]
    result = tool.run({"path": "~/alias.pdf"})
    assert opener.opened == [f"{user_home}/doc.pdf"]
    assert result.data == {"opened": f"{user_home}/doc.pdf", "kind": "file"}

    assert tool.run({"path": "~/proj"}).data["kind"] == "folder"
    assert opener.opened[-1] == f"{user_home}/proj"


def test_open_path_never_hands_a_private_place_to_the_desktop(user_home, tmp_path):
    app = tmp_path / "app"
    app.mkdir()
    (app / "token.key").write_text("secret")
    (user_home / ".ssh").mkdir()
    (user_home / ".ssh" / "id_rsa").write_text("key")
    opener = RecordingOpener()
    tool = build(user_home, opener=opener, app_dirs=(app.resolve(),))["open_path"]
    for path in ("~/.ssh/id_rsa", "~/.ssh", str(app / "token.key")):
        with pytest.raises(ToolRefused, match="never opened"):
            tool.targets({"path": path})
    assert opener.opened == []


@pytest.mark.parametrize("name", ["evil.desktop", "setup.exe", "run.sh", "Thing.app", "x.JAR"])
def test_open_path_refuses_programs_and_launchers(user_home, name):
    opener = RecordingOpener()
    tool = build(user_home, opener=opener)["open_path"]
    (user_home / name).write_text("[Desktop Entry]\nExec=touch /tmp/pwned\n")
    with pytest.raises(ToolRefused, match="not programs"):
        tool.targets({"path": f"~/{name}"})
    with pytest.raises(ToolRefused):
        tool.run({"path": f"~/{name}"})
    assert opener.opened == []


@posix_only
def test_open_path_refuses_an_executable_file(user_home):
    opener = RecordingOpener()
    tool = build(user_home, opener=opener)["open_path"]
    script = user_home / "report"
    script.write_text("#!/bin/sh\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    with pytest.raises(ToolRefused, match="executable"):
        tool.run({"path": "~/report"})
    assert opener.opened == []


def test_open_path_of_a_missing_file_is_an_error(user_home):
    tool = build(user_home)["open_path"]
    with pytest.raises(ToolError, match="does not exist"):
        tool.targets({"path": "~/missing.pdf"})


@pytest.mark.parametrize(
    ("raw", "normalised"),
    [
        ("HTTPS://Example.COM", "https://example.com/"),
        ("http://example.com:80/a?b=1#c", "http://example.com/a?b=1#c"),
        ("https://example.com:8443/x", "https://example.com:8443/x"),
        ("https://bücher.de/x", "https://xn--bcher-kva.de/x"),
        ("  https://example.org/page  ", "https://example.org/page"),
        ("mailto:someone@example.org?subject=hi", "mailto:someone@example.org?subject=hi"),
        ("https://[::1]:8080/", "https://[::1]:8080/"),
    ],
)
def test_open_url_normalises_the_link(user_home, raw, normalised):
    opener = RecordingOpener()
    tool = build(user_home, opener=opener)["open_url"]
    assert normalise_url(raw) == normalised
    assert tool.targets({"url": raw}) == [f"url:{normalised}"]
    tool.run({"url": raw})
    assert opener.opened == [normalised]


@pytest.mark.parametrize(
    "raw",
    [
        "file:///etc/passwd",
        "javascript:alert(1)",
        "data:text/html,<script>alert(1)</script>",
        "ftp://example.org/x",
        "example.org",
        "//example.org/x",
        "https://trusted.example@evil.example/",
        "https://user:pass@example.org/",
        "https://exa\u202emple.org/",
        "https://example.org/a b",
        "smb://server/share",
    ],
)
def test_open_url_refuses_other_schemes_and_disguises(user_home, raw):
    opener = RecordingOpener()
    tool = build(user_home, opener=opener)["open_url"]
    with pytest.raises(ToolRefused):
        tool.targets({"url": raw})
    with pytest.raises(ToolRefused):
        tool.run({"url": raw})
    assert opener.opened == []


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="xdg-open is the Linux opener")
def test_the_default_opener_says_when_there_is_no_handler(tmp_path):
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    opener = system_opener({"PATH": str(empty)}, home=tmp_path)
    with pytest.raises(ToolError, match="xdg-open is missing"):
        opener("https://example.org/")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="xdg-open is the Linux opener")
def test_the_default_opener_runs_xdg_open_with_a_scrubbed_environment(tmp_path):
    """A stand-in xdg-open (the desktop is the edge we cannot run here) records its call."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    record = tmp_path / "record.json"
    fake = bin_dir / "xdg-open"
    fake.write_text(
        f"#!{sys.executable}\n"
        "import json, os, sys\n"
        "seen = {'argv': sys.argv[1:], 'env': dict(os.environ)}\n"
        f"json.dump(seen, open({str(record)!r}, 'w'))\n"
        "sys.exit(3 if 'nohandler' in sys.argv[1] else 0)\n"
    )
    fake.chmod(0o755)
    environ = {
        "PATH": str(bin_dir),
        "DISPLAY": ":0",
        "DBUS_SESSION_BUS_ADDRESS": "unix:path=/run/user/1/bus",
        "FAKE_API_KEY": "fake-secret",
    }
    opener = system_opener(environ, home=tmp_path)
    opener("https://example.org/")
    seen = json.loads(record.read_text())
    assert seen["argv"] == ["https://example.org/"]
    assert seen["env"]["DISPLAY"] == ":0"
    assert seen["env"]["DBUS_SESSION_BUS_ADDRESS"] == "unix:path=/run/user/1/bus"
    assert "FAKE_API_KEY" not in seen["env"]

    with pytest.raises(ToolError, match="No application is set up to open"):
        opener("https://example.org/nohandler")


# --- the benchmark runs ---------------------------------------------------------------------------


@posix_only
def test_command_overhead_bench_reports_its_figures(capsys):
    from bench import command_overhead

    assert command_overhead.main(["--runs", "5", "--warmup", "1", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    for name in ("bare_true", "tool_true", "bare_echo", "tool_echo", "check_only"):
        assert report["ms"][name]["median"] > 0
        assert report["ms"][name]["p95"] >= report["ms"][name]["median"]
    assert report["ratio"]["true"]["median"] > 0
    assert report["ratio"]["echo"]["p95"] > 0


@posix_only
def test_the_program_that_runs_is_the_one_that_was_checked(user_home, tmp_path):
    """A program put earlier on PATH between the check and the run is not what runs."""
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir()
    second.mkdir()
    (second / "greet").write_text("#!/bin/sh\necho checked\n")
    (second / "greet").chmod(0o755)
    environ = {"PATH": f"{first}:{second}:/usr/bin:/bin"}
    tool = build(user_home, environ=environ)["system_execute"]
    prepared = tool.prepare({"command": "greet"})
    (first / "greet").write_text("#!/bin/sh\necho swapped\n")
    (first / "greet").chmod(0o755)
    assert tool.execute(prepared).data["stdout"] == "checked\n"
