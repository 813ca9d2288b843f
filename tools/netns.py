"""A network of its own for a command stage that needs one: a new network namespace joined to
the internet by user-mode networking, never the host's network namespace.

Sharing the host's network namespace (bubblewrap's `--share-net`) hands a command far more than
"the network": abstract unix sockets (an X server's `@/tmp/.X11-unix/X0`, a session D-Bus on an
abstract address), every loopback service of the machine, and the host's `/proc/net`. So a stage
that needs the network gets bubblewrap's own empty network namespace (made with the rest of its
walls), and a user-mode networking program is attached to it from outside before the command
starts:

- bubblewrap reports the sandbox's process through `--json-status-fd` and waits on `--block-fd`
  (read after all its own setup, loopback included) before it runs the command;
- the network namespace's owning user namespace is taken from the namespace itself
  (`NS_GET_USERNS`): bubblewrap's innermost user namespace (`--disable-userns`) does not own it;
- the helper configures the namespace (a tap device, an address, a default route) and says it is
  ready; only then is the command let go.

Inside, abstract sockets are the namespace's own (none), `/proc/net` is the namespace's (the
fresh /proc bubblewrap mounts shows it), 127.0.0.1 is the sandbox's own loopback, and the
helper's gateway does not lead to the host's loopback.

Which helper (`network_helper`), best first:
1. slirp4netns (Debian `slirp4netns`): it says when the network is up (`--ready-fd`), ends by
   itself when the sandbox's last process is gone (`--exit-fd`: bubblewrap and everything in it
   hold the write end), and `--disable-host-loopback` closes its gateway's door to the host's
   127.0.0.1. Measured here as root and as `nobody`: attached before the command starts, gone
   with the command.
2. pasta (Debian `passt`): attached the same way with `--no-map-gw` (the gateway is not the
   host) and every port forward off (`-t none -u none -T none -U none`: `-T auto`, its default,
   would show the host's loopback services inside). It has no ready or exit signal of its own
   here (the 2023-03 build), so readiness is the namespace's default route appearing, and it is
   ended when the command ends. Its own mode of starting the command (`pasta --config-net --
   bwrap …`) is not used: as root it cannot write its namespace's uid map (so bubblewrap inside
   cannot make its user namespace), and when it fails to open /dev/net/tun it exits and leaves
   the command's process waiting forever (the "hang" seen with `pasta --config-net -- bwrap`).

Both need /dev/net/tun readable and writable by the person (mode 0666, as udev makes it on a
desktop); a container that keeps it 0600 gives normal users no user-mode networking.

A command that needs the network where no helper works is refused with a sentence naming the
package to install; it never falls back to the host's network. This computer's own services are
reached only when the stage's own line names them with a port (`http://127.0.0.1:8080/`,
`localhost:631`: `loopback_ports`; the prompt then lists `127.0.0.1:8080` and only an exact grant
of that line covers it): that stage gets pasta with exactly those ports forwarded to the host's
loopback (`-T 8080`), since slirp4netns can open the host's loopback only whole. A loopback host
named without a port is refused with a sentence; without pasta, so is a named port. The LAN is
walled off too (neither helper filters destinations): before the command runs, the sandbox's
own namespace gets unreachable routes for the private, link-local and shared ranges (`ip`
through `nsenter`, from outside), except a /32 via the gateway for a private name server its
/etc/resolv.conf names; a cloud's metadata address (169.254.169.254) is among them.

This module never shares the host's network namespace, never leaves a helper running after the
command it serves, never forwards a port into a sandbox, and forwards out of one only the ports
its line names.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import ipaddress
import json
import logging
import os
import re
import select
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from urllib.parse import urlsplit

log = logging.getLogger("chamberlain.tools.netns")

# ioctl(2) on a namespace file: the user namespace that owns it (linux/nsfs.h, _IO(0xb7, 0x1)).
_NS_GET_USERNS = 0xB701
# How long the sandbox may take to report itself, and the helper to bring the network up.
START_TIMEOUT_S = 5.0
_TUN = "/dev/net/tun"
# slirp4netns's DNS forwarder (its default address).
SLIRP_DNS = "10.0.2.3"

LOOPBACK_NEEDS_PASTA = (
    "a command reaches a service on this computer only through pasta (the passt package), "
    "which forwards exactly the port named and nothing else, and pasta is not installed here"
)
# What to install, worded for a person (Debian/Ubuntu, Fedora).
INSTALL_HINT = (
    "install slirp4netns or passt (Debian/Ubuntu: sudo apt install slirp4netns; "
    "Fedora: sudo dnf install slirp4netns) and start Chamberlain again"
)


class NetworkUnavailable(OSError):
    """The stage's own network could not be set up; `strerror` says why, in a sentence.

    An OSError so that a pipeline's start, which ends every stage it started when one cannot
    start, treats it like a program that could not be run."""

    def __init__(self, why: str) -> None:
        super().__init__(0, why)


@dataclass(frozen=True)
class NetworkHelper:
    """The user-mode networking program networked stages get, or why there is none."""

    available: bool
    kind: str | None  # "slirp4netns" or "pasta"
    program: str | None
    why: str
    remedy: str = ""


def _tun_problem(tun: str = _TUN) -> str | None:
    if not os.path.exists(tun):
        return f"{tun}, which user-mode networking needs, does not exist on this computer"
    if not os.access(tun, os.R_OK | os.W_OK):
        mode = oct(os.stat(tun).st_mode & 0o777)
        return (
            f"{tun}, which user-mode networking needs, is not open to this user (mode {mode}; "
            "a desktop's udev makes it 0666)"
        )
    return None


@functools.lru_cache(maxsize=1)
def network_helper() -> NetworkHelper:
    """The helper networked stages use here (found once per process): slirp4netns, else pasta."""
    return find_helper()


def find_helper(
    search_path: str | None = None,
    tun: str = _TUN,
    prefer: Sequence[str] = ("slirp4netns", "pasta"),
) -> NetworkHelper:
    """The first of `prefer` installed on `search_path`, with /dev/net/tun usable."""
    found: tuple[str, str] | None = None
    for kind in prefer:
        program = shutil.which(kind, path=search_path)
        if program is not None:
            found = (kind, program)
            break
    if found is None:
        return NetworkHelper(
            False,
            None,
            None,
            "no user-mode networking program (slirp4netns or pasta from passt) is installed, "
            "and commands never get the computer's own network",
            INSTALL_HINT,
        )
    problem = _tun_problem(tun)
    if problem is not None:
        return NetworkHelper(
            False,
            found[0],
            found[1],
            problem,
            f"make it usable with sudo chmod 0666 {tun} (the usual setting), or ask whoever runs "
            "this computer",
        )
    return NetworkHelper(True, found[0], found[1], f"{found[0]} ({found[1]})")


class StageNetwork:
    """The network of one command stage: made before the stage starts, attached once bubblewrap
    reports its sandbox, gone when the stage ends (or at `close`, whichever is first).

    Use: `bwrap_args()` go into the stage's bubblewrap arguments, `pass_fds` to its Popen, then
    `attach()` right after it started; `close()` (or the context manager) in every case.
    """

    def __init__(self, helper: NetworkHelper | None = None, ports: Sequence[int] = ()) -> None:
        self.helper = helper if helper is not None else network_helper()
        if not self.helper.available or self.helper.program is None:
            raise NetworkUnavailable(f"{self.helper.why}; {self.helper.remedy}")
        # TCP ports of this computer's loopback the person named: only pasta can forward
        # exactly these (-T), and nothing else of the loopback.
        self.ports = tuple(sorted(set(ports)))
        if self.ports and self.helper.kind != "pasta":
            raise NetworkUnavailable(LOOPBACK_NEEDS_PASTA)
        self._status_r, self._status_w = os.pipe()
        self._block_r, self._block_w = os.pipe()
        # The helper ends when this pipe's write end is closed everywhere: bubblewrap and the
        # sandbox hold it (slirp4netns --exit-fd), so the helper outlives neither.
        self._exit_r, self._exit_w = os.pipe()
        for fd in (self._status_r, self._block_w, self._exit_r):
            os.set_inheritable(fd, False)
        self._proc: subprocess.Popen[bytes] | None = None
        self._child_fds: list[int] = [self._status_w, self._block_r, self._exit_w]
        self._resolv: list[str] = []
        if self.helper.kind == "slirp4netns" and os.path.exists("/etc/resolv.conf"):
            # bubblewrap reads the sandbox's resolv.conf from this pipe (--ro-bind-data).
            data = _resolv_conf_data()
            resolv_r, resolv_w = os.pipe()
            os.write(resolv_w, data)  # a few hundred bytes: well under a pipe's buffer
            os.close(resolv_w)
            self._child_fds.append(resolv_r)
            self._resolv = ["--ro-bind-data", str(resolv_r), "/etc/resolv.conf"]
        self._closed = False

    @property
    def pass_fds(self) -> tuple[int, ...]:
        """The descriptors the stage's bubblewrap must inherit."""
        return tuple(self._child_fds)

    def bwrap_args(self) -> list[str]:
        """Report the sandbox, and wait for the network before running the command."""
        return ["--json-status-fd", str(self._status_w), "--block-fd", str(self._block_r)]

    def mounts(self) -> list[str]:
        """What the sandbox mounts for its network, after the root's mounts: with slirp4netns,
        a resolv.conf that names its DNS forwarder."""
        return list(self._resolv)

    def started(self) -> None:
        """The stage has started (its bubblewrap holds its ends now): close ours."""
        for fd in self._child_fds:
            with contextlib.suppress(OSError):
                os.close(fd)
        self._child_fds = []

    def attach(self, *, deadline_s: float = START_TIMEOUT_S) -> None:
        """Give the started stage's sandbox its network, then let its command run.

        Raises NetworkUnavailable with why when that fails; the caller ends the stage (whose
        command has not run: it still waits on its block fd)."""
        self.started()
        end = time.monotonic() + deadline_s
        pid = self._sandbox_pid(end)
        if pid is None:
            # bubblewrap ended before reporting its sandbox: it says why on stderr itself.
            self._release()
            return
        if not self._wait_loopback(pid, end):
            self._release()  # bubblewrap failed on its own, and says why on stderr
            return
        try:
            net_fd = os.open(f"/proc/{pid}/ns/net", os.O_RDONLY | os.O_CLOEXEC)
        except OSError as exc:
            raise NetworkUnavailable(
                f"the sandbox's network namespace could not be opened ({exc.strerror})"
            ) from exc
        try:
            user_fd = fcntl.ioctl(net_fd, _NS_GET_USERNS)
        except OSError as exc:
            os.close(net_fd)
            raise NetworkUnavailable(
                f"the owner of the sandbox's network namespace could not be found ({exc.strerror})"
            ) from exc
        try:
            if self.helper.kind == "slirp4netns":
                # Its DNS is its own forwarder (the sandbox's resolv.conf, see bwrap_args): no
                # private name server needs a way through, so the walls go up alongside it.
                walls = _LanWalls(net_fd, user_fd, lan_routes(None, (), host_addresses()))
                try:
                    self._start_slirp(net_fd, user_fd, end)
                finally:
                    walls.finish(end)
            else:
                self._start_pasta(net_fd, user_fd, pid, end)
                routes = lan_routes(_default_gateway(pid), _resolvers(), host_addresses())
                _LanWalls(net_fd, user_fd, routes).finish(end)
        finally:
            os.close(net_fd)
            os.close(user_fd)
        self._release()

    @staticmethod
    def _wait_loopback(pid: int, end: float) -> bool:
        """Wait until bubblewrap has brought up the sandbox's loopback (its first step in the
        new namespace) and mapped its user ids; False when the sandbox is gone. Both helpers
        bring loopback up too, and one that does it first makes bubblewrap's own setup fail
        ("loopback: Failed RTM_NEWADDR", seen in about one start in twenty here). Its local
        route in fib_trie appears once loopback is up with 127.0.0.1."""
        trie = f"/proc/{pid}/net/fib_trie"
        uid_map = f"/proc/{pid}/uid_map"
        while True:
            try:
                # bubblewrap maps its user namespace's ids only after loopback: until then a
                # helper (or the LAN walls) joining it holds no capability in it (EPERM).
                with open(trie, encoding="ascii") as table:
                    if "127.0.0.1" in table.read():
                        with open(uid_map, encoding="ascii") as mapped:
                            if mapped.read().strip():
                                return True
            except OSError:
                return False
            if time.monotonic() > end:
                raise NetworkUnavailable("the sandbox did not set up its loopback within 5 s")
            time.sleep(0.0002)

    def _sandbox_pid(self, end: float) -> int | None:
        buffer = b""
        while b"\n" not in buffer:
            remaining = end - time.monotonic()
            if remaining <= 0:
                raise NetworkUnavailable("the sandbox did not start within 5 s")
            ready, _, _ = select.select([self._status_r], [], [], remaining)
            if not ready:
                continue
            chunk = os.read(self._status_r, 4096)
            if not chunk:
                return None
            buffer += chunk
        try:
            report = json.loads(buffer.split(b"\n", 1)[0])
            return int(report["child-pid"])
        except (ValueError, KeyError, TypeError) as exc:
            raise NetworkUnavailable(f"bubblewrap's report could not be read ({exc})") from exc

    def _start_slirp(self, net_fd: int, user_fd: int, end: float) -> None:
        ready_r, ready_w = os.pipe()
        argv = [
            self.helper.program or "slirp4netns",
            "--configure",
            "--mtu=65520",
            "--disable-host-loopback",
            "--ready-fd",
            str(ready_w),
            "--exit-fd",
            str(self._exit_r),
            "--userns-path",
            f"/proc/self/fd/{user_fd}",
            "--netns-type=path",
            f"/proc/self/fd/{net_fd}",
            "tap0",
        ]
        try:
            self._proc = _start_helper(argv, (ready_w, self._exit_r, net_fd, user_fd))
        finally:
            os.close(ready_w)
        try:
            while True:
                remaining = end - time.monotonic()
                if remaining <= 0:
                    raise NetworkUnavailable("slirp4netns did not bring the network up within 5 s")
                ready, _, _ = select.select([ready_r], [], [], remaining)
                if ready:
                    said = os.read(ready_r, 1)
                    if said == b"1":
                        return
                    raise NetworkUnavailable(
                        f"slirp4netns could not set up the network: {self._helper_said()}"
                    )
        finally:
            os.close(ready_r)

    def _start_pasta(self, net_fd: int, user_fd: int, pid: int, end: float) -> None:
        argv = [
            self.helper.program or "pasta",
            "--config-net",
            "--foreground",
            "--quiet",
            "--no-map-gw",
            *("-t", "none", "-u", "none", "-U", "none"),
            *("-T", ",".join(str(p) for p in self.ports) if self.ports else "none"),
            "--runas",
            str(os.geteuid()),
            "--netns",
            f"/proc/self/fd/{net_fd}",
            "--userns",
            f"/proc/self/fd/{user_fd}",
        ]
        self._proc = _start_helper(argv, (net_fd, user_fd))
        # pasta says nothing when it is ready: its default route is the last thing it sets.
        route = Path(f"/proc/{pid}/net/route")
        while True:
            if self._proc.poll() is not None:
                raise NetworkUnavailable(
                    f"pasta could not set up the network: {self._helper_said()}"
                )
            try:
                lines = route.read_text(encoding="ascii").splitlines()[1:]
            except OSError as exc:
                raise NetworkUnavailable(
                    f"the sandbox ended before its network was up ({exc.strerror})"
                ) from exc
            if any(line.split()[1:2] == ["00000000"] for line in lines) and self._listening(pid):
                return
            if time.monotonic() > end:
                raise NetworkUnavailable("pasta did not bring the network up within 5 s")
            time.sleep(0.0005)

    def _listening(self, pid: int) -> bool:
        """Whether pasta listens on every named port of the sandbox's loopback yet (it binds
        them after it sets the route)."""
        if not self.ports:
            return True
        try:
            table = Path(f"/proc/{pid}/net/tcp").read_text(encoding="ascii")
        except OSError:
            return False
        listening = {
            int(row[1].split(":")[1], 16)
            for row in (line.split() for line in table.splitlines()[1:])
            if len(row) > 3 and row[3] == "0A" and row[1].startswith("0100007F:")
        }
        return all(port in listening for port in self.ports)

    def _helper_said(self) -> str:
        proc = self._proc
        if proc is None or proc.stderr is None:
            return "no reason given"
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=1.0)
        if proc.poll() is None:
            return "no reason given"
        text = proc.stderr.read().decode("utf-8", "replace")
        lines = [
            line.strip()
            for line in text.splitlines()
            if line.strip() and not line.startswith(("Failed to send", "sent tapfd", "received"))
        ]
        return lines[-1][:300] if lines else f"exit {proc.returncode}"

    def _release(self) -> None:
        """Let the command run (bubblewrap reads one byte, then goes on)."""
        if self._block_w >= 0:
            with contextlib.suppress(OSError):
                os.write(self._block_w, b"1")
            os.close(self._block_w)
            self._block_w = -1

    def close(self) -> None:
        """End the helper (if the command's end did not already) and free every descriptor."""
        if self._closed:
            return
        self._closed = True
        self.started()
        for fd in (self._status_r, self._exit_r):
            with contextlib.suppress(OSError):
                os.close(fd)
        if self._block_w >= 0:
            # Never released: the stage's bubblewrap reads EOF and would run its command
            # without its network; it is being ended by the caller.
            os.close(self._block_w)
            self._block_w = -1
        proc = self._proc
        if proc is None:
            return
        # The stage has ended (close comes after it was reaped), so its network serves nobody:
        # end the helper now rather than wait for it to notice (slirp4netns looks at its exit
        # fd only between packets and timers: tens of ms).
        if proc.stderr is not None:
            proc.stderr.close()
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                proc.send_signal(signal.SIGKILL)
            try:
                proc.wait(timeout=0.001)
            except subprocess.TimeoutExpired:
                # Killed; its exit closes the tap device, and unregistering a network device
                # waits for the kernel's RCU grace periods (10-60 ms here): the command's
                # result need not wait for that, only its reaping does.
                threading.Thread(target=proc.wait, name="netns-reaper", daemon=True).start()

    def __enter__(self) -> StageNetwork:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


# Private, link-local and shared (CGNAT) ranges: a person's LAN, routers, printers, NAS, other
# machines' services; the helper would reach them like any internet host.
LAN_RANGES = (
    "10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "169.254.0.0/16", "100.64.0.0/10",
    "fc00::/7", "fe80::/10", "fec0::/10",
)  # fmt: skip


def host_addresses() -> list[str]:
    """This computer's own addresses (every interface but loopback): a service listening on
    0.0.0.0 answers on each, so a sandbox's network must not reach them either."""
    import psutil

    found: list[str] = []
    for entries in psutil.net_if_addrs().values():
        for entry in entries:
            with contextlib.suppress(ValueError):
                ip = ipaddress.ip_address(entry.address.split("%")[0])
                if not ip.is_loopback:
                    found.append(str(ip))
    return list(dict.fromkeys(found))


def _resolvers(resolv_conf: str = "/etc/resolv.conf") -> list[str]:
    """The name servers the sandbox's /etc/resolv.conf names (the host's), as addresses."""
    found: list[str] = []
    try:
        lines = Path(resolv_conf).read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return found
    for line in lines:
        parts = line.split()
        if len(parts) >= 2 and parts[0] == "nameserver":
            with contextlib.suppress(ValueError):
                found.append(str(ipaddress.ip_address(parts[1].split("%")[0])))
    return found


def lan_routes(gateway: str | None, resolvers: Sequence[str], own: Sequence[str] = ()) -> list[str]:
    """The `ip -batch` lines that wall off the LAN inside a sandbox's network: every range
    unreachable, and this computer's `own` addresses, except the name servers it must ask (a
    resolver is often a private address)."""
    lines = [f"route add unreachable {cidr}" for cidr in LAN_RANGES]
    for address in own:
        ip = ipaddress.ip_address(address)
        if not any(ip in ipaddress.ip_network(cidr) for cidr in LAN_RANGES):
            lines.append(f"route add unreachable {address}/{ip.max_prefixlen}")
    for address in resolvers:
        ip = ipaddress.ip_address(address)
        if not any(ip in ipaddress.ip_network(cidr) for cidr in LAN_RANGES) or ip.is_loopback:
            continue
        if gateway is not None and ip.version == 4:
            lines.append(f"route add {address}/32 via {gateway}")
    return lines


def _default_gateway(pid: int) -> str | None:
    try:
        rows = Path(f"/proc/{pid}/net/route").read_text(encoding="ascii").splitlines()[1:]
    except OSError:
        return None
    for row in rows:
        fields = row.split()
        if len(fields) > 2 and fields[1] == "00000000":
            return str(ipaddress.IPv4Address(int(fields[2], 16).to_bytes(4, "little")))
    return None


class _LanWalls:
    """Make the LAN unreachable inside the sandbox's network: routes of its own namespace, set
    from outside with `ip` (through `nsenter`) before the command runs. Started, then finished;
    fails closed (no walls, no command)."""

    def __init__(self, net_fd: int, user_fd: int, lines: Sequence[str]) -> None:
        nsenter = shutil.which("nsenter", path=_SYSTEM_PATH)
        ip = shutil.which("ip", path=_SYSTEM_PATH)
        if nsenter is None or ip is None:
            raise NetworkUnavailable(
                "nsenter (util-linux) and ip (iproute2), which keep a command's network off "
                "your local network, are not both installed"
            )
        self._lines = list(lines)
        # The lines that must hold: every IPv4 one (a network without IPv6 refuses those).
        self._required = {n for n, line in enumerate(self._lines, 1) if ":" not in line}
        try:
            self._proc = subprocess.Popen(
                [nsenter, f"--user=/proc/self/fd/{user_fd}", f"--net=/proc/self/fd/{net_fd}",
                 "--preserve-credentials", "--", ip, "-force", "-batch", "-"],
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                pass_fds=(user_fd, net_fd),
                env={"PATH": _SYSTEM_PATH, "LANG": "C"},
            )  # fmt: skip
        except OSError as exc:
            raise NetworkUnavailable(f"the local network could not be walled off ({exc})") from exc

    def finish(self, end: float) -> None:
        try:
            _, err = self._proc.communicate(
                ("\n".join(self._lines) + "\n").encode(), timeout=max(0.5, end - time.monotonic())
            )
        except subprocess.TimeoutExpired as exc:
            self._proc.kill()
            self._proc.wait()
            raise NetworkUnavailable("the local network could not be walled off in time") from exc
        said = err.decode("utf-8", "replace")
        failed = {int(n) for n in re.findall(r"Command failed -:(\d+)", said)}
        if failed & self._required or (self._proc.returncode != 0 and not failed):
            first = next((line for line in said.splitlines() if line.strip()), "no reason given")
            raise NetworkUnavailable(f"the local network could not be walled off ({first[:200]})")
        if said.strip():
            log.debug("walling off the LAN said: %s", said.strip()[:300])


_SYSTEM_PATH = "/usr/sbin:/usr/bin:/sbin:/bin"


def _resolv_conf_data(resolv_conf: str = "/etc/resolv.conf") -> bytes:
    """The sandbox's resolv.conf with slirp4netns: its DNS forwarder, the host's search and
    options lines. The host's own name server may be a loopback stub (systemd-resolved's
    127.0.0.53), which inside the sandbox is the sandbox's own loopback."""
    kept = [f"nameserver {SLIRP_DNS}"]
    try:
        lines = Path(resolv_conf).read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        lines = []
    kept += [line for line in lines if line.split()[:1] in (["search"], ["domain"], ["options"])]
    return ("\n".join(kept) + "\n").encode()


def _start_helper(argv: list[str], fds: Sequence[int]) -> subprocess.Popen[bytes]:
    try:
        return subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            pass_fds=tuple(fds),
            close_fds=True,
            # Not in the command's process group: the command's end ends it (exit fd) or
            # close() does, never a signal meant for the command.
            start_new_session=True,
            env={"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8"},
        )
    except OSError as exc:
        raise NetworkUnavailable(f"{argv[0]} could not be started ({exc.strerror or exc})") from exc


# --- naming hosts -------------------------------------------------------------------------------

_LOOPBACK_NAMES = frozenset({"localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback"})
# host[:port] at the start of a word, after a scheme (http://, telnet://, …) or user@.
_URL_HOST = re.compile(
    r"^(?:[a-z][a-z0-9+.-]*://)?(?:[^@/\s]*@)?(\[[^\]]+\]|[^:/\s?#]+)(?::(\d+))?"
)


def _is_loopback_host(host: str) -> bool:
    name = host.strip("[]").rstrip(".").lower()
    if name in _LOOPBACK_NAMES or name.endswith(".localhost"):
        return True
    try:
        address = ipaddress.ip_address(name)
    except ValueError:
        # 127.1, 0x7f.1, 2130706433: forms inet_aton takes for 127.0.0.1.
        return bool(re.fullmatch(r"(0x7f|0177|127)(\.[0-9a-fx]+){0,3}|2130706433|0", name))
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return address.is_loopback or address.is_unspecified


_DEFAULT_PORTS = {"http": 80, "https": 443, "ws": 80, "wss": 443, "ftp": 21, "telnet": 23}


@dataclass(frozen=True)
class LoopbackNamed:
    """An argument naming a service on this computer: the argument, and its TCP port when the
    argument says it (host:port, or a URL whose scheme has a known port)."""

    arg: str
    port: int | None


def loopback_ports(args: Sequence[str]) -> list[LoopbackNamed]:
    """Every argument that names this computer's loopback, with the port it names."""
    found: list[LoopbackNamed] = []
    for arg in args:
        for word in _words(arg):
            port: int | None = None
            try:
                parts = urlsplit(word if "://" in word else "//" + word)
                host = parts.hostname
                port = parts.port
                if port is None and "://" in word:
                    port = _DEFAULT_PORTS.get(parts.scheme.lower())
            except ValueError:
                host = None
            if host is None:
                match = _URL_HOST.match(word)
                host = match.group(1) if match else None
                port = int(match.group(2)) if match and match.group(2) else None
            if host and _is_loopback_host(host):
                found.append(LoopbackNamed(arg, port if port and 0 < port < 65536 else None))
    return found


def _words(arg: str) -> list[str]:
    kept: list[str] = []
    for word in re.split(r"[\s,=]", arg):
        # An option, or a bare number (`-m 0`), is not a host; a host is named with a scheme, a
        # user@, a port, or in a form with dots or colons (127.0.0.1, ::1).
        if not word or word.startswith("-"):
            continue
        if not ("://" in word or "@" in word or "." in word or ":" in word) and (
            word.lower().rstrip(".") not in _LOOPBACK_NAMES
        ):
            continue
        kept.append(word)
    return kept


def loopback_named(args: Sequence[str]) -> str | None:
    """The first argument that names this computer's loopback (a URL, host or host:port), if
    any: the host a networked command would find only on the computer itself."""
    for arg in args:
        for word in re.split(r"[\s,=]", arg):
            # An option, or a bare number (`-m 0`), is not a host; a host is named with a
            # scheme, a user@, a port, or in a form with dots or colons (127.0.0.1, ::1).
            if not word or word.startswith("-"):
                continue
            if not ("://" in word or "@" in word or "." in word or ":" in word) and (
                word.lower().rstrip(".") not in _LOOPBACK_NAMES
            ):
                continue
            try:
                parts = urlsplit(word if "://" in word else "//" + word)
                host = parts.hostname
            except ValueError:
                host = None
            if host is None:
                match = _URL_HOST.match(word)
                host = match.group(1) if match else None
            if host and _is_loopback_host(host):
                return arg
    return None
