"""The system_info tool: CPU, memory, disks, battery, uptime and busiest processes, via psutil.

It reports; it never changes anything (no signals to processes, no priority changes, no mounts),
never reads a file's contents, and names no path a grant would have to cover (`targets` is
empty). A topic this machine cannot answer (no battery, no load average) is reported as absent,
not as an error.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Annotated, Any, Literal, get_args

import psutil
from pydantic import Field

from tools.arguments import UNIQUE, ToolArguments
from tools.manual import Capability, Prepared, Tool, ToolManual, ToolResult, typed_tool
from tools.units import human_size

log = logging.getLogger("chamberlain.tools.system_info")

Topic = Literal["cpu", "memory", "disk", "battery", "uptime", "processes"]
TOPICS: tuple[str, ...] = get_args(Topic)
DEFAULT_TOPICS = ("cpu", "memory", "disk", "battery", "uptime")
MAX_TOP_N = 50
DEFAULT_SAMPLE_S = 0.1

# Filesystems that are not storage a user thinks of as a disk.
_PSEUDO_FS = frozenset(
    {
        "autofs", "binfmt_misc", "bpf", "cgroup", "cgroup2", "configfs", "debugfs", "devpts",
        "devtmpfs", "efivarfs", "fusectl", "fuse.gvfsd-fuse", "fuse.portal", "hugetlbfs",
        "mqueue", "nsfs", "proc", "pstore", "ramfs", "rpc_pipefs", "securityfs", "squashfs",
        "sysfs", "tmpfs", "tracefs", "nullfs", "devfs",
    }
)  # fmt: skip
_SKIPPED_MOUNT_PREFIXES = ("/snap/", "/var/snap/", "/var/lib/snapd/", "/proc/", "/sys/", "/dev/")
_SKIPPED_DEVICE_PREFIXES = ("/dev/loop",)


def human_duration(seconds: float) -> str:
    """93784 -> '1 day, 2 h 03 min'."""
    minutes = int(seconds) // 60
    days, minutes = divmod(minutes, 24 * 60)
    hours, minutes = divmod(minutes, 60)
    clock = f"{hours} h {minutes:02d} min" if hours else f"{minutes} min"
    if days:
        return f"{days} day{'s' if days != 1 else ''}, {clock}"
    return clock


# --- each topic: psutil -> JSON-ready dict -------------------------------------------------------


def _cpu(percent: float) -> dict[str, Any]:
    try:
        load: list[float] | None = [round(x, 2) for x in psutil.getloadavg()]
    except (AttributeError, OSError):
        load = None
    return {
        "percent": round(percent, 1),
        "count_logical": psutil.cpu_count(logical=True),
        "count_physical": psutil.cpu_count(logical=False),
        "load_average": load,
    }


def _memory() -> dict[str, Any]:
    vm = psutil.virtual_memory()
    sw = psutil.swap_memory()
    return {
        "total": vm.total,
        "available": vm.available,
        "used": vm.used,
        "percent": vm.percent,
        "swap_total": sw.total,
        "swap_used": sw.used,
        "swap_free": sw.free,
        "swap_percent": sw.percent,
    }


def _is_storage(part: Any) -> bool:
    if part.fstype in _PSEUDO_FS or not part.fstype:
        return False
    if part.device.startswith(_SKIPPED_DEVICE_PREFIXES):
        return False
    mount = part.mountpoint.rstrip("/") + "/"
    return not mount.startswith(_SKIPPED_MOUNT_PREFIXES)


def _disk() -> list[dict[str, Any]]:
    disks: list[dict[str, Any]] = []
    seen_devices: set[str] = set()
    # Shortest mount first, so a device bind-mounted in several places is shown where it is
    # mounted at its top (a container's "/" rather than its /etc/hosts).
    parts = sorted(psutil.disk_partitions(all=False), key=lambda p: len(p.mountpoint))
    for part in parts:
        if not _is_storage(part) or part.device in seen_devices:
            continue
        try:
            usage = psutil.disk_usage(part.mountpoint)
        except OSError as exc:
            log.debug("disk: cannot read usage of a mount (%s)", exc.strerror)
            continue
        if usage.total == 0:
            continue
        seen_devices.add(part.device)
        disks.append(
            {
                "mount": part.mountpoint,
                "device": part.device,
                "fstype": part.fstype,
                "total": usage.total,
                "used": usage.used,
                "free": usage.free,
                "percent": usage.percent,
            }
        )
    return sorted(disks, key=lambda d: d["mount"])


def battery_data(battery: Any) -> dict[str, Any]:
    """A psutil `sbattery` (or None for no battery) as JSON-ready data."""
    if battery is None:
        return {"present": False}
    secs = battery.secsleft
    if secs in (psutil.POWER_TIME_UNLIMITED, psutil.POWER_TIME_UNKNOWN) or secs is None or secs < 0:
        secs = None
    return {
        "present": True,
        "percent": round(float(battery.percent), 1),
        "plugged": battery.power_plugged,
        "seconds_left": int(secs) if secs is not None else None,
    }


def _battery() -> dict[str, Any]:
    sensor = getattr(psutil, "sensors_battery", None)
    if sensor is None:
        return {"present": False}
    try:
        return battery_data(sensor())
    except (OSError, RuntimeError) as exc:
        log.debug("battery: sensor unreadable (%s)", exc)
        return {"present": False}


def _uptime(now: float) -> dict[str, Any]:
    boot = psutil.boot_time()
    return {
        "boot_time": datetime.fromtimestamp(boot).astimezone().isoformat(timespec="seconds"),
        "uptime_seconds": max(0, int(now - boot)),
    }


class _ProcessSample:
    """CPU use per process is a difference between two readings; this holds the first one."""

    def __init__(self) -> None:
        self.procs: list[psutil.Process] = []
        for proc in psutil.process_iter():
            try:
                proc.cpu_percent(None)
            except (psutil.NoSuchProcess, psutil.AccessDenied):
                continue
            self.procs.append(proc)

    def top(self, n: int) -> dict[str, Any]:
        rows: list[dict[str, Any]] = []
        for proc in self.procs:
            try:
                with proc.oneshot():
                    rows.append(
                        {
                            "pid": proc.pid,
                            "name": proc.name(),
                            "memory_bytes": proc.memory_info().rss,
                            "cpu_percent": round(proc.cpu_percent(None), 1),
                        }
                    )
            except (psutil.NoSuchProcess, psutil.AccessDenied):
                continue
        by_memory = sorted(rows, key=lambda r: (-r["memory_bytes"], r["pid"]))[:n]
        by_cpu = sorted(rows, key=lambda r: (-r["cpu_percent"], -r["memory_bytes"]))[:n]
        return {"count": len(rows), "by_memory": by_memory, "by_cpu": by_cpu}


# --- rendering -----------------------------------------------------------------------------------


def _render(data: dict[str, Any]) -> str:
    lines: list[str] = []
    if "cpu" in data:
        cpu = data["cpu"]
        cores = cpu["count_logical"] or "?"
        line = f"CPU: {cpu['percent']:.0f}% busy on {cores} logical cores"
        if cpu["load_average"] is not None:
            line += " (load " + ", ".join(f"{x:.2f}" for x in cpu["load_average"]) + ")"
        lines.append(line)
    if "memory" in data:
        mem = data["memory"]
        line = (
            f"Memory: {human_size(mem['available'])} of {human_size(mem['total'])} available "
            f"({mem['percent']:.0f}% used)"
        )
        if mem["swap_total"]:
            line += f"; swap {human_size(mem['swap_used'])} of {human_size(mem['swap_total'])} used"
        else:
            line += "; no swap"
        lines.append(line)
    if "disk" in data:
        if not data["disk"]:
            lines.append("Disk: no storage mounts found")
        for disk in data["disk"]:
            lines.append(
                f"Disk {disk['mount']}: {human_size(disk['free'])} free of "
                f"{human_size(disk['total'])} ({disk['percent']:.0f}% used)"
            )
    if "battery" in data:
        bat = data["battery"]
        if not bat["present"]:
            lines.append("Battery: no battery found")
        else:
            state = "plugged in" if bat["plugged"] else "on battery"
            line = f"Battery: {bat['percent']:.0f}%, {state}"
            if bat["seconds_left"] is not None and not bat["plugged"]:
                line += f", about {human_duration(bat['seconds_left'])} left"
            lines.append(line)
    if "uptime" in data:
        up = data["uptime"]
        since = up["boot_time"][:16].replace("T", " ")
        lines.append(f"Uptime: {human_duration(up['uptime_seconds'])} (since {since})")
    if "processes" in data:
        procs = data["processes"]
        lines.append(f"Processes: {procs['count']} running")
        for title, key in (("by memory", "by_memory"), ("by CPU", "by_cpu")):
            lines.append(f"  top {len(procs[key])} {title}:")
            for p in procs[key]:
                lines.append(
                    f"    {p['pid']:>7}  {human_size(p['memory_bytes']):>10}  "
                    f"{p['cpu_percent']:>5.1f}%  {p['name']}"
                )
    return "\n".join(lines)


# --- the tool ------------------------------------------------------------------------------------


class SystemInfoArguments(ToolArguments):
    topics: (
        Annotated[
            list[Topic],
            Field(max_length=len(TOPICS), json_schema_extra={"uniqueItems": True}),
            UNIQUE,
        ]
        | None
    ) = None
    top_n: int = Field(5, ge=1, le=MAX_TOP_N)


def _topics(args: SystemInfoArguments) -> list[str]:
    wanted = set(args.topics or DEFAULT_TOPICS)
    return [t for t in TOPICS if t in wanted]


def _system_info(
    sample_s: float,
    sleep: Callable[[float], None],
    clock: Callable[[], float],
    args: SystemInfoArguments,
) -> ToolResult:
    topics = _topics(args)
    top_n = args.top_n

    # CPU use, overall and per process, is measured over one shared window.
    processes = _ProcessSample() if "processes" in topics else None
    if "cpu" in topics:
        psutil.cpu_percent(None)
    if "cpu" in topics or processes is not None:
        sleep(sample_s)

    data: dict[str, Any] = {}
    producers: Iterable[tuple[str, Callable[[], Any]]] = (
        ("cpu", lambda: _cpu(psutil.cpu_percent(None))),
        ("memory", _memory),
        ("disk", _disk),
        ("battery", _battery),
        ("uptime", lambda: _uptime(clock())),
        ("processes", lambda: processes.top(top_n) if processes is not None else None),
    )
    for topic, produce in producers:
        if topic in topics:
            data[topic] = produce()
    return ToolResult(data=data, text=_render(data), meta={"topics": topics})


def make_system_info_tools(
    sample_s: float = DEFAULT_SAMPLE_S,
    *,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.time,
) -> list[Tool]:
    """The system_info tool. `sample_s` (at most 0.2 s) is the window CPU use is measured over."""
    if not 0 < sample_s <= 0.2:
        raise ValueError("sample_s must be more than 0 and at most 0.2 seconds")
    manual = ToolManual(
        name="system_info",
        description=(
            "Report this computer's state. topics: cpu (use %, cores, load), memory (RAM and "
            "swap), disk (space per drive), battery, uptime, processes (top_n by memory and by "
            "CPU). Default: all but processes."
        ),
        parameters=SystemInfoArguments.parameters(),
        capability=Capability.SYSTEM_READ,
        category="system",
    )
    return [
        typed_tool(
            manual,
            SystemInfoArguments,
            # It names nothing a grant would have to cover.
            prepare=lambda values: Prepared.of(values, (), "easy"),
            run=lambda values, _call: _system_info(sample_s, sleep, clock, values),
        )
    ]


SYSTEM_INFO_TOOLS: list[Tool] = make_system_info_tools()
