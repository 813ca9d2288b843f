"""tools/netns.py: which user-mode networking a networked stage gets, that each helper really
gives a sandbox its own network and goes away with it, what counts as naming loopback, and
that without a helper a networked command is refused with what to install (never the host's
network). Real bubblewrap, slirp4netns and pasta where installed; skipped with the reason where
not."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from tests.support.network_probe import helpers_left
from tools.manual import ToolRefused
from tools.netns import (
    NetworkHelper,
    NetworkUnavailable,
    StageNetwork,
    find_helper,
    lan_routes,
    loopback_named,
)
from tools.registry import ToolConfig
from tools.sandbox import SandboxPlan, sandbox_status, wrap_stage
from tools.system import make_system_tools, run_argv

needs_bwrap = pytest.mark.skipif(not sandbox_status().available, reason="no working bubblewrap")


def _helper(kind: str) -> NetworkHelper:
    helper = find_helper(prefer=(kind,))
    if not helper.available or helper.kind != kind:
        pytest.skip(f"{kind} cannot be used here: {helper.why}")
    return helper


def _run_networked(helper: NetworkHelper, tmp_path: Path, argv: list[str]) -> tuple[str, int]:
    """Run `argv` in a networked sandbox with `helper` through run_argv, as a command runs."""
    plan = SandboxPlan(cwd=tmp_path, home=tmp_path, read=(tmp_path,), network=True)
    with StageNetwork(helper) as network:
        wrapped, exe = wrap_stage(plan, argv, argv[0], network)
        outcome = run_argv(
            [wrapped],
            cwd=tmp_path,
            env={"PATH": "/usr/bin:/bin"},
            timeout_s=20,
            output_cap=1 << 16,
            executables=[exe],
            networks=[network],
        )
    return outcome.stdout + outcome.stderr, outcome.exit_code or 0


def _helpers_running() -> list[str]:
    return helpers_left()


@needs_bwrap
@pytest.mark.parametrize("kind", ["slirp4netns", "pasta"])
def test_each_helper_gives_the_sandbox_a_default_route_of_its_own_and_ends_with_it(kind, tmp_path):
    helper = _helper(kind)
    said, code = _run_networked(helper, tmp_path, ["/bin/cat", "/proc/net/route", "/proc/net/dev"])
    assert code == 0, said
    routes = [line.split() for line in said.splitlines()[1:] if line.count("\t") >= 7]
    assert any(row[1] == "00000000" for row in routes), said  # a default route, set before it ran
    host_devices = {
        line.split(":")[0].strip()
        for line in Path("/proc/net/dev").read_text().splitlines()
        if ":" in line
    }
    inside = {
        line.split(":")[0].strip() for line in said.splitlines() if ":" in line and "|" not in line
    }
    assert "lo" in inside
    assert inside != host_devices or len(host_devices) == 1
    assert _helpers_running() == []


@needs_bwrap
def test_a_sandbox_whose_helper_cannot_start_never_runs_its_command(tmp_path):
    """A helper that fails (a stand-in program that exits at once: the edge we fake) stops the
    stage: the command, which would have written a file, never runs."""
    fake = tmp_path / "bin" / "slirp4netns"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\necho 'cannot open tun' >&2\nexit 1\n")
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    helper = NetworkHelper(True, "slirp4netns", os.fspath(fake), "fake")
    marker = tmp_path / "ran"
    plan = SandboxPlan(
        cwd=tmp_path, home=tmp_path, read=(tmp_path,), write=(tmp_path,), network=True
    )
    with StageNetwork(helper) as network:
        wrapped, exe = wrap_stage(
            plan, ["/usr/bin/touch", os.fspath(marker)], "/usr/bin/touch", network
        )
        with pytest.raises(Exception, match="cannot open tun"):
            run_argv([wrapped], cwd=tmp_path, env={"PATH": "/usr/bin:/bin"}, timeout_s=10,
                     output_cap=4096, executables=[exe], networks=[network])  # fmt: skip
    assert not marker.exists()


def test_a_networked_stage_without_its_own_network_is_never_given_the_hosts(tmp_path):
    plan = SandboxPlan(cwd=tmp_path, home=tmp_path, network=True)
    if not sandbox_status().available or not sandbox_status().program.endswith("bwrap"):
        pytest.skip("bubblewrap only")
    with pytest.raises(NetworkUnavailable):
        wrap_stage(plan, ["/bin/true"], "/bin/true")


def test_the_helper_is_slirp4netns_first_then_pasta_and_none_names_what_to_install(tmp_path):
    both = tmp_path / "both"
    both.mkdir()
    for name in ("slirp4netns", "pasta"):
        (both / name).write_text("#!/bin/sh\n")
        (both / name).chmod(0o755)
    tun = tmp_path / "tun"
    tun.write_text("")
    tun.chmod(0o666)
    assert find_helper(os.fspath(both), tun=os.fspath(tun)).kind == "slirp4netns"
    (both / "slirp4netns").unlink()
    assert find_helper(os.fspath(both), tun=os.fspath(tun)).kind == "pasta"
    none = find_helper(os.fspath(tmp_path / "empty"), tun=os.fspath(tun))
    assert not none.available
    assert "slirp4netns" in none.remedy
    assert "apt install" in none.remedy


@pytest.mark.skipif(os.geteuid() == 0, reason="root opens a 0600 file anyway")
def test_a_tun_device_closed_to_the_user_is_said(tmp_path):
    (tmp_path / "slirp4netns").write_text("#!/bin/sh\n")
    (tmp_path / "slirp4netns").chmod(0o755)
    tun = tmp_path / "tun"
    tun.write_text("")
    tun.chmod(0o600)
    os.chmod(tun, 0o000)
    helper = find_helper(os.fspath(tmp_path), tun=os.fspath(tun))
    assert not helper.available
    assert "0666" in helper.why


def test_without_a_helper_a_networked_command_is_refused_naming_the_package(tmp_path):
    none = find_helper(os.fspath(tmp_path / "nothing-here"))
    tool = make_system_tools(
        ToolConfig(command_roots=(tmp_path,)), home=tmp_path, opener=lambda _t: None, network=none
    )[0]
    with pytest.raises(ToolRefused) as refused:
        tool.targets({"command": "curl -sS https://example.org/", "cwd": os.fspath(tmp_path)})
    words = str(refused.value)
    assert "needs the network" in words
    assert "apt install slirp4netns" in words
    assert "unsandboxed" not in words
    # A command without the network still runs.
    if sandbox_status().available:
        result = tool.run({"command": "echo fine", "cwd": os.fspath(tmp_path)})
        assert result.data["stdout"] == "fine\n"


@pytest.mark.parametrize(
    "args",
    [
        ["http://127.0.0.1:8080/health"],
        ["-sS", "localhost:631"],
        ["http://[::1]:9000/"],
        ["user@127.0.0.1"],
        ["--url=http://localhost/"],
        ["http://0.0.0.0:8000/"],
        ["http://[::ffff:127.0.0.1]/"],
        ["127.0.0.1", "8080"],
        ["http://app.localhost/"],
    ],
)
def test_a_loopback_host_is_recognised_however_it_is_written(args):
    assert loopback_named(args) is not None


@pytest.mark.parametrize(
    "args",
    [
        ["https://example.org/"],
        ["-m", "0", "https://pypi.org/simple/"],
        ["-o", "out.txt", "http://10.0.0.5/"],
        ["git@github.com:me/repo.git"],
    ],
)
def test_an_ordinary_host_is_not_taken_for_loopback(args):
    assert loopback_named(args) is None


@needs_bwrap
def test_doctor_says_whether_a_networked_command_gets_a_network_of_its_own(tmp_path):
    config = ToolConfig(command_roots=(tmp_path,))
    working = make_system_tools(config, home=tmp_path, opener=lambda _t: None)[0]
    none = find_helper(os.fspath(tmp_path / "nothing-here"))
    missing = make_system_tools(config, home=tmp_path, opener=lambda _t: None, network=none)[0]
    assert working.health is not None
    assert missing.health is not None
    line = next(c for c in working.health() if c.name == "command sandbox")
    if not line.ok:
        pytest.skip(f"no user-mode networking works here: {line.detail}")
    assert "of their own" in line.detail
    assert "never this computer's services" in line.detail
    broken = next(c for c in missing.health() if c.name == "command sandbox")
    assert not broken.ok
    assert not broken.required  # commands without the network still run
    assert "a command that needs it is refused" in broken.detail
    assert "apt install slirp4netns" in broken.fix


@needs_bwrap
def test_the_call_plan_says_which_stage_gets_which_network(tmp_path):
    tool = make_system_tools(
        ToolConfig(command_roots=(tmp_path,)), home=tmp_path, opener=lambda _t: None
    )[0]
    plain = tool.prepare({"command": "curl -sS https://example.org/ | wc -c", "cwd": str(tmp_path)})
    assert plain.call_plan is not None
    assert plain.call_plan.network_stages == (0,)
    assert plain.call_plan.network == ("internet",)
    assert "net:" in plain.targets
    offline = tool.prepare({"command": "wc -c notes", "cwd": str(tmp_path)})
    assert offline.call_plan is not None
    assert offline.call_plan.network == ()
    assert offline.call_plan.network_stages == ()
    if not find_helper(prefer=("pasta",)).available:
        pytest.skip("pasta (passt) is not installed")
    local = tool.prepare({"command": "curl -sS http://localhost:8080/health", "cwd": str(tmp_path)})
    assert local.call_plan is not None
    assert local.call_plan.network == ("internet", "127.0.0.1:8080")
    assert "net:localhost:8080" in local.targets


def test_naming_a_local_port_without_pasta_is_refused_naming_passt(tmp_path):
    only_slirp = tmp_path / "bin"
    only_slirp.mkdir()
    (only_slirp / "slirp4netns").write_text("#!/bin/sh\n")
    (only_slirp / "slirp4netns").chmod(0o755)
    with pytest.raises(NetworkUnavailable, match="pasta"):
        StageNetwork(find_helper(os.fspath(only_slirp)), ports=[8080])


def test_the_lan_walls_keep_a_private_name_server_reachable_and_nothing_else():
    lines = lan_routes("10.0.2.2", ["10.255.255.53", "192.0.2.53", "127.0.0.53", "fd00::1"])
    assert "route add unreachable 10.0.0.0/8" in lines
    assert "route add unreachable 192.168.0.0/16" in lines
    assert "route add unreachable 169.254.0.0/16" in lines
    assert "route add unreachable fc00::/7" in lines
    # The private resolver the sandbox's resolv.conf names stays reachable, through the gateway.
    assert "route add 10.255.255.53/32 via 10.0.2.2" in lines
    assert not any("192.0.2.53" in line or "127.0.0.53" in line for line in lines)


@needs_bwrap
def test_with_slirp4netns_names_resolve_through_its_forwarder_not_a_loopback_stub(tmp_path):
    """A host resolving through systemd-resolved's 127.0.0.53 would leave the sandbox, whose
    127.0.0.53 is its own loopback, with no name server: it is given slirp4netns's."""
    helper = _helper("slirp4netns")
    said, code = _run_networked(helper, tmp_path, ["/bin/cat", "/etc/resolv.conf"])
    assert code == 0, said
    assert said.splitlines()[0] == "nameserver 10.0.2.3"
    assert "127.0.0.53" not in said
