"""Runs one MCP server's program and makes sure that it, and everything it starts, ends with
Chamberlain: the fallback where bubblewrap cannot give the server a PID namespace.

Started by tools/mcp/lifetime.py as `python -I -S supervise.py PARENT_PID -- PROGRAM ARGS…`, in
the server's own process group. It makes itself a child subreaper (a server that daemonises, by
double fork and setsid, is reparented to it, not to init), asks the kernel for SIGTERM when the
Chamberlain thread that started it ends (PR_SET_PDEATHSIG: on SIGKILL too), starts the program
with the standard streams it was given, lets go of its own copies, and waits. When Chamberlain
is gone or asks it to stop (SIGTERM, SIGHUP, SIGINT), it sends SIGTERM to everything below it,
allows a moment's grace, then SIGKILLs until no child is left, and exits. When the program
ends by itself, whatever it left running is ended the same way (as bubblewrap's PID namespace
does), and it exits as the program did.

Standard library only (it runs with -S, without site-packages). It must never import
Chamberlain, never read or write the server's streams, and never outlive what it started.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
import time

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
# Less than the hub's own grace after its SIGTERM (transport.STOP_GRACE_S), so that this ends
# everything before the hub's SIGKILL would end only this process.
GRACE_S = 1.5
STOPS = {signal.SIGTERM, signal.SIGHUP, signal.SIGINT}
# A tree that keeps forking while it is being killed gets this many rounds.
KILL_ROUNDS = 200


def _prctl(option: int, value: int) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(option, ctypes.c_ulong(value), 0, 0, 0) != 0:
        error = ctypes.get_errno()
        raise OSError(error, os.strerror(error))


def _descendants() -> list[int]:
    """Every process below this one, from /proc (children first)."""
    below: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as stat:
                fields = stat.read().rpartition(b")")[2].split()
        except OSError:
            continue
        if len(fields) > 1:
            below.setdefault(int(fields[1]), []).append(int(entry))
    found: list[int] = []
    queue = [os.getpid()]
    while queue:
        for child in below.get(queue.pop(), ()):
            if child not in found:
                found.append(child)
                queue.append(child)
    return found


class _Tree:
    def __init__(self, program: int) -> None:
        self.program = program
        self.status: int | None = None

    def reap(self) -> bool:
        """Collect every child that ended; True when no child is left."""
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return True
            if pid == 0:
                return False
            if pid == self.program:
                self.status = status

    def end(self) -> None:
        """SIGTERM to everything below, a moment's grace, then SIGKILL until nothing is left."""
        for pid in _descendants():
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + GRACE_S
        while not self.reap() and time.monotonic() < deadline:
            time.sleep(0.02)
        for _ in range(KILL_ROUNDS):
            if self.reap():
                return
            # Killing a process hands its children to us (we are their subreaper): the next
            # round finds them.
            for pid in _descendants():
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.005)


def _exit_as(status: int | None) -> None:
    code = os.waitstatus_to_exitcode(status) if status is not None else 0
    if code >= 0:
        os._exit(code)
    # Ended by a signal: end the same way, so Chamberlain sees what the program saw.
    signal.signal(-code, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_SETMASK, set())
    os.kill(os.getpid(), -code)
    os._exit(128 - code)


def main(argv: list[str]) -> None:
    if len(argv) < 4 or argv[2] != "--":
        sys.stderr.write("usage: supervise.py PARENT_PID -- PROGRAM [ARGS...]\n")
        os._exit(2)
    parent, command = int(argv[1]), argv[3:]
    signal.pthread_sigmask(signal.SIG_BLOCK, STOPS | {signal.SIGCHLD})
    _prctl(PR_SET_CHILD_SUBREAPER, 1)
    _prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    if os.getppid() != parent:
        os._exit(1)  # Chamberlain ended before we could watch it: start nothing
    program = os.fork()
    if program == 0:
        try:
            # If this supervisor is killed outright, the program still goes.
            _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
            signal.pthread_sigmask(signal.SIG_SETMASK, set())
            os.execv(command[0], command)
        except OSError as exc:
            os.write(2, f"{command[0]}: {exc.strerror}\n".encode(errors="replace"))
        os._exit(127)
    # The server's streams are the server's: holding them would hide its end from Chamberlain.
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.close(null)
    tree = _Tree(program)
    while True:
        info = signal.sigwaitinfo(STOPS | {signal.SIGCHLD})
        if info.si_signo == signal.SIGCHLD:
            if tree.reap() or tree.status is not None:
                # The program ended: what it left running goes with it (as in a PID namespace
                # whose first process ends).
                tree.end()
                _exit_as(tree.status)
            continue
        tree.end()
        os._exit(128 + info.si_signo)


if __name__ == "__main__":
    main(sys.argv)
