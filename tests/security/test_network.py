"""A networked command gets a network of its own (tools/netns.py): the review's attacks, through
the real `system_execute` (tests/support/network_probe.py), as root and as the user nobody.

The review reached, from a command granted the network: an X server's abstract socket (curl
with a config naming `@/tmp/.X11-unix/X77`, keystrokes typed into a terminal), a session D-Bus on
an abstract address, the host's list of abstract sockets (/proc/net/unix) and loopback services;
and one networked stage gave every stage of its pipeline the host network. Here each is tried
against the real thing: a real Xvfb, a real `dbus-daemon --session` on an abstract address, a
real abstract socket bound by this test, real HTTP servers on 127.0.0.1 and on this machine's own
non-loopback address. Each attack has a control made from the host, so a test cannot pass
because the target was not there. Egress is tested to a host of its own (a network namespace
behind a veth pair, at a documentation address): the CI machine reaches no internet host a test
could rely on, and this machine's own addresses are walled off like its loopback.
"""

from __future__ import annotations

import contextlib
import http.server
import ipaddress
import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.security.test_normal_user import _as_nobody, _why_nobody_cannot_run
from tests.support.network_probe import helpers_left, run_lines
from tools.netns import find_helper, network_helper
from tools.sandbox import sandbox_status

pytestmark = [
    pytest.mark.skipif(not sandbox_status().available, reason="no working bubblewrap here"),
    pytest.mark.skipif(
        not network_helper().available, reason=f"no user-mode networking: {network_helper().why}"
    ),
    pytest.mark.skipif(shutil.which("curl") is None, reason="curl is not installed"),
]


# --- the targets on the host --------------------------------------------------------------------


@dataclass
class Server:
    """A real HTTP server in this process, recording the path of every request it gets."""

    host: str
    port: int
    seen: list[str] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"


@contextlib.contextmanager
def http_server(host: str) -> Iterator[Server]:
    record = Server(host, 0)

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            record.seen.append(self.path)
            body = b"secret-from-the-host-service\n" if "secret" in self.path else b"hello\n"
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            return

    server = http.server.ThreadingHTTPServer((host, 0), Handler)
    record.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield record
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def own_address() -> str | None:
    """This machine's address on its default route (not loopback), or None without one."""
    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        probe.connect(("192.0.2.200", 9))  # UDP: nothing is sent
        address = probe.getsockname()[0]
    except OSError:
        return None
    finally:
        probe.close()
    return None if address.startswith("127.") else address


@pytest.fixture
def loopback_service() -> Iterator[Server]:
    with http_server("127.0.0.1") as server:
        yield server


_OUTSIDE_SERVER = """
import http.server, sys
log, host = sys.argv[1], sys.argv[2]
class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        with open(log, "a") as f:
            f.write(self.path + "\\n")
        body = b"hello\\n"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass
server = http.server.ThreadingHTTPServer((host, 0), Handler)
print(server.server_address[1], flush=True)
server.serve_forever()
"""


@dataclass
class OutsideServer:
    """An HTTP server on a host of its own (a network namespace joined to this machine by a
    veth pair, at a documentation address): it stands in for the internet, which the CI
    machine does not reach, and is not one of this machine's own addresses."""

    host: str
    port: int
    log: Path

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def seen(self) -> list[str]:
        return self.log.read_text().splitlines() if self.log.exists() else []


def _free_block(ip: str) -> int:
    """A /30 of 198.51.100.0/24 no route of this machine covers yet: a run that was killed
    leaves its namespace's veth behind, and a second route to the same block sends the test's
    connection to the dead one (curl: "Couldn't connect", seen in CI)."""
    shown = subprocess.run(
        [ip, "-4", "route", "show", "table", "all"], capture_output=True, text=True, timeout=10
    ).stdout
    taken = {
        network
        for word in shown.split()
        for network in [_network(word)]
        if network is not None and network.overlaps(ipaddress.ip_network("198.51.100.0/24"))
    }
    free = [
        block
        for block in range(0, 256, 4)
        if not any(ipaddress.ip_network(f"198.51.100.{block}/30").overlaps(n) for n in taken)
    ]
    if not free:
        pytest.skip("every /30 of 198.51.100.0/24 is routed here already")
    return free[secrets.randbelow(len(free))]


def _network(word: str) -> ipaddress.IPv4Network | None:
    try:
        network = ipaddress.ip_network(word, strict=False)
    except ValueError:
        return None
    return network if isinstance(network, ipaddress.IPv4Network) else None


@pytest.fixture
def outside_service(tmp_path: Path) -> Iterator[OutsideServer]:
    ip = shutil.which("ip")
    if os.geteuid() != 0 or ip is None:
        pytest.skip("making a host of its own to stand in for the internet needs root and ip")
    tag = secrets.token_hex(3)
    ns, outer, inner = f"ch-out-{tag}", f"cho{tag}", f"chi{tag}"
    block = _free_block(ip)
    near, far = f"198.51.100.{block + 1}", f"198.51.100.{block + 2}"
    steps = [
        ["netns", "add", ns],
        ["link", "add", outer, "type", "veth", "peer", "name", inner, "netns", ns],
        ["addr", "add", f"{near}/30", "dev", outer],
        ["link", "set", outer, "up"],
        ["-n", ns, "addr", "add", f"{far}/30", "dev", inner],
        ["-n", ns, "link", "set", inner, "up"],
        ["-n", ns, "link", "set", "lo", "up"],
        ["-n", ns, "route", "add", "default", "via", near],
    ]
    server: subprocess.Popen[str] | None = None
    try:
        for step in steps:
            subprocess.run([ip, *step], check=True, capture_output=True, timeout=10)
        log = tmp_path / "outside-seen.log"
        server = subprocess.Popen(
            [ip, "netns", "exec", ns, sys.executable, "-c", _OUTSIDE_SERVER, str(log), far],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert server.stdout is not None
        port = int(server.stdout.readline())
        yield OutsideServer(far, port, log)
    finally:
        if server is not None:
            server.kill()
            server.wait(timeout=10)
        subprocess.run([ip, "link", "del", outer], capture_output=True, timeout=10)
        subprocess.run([ip, "netns", "del", ns], capture_output=True, timeout=10)


@pytest.fixture
def own_service() -> Iterator[Server]:
    """A real HTTP server on this machine's own non-loopback address (what a service listening
    on 0.0.0.0 answers on)."""
    address = own_address()
    if address is None:
        pytest.skip("this machine has no non-loopback address")
    with http_server(address) as server:
        yield server


@pytest.fixture
def abstract_canary() -> Iterator[str]:
    """An abstract unix socket of the host, listening: its name."""
    name = f"chamberlain-canary-{secrets.token_hex(6)}"
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.bind("\0" + name)
    sock.listen(4)
    try:
        yield name
    finally:
        sock.close()


@pytest.fixture
def x_server() -> Iterator[str]:
    """A real Xvfb; its abstract socket's name (`/tmp/.X11-unix/XN`)."""
    xvfb = pytest.importorskip("tests.support.xvfb")
    if xvfb.XVFB is None:
        pytest.skip("Xvfb is not installed")
    with xvfb.running_xvfb(320, 200) as server:
        yield f"/tmp/.X11-unix/X{server.display.lstrip(':')}"


@pytest.fixture
def session_bus() -> Iterator[str]:
    """A real session D-Bus listening only on an abstract address; its name."""
    program = shutil.which("dbus-daemon")
    if program is None:
        pytest.skip("dbus-daemon is not installed")
    name = f"chamberlain-bus-{secrets.token_hex(6)}"
    daemon = subprocess.Popen(
        [program, "--session", "--nofork", "--print-address", f"--address=unix:abstract={name}"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    try:
        assert daemon.stdout is not None
        assert name in daemon.stdout.readline().decode()
        yield name
    finally:
        daemon.kill()
        daemon.wait()


def reach_abstract(name: str) -> bool:
    """Whether the host itself connects to the abstract socket `name` (the attack's control)."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect("\0" + name)
    except OSError:
        return False
    finally:
        sock.close()
    return True


# --- who runs the commands ----------------------------------------------------------------------

Runner = Callable[..., dict[str, Any]]


def _as_root(files: dict[str, str], lines: list[str], limit_s: float = 20.0) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="chamberlain-net-") as base:
        home = Path(base) / "home"
        work = home / "work"
        work.mkdir(parents=True)
        for name, text in files.items():
            (work / name).write_text(text)
        results = run_lines(home, work, lines, command_timeout_s=limit_s)
        return {"results": results, "helpers": helpers_left()}


def _as_nobody_runner(
    files: dict[str, str], lines: list[str], limit_s: float = 20.0
) -> dict[str, Any]:
    reason = _why_nobody_cannot_run()
    if reason is not None:
        pytest.skip(reason)
    # /tmp, not pytest's tmp_path: nobody cannot enter /tmp/pytest-of-root.
    base = Path(tempfile.mkdtemp(prefix="chamberlain-net-nobody-", dir="/tmp"))
    try:
        home = base / "home"
        work = home / "work"
        work.mkdir(parents=True)
        for name, text in files.items():
            (work / name).write_text(text)
        for path in [base, *base.rglob("*")]:
            os.chown(path, 65534, 65534)
        done = _as_nobody(
            ["-m", "tests.support.network_probe", str(home), str(work), json.dumps(lines),
             json.dumps({"command_timeout_s": limit_s})],
            home,
            {"HOME": str(home), "LANG": "C.UTF-8"},
        )  # fmt: skip
        assert done.returncode == 0, done.stderr[-2000:]
        return dict(json.loads(done.stdout))
    finally:
        shutil.rmtree(base)


@pytest.fixture(params=["root", "nobody"])
def run_as(request: pytest.FixtureRequest) -> Runner:
    return _as_root if request.param == "root" else _as_nobody_runner


def _ran(report: dict[str, Any], index: int = 0) -> dict[str, Any]:
    result = report["results"][index]
    assert result.get("refused") is None, result
    assert "error" not in result, result
    return dict(result)


# --- the attacks ---------------------------------------------------------------------------------


def test_a_networked_command_cannot_reach_the_x_servers_abstract_socket(run_as, x_server):
    assert reach_abstract(x_server), "control: the host reaches its X server"
    # The review's route: the abstract socket named in a curl config, typed into with telnet.
    config = f'abstract-unix-socket = "{x_server}"\nurl = "telnet://x"\nmax-time = 5\n'
    report = run_as({"x.cfg": config}, ["curl -sS -K x.cfg"])
    result = _ran(report)
    assert result["exit_code"] == 7, result
    assert "Couldn't connect" in result["stderr"] or "Failed to connect" in result["stderr"]
    assert report["helpers"] == []


def test_a_networked_command_cannot_reach_a_session_bus_on_an_abstract_address(run_as, session_bus):
    listed = subprocess.run(
        ["dbus-send", f"--bus=unix:abstract={session_bus}", "--print-reply",
         "--dest=org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus.ListNames"],
        capture_output=True, text=True, timeout=10, check=False,
    )  # fmt: skip
    assert "org.freedesktop.DBus" in listed.stdout, "control: the host's bus answers ListNames"
    config = f'abstract-unix-socket = "{session_bus}"\nurl = "http://bus/"\nmax-time = 5\n'
    report = run_as({"bus.cfg": config}, ["curl -sS -K bus.cfg"])
    result = _ran(report)
    assert result["exit_code"] == 7, result


def test_no_stage_of_a_networked_pipeline_reaches_the_session_bus(
    run_as, session_bus, outside_service
):
    line = (
        f"curl -sS -m 5 -o /dev/null {outside_service.url}/pipeline | dbus-send "
        f"--bus=unix:abstract={session_bus} --print-reply --dest=org.freedesktop.DBus "
        "/org/freedesktop/DBus org.freedesktop.DBus.ListNames"
    )
    report = run_as({}, [line])
    result = _ran(report)
    assert result["exit_codes"][0] == 0, result  # the curl stage had its network
    assert "/pipeline" in outside_service.seen
    assert result["exit_codes"][1] != 0, result
    assert "org.freedesktop.DBus" not in result["stdout"]


def test_a_networked_command_sees_none_of_the_hosts_unix_sockets(run_as, abstract_canary):
    host_list = Path("/proc/net/unix").read_text()
    assert "@" + abstract_canary in host_list, "control: the host lists its abstract socket"
    report = run_as({}, ["curl -sS -m 5 file:///proc/net/unix"])
    result = _ran(report)
    assert result["exit_code"] == 0, result
    assert result["stdout"].startswith("Num")
    assert abstract_canary not in result["stdout"]
    assert "/tmp/.X11-unix" not in result["stdout"]
    # The host's list is long; the sandbox's holds at most its own few sockets.
    assert len(result["stdout"].splitlines()) < 10


def test_a_loopback_service_is_out_of_reach_unless_the_line_names_its_port(
    run_as, loopback_service
):
    hidden = f'url = "{loopback_service.url}/secret-in-config"\nmax-time = 5\n'
    lines = ["curl -sS -K hidden.cfg"]
    if network_helper().kind == "slirp4netns":
        # slirp4netns's gateway is the host's loopback unless --disable-host-loopback.
        lines.append(f"curl -sS -m 5 http://10.0.2.2:{loopback_service.port}/secret-gateway")
    report = run_as({"hidden.cfg": hidden}, lines)
    for result in report["results"]:
        assert result.get("refused") is None, result
        assert result["exit_code"] != 0, result
        assert "secret-from-the-host-service" not in result["stdout"]
    assert loopback_service.seen == []
    # control: the service is there and answers the host.
    assert subprocess.run(
        ["curl", "-sS", "-m", "5", f"{loopback_service.url}/secret-control"],
        capture_output=True, text=True, timeout=10, check=False,
    ).stdout == "secret-from-the-host-service\n"  # fmt: skip


def test_a_service_on_this_machines_own_address_is_out_of_reach(run_as, own_service):
    """A service listening on 0.0.0.0 answers on every address of this machine, not only
    127.0.0.1: a command's network reaches none of them."""
    report = run_as({}, [f"curl -sS -m 5 {own_service.url}/secret-own-address"])
    [result] = report["results"]
    assert result.get("refused") is None, result
    assert result["exit_code"] != 0, result
    assert own_service.seen == []
    # control: the service is there and answers the host.
    assert subprocess.run(
        ["curl", "-sS", "-m", "5", f"{own_service.url}/secret-control"],
        capture_output=True, text=True, timeout=10, check=False,
    ).stdout == "secret-from-the-host-service\n"  # fmt: skip


@pytest.mark.skipif(
    not find_helper(prefer=("pasta",)).available, reason="pasta (passt) is not installed"
)
def test_a_line_that_names_a_local_port_reaches_that_port_and_no_other(run_as, loopback_service):
    with http_server("127.0.0.1") as other:
        # The second service's port is named only inside a file, never on the line.
        hidden = f'url = "{other.url}/secret-other"\nmax-time = 5\n'
        named = f"curl -sS -m 5 {loopback_service.url}/named"
        report = run_as(
            {"other.cfg": hidden},
            [
                named,
                f"curl -sS -m 5 -K other.cfg {loopback_service.url}/named-again",
                "nc -z 127.0.0.1",
            ],
        )
        assert other.seen == []
    reached = _ran(report, 0)
    assert reached["exit_code"] == 0, reached
    assert reached["stdout"] == "hello\n"
    both = _ran(report, 1)
    # curl tried both: the port the line names answered, the one in the file did not.
    assert both["stdout"] == "hello\n", both
    assert "Failed to connect" in both["stderr"] or "Couldn't connect" in both["stderr"], both
    assert loopback_service.seen == ["/named", "/named-again"]
    no_port = report["results"][2]
    assert no_port["refused"] is not None
    assert "without a port" in no_port["refused"]


def test_a_networked_command_reaches_a_host_outside_and_gets_its_answer(run_as, outside_service):
    report = run_as({}, [f"curl -sS -m 10 {outside_service.url}/egress"])
    result = _ran(report)
    assert result["exit_code"] == 0, result
    assert result["stdout"] == "hello\n"
    assert outside_service.seen == ["/egress"]
    assert report["helpers"] == []


def test_the_stage_after_a_networked_one_has_no_network(run_as, outside_service):
    line = f"curl -sS -m 10 {outside_service.url}/first | cat /proc/net/route /proc/net/dev"
    report = run_as({}, [line])
    result = _ran(report)
    assert outside_service.seen == ["/first"]
    routes_and_devices = result["stdout"]
    # Only the loopback device; no route at all, no tap or eth device.
    assert "00000000" not in routes_and_devices
    devices = [row.split(":")[0].strip() for row in routes_and_devices.splitlines() if ":" in row]
    assert devices == ["lo"], routes_and_devices


def test_a_networked_command_ended_by_its_time_limit_leaves_no_network_helper(run_as):
    # curl reading an endless file: a networked command that runs until its limit.
    report = run_as({}, ["curl -sS -m 60 -o /dev/null file:///dev/zero"], limit_s=2.0)
    result = report["results"][0]
    assert result.get("refused") is None, result
    # Ended by a signal at its 2 s limit, and its helper with it.
    assert result["exit_code"] is not None
    assert result["exit_code"] < 0, report
    assert report["helpers"] == []


# --- the real CLI, a hostile model ---------------------------------------------------------------


def test_through_the_cli_a_hostile_models_networked_commands_reach_no_host_socket_or_service(
    tmp_path, scripted_server, x_server, abstract_canary, loopback_service
):
    from tests.support.cli import run_cli
    from tests.support.openai_server import Text, ToolCalls

    user = (tmp_path / "person").resolve()
    work = user / "work"
    work.mkdir(parents=True)
    (work / "x.cfg").write_text(f'abstract-unix-socket = "{x_server}"\nurl = "telnet://x"\n')
    (work / "svc.cfg").write_text(f'url = "{loopback_service.url}/secret-via-cli"\n')
    calls = [
        "curl -sS -m 5 -K x.cfg",
        "curl -sS -m 5 file:///proc/net/unix",
        "curl -sS -m 5 -K svc.cfg",
    ]
    # One turn each: after a command's output came in, a later networked one in the same turn
    # is asked anew (broker/taint.py), which --approve-all does not answer.
    statuses: list[str] = []
    replies: list[str] = []
    for call in calls:
        server = scripted_server(
            [ToolCalls([("system_execute", {"command": call, "cwd": "~/work"})]), Text("Done.")]
        )
        proc = run_cli(
            user, "ask", "check my network", "--json", "--llm", server.base_url,
            "--approve-all", "once", "--no-refine",
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        turn = json.loads(proc.stdout)
        statuses += [c["status"] for c in turn["tool_calls"]]
        # What went back to the model.
        replies.append(json.dumps(server.requests[-1]["messages"][-1]))
    assert statuses == ["ok", "ok", "ok"], statuses
    assert "Failed to connect" in replies[0] or "Couldn't connect" in replies[0]
    assert "Num" in replies[1]
    assert abstract_canary not in replies[1]
    assert "secret-from-the-host-service" not in replies[2]
    assert loopback_service.seen == []


def test_a_networked_command_cannot_reach_the_local_network_or_a_cloud_metadata_address(run_as):
    # With the LAN walled off the connection is refused at once by the sandbox's own routes;
    # without it, it would be tried through the helper and time out (exit 28), or answer.
    targets = ["10.1.2.3", "192.168.1.1", "172.16.0.1", "169.254.169.254"]
    report = run_as({}, [f"curl -sS -m 4 http://{t}/latest/meta-data/" for t in targets])
    for result in report["results"]:
        ran = result
        assert ran.get("refused") is None, ran
        assert ran["exit_code"] == 7, ran
        assert "Couldn't connect" in ran["stderr"] or "unreachable" in ran["stderr"], ran
