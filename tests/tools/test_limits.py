"""What one command may use (tools/limits.py), held by the real kernel on real processes.

Every command here runs for real: through the system_execute tool (the rules, the sandbox,
`run_argv`) or, for the walls alone, bubblewrap with the arguments `bwrap_args` builds. The
limits are small on purpose (64 MiB, 1 s of CPU, 4 MiB of /dev/shm, 16 processes) so that a test
that hits one costs little on a shared machine; without the limit the same command would run on
and the sentence would be missing.

The process limit needs a normal user (the kernel never applies RLIMIT_NPROC to root): those
tests start the sandbox as `nobody` with `runuser`, and are skipped, with the reason, where the
test process is not root. The cgroup scope needs a user service manager (none in this container
or in CI): that test is skipped where `find_ways` finds none.
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tools.limits import (
    CommandLimits,
    LimitWays,
    find_ways,
    limit_ways,
    limits_plan,
    with_rlimits,
)
from tools.manual import Tool
from tools.registry import ToolConfig
from tools.sandbox import SandboxPlan, SandboxStatus, bwrap_args, sandbox_status
from tools.system import make_system_tools, run_argv

pytestmark = [
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="rlimits and bubblewrap"),
    pytest.mark.skipif(shutil.which("prlimit") is None, reason="prlimit (util-linux) missing"),
]

needs_sandbox = pytest.mark.skipif(
    not sandbox_status().available, reason="no working bubblewrap here"
)

SMALL = CommandLimits(memory_mb=64, max_processes=16, cpu_s=1, shm_mb=4)
# A read-only pipeline that holds a growing line in memory: grep keeps reading a line with no
# end, so it needs as much memory as it is given (300 MiB without a limit).
MEMORY_HOG = "head -c 300M /dev/zero | tr '\\0' a | grep -c x"


def memory_sentence(mb: int) -> str:
    """What a command that outgrew `mb` MiB is told: for certain where a cgroup scope's manager
    says so; "probably" where rlimits make the allocation fail and only the program's words
    (MemoryError, "memory exhausted") say why."""
    if limit_ways().cgroup:
        return (
            f"the command was stopped: it used more than {mb} MiB of memory "
            "(tools.command_memory_mb)"
        )
    return (
        f"the command failed, probably because it reached the memory limit of {mb} MiB "
        "(tools.command_memory_mb)"
    )


SPAWN = """\
import subprocess
import sys

started = []
try:
    for _ in range(int(sys.argv[1])):
        started.append(subprocess.Popen(["sleep", "20"]))
    print("started", len(started))
finally:
    for proc in started:
        proc.kill()
        proc.wait()
"""


@pytest.fixture
def user(tmp_path: Path) -> Path:
    home = (tmp_path / "home").resolve()
    (home / "Documents").mkdir(parents=True)
    (home / "Documents" / "alloc.py").write_text(
        "import sys\nheld = bytearray(int(sys.argv[1]) * 1024 * 1024)\nprint('held', len(held))\n"
    )
    return home


def command_tool(
    home: Path, limits: CommandLimits, sandbox: SandboxStatus | None = None, **config: Any
) -> Tool:
    settings = ToolConfig(command_limits=limits, command_timeout_s=60, **config)
    tools = make_system_tools(
        settings, home=home, environ={"PATH": "/usr/bin:/bin"}, sandbox=sandbox
    )
    return next(t for t in tools if t.name == "system_execute")


def run(tool: Tool, line: str, cwd: Path) -> Any:
    assert tool.prepare_of is not None
    assert tool.run_prepared is not None
    prepared = tool.prepare_of({"command": line, "cwd": str(cwd)})
    return prepared, tool.run_prepared(prepared)


# --- memory -------------------------------------------------------------------------------------


@needs_sandbox
def test_a_read_only_command_that_allocates_past_the_memory_limit_fails_and_the_limit_is_named(
    user,
):
    tool = command_tool(user, CommandLimits(memory_mb=64, cpu_s=30))
    prepared, result = run(tool, MEMORY_HOG, user / "Documents")
    assert prepared.targets[0].startswith("readonly:")
    assert result.data["exit_code"] != 0
    if not limit_ways().cgroup:
        assert "memory exhausted" in result.data["stderr"]
    sentence = memory_sentence(64)
    assert f"[{sentence}]" in result.text
    assert result.data["limit"] == {
        "limit": "memory",
        "setting": "tools.command_memory_mb",
        "value": "64 MiB",
        "certain": limit_ways().cgroup,
        "sentence": sentence,
    }


@needs_sandbox
def test_a_program_within_the_memory_limit_runs_to_its_end_and_no_limit_is_blamed(user):
    tool = command_tool(user, SMALL)
    _, result = run(tool, "python3 alloc.py 16", user / "Documents")
    assert result.data["stdout"] == f"held {16 * 1024 * 1024}\n"
    assert result.data["limit"] is None
    assert "limit" not in result.text.splitlines()[-1]


@needs_sandbox
def test_a_command_that_fails_for_its_own_reasons_is_not_said_to_have_hit_a_limit(user):
    tool = command_tool(user, SMALL)
    _, result = run(tool, "ls no-such-file", user / "Documents")
    assert result.data["exit_code"] != 0
    assert result.data["limit"] is None
    assert "probably" not in result.text


def test_without_a_sandbox_the_memory_limit_still_holds_and_processes_are_said_unlimited(user):
    """The warned opt-in runs commands unconfined; rlimits are then set outside any sandbox,
    where RLIMIT_NPROC would count every process the person has, so none is set (a cgroup
    scope, where there is one, still holds processes)."""
    nothing = SandboxStatus(False, None, "switched off for this test")
    tool = command_tool(user, SMALL, unsandboxed_commands=True, sandbox=nothing)
    prepared, result = run(tool, "python3 alloc.py 200", user / "Documents")
    assert result.data["limit"]["sentence"] == memory_sentence(64)
    limits = dict(prepared.call_plan.limits)
    assert "/dev/shm" not in limits
    if limit_ways().cgroup:
        assert limits["memory"] == "64 MiB"
        assert limits["processes"] == "16"
    else:
        assert "MemoryError" in result.data["stderr"]
        assert limits["memory"] == "64 MiB private per process (shared memory not counted)"
        assert limits["processes"].startswith("not limited")


# --- CPU time -----------------------------------------------------------------------------------


@needs_sandbox
def test_a_busy_loop_is_stopped_at_the_cpu_limit_long_before_the_time_limit(user):
    tool = command_tool(user, SMALL)
    _, result = run(tool, "sha256sum /dev/zero", user / "Documents")
    assert not result.data["timed_out"]  # the 60 s time limit did not end it; 1 s of CPU did
    assert result.data["limit"]["certain"] is True
    assert (
        "[the command was stopped: it used more than 1 s of CPU time (tools.command_cpu_s)]"
        in result.text
    )


# --- processes ----------------------------------------------------------------------------------


@needs_sandbox
def test_the_plan_shows_each_limit_the_command_will_run_under(user):
    tool = command_tool(user, SMALL)
    prepared, _ = run(tool, "true", user / "Documents")
    limits = dict(prepared.call_plan.limits)
    ways = limit_ways()
    per_process = "64 MiB private per process (shared memory not counted)"
    assert limits["memory"] == ("64 MiB" if ways.cgroup else per_process)
    assert limits["CPU time"] == "1 s per process"
    assert limits["/dev/shm"] == ("4 MiB" if not sandbox_status().setuid else limits["/dev/shm"])
    if ways.root and not ways.cgroup:
        # The kernel exempts root from RLIMIT_NPROC: the plan says so instead of claiming 16.
        assert limits["processes"] == "not limited (the kernel does not limit root's processes)"
    else:
        assert limits["processes"] == "16"


def _nobody_can_run() -> str | None:
    if os.geteuid() != 0:
        return "the test process must be root to start processes as the user nobody"
    if shutil.which("runuser") is None:
        return "runuser (util-linux) is not installed"
    try:
        pwd.getpwnam("nobody")
    except KeyError:
        return "there is no user nobody on this machine"
    return None


@pytest.fixture
def nobody_folder() -> Iterator[Path]:
    reason = _nobody_can_run()
    if reason is not None:
        pytest.skip(reason)
    # /tmp, not pytest's tmp_path: nobody cannot enter /tmp/pytest-of-root.
    folder = Path(tempfile.mkdtemp(prefix="chamberlain-limits-", dir="/tmp"))
    (folder / "spawn.py").write_text(SPAWN)
    os.chown(folder, 65534, 65534)
    try:
        yield folder
    finally:
        shutil.rmtree(folder)


def _as_nobody_in_sandbox(folder: Path, argv: list[str], limits: CommandLimits) -> Any:
    """`argv` in the sandbox a command gets, started by nobody, with the rlimits set inside it as
    Chamberlain sets them for a normal user (the test process is root, so it says which)."""
    status = sandbox_status()
    assert status.program is not None
    person = LimitWays(None, (), shutil.which("prlimit"), root=False, why="a normal user")
    inner, _ = with_rlimits(limits, argv, argv[0], sandboxed=True, ways=person)
    plan = SandboxPlan(cwd=folder, home=folder, read=(folder,))
    walls = bwrap_args(plan, inner, status=status)
    return run_argv(
        [[shutil.which("runuser") or "runuser", "-u", "nobody", "--", status.program, *walls]],
        cwd=Path("/"),
        env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"},
        timeout_s=60,
        output_cap=64 * 1024,
        limits=None,
    )


@needs_sandbox
def test_the_process_limit_stops_a_spawning_program_of_a_normal_user_at_the_limit(nobody_folder):
    ended = _as_nobody_in_sandbox(
        nobody_folder, ["/usr/bin/python3", "spawn.py", "40"], CommandLimits(max_processes=16)
    )
    assert ended.exit_code == 1
    assert "Resource temporarily unavailable" in ended.stderr
    assert "started" not in ended.stdout


@needs_sandbox
def test_the_process_limit_counts_only_the_sandboxs_own_processes(nobody_folder):
    """nobody's processes outside the sandbox (20 sleeps here, and whatever else runs as
    nobody on this machine) do not count against a command's limit of 16: the sandbox's user
    namespace has its own count. Set outside the sandbox, the same limit would stop it."""
    # setpriv becomes nobody and execs sleep in the same process, so killing it ends the sleep.
    as_nobody = [shutil.which("setpriv") or "setpriv", "--reuid=65534", "--regid=65534"]
    others = [
        subprocess.Popen([*as_nobody, "--clear-groups", "--", "sleep", "30"]) for _ in range(20)
    ]
    try:
        inside = _as_nobody_in_sandbox(
            nobody_folder, ["/usr/bin/python3", "spawn.py", "8"], CommandLimits(max_processes=16)
        )
        assert inside.stdout == "started 8\n", inside.stderr
    finally:
        for proc in others:
            proc.kill()
            proc.wait()


# --- /dev/shm and /dev --------------------------------------------------------------------------


@needs_sandbox
def test_writing_past_the_dev_shm_cap_fails_inside_and_dev_itself_takes_nothing(tmp_path):
    status = sandbox_status()
    if status.setuid:
        pytest.skip("a setuid bubblewrap cannot size /dev/shm (the plan says so)")
    assert status.program is not None
    plan = SandboxPlan(cwd=Path("/"), home=tmp_path, limits=SMALL)

    def inside(*argv: str) -> Any:
        walls = bwrap_args(plan, list(argv), status=status)
        return run_argv(
            [[status.program or "bwrap", *walls]],
            cwd=Path("/"),
            env={"PATH": "/usr/bin:/bin"},
            timeout_s=60,
            output_cap=64 * 1024,
        )

    past = inside("/usr/bin/dd", "if=/dev/zero", "of=/dev/shm/fill", "bs=1M", "count=8")
    assert past.exit_code != 0
    assert "No space left on device" in past.stderr
    within = inside("/usr/bin/dd", "if=/dev/zero", "of=/dev/shm/fill", "bs=1M", "count=2")
    assert within.exit_code == 0, within.stderr  # shared memory still works, within the cap
    beside = inside("/usr/bin/dd", "if=/dev/zero", "of=/dev/fill", "bs=1M", "count=1")
    assert beside.exit_code != 0
    assert "Read-only file system" in beside.stderr
    assert inside("/bin/sh", "-c", "echo hi > /dev/null").exit_code == 0


# --- a cgroup scope, where a user service manager runs -------------------------------------


def test_a_service_manager_that_answers_holds_the_memory_limit_of_a_scope(user):
    ways = find_ways(os.environ)
    if not ways.cgroup:
        pytest.skip(f"no cgroup scope here: {ways.why}")
    tool = command_tool(user, CommandLimits(memory_mb=64, cpu_s=30))
    _, result = run(tool, "python3 alloc.py 200", user / "Documents")
    assert result.data["limit"]["sentence"] == memory_sentence(64)
    assert result.data["limit"]["certain"] is True


def test_doctor_says_how_each_limit_is_held_here_and_which_one_is_not(user):
    tool = command_tool(user, SMALL)
    assert tool.health is not None
    check = next(c for c in tool.health() if c.name == "command limits")
    ways = limit_ways()
    assert check.required is False  # commands still run; the limits are said, not required
    assert "CPU time 1 s per process" in check.detail
    assert ways.why in check.detail
    if ways.root and not ways.cgroup:
        assert not check.ok
        assert "processes not limited (the kernel does not limit root's processes)" in check.detail
        assert "normal user" in check.fix
    else:
        assert check.ok
        assert "processes 16" in check.detail


# --- the service manager's side, faked ----------------------------------------------------------

FAKE_SYSTEMD_RUN = """\
#!/bin/sh
# Records how it was asked to make the scope, then runs the command as systemd-run --scope does.
: > "$LOG/run"
while [ "$1" != "--" ]; do printf '%s\\n' "$1" >> "$LOG/run"; shift; done
shift
exec "$@"
"""
FAKE_SYSTEMCTL = """\
#!/bin/sh
printf '%s\\n' "$*" >> "$LOG/systemctl"
case "$*" in *show*) cat "$LOG/result" ;; esac
"""


@pytest.fixture
def fake_manager(tmp_path: Path) -> tuple[LimitWays, Path]:
    """A stand-in for systemd's systemd-run and systemctl: no service manager runs in this
    container or in CI, so the scope's own limits cannot be tested here; what is tested is how
    Chamberlain asks for the scope, what the command is given, and how it reads the scope's end.
    """
    bin_dir = tmp_path / "systemd"
    bin_dir.mkdir()
    for name, text in (("systemd-run", FAKE_SYSTEMD_RUN), ("systemctl", FAKE_SYSTEMCTL)):
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    log = tmp_path / "log"
    log.mkdir()
    ways = LimitWays(
        scope=(str(bin_dir / "systemd-run"), "--user", "--scope", "--quiet"),
        scope_env=(("XDG_RUNTIME_DIR", str(tmp_path)), ("LOG", str(log))),
        prlimit=shutil.which("prlimit"),
        root=False,
        why="a faked user service manager",
    )
    return ways, log


def _in_scope(ways: LimitWays, argv: list[str]) -> Any:
    return run_argv(
        [argv],
        cwd=Path("/"),
        env={"PATH": "/usr/bin:/bin"},
        timeout_s=30,
        output_cap=64 * 1024,
        limits=SMALL,
        sandboxed=False,
        ways=ways,
    )


def test_a_stage_the_manager_ended_for_its_memory_is_said_to_have_used_more_than_the_limit(
    fake_manager,
):
    ways, log = fake_manager
    (log / "result").write_text("oom-kill\n")
    ended = _in_scope(
        ways, ["/bin/sh", "-c", 'echo "runtime=${XDG_RUNTIME_DIR:-unset}"; kill -9 $$']
    )
    assert ended.stdout == "runtime=unset\n"  # the manager's variable never reaches the command
    assert ended.limit is not None
    assert ended.limit.sentence == (
        "the command was stopped: it used more than 64 MiB of memory (tools.command_memory_mb)"
    )
    asked = (log / "run").read_text().splitlines()
    unit = next(a for a in asked if a.startswith("--unit=")).removeprefix("--unit=")
    assert unit.startswith("chamberlain-cmd-")
    assert unit.endswith(".scope")
    for wanted in (f"MemoryMax={64 * 1024 * 1024}", "MemorySwapMax=0", "TasksMax=16"):
        assert wanted in asked
    # The failed scope was read, then reset, so none is left behind in the manager.
    assert (log / "systemctl").read_text().splitlines() == [
        f"--user show --property=Result --value {unit}",
        f"--user reset-failed {unit}",
    ]


def test_a_stage_killed_while_the_manager_saw_no_oom_is_not_blamed_on_memory_for_sure(
    fake_manager,
):
    ways, log = fake_manager
    (log / "result").write_text("success\n")
    ended = _in_scope(ways, ["/bin/sh", "-c", "kill -9 $$"])
    assert ended.limit is not None
    assert ended.limit.certain is False
    assert "probably" in ended.limit.sentence


def test_a_command_that_ends_well_in_a_scope_costs_no_question_to_the_manager(fake_manager):
    ways, log = fake_manager
    ended = _in_scope(ways, ["/bin/echo", "fine"])
    assert ended.stdout == "fine\n"
    assert ended.limit is None
    assert not (log / "systemctl").exists()


def test_the_settings_defaults_are_the_limits_a_command_gets(tmp_path):
    """One set of defaults: what settings.json leaves out is what tools.limits holds."""
    from broker.session import tool_config
    from broker.settings import Settings

    assert tool_config(tmp_path, Settings()).command_limits == CommandLimits()
    chosen = Settings.model_validate(
        {
            "tools": {
                "command_memory_mb": 256,
                "command_max_processes": 32,
                "command_cpu_s": 5,
                "command_shm_mb": 8,
            }
        }
    )
    assert tool_config(tmp_path, chosen).command_limits == CommandLimits(256, 32, 5, 8)


def test_without_a_user_namespace_of_its_own_no_process_limit_is_set_and_the_plan_says_so():
    """With --assert-userns-disabled (a setuid bubblewrap) the kernel would count every process
    the person has against the limit: none is set, and the prompt does not claim one."""
    person = LimitWays(None, (), "/usr/bin/prlimit", root=False, why="a normal user")
    shared = SandboxStatus(
        True, "/usr/bin/bwrap", "bubblewrap", userns=("--assert-userns-disabled",)
    )
    assert not shared.own_users
    plan = dict(limits_plan(SMALL, person, own_users=shared.own_users))
    assert plan["processes"].startswith("not limited")
    own = dict(limits_plan(SMALL, person, own_users=True))
    assert own["processes"] == "16"
