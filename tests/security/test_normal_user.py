"""Chamberlain as a normal user: the real CLI and the app's smoke test, started as `nobody`.

This machine and CI run as root; people never do. Each test starts the real entry point
(`python -m app.cli`, `python -m app.launcher --smoke-test`) with `runuser -u nobody` in a
scratch home that nobody owns, so every decision that depends on who runs it — the sandbox's
user namespace, file modes, the keyring, the memory key — is the one a person meets. The
sandbox's arguments are built by nobody's own process, never by the root test process.

Where this checkout or its Python lies under a folder only root may enter (pyenv's Python in
/root, here and in CI), nobody is shown those folders read-only, and nothing else of the closed
folder, in a private mount namespace made by bubblewrap as root (`_reach`); nobody's processes
then carry no_new_privs, which a person's do not (it changes nothing Chamberlain does). Skipped,
with the reason, where the test process is not root, `runuser`, the user nobody or bubblewrap is
missing, or nobody still cannot run this checkout's Python. Only the scratch folders made here
are touched; each is removed at the end.
"""

from __future__ import annotations

import contextlib
import json
import os
import pwd
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psutil
import pytest

from tests.support.allowlist import CANARY, RC, Home, plant_home
from tests.support.cli import PASSPHRASE, REPO
from tests.support.openai_server import Text, ToolCalls
from tests.support.reach import closed_folder, needed_folders, reach_wrapper

SSH_SECRET = "-----BEGIN OPENSSH PRIVATE KEY-----\nnobody-ssh-canary-4417\n"
TOKEN_SECRET = "nobody-token-canary-9051"


def _why_nobody_cannot_run() -> str | None:
    """Why these tests cannot run here, or None when they can."""
    if not sys.platform.startswith("linux"):
        return "needs Linux (runuser, bubblewrap)"
    if os.geteuid() != 0:
        return "the test process must be root to start processes as the user nobody"
    if shutil.which("runuser") is None:
        return "runuser (util-linux) is not installed"
    try:
        pwd.getpwnam("nobody")
    except KeyError:
        return "there is no user nobody on this machine"
    if reach_wrapper() and shutil.which("bwrap") is None:
        closed = ", ".join(sorted({str(closed_folder(p)) for p in needed_folders()} - {"None"}))
        return (
            f"the user nobody cannot enter {closed}, where this checkout ({REPO}) or its Python "
            f"({sys.executable}) lies, and without bubblewrap it cannot be shown that folder"
        )
    probe = _as_nobody(["-c", "import app.cli, tools.sandbox"], Path("/"), {})
    if probe.returncode != 0:
        return f"the user nobody cannot run this checkout's Python: {probe.stderr.strip()[-300:]}"
    return None


def _as_nobody(
    args: list[str],
    cwd: Path,
    env: dict[str, str],
    *,
    timeout: float = 120,
    wrap: list[str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """`python ARGS` as the user nobody, with exactly `env` (plus PATH and PYTHONPATH)."""
    return subprocess.run(
        _nobody_argv(args, env, wrap=wrap),
        cwd=cwd,
        env={"PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        stdin=subprocess.DEVNULL,
    )


def _nobody_argv(
    args: list[str], env: dict[str, str], *, wrap: list[str] | None = None
) -> list[str]:
    full = {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "PYTHONPATH": str(REPO),
        "PYTHONDONTWRITEBYTECODE": "1",
        **env,
    }
    variables = [f"{name}={value}" for name, value in full.items()]
    return [
        *reach_wrapper(),
        shutil.which("runuser") or "runuser",
        *("-u", "nobody", "--"),
        *(wrap or []),
        *("/usr/bin/env", "-i", *variables, sys.executable, *args),
    ]


@dataclass
class NormalUser:
    """A person's scratch home, owned by nobody, and the CLI run as nobody inside it."""

    base: Path
    home: Path

    @property
    def chamberlain_home(self) -> Path:
        return self.home / ".chamberlain"

    def env(self, **extra: str) -> dict[str, str]:
        runtime = self.base / "runtime"
        return {
            "HOME": str(self.home),
            "CHAMBERLAIN_HOME": str(self.chamberlain_home),
            "XDG_RUNTIME_DIR": str(runtime),
            "LANG": "C.UTF-8",
            # Spend scripted model turns only on what a test scripts.
            "CHAMBERLAIN_MEMORY__EXTRACT": "false",
            "CHAMBERLAIN_LLM__EMBEDDED_FALLBACK": "false",
            **extra,
        }

    def cli(
        self, *args: str, wrap: list[str] | None = None, **extra: str
    ) -> subprocess.CompletedProcess[str]:
        return _as_nobody(["-m", "app.cli", *args], self.home, self.env(**extra), wrap=wrap)

    def own(self) -> None:
        """Give nobody everything under the scratch folder (made by the root test process)."""
        for path in [self.base, *self.base.rglob("*")]:
            os.lchown(path, 65534, 65534)


@pytest.fixture(scope="module")
def nobody_ok() -> None:
    reason = _why_nobody_cannot_run()
    if reason is not None:
        pytest.skip(reason)


@pytest.fixture
def person(nobody_ok: None) -> Iterator[NormalUser]:
    # /tmp, not pytest's tmp_path: nobody cannot enter /tmp/pytest-of-root.
    base = Path(tempfile.mkdtemp(prefix="chamberlain-nobody-", dir="/tmp"))
    try:
        home = base / "home"
        (home / "Documents").mkdir(parents=True)
        (home / "Documents" / "plan.txt").write_text("Buy milk\nCall the bank\n")
        (home / "Documents" / "budget.csv").write_text("rent,900\n")
        (home / ".ssh").mkdir()
        (home / ".ssh" / "id_rsa").write_text(SSH_SECRET)
        (base / "runtime").mkdir(mode=0o700)
        user = NormalUser(base, home)
        user.own()
        yield user
    finally:
        shutil.rmtree(base)


def _said(proc: subprocess.CompletedProcess[str]) -> str:
    return proc.stdout + proc.stderr


# --- commands ---------------------------------------------------------------------------------


def test_a_typed_command_runs_for_a_normal_user_and_shows_its_output(person):
    proc = person.cli("ask", "run `ls /usr`", "--approve", "system_execute=once", "--llm", "none")
    assert proc.returncode == 0, _said(proc)
    for folder in ("bin", "lib", "share"):
        assert folder in proc.stdout.split(), proc.stdout
    assert "Traceback" not in _said(proc)


def test_an_approved_command_writes_in_the_folder_it_names_and_the_file_is_the_users(person):
    proc = person.cli(
        "ask",
        "run `touch from-chamberlain.txt` in ~/Documents",
        "--approve",
        "system_execute=once",
        "--llm",
        "none",
    )
    assert proc.returncode == 0, _said(proc)
    made = person.home / "Documents" / "from-chamberlain.txt"
    assert made.exists()
    assert made.stat().st_uid == 65534  # the person's own file, not root's or an unmapped id


def test_a_normal_users_command_sees_the_folder_it_runs_in_but_never_a_key_or_chamberlains_files(
    person,
):
    """The old "holds for an unprivileged user" test built the walls as root; here the CLI
    running as nobody builds them itself."""
    person.cli("memory", "list", CHAMBERLAIN_MEMORY_PASSPHRASE=PASSPHRASE)  # makes its folder
    token = person.chamberlain_home / "canary.key"
    token.write_text(TOKEN_SECRET)
    (person.home / "visible.txt").write_text("visible-to-the-command\n")
    person.own()
    # With no folder named it runs in an empty scratch folder and sees nothing of the home.
    unnamed = person.cli(
        "ask", "run `grep -r -e '' .`", "--approve", "system_execute=once", "--llm", "none"
    )
    assert unnamed.returncode == 0, _said(unnamed)
    assert "visible-to-the-command" not in _said(unnamed)
    # Named, it sees the home's files, never a key or Chamberlain's own.
    proc = person.cli(
        "ask", "run `grep -r -e '' .` in ~", "--approve", "system_execute=once", "--llm", "none"
    )
    assert proc.returncode == 0, _said(proc)
    assert "visible-to-the-command" in proc.stdout
    assert "Buy milk" in proc.stdout
    assert "nobody-ssh-canary" not in _said(proc)
    assert TOKEN_SECRET not in _said(proc)


# --- commands see only what was named (tests/security/test_allowlist.py, as nobody) ----------


@pytest.fixture
def planted(person: NormalUser) -> Home:
    """The review's scratch home (credentials, rc file, repository, diff), owned by nobody."""
    made = plant_home(person.home)
    person.own()
    return made


def test_as_a_normal_user_a_command_with_no_folder_named_finds_no_credential(person, planted):
    for line in ("zcat -rf .", "grep -r -e CANARY .", "cat .Xauthority"):
        proc = person.cli(
            "ask", f"run `{line}`", "--approve", "system_execute=once", "--llm", "none"
        )
        assert proc.returncode == 0, _said(proc)
        assert f"{CANARY}-" not in _said(proc), (line, _said(proc))


def test_as_a_normal_user_a_script_with_a_writable_home_plants_nothing(person, planted):
    """The sandbox nobody's own process builds holds every startup place read-only."""
    before = planted.digest()
    proc = person.cli(
        "ask",
        "run `/usr/bin/python3 Documents/plant.py` in ~",
        "--approve",
        "system_execute=once",
        "--llm",
        "none",
    )
    assert proc.returncode == 0, _said(proc)
    assert "WROTE Documents/ok.txt" in proc.stdout, _said(proc)
    wrote = [ln for ln in proc.stdout.splitlines() if ln.startswith(("WROTE", "RENAMED"))]
    assert wrote == ["WROTE Documents/ok.txt"], proc.stdout
    after = planted.digest()
    ours = {k for k in after if k == ".chamberlain" or k.startswith(".chamberlain/")}
    assert set(after) - set(before) - ours == {"Documents/ok.txt"}
    assert (person.home / ".bashrc").read_text() == RC


def test_as_a_normal_user_the_reviews_patch_changes_nothing_on_the_models_word(
    person, planted, scripted_server
):
    before = planted.digest()
    server = scripted_server(
        [
            ToolCalls(
                [
                    (
                        "system_execute",
                        {"command": "patch -p0 -i Documents/typo-fix.diff", "cwd": "~"},
                    )
                ]
            ),
            ToolCalls([("system_execute", {"command": "patch -p0 -i Documents/typo-fix.diff"})]),
            Text("Fixed."),
        ]
    )
    proc = person.cli(
        "ask",
        "run a command that checks how fast this computer hashes data",
        "--json",
        "--llm",
        server.base_url,
        "--approve-all",
        "once",
        "--no-refine",
    )
    assert proc.returncode == 0, _said(proc)
    calls = json.loads(proc.stdout)["tool_calls"]
    assert [c["status"] for c in calls][:1] == ["refused"], calls
    after = planted.digest()
    ours = {k for k in set(after) | set(before) if k.startswith(".chamberlain")}
    assert {k for k in set(after) | set(before) if after.get(k) != before.get(k)} <= ours
    assert (person.home / ".bashrc").read_text() == RC


# --- files, memory, a model turn --------------------------------------------------------------


def test_a_normal_user_lists_a_folder_in_their_home(person):
    proc = person.cli(
        "ask", "list files in ~/Documents", "--approve", "file_read=once", "--llm", "none"
    )
    assert proc.returncode == 0, _said(proc)
    assert "plan.txt" in proc.stdout
    assert "budget.csv" in proc.stdout


def test_without_a_keyring_memory_says_how_to_give_a_passphrase_and_then_remembers(person):
    """A normal user's session with no keyring service (no D-Bus session bus here): the real
    keyring discovery runs, finds none, and memory asks for the documented passphrase."""
    refused = person.cli("memory", "add", "My sister is called Ada")
    assert refused.returncode == 1, _said(refused)
    assert "CHAMBERLAIN_MEMORY_PASSPHRASE" in refused.stderr
    assert "Traceback" not in _said(refused)

    added = person.cli(
        "memory", "add", "My sister is called Ada", CHAMBERLAIN_MEMORY_PASSPHRASE=PASSPHRASE
    )
    assert added.returncode == 0, _said(added)
    listed = person.cli("memory", "list", CHAMBERLAIN_MEMORY_PASSPHRASE=PASSPHRASE)
    assert listed.returncode == 0, _said(listed)
    assert "My sister is called Ada" in listed.stdout
    # The memory file is the person's, and only theirs.
    database = person.chamberlain_home / "memory.db"
    assert database.stat().st_uid == 65534
    assert database.stat().st_mode & 0o077 == 0
    assert b"sister" not in database.read_bytes()  # encrypted at rest


def test_a_normal_user_gets_a_model_reply_from_a_local_server(person, scripted_server):
    server = scripted_server([Text("Why did the scarecrow win a prize? He was outstanding.")])
    proc = person.cli("ask", "tell me a joke", "--llm", server.base_url)
    assert proc.returncode == 0, _said(proc)
    assert "He was outstanding." in proc.stdout


# --- the desktop app --------------------------------------------------------------------------


def test_the_apps_smoke_test_passes_for_a_normal_user(person):
    done = _as_nobody(
        ["-m", "app.launcher", "--smoke-test"],
        person.home,
        {
            "HOME": str(person.home),
            "XDG_RUNTIME_DIR": str(person.base / "runtime"),
            "QT_QPA_PLATFORM": "offscreen",
        },
    )
    assert (done.returncode, done.stderr) == (0, ""), done.stdout
    assert done.stdout.strip() == "smoke test: ok"


# --- where no sandbox can be had ---------------------------------------------------------------


def _no_user_namespaces(person: NormalUser) -> list[str]:
    """A real bubblewrap around the CLI that forbids user namespaces inside it: what a person
    meets where the kernel turns them off (nothing on this machine is changed for it)."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        pytest.skip("needs bubblewrap to take user namespaces away")
    return [
        bwrap,
        *("--unshare-user", "--disable-userns", "--die-with-parent"),
        *("--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev"),
        *("--bind", str(person.base), str(person.base)),
    ]


def test_where_user_namespaces_are_off_a_command_is_refused_with_what_is_missing(person):
    proc = person.cli(
        "ask",
        "run `ls /usr`",
        "--approve",
        "system_execute=once",
        "--llm",
        "none",
        wrap=_no_user_namespaces(person),
    )
    said = _said(proc)
    assert proc.returncode == 1, said
    assert "commands run only inside a sandbox" in said
    assert "user namespace" in said  # what is missing
    assert "unsandboxed" not in said  # the unsafe setting is never the way out
    assert "Traceback" not in said
    assert "share" not in proc.stdout.split()  # ls never ran


def test_where_user_namespaces_are_off_doctor_says_what_to_do(person):
    proc = person.cli("doctor", "--llm", "none", wrap=_no_user_namespaces(person))
    lines = proc.stdout.splitlines()
    sandbox = next(i for i, line in enumerate(lines) if "command sandbox" in line)
    assert lines[sandbox].startswith("[--]"), proc.stdout
    assert lines[sandbox + 1].strip().startswith("to fix:"), proc.stdout
    assert "unsandboxed" not in proc.stdout
    assert proc.returncode == 1


def test_where_bubblewrap_is_missing_the_refusal_says_to_install_it(person):
    # A PATH without bubblewrap on it: what a person meets before installing it.
    empty = person.base / "bin"
    empty.mkdir()
    person.own()
    proc = person.cli(
        "ask", "run `ls /usr`", "--approve", "system_execute=once", "--llm", "none",
        PATH=str(empty),
    )  # fmt: skip
    said = _said(proc)
    assert proc.returncode == 1, said
    assert "install the bubblewrap package" in said
    assert "unsandboxed" not in said


# --- the walls, as nobody builds them ----------------------------------------------------------

_WALLS = r"""
import json, subprocess, sys
from pathlib import Path
from tools.private import private_places
from tools.sandbox import SandboxPlan, bwrap_args, sandbox_status

user = Path(sys.argv[1])
app = user / ".chamberlain"
status = sandbox_status()
plan = SandboxPlan(cwd=user, home=user, read=(user,), private=private_places(user, [app]),
                   hide=(app,))

def run(*argv):
    done = subprocess.run([status.program, *bwrap_args(plan, list(argv))], capture_output=True,
                          text=True, timeout=30)
    return {"rc": done.returncode, "out": done.stdout, "err": done.stderr}

print(json.dumps({
    "status": [status.available, status.why, list(status.userns)],
    "grep": run("/usr/bin/grep", "-r", "-e", "", "."),
    "touch": run("/usr/bin/touch", "new.txt"),
    "userns": run("/usr/bin/unshare", "--user", "/bin/true"),
    "caps": run("/usr/bin/grep", "^Cap", "/proc/self/status"),
    "proc": run("/bin/ls", "/proc"),
    "stat": run("/bin/cat", "/proc/self/stat"),
}))
"""


def test_the_walls_a_normal_user_builds_hold(person):
    app = person.home / ".chamberlain"
    app.mkdir()
    (app / "token.key").write_text(TOKEN_SECRET)
    (person.home / "notes.txt").write_text("visible\n")
    person.own()
    done = _as_nobody(["-c", _WALLS, str(person.home)], person.home, {"HOME": str(person.home)})
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    available, why, userns = seen["status"]
    assert available, why
    assert "--disable-userns" in userns or "--assert-userns-disabled" in userns
    # The folder it runs in, without the key or Chamberlain's files.
    assert "visible" in seen["grep"]["out"], seen["grep"]
    assert "nobody-ssh-canary" not in seen["grep"]["out"]
    assert TOKEN_SECRET not in seen["grep"]["out"]
    # Read-only means read-only.
    assert seen["touch"]["rc"] != 0
    assert not (person.home / "new.txt").exists()
    # No user namespaces of its own, no capabilities, no other process in sight.
    if Path("/usr/bin/unshare").exists():
        assert seen["userns"]["rc"] != 0, seen["userns"]
    caps = dict(line.split(":\t") for line in seen["caps"]["out"].splitlines())
    assert {caps["CapEff"], caps["CapPrm"], caps["CapBnd"]} == {"0000000000000000"}
    pids = [name for name in seen["proc"]["out"].split() if name.isdigit()]
    assert len(pids) <= 3, pids  # bubblewrap's init and the command, nothing of the machine's
    # A terminal session of its own, started inside (outside sessions show as 0 there), so it
    # cannot push keystrokes into the person's terminal.
    _pid, _name, _state, _ppid, _group, session, terminal = seen["stat"]["out"].split()[:7]
    assert session != "0"
    assert terminal == "0"


_ORPHAN = r"""
import subprocess, sys, time
from pathlib import Path
from tools.sandbox import SandboxPlan, bwrap_args, sandbox_status

user = Path(sys.argv[1])
status = sandbox_status()
plan = SandboxPlan(cwd=user, home=user, read=(user,))
child = subprocess.Popen([status.program, *bwrap_args(plan, ["/bin/sleep", "300"])])
print(child.pid, flush=True)
time.sleep(300)
"""


def test_a_normal_users_command_dies_with_chamberlain(person):
    parent = subprocess.Popen(
        _nobody_argv(["-c", _ORPHAN, str(person.home)], {"HOME": str(person.home)}),
        cwd=person.home,
        env={"PATH": "/usr/bin:/bin"},
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert parent.stdout is not None
        sandbox = psutil.Process(int(parent.stdout.readline()))
        sleeper = _wait_for_sleep(sandbox)
        chamberlain = psutil.Process(sandbox.ppid())  # the python nobody runs
        assert chamberlain.uids().real == 65534
        # Killed without a chance to clean up, as a crash or `kill -9` would.
        os.kill(chamberlain.pid, signal.SIGKILL)
        _, alive = psutil.wait_procs([sandbox, sleeper], timeout=15)
        assert not alive, f"left running: {alive}"
    finally:
        for proc in _still(parent):
            with contextlib.suppress(psutil.NoSuchProcess):
                proc.kill()
        parent.kill()
        parent.wait(timeout=10)


def _wait_for_sleep(sandbox: psutil.Process) -> psutil.Process:
    for _ in range(100):
        for proc in sandbox.children(recursive=True):
            if proc.name() == "sleep":
                return proc
        time.sleep(0.1)
    raise AssertionError("the sandboxed command never started")


def _still(parent: subprocess.Popen[str]) -> list[psutil.Process]:
    try:
        return psutil.Process(parent.pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []
