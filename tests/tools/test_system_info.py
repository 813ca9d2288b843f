"""tools/system_info.py against the real machine's psutil readings."""

from __future__ import annotations

import json
import time
from datetime import datetime
from typing import Any, NamedTuple

import psutil
import pytest

from tools.manual import Capability, ToolError
from tools.system_info import (
    DEFAULT_SAMPLE_S,
    DEFAULT_TOPICS,
    SYSTEM_INFO_TOOLS,
    TOPICS,
    battery_data,
    human_duration,
    make_system_info_tools,
)

GiB = 1024**3


class Battery(NamedTuple):  # the shape of psutil.sensors_battery()'s record
    percent: float
    secsleft: int
    power_plugged: bool | None


TOOL = SYSTEM_INFO_TOOLS[0]


def run(**args: Any) -> Any:
    assert TOOL.targets(args) == []
    result = TOOL.run(args)
    json.dumps(result.data)
    return result


def test_manual() -> None:
    manual = TOOL.manual
    assert manual.name == "system_info"
    assert manual.capability is Capability.SYSTEM_READ
    assert (manual.category, manual.risk, manual.mutating) == ("system", "safe", False)
    assert manual.parameters["additionalProperties"] is False
    assert manual.parameters["properties"]["topics"]["items"]["enum"] == list(TOPICS)


def test_default_topics_are_all_but_processes() -> None:
    result = run()
    assert list(result.data) == list(DEFAULT_TOPICS)
    assert "processes" not in result.data
    for heading in ("CPU:", "Memory:", "Disk", "Battery:", "Uptime:"):
        assert heading in result.text


def test_cpu() -> None:
    cpu = run(topics=["cpu"]).data["cpu"]
    assert set(cpu) == {"percent", "count_logical", "count_physical", "load_average"}
    assert 0.0 <= cpu["percent"] <= 100.0
    assert cpu["count_logical"] == psutil.cpu_count()
    if hasattr(psutil, "getloadavg"):
        assert len(cpu["load_average"]) == 3


def test_cpu_and_processes_share_one_short_sampling_window() -> None:
    slept: list[float] = []
    (tool,) = make_system_info_tools(sleep=slept.append)
    result = tool.run({"topics": ["cpu", "processes"]})
    assert slept == [DEFAULT_SAMPLE_S]  # one window shared by both, not one each
    assert DEFAULT_SAMPLE_S <= 0.2
    assert 0.0 <= result.data["cpu"]["percent"] <= 100.0
    assert result.data["processes"]


def test_memory_matches_psutil() -> None:
    result = run(topics=["memory"])
    mem = result.data["memory"]
    vm = psutil.virtual_memory()
    assert mem["total"] == vm.total > 0
    assert 0 < mem["available"] <= mem["total"]
    assert 0.0 <= mem["percent"] <= 100.0
    assert {"swap_total", "swap_used", "swap_free", "swap_percent"} <= set(mem)
    total_gib = f"{vm.total / GiB:.1f} GiB"
    assert result.text.startswith("Memory: ")
    assert f"of {total_gib} available" in result.text


def test_disk_lists_real_storage_only() -> None:
    result = run(topics=["disk"])
    disks = result.data["disk"]
    assert disks, "this machine has at least one mounted filesystem"
    for disk in disks:
        assert {"mount", "total", "used", "free", "percent"} <= set(disk)
        assert disk["total"] > 0
        assert 0.0 <= disk["percent"] <= 100.0
        assert disk["fstype"] not in ("tmpfs", "squashfs", "proc", "sysfs")
        assert not disk["device"].startswith("/dev/loop")
        assert not disk["mount"].startswith("/snap/")
        assert f"Disk {disk['mount']}:" in result.text
    mounts = [d["mount"] for d in disks]
    assert len(set(mounts)) == len(mounts)
    if "/" in mounts:
        root = next(d for d in disks if d["mount"] == "/")
        assert root["total"] == psutil.disk_usage("/").total


def test_battery_as_this_machine_has_it() -> None:
    result = run(topics=["battery"])
    present = psutil.sensors_battery() is not None
    assert result.data["battery"]["present"] is present
    if not present:
        assert result.data["battery"] == {"present": False}
        assert result.text == "Battery: no battery found"


def test_battery_readings_are_rendered() -> None:
    """A record shaped like psutil's: this machine may have no battery to read."""
    plugged = battery_data(Battery(percent=99.6, secsleft=psutil.POWER_TIME_UNLIMITED,
                                    power_plugged=True))  # fmt: skip
    assert plugged == {"present": True, "percent": 99.6, "plugged": True, "seconds_left": None}
    draining = battery_data(Battery(percent=41, secsleft=5400, power_plugged=False))
    assert draining["seconds_left"] == 5400
    assert draining["plugged"] is False
    assert battery_data(None) == {"present": False}


def test_uptime() -> None:
    result = run(topics=["uptime"])
    up = result.data["uptime"]
    boot = datetime.fromisoformat(up["boot_time"])
    assert abs(boot.timestamp() - psutil.boot_time()) < 2
    assert abs(up["uptime_seconds"] - (time.time() - psutil.boot_time())) < 5
    assert result.text.startswith("Uptime: ")


def test_processes_top_n_by_memory_and_cpu() -> None:
    result = run(topics=["processes"], top_n=3)
    procs = result.data["processes"]
    assert procs["count"] > 0
    for key in ("by_memory", "by_cpu"):
        assert 1 <= len(procs[key]) <= 3
        for row in procs[key]:
            assert set(row) == {"pid", "name", "memory_bytes", "cpu_percent"}
            assert row["memory_bytes"] >= 0
            assert row["cpu_percent"] >= 0
    mems = [r["memory_bytes"] for r in procs["by_memory"]]
    assert mems == sorted(mems, reverse=True)
    cpus = [r["cpu_percent"] for r in procs["by_cpu"]]
    assert cpus == sorted(cpus, reverse=True)
    assert "top 3 by memory" in result.text
    assert str(procs["by_memory"][0]["pid"]) in result.text


def test_all_topics_render() -> None:
    result = run(topics=list(TOPICS))
    assert list(result.data) == list(TOPICS)
    for heading in ("CPU:", "Memory:", "Disk", "Battery:", "Uptime:", "Processes:"):
        assert heading in result.text


def test_bad_arguments_are_refused_plainly() -> None:
    with pytest.raises(ToolError, match=r"topics\.0: Input should be 'cpu', 'memory'"):
        TOOL.run({"topics": ["gpu"]})
    with pytest.raises(ToolError, match="top_n"):
        TOOL.run({"topics": ["processes"], "top_n": 0})


def test_the_sample_window_is_bounded() -> None:
    with pytest.raises(ValueError, match=r"0\.2"):
        make_system_info_tools(sample_s=1.0)


def test_human_duration() -> None:
    assert human_duration(59) == "0 min"
    assert human_duration(3 * 3600 + 5 * 60) == "3 h 05 min"
    assert human_duration(86400 + 2 * 3600 + 3 * 60) == "1 day, 2 h 03 min"
