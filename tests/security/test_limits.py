"""A command cannot take the desktop down: memory, processes, CPU time and /dev/shm are limited,
through the real CLI, as root and as the user nobody, and a limit hit is named.

The second review held 701 MiB with a read-only command and put 600 MiB in /dev/shm. Here the
same kinds of command run through `chamberlain ask` — typed by the person or asked for by a
scripted hostile model — with small limits set the way a person sets them (settings as
environment variables), so that each hit costs little on a shared machine: 64 MiB of memory, 1 s
of CPU, 16 processes, 4 MiB of /dev/shm. Without the limits the same commands would allocate
300 MiB, spin for the whole time limit, start 40 processes and fill 8 MiB of /dev/shm, and the
sentences asserted here would be missing.

The process limit is asserted for nobody only: the kernel never applies RLIMIT_NPROC to root,
and root's plan says so (tests/tools/test_limits.py). The nobody tests use the scratch person of
tests/security/test_normal_user.py and are skipped, with its reason, where it cannot run.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.security import test_normal_user
from tests.security.test_normal_user import NormalUser
from tests.support.cli import make_user, run_cli
from tests.support.openai_server import Text, ToolCalls
from tools.limits import limit_ways
from tools.sandbox import sandbox_status

pytestmark = [
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="rlimits and bubblewrap"),
    pytest.mark.skipif(not sandbox_status().available, reason="no working bubblewrap here"),
]

SMALL = {
    "CHAMBERLAIN_TOOLS__COMMAND_MEMORY_MB": "64",
    "CHAMBERLAIN_TOOLS__COMMAND_CPU_S": "1",
    "CHAMBERLAIN_TOOLS__COMMAND_MAX_PROCESSES": "16",
    "CHAMBERLAIN_TOOLS__COMMAND_SHM_MB": "4",
}
# A read-only pipeline that holds a growing line: grep takes as much memory as it is given.
MEMORY_HOG = "head -c 300M /dev/zero | tr '\\0' a | grep -c x"
# Where a service manager holds the limits for root (systemd as PID 1), root's is for certain.
ROOT_MEMORY_SENTENCE = (
    "the command was stopped: it used more than 64 MiB of memory (tools.command_memory_mb)"
    if limit_ways().cgroup
    else "the command failed, probably because it reached the memory limit of 64 MiB "
    "(tools.command_memory_mb)"
)
# nobody has no session bus here, so no user manager: rlimits.
MEMORY_SENTENCE = (
    "the command failed, probably because it reached the memory limit of 64 MiB "
    "(tools.command_memory_mb)"
)
CPU_SENTENCE = "the command was stopped: it used more than 1 s of CPU time (tools.command_cpu_s)"
PROCESS_SENTENCE = (
    "the command failed, probably because it reached the limit of 16 processes "
    "(tools.command_max_processes)"
)
SHM_SENTENCE = (
    "the command failed, probably because it filled /dev/shm, which holds at most 4 MiB "
    "(tools.command_shm_mb)"
)
# 8 MiB to copy into /dev/shm, twice its cap here.
BIG = b"x" * 8 * 1024 * 1024
SPAWN = """\
import subprocess

started = []
try:
    for _ in range(40):
        started.append(subprocess.Popen(["sleep", "20"]))
    print("started", len(started))
finally:
    for proc in started:
        proc.kill()
        proc.wait()
"""


# The scratch person of tests/security/test_normal_user.py (one definition, used here too).
nobody_ok = test_normal_user.nobody_ok
person = test_normal_user.person


@pytest.fixture
def user(tmp_path: Path) -> Path:
    home = make_user(tmp_path / "home")
    (home / "Documents" / "big.bin").write_bytes(BIG)
    return home


def typed(user: Path, line: str, **env: str) -> str:
    """The person types a command; it is approved once; what the terminal shows."""
    proc = run_cli(
        user,
        "ask",
        f"run `{line}` in ~/Documents",
        "--approve",
        "system_execute=once",
        "--llm",
        "none",
        env={**SMALL, **env},
    )
    said = proc.stdout + proc.stderr
    assert proc.returncode == 0, said
    assert "Traceback" not in proc.stderr  # the command's own error output goes to stdout
    return said


# --- as root ------------------------------------------------------------------------------------


def test_a_typed_read_only_command_that_grows_past_the_memory_limit_is_named_and_ends(user):
    said = typed(user, MEMORY_HOG)
    assert ROOT_MEMORY_SENTENCE in said
    if not limit_ways().cgroup:
        assert "memory exhausted" in said  # grep's own words, which the sentence goes by


def test_a_busy_command_a_hostile_model_asks_for_is_stopped_at_the_cpu_limit(user, scripted_server):
    """The model answers a harmless request with a read-only command that never ends on its
    own; the tool result it gets back names the CPU limit, and the turn ends."""
    server = scripted_server(
        [
            ToolCalls([("system_execute", {"command": "sha256sum /dev/zero"})]),
            Text("The hash rate test is done."),
        ]
    )
    proc = run_cli(
        user,
        "ask",
        "run a command that checks how fast this computer hashes data",
        "--json",
        "--llm",
        server.base_url,
        "--approve-all",
        "once",
        "--no-refine",
        env=SMALL,
    )
    assert proc.returncode == 0, proc.stderr
    turn = json.loads(proc.stdout)
    assert [c["status"] for c in turn["tool_calls"]] == ["ok"], turn["tool_calls"]
    result = server.requests[1]["messages"][-1]
    assert result["role"] == "tool"
    assert CPU_SENTENCE in result["content"]
    assert "time limit" not in result["content"]  # the CPU limit ended it, not the 30 s clock


def test_a_program_cannot_put_more_than_the_cap_in_dev_shm(user):
    if sandbox_status().setuid:
        pytest.skip("a setuid bubblewrap cannot size /dev/shm (the plan says so)")
    said = typed(user, "cp big.bin /dev/shm/big.bin")
    assert "error writing '/dev/shm/big.bin': No space left on device" in said
    assert SHM_SENTENCE in said


def test_a_limit_set_to_nonsense_is_refused_with_the_setting_named(user):
    proc = run_cli(
        user, "ask", "run `ls`", "--llm", "none", env={"CHAMBERLAIN_TOOLS__COMMAND_CPU_S": "0"}
    )
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr
    assert "CHAMBERLAIN_TOOLS__COMMAND_CPU_S is not a valid setting" in proc.stderr
    assert "tools.command_cpu_s: Input should be greater than or equal to 1" in proc.stderr


def test_a_limit_in_settings_json_that_is_not_a_number_names_the_file_and_line(user):
    settings = user / ".chamberlain" / "settings.json"
    settings.parent.mkdir()
    settings.write_text('{\n  "tools": {\n    "command_memory_mb": "lots"\n  }\n}\n')
    proc = run_cli(user, "ask", "run `ls`", "--llm", "none")
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr
    assert f"{settings} line 3: tools.command_memory_mb" in proc.stderr


# --- as the user nobody -------------------------------------------------------------------------


def nobody_typed(person: NormalUser, line: str) -> str:
    proc = person.cli(
        "ask",
        f"run `{line}` in ~/Documents",
        "--approve",
        "system_execute=once",
        "--llm",
        "none",
        **SMALL,
    )
    said = proc.stdout + proc.stderr
    assert proc.returncode == 0, said
    assert "Traceback" not in proc.stderr  # the command's own error output goes to stdout
    return said


def test_a_normal_users_spawning_program_stops_at_the_process_limit(person):
    (person.home / "Documents" / "spawn.py").write_text(SPAWN)
    person.own()
    said = nobody_typed(person, "python3 spawn.py")
    assert "Resource temporarily unavailable" in said
    assert "started 40" not in said
    assert PROCESS_SENTENCE in said


def test_a_normal_users_memory_hog_and_busy_loop_are_stopped_and_named(person):
    assert MEMORY_SENTENCE in nobody_typed(person, MEMORY_HOG)
    assert CPU_SENTENCE in nobody_typed(person, "sha256sum /dev/zero")


def test_a_normal_users_program_cannot_fill_dev_shm(person):
    if sandbox_status().setuid:
        pytest.skip("a setuid bubblewrap cannot size /dev/shm (the plan says so)")
    (person.home / "Documents" / "big.bin").write_bytes(BIG)
    person.own()
    said = nobody_typed(person, "cp big.bin /dev/shm/big.bin")
    assert "error writing '/dev/shm/big.bin': No space left on device" in said
    assert SHM_SENTENCE in said
