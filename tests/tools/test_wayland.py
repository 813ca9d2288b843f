"""The screen tools in a Wayland session: decided by the session, never by $DISPLAY; the screen
read through the desktop portal (or grim), the active window through the compositor's IPC.

The session tests run a real headless sway as a normal user (tests/support/sway.py) with a real
PipeWire, xdg-desktop-portal and its wlr backend, a real Qt window on Wayland showing known text,
and the real OCR engine. Without sway, grim or bubblewrap they skip, and fail on CI (CI=true),
where scripts/setup.sh --test installs them.
"""

from __future__ import annotations

import json
import os
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support import sway
from tests.support.wayland_probe import APP_ID, KNOWN_TEXT, TITLE
from tools import wayland
from tools.manual import ToolError
from tools.screen import find_screen


def _need(reason: str | None) -> None:
    if reason is None:
        return
    if os.environ.get("CI"):
        pytest.fail(f"{reason}; the Wayland tests need it")
    pytest.skip(reason)


# --- which session -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("environ", "target"),
    [
        ({"WAYLAND_DISPLAY": "wayland-1", "DISPLAY": ":0"}, "display:wayland-1"),
        ({"XDG_SESSION_TYPE": "wayland", "DISPLAY": ":0"}, "display:wayland-0"),
        ({"WAYLAND_DISPLAY": "/run/user/1000/wayland-0"}, "display:wayland-0"),
        ({"XDG_SESSION_TYPE": "x11", "DISPLAY": ":0.0"}, "display::0"),
    ],
)
def test_the_session_decides_never_display(environ: dict[str, str], target: str) -> None:
    screen = find_screen(environ=environ, platform="linux")
    assert screen.target == target
    assert screen.platform == ("x11" if target == "display::0" else "wayland")


def test_a_malformed_wayland_socket_name_is_a_clear_error() -> None:
    with pytest.raises(ToolError, match="not a socket name"):
        find_screen(environ={"WAYLAND_DISPLAY": "wayland 0; rm"}, platform="linux")


def test_a_wayland_desktop_without_a_compositor_interface_says_so(tmp_path: Path) -> None:
    env = {"WAYLAND_DISPLAY": "wayland-0", "XDG_CURRENT_DESKTOP": "GNOME",
           "XDG_RUNTIME_DIR": str(tmp_path)}  # fmt: skip
    with pytest.raises(ToolError, match=r"This Wayland desktop \(GNOME\) does not tell apps"):
        wayland.active_window(env)
    assert wayland.outputs(env) is None


def test_no_portal_and_no_grim_is_one_clear_error(tmp_path: Path) -> None:
    env = {"WAYLAND_DISPLAY": "wayland-0", "XDG_RUNTIME_DIR": str(tmp_path), "PATH": str(tmp_path)}
    with pytest.raises(ToolError) as raised:
        wayland.wayland_screenshot(env)
    message = str(raised.value)
    assert message.startswith("This Wayland desktop offers no way to read the screen")
    assert "no session bus" in message
    assert "grim is not installed" in message


# --- the portal's file ---------------------------------------------------------------------------


def test_a_link_in_place_of_the_portals_file_is_never_followed(tmp_path: Path) -> None:
    secret = tmp_path / "secret.png"
    secret.write_bytes(b"\x89PNG secret")
    link = tmp_path / "out.png"
    link.symlink_to(secret)
    with pytest.raises(ToolError, match="cannot be read"):
        wayland._read_own_file(link)


@pytest.mark.skipif(os.geteuid() != 0, reason="needs a file owned by someone else")
def test_a_file_of_another_user_in_place_of_the_portals_is_not_read(tmp_path: Path) -> None:
    planted = tmp_path / "out.png"
    planted.write_bytes(b"\x89PNG planted")
    os.chown(planted, 65534, 65534)
    with pytest.raises(ToolError, match="not a file of this user's"):
        wayland._read_own_file(planted)


# --- Hyprland's socket (its protocol, served on a real socket) -----------------------------------


@pytest.fixture
def hyprland(tmp_path: Path) -> Iterator[tuple[dict[str, str], dict[str, Any]]]:
    signature = "abc123_1700000000"
    folder = tmp_path / "hypr" / signature
    folder.mkdir(parents=True)
    answers: dict[str, Any] = {}
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(folder / ".socket.sock"))
    server.listen()

    def serve() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            with conn:
                command = conn.recv(1024).decode()
                conn.sendall(json.dumps(answers.get(command, {})).encode())

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    env = {"HYPRLAND_INSTANCE_SIGNATURE": signature, "XDG_RUNTIME_DIR": str(tmp_path),
           "WAYLAND_DISPLAY": "wayland-1"}  # fmt: skip
    try:
        yield env, answers
    finally:
        server.close()
        thread.join(5)


def test_hyprlands_active_window_and_monitors(hyprland: tuple[dict[str, str], dict[str, Any]]):
    env, answers = hyprland
    answers["j/activewindow"] = {
        "address": "0x55d1", "at": [12, 40], "size": [800, 600], "title": "notes.txt - Kate",
        "class": "org.kde.kate", "pid": os.getpid(),
    }  # fmt: skip
    answers["j/monitors"] = [{"x": 0, "y": 0, "width": 3840, "height": 2160, "scale": 2.0}]
    info = wayland.active_window(env)
    assert (info.title, info.application, info.pid) == ("notes.txt - Kate", "org.kde.kate",
                                                         os.getpid())  # fmt: skip
    assert info.geometry.as_dict() == {"left": 12, "top": 40, "width": 800, "height": 600}
    assert info.process  # psutil named this very process
    assert [g.as_dict() for g in wayland.outputs(env) or []] == [
        {"left": 0, "top": 0, "width": 1920, "height": 1080}
    ]
    answers["j/activewindow"] = {}
    with pytest.raises(ToolError, match="the desktop itself has it"):
        wayland.active_window(env)


# --- a real sway session -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def with_portal() -> dict[str, Any]:
    _need(sway.missing() or sway.portal_missing())
    return dict(sway.in_sway(["-m", "tests.support.wayland_probe", "screen"], portal=True))


def test_the_portal_reads_a_wayland_window_with_display_pointing_at_xwayland(
    with_portal: dict[str, Any],
) -> None:
    shot = with_portal["all"]
    assert "error" not in shot, shot
    assert shot["targets"] == ["display:wayland-1"]
    data = shot["data"]
    assert data["captured_by"] == "xdg-desktop-portal", data.get("passed_over")
    assert (data["width"], data["height"]) == (1280, 800)
    assert "heron" in data["ocr"]["text"].lower(), data["ocr"]
    assert KNOWN_TEXT.split()[-1] in data["ocr"]["text"]
    # The portal's world-readable copy in /tmp is gone; ours is in the screenshot folder.
    assert with_portal["portal_file_left"] is False
    assert len(with_portal["files"]) == 2
    assert all(name.startswith("screenshot-") for name in with_portal["files"])


def test_the_active_wayland_window_comes_from_sways_ipc(with_portal: dict[str, Any]) -> None:
    window = with_portal["window"]
    assert "error" not in window, window
    data = window["data"]
    assert (data["title"], data["application"]) == (TITLE, APP_ID)
    assert data["process"]["pid"] == with_portal["probe_pid"]
    assert data["process"]["name"].startswith("python")
    assert data["found_by"].startswith("sway IPC")
    assert f"The active window is {TITLE!r} ({APP_ID}" in window["text"]


def test_capturing_the_active_window_cuts_the_desktop_to_it(with_portal: dict[str, Any]) -> None:
    active = with_portal["active"]["data"]
    frame = with_portal["window"]["data"]["frame"]
    assert active["region"] == frame
    assert (active["width"], active["height"]) == (frame["width"], frame["height"])
    # A floating window: the cut holds its title bar (sway draws it above the window's rect)
    # and its text, and nothing else.
    assert (active["width"], active["height"]) < (1280, 800)
    assert frame["top"] < with_portal["window"]["data"]["geometry"]["top"]
    assert "Probe window" in active["ocr"]["text"]
    assert "heron" in active["ocr"]["text"].lower()
    assert with_portal["monitor2"]["error"].startswith("There is no monitor 2: this display has 1")


def test_doctor_takes_a_real_capture_and_names_the_way(with_portal: dict[str, Any]) -> None:
    (check,) = with_portal["doctor"]
    assert check["ok"] is True
    assert check["detail"].startswith("display wayland-1 through xdg-desktop-portal: 1280×800 in")


def test_without_a_portal_grim_reads_the_screen() -> None:
    _need(sway.missing())
    report = sway.in_sway(["-m", "tests.support.wayland_probe", "screen"], portal=False)
    data = report["all"]["data"]
    assert data["captured_by"] == "grim"
    assert "heron" in data["ocr"]["text"].lower()
    assert report["doctor"][0]["detail"].startswith("display wayland-1 through grim:")
