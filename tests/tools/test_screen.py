"""tools/screen.py and tools/windows.py under a real Xvfb, with real windows showing known text.

Every capture here is a real mss capture of a real X server (tests/support/xvfb.py) showing real
xmessage windows, read by the real OCR engine; the active window is read from the server through
python-xlib, with and without a real EWMH window manager (evilwm). Nothing is faked. The Windows
and macOS code paths cannot run on this machine and are not tested.

Without the Xvfb binary these tests skip with the reason; on CI (CI=true) they fail instead,
since scripts/setup.sh installs it there.
"""

from __future__ import annotations

import base64
import io
import json
import os
import resource
import select
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from PIL import Image
from Xlib import X
from Xlib.protocol import display as xlib_protocol

from bench import screen_capture as screen_bench
from tests.support.cli import REPO, ask_json
from tests.support.xvfb import EVILWM, XVFB, Xvfb, running_xvfb
from tools.manual import Capability, Tool, ToolError
from tools.registry import ToolConfig, builtin_registry
from tools.screen import (
    NO_DISPLAY_CAPTURE,
    NO_DISPLAY_WINDOW,
    OcrLine,
    find_screen,
    make_screen_tools,
    normalise_display,
    ocr_text,
    reading_order,
)

KNOWN_TEXT = "Chamberlain pelican 4721"
DISTINCTIVE = "pelican"


def _require(binary: str | None, what: str) -> None:
    """Skip (with the reason) only when Xvfb itself is missing, and never on CI."""
    if binary is not None:
        return
    reason = f"{what} is not installed (scripts/setup.sh installs it with apt-get)"
    if what != "Xvfb" or os.environ.get("CI"):
        pytest.fail(f"{reason}; the screen tests need it")
    pytest.skip(reason)


@pytest.fixture
def xserver(monkeypatch: pytest.MonkeyPatch) -> Iterator[Xvfb]:
    """A fresh 1280×800 Xvfb with no window manager, as $DISPLAY for this test."""
    _require(XVFB, "Xvfb")
    with running_xvfb(1280, 800) as server:
        monkeypatch.setenv("DISPLAY", server.display)
        monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
        monkeypatch.delenv("XDG_SESSION_TYPE", raising=False)
        yield server


def screen_tools(folder: Path, **config: Any) -> dict[str, Tool]:
    tools = make_screen_tools(ToolConfig(screenshot_dir=folder, **config))
    return {tool.name: tool for tool in tools}


def call(tool: Tool, **args: Any) -> Any:
    """Run a tool the way the runner does: targets first, then run; data must be JSON."""
    targets = tool.targets(args)
    result = tool.run(args)
    json.dumps(result.data)
    return targets, result


# --- manuals and registration --------------------------------------------------------------------


def test_both_tools_are_registered_as_screen_reads() -> None:
    registry = builtin_registry(ToolConfig())
    capture, window = registry.get("screen_capture"), registry.get("get_active_window")
    assert capture is not None
    assert window is not None
    assert capture.capability is window.capability is Capability.SCREEN_READ
    assert (capture.manual.category, capture.manual.risk, capture.manual.mutating) == (
        "screen",
        "moderate",
        False,
    )
    assert capture.manual.parameters["properties"]["target"]["enum"] == [
        "all",
        "monitor",
        "active_window",
    ]


def test_building_the_registry_does_not_load_the_ocr_engine() -> None:
    """Every start builds the registry; loading OCR (cv2, onnxruntime, models) must wait."""
    code = (
        "import sys; from tools.registry import builtin_registry; builtin_registry(); "
        "print(sorted(m for m in ('rapidocr_onnxruntime', 'cv2', 'onnxruntime') "
        "if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "[]"


# --- which display -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected"),
    [(":99", ":99"), (":99.0", ":99"), ("localhost:10.0", "localhost:10"), (":07.1", ":7")],
)
def test_display_names_are_normalised_without_the_screen(raw: str, expected: str) -> None:
    assert normalise_display(raw) == expected
    assert find_screen(environ={"DISPLAY": raw}, platform="linux").target == f"display:{expected}"


def test_a_malformed_display_is_a_clear_error() -> None:
    with pytest.raises(ToolError, match="not an X display name"):
        find_screen(environ={"DISPLAY": "nonsense"}, platform="linux")


def test_windows_and_macos_name_the_main_display() -> None:
    assert find_screen(environ={}, platform="win32").target == "display:main"
    assert find_screen(environ={}, platform="darwin").target == "display:main"


def test_without_a_display_both_tools_say_so_and_never_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    monkeypatch.delenv("XDG_SESSION_TYPE", raising=False)
    tools = screen_tools(tmp_path / "shots")
    for name, message in (
        ("screen_capture", NO_DISPLAY_CAPTURE),
        ("get_active_window", NO_DISPLAY_WINDOW),
    ):
        with pytest.raises(ToolError) as raised:
            tools[name].targets({})
        assert str(raised.value) == message
        with pytest.raises(ToolError, match=r"\$DISPLAY is unset"):
            tools[name].run({})
    assert NO_DISPLAY_CAPTURE.startswith("Screen capture needs a display; none was found")
    assert not (tmp_path / "shots").exists()


def test_a_display_nobody_serves_is_a_clear_connection_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    number = next(n for n in range(4200, 4300) if not Path(f"/tmp/.X{n}-lock").exists())
    monkeypatch.setenv("DISPLAY", f":{number}.0")
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    monkeypatch.delenv("XDG_SESSION_TYPE", raising=False)
    tools = screen_tools(tmp_path / "shots")
    for name in ("screen_capture", "get_active_window"):
        assert tools[name].targets({}) == [f"display::{number}"]
        with pytest.raises(ToolError, match=f"Cannot connect to the X display :{number}.0"):
            tools[name].run({})
    assert not (tmp_path / "shots").exists()


# --- capture and OCR -----------------------------------------------------------------------------


def test_capture_reads_the_text_of_a_real_window(xserver: Xvfb, tmp_path: Path) -> None:
    xserver.show_text("Chamberlain test window", KNOWN_TEXT, at=(120, 140))
    folder = tmp_path / "home" / "screenshots"
    targets, result = call(screen_tools(folder)["screen_capture"])

    assert targets == [f"display:{xserver.display}"]
    data = result.data
    ocr = data["ocr"]
    assert DISTINCTIVE in ocr["text"].lower(), ocr["text"]
    assert "4721" in ocr["text"]
    hit = next(line for line in ocr["lines"] if DISTINCTIVE in line["text"].lower())
    assert hit["confidence"] >= ocr["min_confidence"]
    # The box is where the window is: xmessage puts its text near the window's top left.
    left, top, width, height = hit["box"]
    assert 120 <= left <= 200
    assert 140 <= top <= 220
    assert width > 200
    assert height >= 20
    assert DISTINCTIVE in result.text.lower()

    assert (data["width"], data["height"], data["size"]) == (1280, 800, "1280×800")
    assert data["display"] == xserver.display
    assert data["monitors"] == [
        {"index": 1, "left": 0, "top": 0, "width": 1280, "height": 800, "primary": False}
    ]
    path = Path(data["path"])
    assert path.parent == folder
    assert path.name.startswith("screenshot-")
    assert path.name.endswith("-all.png")
    with Image.open(path) as saved:
        assert (saved.format, saved.size) == ("PNG", (1280, 800))
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    # The image itself never goes to the model as text, and is not attached unless asked.
    assert "image_png_b64" not in result.meta
    assert data["image_attached"] is False


def test_capture_of_one_monitor_and_a_monitor_that_does_not_exist(
    xserver: Xvfb, tmp_path: Path
) -> None:
    capture = screen_tools(tmp_path)["screen_capture"]
    _, result = call(capture, target="monitor", monitor=1, ocr=False)
    assert result.data["monitor"]["index"] == 1
    assert result.data["ocr"] is None
    assert Path(result.data["path"]).name.endswith("-monitor1.png")
    with pytest.raises(ToolError, match="no monitor 3: this display has 1 monitor"):
        capture.run({"target": "monitor", "monitor": 3})


def test_active_window_capture_is_the_window_and_its_text(xserver: Xvfb, tmp_path: Path) -> None:
    window = xserver.show_text("Only this one", KNOWN_TEXT, at=(300, 200))
    xserver.show_text("Another window", "Walrus 1234", at=(20, 600))
    _focus(xserver, window.id)

    _, result = call(screen_tools(tmp_path)["screen_capture"], target="active_window")
    data = result.data
    assert data["window"]["title"] == "Only this one"
    geometry = data["window"]["geometry"]
    assert (data["width"], data["height"]) == (geometry["width"], geometry["height"])
    assert data["region"] == geometry
    with Image.open(data["path"]) as saved:
        assert saved.size == (geometry["width"], geometry["height"])
    assert DISTINCTIVE in data["ocr"]["text"].lower()
    assert "walrus" not in data["ocr"]["text"].lower()


def test_attached_image_is_scaled_to_1280_wide_and_kept_out_of_the_data(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _require(XVFB, "Xvfb")
    with running_xvfb(1920, 1080) as server:
        monkeypatch.setenv("DISPLAY", server.display)
        capture = screen_tools(tmp_path, attach_images=True)["screen_capture"]
        _, result = call(capture, ocr=False)
    encoded = result.meta["image_png_b64"]
    with Image.open(io.BytesIO(base64.b64decode(encoded))) as attached:
        assert (attached.format, attached.size) == ("PNG", (1280, 720))
    assert result.meta["image_size"] == [1280, 720]
    assert result.data["image_attached"] is True
    assert (result.data["width"], result.data["height"]) == (1920, 1080)
    assert encoded[:200] not in json.dumps(result.data)


def test_old_screenshots_are_deleted_on_capture_and_nothing_else_is(
    xserver: Xvfb, tmp_path: Path
) -> None:
    folder = tmp_path / "shots"
    folder.mkdir(mode=0o700)
    eight_days_ago = time.time() - 8 * 86400
    old = folder / "screenshot-20200101-120000-000000-all.png"
    recent = folder / "screenshot-20200102-120000-000000-monitor1.png"
    foreign = folder / "holiday.png"
    for path in (old, recent, foreign):
        path.write_bytes(b"png")
    os.utime(old, (eight_days_ago, eight_days_ago))
    os.utime(foreign, (eight_days_ago, eight_days_ago))
    os.utime(recent, (time.time() - 86400, time.time() - 86400))

    capture = screen_tools(folder, screenshot_retention_days=7.0)["screen_capture"]
    _, result = call(capture, ocr=False)

    assert not old.exists()
    assert recent.exists()
    assert foreign.exists()
    assert Path(result.data["path"]).exists()
    assert result.data["old_screenshots_deleted"] == 1


def test_a_loose_screenshot_folder_is_made_private(xserver: Xvfb, tmp_path: Path) -> None:
    folder = tmp_path / "shots"
    folder.mkdir(mode=0o755)
    os.chmod(folder, 0o755)
    call(screen_tools(folder)["screen_capture"], ocr=False)
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700


# --- the active window ---------------------------------------------------------------------------


def _focus(server: Xvfb, window_id: int) -> None:
    """Give a window the keyboard focus, as a click or a window manager would."""
    conn = server.connect()
    try:
        window = conn.create_resource_object("window", window_id)
        window.set_input_focus(X.RevertToParent, X.CurrentTime)
        conn.sync()
    finally:
        conn.close()


def _wait_for_active(server: Xvfb, window_id: int, timeout: float = 10.0) -> None:
    conn = server.connect()
    try:
        atom = conn.intern_atom("_NET_ACTIVE_WINDOW")
        root = conn.screen().root
        deadline = time.monotonic() + timeout
        while True:
            prop = root.get_full_property(atom, X.AnyPropertyType)
            if prop is not None and list(prop.value)[:1] == [window_id]:
                return
            assert time.monotonic() < deadline, "the window manager never activated the window"
            time.sleep(0.02)
    finally:
        conn.close()


def test_active_window_under_an_ewmh_window_manager(xserver: Xvfb, tmp_path: Path) -> None:
    _require(EVILWM, "evilwm")
    xserver.start_window_manager()
    xserver.show_text("Background window", "Walrus 1234", at=(20, 500))
    window = xserver.show_text("Chamberlain active test", KNOWN_TEXT, at=(200, 150))
    _wait_for_active(xserver, window.id)

    targets, result = call(screen_tools(tmp_path)["get_active_window"])
    data = result.data
    assert targets == [f"display:{xserver.display}"]
    assert data["title"] == "Chamberlain active test"
    assert data["found_by"] == "_NET_ACTIVE_WINDOW"
    assert data["application"] == "Xmessage"
    # xmessage sets no _NET_WM_PID; the X server knows its local clients' PIDs.
    assert data["process"]["pid"] == window.process.pid
    assert data["process"]["name"] == "xmessage"
    # evilwm reparents the window into a frame with a 1-pixel border: root coordinates are
    # the client's own origin, inside the frame.
    geometry, frame = data["geometry"], data["frame"]
    assert frame is not None
    assert (geometry["left"], geometry["top"]) == (frame["left"] + 1, frame["top"] + 1)
    assert 195 <= frame["left"] <= 205
    assert 145 <= frame["top"] <= 155
    assert geometry["width"] > 300
    assert geometry["height"] > 50
    assert "Chamberlain active test" in result.text


def test_without_a_window_manager_the_focused_window_is_active(
    xserver: Xvfb, tmp_path: Path
) -> None:
    """Xvfb alone has no _NET_ACTIVE_WINDOW: the X server's input focus is the answer."""
    other = xserver.show_text("Not this one", "Walrus 1234", at=(600, 100))
    window = xserver.show_text("Focused window", KNOWN_TEXT, at=(100, 300))
    tool = screen_tools(tmp_path)["get_active_window"]

    _focus(xserver, window.id)
    _, result = call(tool)
    assert result.data["title"] == "Focused window"
    assert result.data["found_by"] == "X input focus (no EWMH window manager)"
    # Placed at +100+300 with a 1-pixel X border: its inside starts one pixel further in.
    assert (result.data["geometry"]["left"], result.data["geometry"]["top"]) == (101, 301)
    assert result.data["process"]["pid"] == window.process.pid

    _focus(xserver, other.id)
    assert call(tool)[1].data["title"] == "Not this one"


def test_pointer_root_focus_means_the_window_under_the_pointer(
    xserver: Xvfb, tmp_path: Path
) -> None:
    window = xserver.show_text("Under the pointer", KNOWN_TEXT, at=(50, 50))
    tool = screen_tools(tmp_path)["get_active_window"]
    conn = xserver.connect()
    try:
        root = conn.screen().root
        conn.set_input_focus(X.PointerRoot, X.RevertToPointerRoot, X.CurrentTime)
        root.warp_pointer(1200, 750)  # over the bare desktop
        conn.sync()
        with pytest.raises(ToolError, match="No window is active"):
            tool.run({})
        root.warp_pointer(60, 60)
        conn.sync()
        _, result = call(tool)
    finally:
        conn.close()
    assert result.data["title"] == "Under the pointer"
    assert result.data["window_id"] == f"0x{window.id:x}"
    assert result.data["found_by"].startswith("window under the pointer")


def test_focus_on_the_desktop_is_no_active_window(xserver: Xvfb, tmp_path: Path) -> None:
    xserver.show_text("Some window", KNOWN_TEXT)
    conn = xserver.connect()
    try:
        conn.set_input_focus(conn.screen().root, X.RevertToNone, X.CurrentTime)
        conn.sync()
    finally:
        conn.close()
    tools = screen_tools(tmp_path)
    with pytest.raises(ToolError, match="No window is active"):
        tools["get_active_window"].run({})
    with pytest.raises(ToolError, match="No window is active"):
        tools["screen_capture"].run({"target": "active_window"})


def test_the_active_window_is_read_from_a_process_with_over_1024_descriptors_open(
    xserver: Xvfb, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """python-xlib waits with select(), which cannot take descriptor 1024 or above."""
    window = xserver.show_text("Many files open", KNOWN_TEXT)
    _focus(xserver, window.id)
    # python-xlib as it comes (the test helper made it poll too): the tool must fix it itself.
    monkeypatch.setitem(vars(xlib_protocol), "select", select)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < 1200:
        pytest.skip(f"this process may open only {hard} files")
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, 1200), hard))
    opened: list[int] = []
    try:
        while not opened or opened[-1] < 1100:
            opened.append(os.open(os.devnull, os.O_RDONLY))
        _, result = call(screen_tools(tmp_path)["get_active_window"])
    finally:
        for fd in opened:
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    assert result.data["title"] == "Many files open"


# --- reading order -------------------------------------------------------------------------------


def _line(text: str, left: int, top: int, width: int = 50, height: int = 20) -> OcrLine:
    return OcrLine(text, 0.9, (left, top, width, height))


def test_reading_order_is_rows_top_to_bottom_then_left_to_right() -> None:
    lines = [
        _line("second", 200, 103),  # a few pixels lower than "first": same row
        _line("third", 10, 150),
        _line("first", 10, 100),
        _line("fourth", 300, 152, height=24),
    ]
    ordered = reading_order(lines)
    assert [line.text for line in ordered] == ["first", "second", "third", "fourth"]
    assert ocr_text(ordered) == "first  second\nthird  fourth"


# --- OCR needs no network ------------------------------------------------------------------------


def test_ocr_loads_and_reads_with_the_network_blocked(tmp_path: Path) -> None:
    """The models ship in the wheel: loading and reading work with every socket refused."""
    image = tmp_path / "text.png"
    code = f"""
import socket, sys
def refuse(*args, **kwargs):
    raise OSError("network blocked by the test")
socket.socket.connect = refuse
socket.socket.connect_ex = refuse
socket.create_connection = refuse
socket.getaddrinfo = refuse
from PIL import Image, ImageDraw, ImageFont
img = Image.new("RGB", (900, 200), "white")
font = ImageFont.load_default(size=48)
ImageDraw.Draw(img).text((40, 60), "{KNOWN_TEXT}", fill="black", font=font)
img.save({str(image)!r})
from tools.screen import OCR
result = OCR.read(Image.open({str(image)!r}).convert("RGB"))
print(OCR.load_seconds is not None, " | ".join(line.text for line in result.lines))
"""
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "HF_HUB_OFFLINE": "1", "no_proxy": "", "http_proxy": "http://0.0.0.0:9"},
    )
    assert out.returncode == 0, out.stderr
    loaded, _, text = out.stdout.strip().partition(" ")
    assert loaded == "True"
    assert DISTINCTIVE in text.lower(), text


# --- end to end: the CLI, the runner, a grant scoped to one display ------------------------------


def test_whats_on_my_screen_returns_the_windows_text_under_a_display_grant(
    xserver: Xvfb, tmp_path: Path
) -> None:
    """`chamberlain ask "what's on my screen?"` in a subprocess, through the real runner."""
    xserver.show_text("Chamberlain test window", KNOWN_TEXT, at=(120, 140))
    env = {"DISPLAY": xserver.display}
    question = ("what's on my screen?", "--llm", "none", "--approve")

    proc, out = ask_json(
        tmp_path, *question, f"screen_read=session:display:{xserver.display}", env=env
    )
    assert proc.returncode == 0, proc.stderr
    assert [call["status"] for call in out["tool_calls"]] == ["ok"]
    assert DISTINCTIVE in out["reply"].lower()
    # The audit log holds digests and lengths, never the text read off the screen.
    audit = (tmp_path / ".chamberlain" / "audit.jsonl").read_text()
    assert DISTINCTIVE not in audit.lower()

    # A grant for another display does not cover this one.
    proc, out = ask_json(tmp_path, *question, "screen_read=session:display::4242", env=env)
    assert proc.returncode == 1
    assert [call["status"] for call in out["tool_calls"]] == ["denied"]
    assert DISTINCTIVE not in out["reply"].lower()


# --- the benchmark -------------------------------------------------------------------------------


def test_the_screen_benchmark_runs_and_reports_every_figure(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Tiny sizes; the report's shape is checked, never a timing."""
    _require(XVFB, "Xvfb")
    assert screen_bench.main(["--n", "1", "--warmup", "0", "--sizes", "800x600", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert set(report["machine"]) >= {"uname", "cpu", "nproc", "ram", "python"}
    assert report["ocr_engine_load_s"]["fresh_process"] > 0
    (row,) = report["sizes"]
    assert row["size"] == "800x600"
    for key in ("grab_ms", "capture_ms", "capture_ocr_ms"):
        assert set(row[key]) == {"median", "p95", "min", "max"}
        assert row[key]["median"] > 0
    assert row["ocr_lines_found"] > 0
    assert set(row["png"]) == {"1", "6"}
