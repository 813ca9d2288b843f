"""Run inside a headless sway session (tests/support/sway.py): show a native Wayland window with
known text, then use the real screen tools as the runner does, and print what they gave as JSON.

    python -m tests.support.wayland_probe screen

$DISPLAY is set to an X display nobody serves, as GNOME and KDE set it to their XWayland: the
tools must read the Wayland session, never that.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from tools import wayland
from tools.manual import ToolError
from tools.registry import ToolConfig
from tools.screen import make_screen_tools

KNOWN_TEXT = "Chamberlain heron 5832"
APP_ID = "chamberlain-probe"
TITLE = "Probe window"

WINDOW = f"""
import sys
from PySide6.QtGui import QFont, QGuiApplication
from PySide6.QtWidgets import QApplication, QLabel
app = QApplication(sys.argv)
QGuiApplication.setDesktopFileName({APP_ID!r})
label = QLabel({KNOWN_TEXT!r})
label.setFont(QFont("DejaVu Sans", 36, QFont.Weight.Bold))
label.setStyleSheet("background: white; color: black; padding: 40px")
label.setWindowTitle({TITLE!r})
label.show()
app.exec()
"""


def _focused_app(env: dict[str, str]) -> str | None:
    try:
        return wayland.active_window(env).application
    except ToolError:
        return None


def show_window() -> subprocess.Popen[bytes]:
    env = {**os.environ, "QT_QPA_PLATFORM": "wayland"}
    window = subprocess.Popen([sys.executable, "-c", WINDOW], env=env)
    deadline = time.monotonic() + 30
    while _focused_app(dict(os.environ)) != APP_ID:
        if window.poll() is not None or time.monotonic() > deadline:
            raise SystemExit(f"the probe window did not appear (exit {window.poll()})")
        time.sleep(0.1)
    time.sleep(0.5)  # its first frame drawn
    return window


def _run(tool: Any, **args: Any) -> dict[str, Any]:
    try:
        targets = tool.targets(args)
        result = tool.run(args)
    except ToolError as exc:
        return {"error": str(exc)}
    data = dict(result.data)
    if isinstance(data.get("ocr"), dict):
        data["ocr"] = {"text": data["ocr"].get("text", ""), "error": data["ocr"].get("error")}
    return {"targets": targets, "data": data, "text": result.text}


def screen() -> dict[str, Any]:
    os.environ["DISPLAY"] = ":4242"  # an XWayland nobody serves: never to be used
    window = show_window()
    try:
        folder = Path(os.environ["CHAMBERLAIN_HOME"]) / "screenshots"
        tools = {t.name: t for t in make_screen_tools(ToolConfig(screenshot_dir=folder))}
        report = {
            "all": _run(tools["screen_capture"]),
            "portal_file_left": Path("/tmp/out.png").exists(),
            "window": _run(tools["get_active_window"]),
            "active": _run(tools["screen_capture"], target="active_window"),
            "monitor2": _run(tools["screen_capture"], target="monitor", monitor=2),
            "doctor": [
                {"name": c.name, "ok": c.ok, "detail": c.detail}
                for c in (tools["screen_capture"].health or (lambda: []))()
            ],
            "files": sorted(p.name for p in folder.iterdir()) if folder.exists() else [],
            "probe_pid": window.pid,
        }
    finally:
        window.terminate()
        window.wait(10)
    return report


WAYBAR_CONFIG = {"layer": "top", "position": "top", "height": 28, "modules-right": ["tray"],
                 "tray": {"icon-size": 18, "spacing": 6}}  # fmt: skip


def _grim_png() -> str:
    done = subprocess.run(["grim", "-"], capture_output=True, timeout=15, check=True)
    return base64.b64encode(done.stdout).decode()


def _sway_nodes(node: dict[str, Any]) -> list[dict[str, Any]]:
    found = [node]
    for child in list(node.get("nodes") or []) + list(node.get("floating_nodes") or []):
        found += _sway_nodes(child)
    return found


async def _ask_in_chat(chat: Any) -> dict[str, Any]:
    """A real permission question while the person is in the chat: where sway puts the dialog,
    and whether it took the keyboard."""
    import asyncio

    from PySide6.QtWidgets import QApplication

    from app.permission_dialog import PermissionDialog, open_question
    from app.permission_prompt import QuestionView
    from broker.permissions import PermissionQuestion, PermissionRequest
    from core.clock import SystemClock
    from tools.manual import Capability

    chat.activateWindow()
    chat.input.setFocus()
    await asyncio.sleep(0.3)
    clock = SystemClock()
    now = clock.now()
    request = PermissionRequest(
        capability=Capability.FILE_READ, scope="/nonexistent/Documents", tool="list_files",
        arguments={"path": "/nonexistent/Documents"}, call_id="probe", user_scope=True,
        asked_at=now, deadline=now + 60.0, timeout_s=60.0, risk="safe", reversibility="easy",
    )  # fmt: skip
    waiting = open_question(QuestionView(PermissionQuestion(request, clock)))
    await asyncio.sleep(1.0)
    nodes = _sway_nodes(wayland.sway_ipc(os.environ["SWAYSOCK"], 4))
    dialog = next(n for n in nodes if str(n.get("name", "")).startswith("Permission needed"))
    chat_node = next(n for n in nodes if n.get("name") == "Chat")
    seen = {
        "type": dialog["type"],
        "focused": dialog["focused"],
        "chat_type": chat_node["type"],
        "shot": _grim_png() if os.environ.get("PROBE_SHOTS") else "",
    }
    for widget in QApplication.topLevelWidgets():
        if isinstance(widget, PermissionDialog) and widget.isVisible():
            widget.reject()
    seen["answer"] = repr(await asyncio.wait_for(waiting, 10))
    return seen


def desktop_app() -> dict[str, Any]:
    """The real desktop app, natively on Wayland, first with no tray host: its chat window must
    carry the menu; then a tray host (waybar) starts, and the app must move into it; then Quit
    from the window's menu ends it."""
    import asyncio

    import qasync
    from PySide6.QtWidgets import QApplication

    os.environ["QT_QPA_PLATFORM"] = "wayland"
    os.environ["CHAMBERLAIN_MEMORY__ENCRYPTION"] = "off"
    qt = QApplication([])
    qt.setQuitOnLastWindowClosed(False)  # as app.main sets it
    qt.setDesktopFileName("chamberlain")
    loop = qasync.QEventLoop(qt)
    asyncio.set_event_loop(loop)
    from app.main import DesktopApp

    shell = DesktopApp(Path(os.environ["CHAMBERLAIN_HOME"]), connect_model=False)
    report: dict[str, Any] = {"platform": QApplication.platformName()}
    config = Path(os.environ["HOME"]) / "waybar.json"
    config.write_text(json.dumps(WAYBAR_CONFIG))

    async def walk() -> None:
        shell.start()
        await shell.load()
        chat = shell.windows["chat"]
        for _ in range(100):
            if _focused_app(dict(os.environ)) is not None:
                break
            await asyncio.sleep(0.1)
        await asyncio.sleep(0.5)
        report["tray_at_start"] = shell.use_tray
        report["chat_visible"] = chat.isVisible()
        bar = getattr(chat, "app_menu", None)
        menus = [a.menu() for a in bar.actions()] if bar is not None else []
        report["menu_bar"] = [m.title() for m in menus if m is not None]
        report["menu"] = [a.text() for m in menus if m is not None for a in m.actions() if a.text()]
        report["focused"] = wayland.active_window(dict(os.environ)).title
        if os.environ.get("PROBE_SHOTS"):
            report["shot_without_tray"] = _grim_png()
        report["dialog"] = await _ask_in_chat(chat)
        if os.environ.get("PROBE_SHOTS"):
            report["shot_dialog"] = report["dialog"].pop("shot")
        waybar = await asyncio.create_subprocess_exec(
            "waybar", "-c", str(config), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        started = time.monotonic()
        try:
            # The app looks for a tray on a timer of its own: this waits for what it finds.
            while not shell.use_tray and time.monotonic() - started < 30:  # noqa: ASYNC110
                await asyncio.sleep(0.1)
            report["seconds_to_tray"] = round(time.monotonic() - started, 2)
            report["tray_after_host"] = shell.use_tray
            report["tray_shown"] = shell.tray.shown
            await asyncio.sleep(1.0)
            if os.environ.get("PROBE_SHOTS"):
                report["shot_with_tray"] = _grim_png()
            quit_action = next(a for m in menus if m is not None for a in m.actions()
                               if a.text() == "&Quit Chamberlain")  # fmt: skip
            quit_action.trigger()
            report["quit"] = await asyncio.wait_for(shell.finished, 20)
        finally:
            waybar.terminate()
            await waybar.wait()

    with loop:
        loop.run_until_complete(asyncio.wait_for(walk(), 120))
    return report


if __name__ == "__main__":
    mode = sys.argv[1]
    if mode == "screen":
        print(json.dumps(screen()))
    elif mode == "app":
        print(json.dumps(desktop_app()))
    else:
        raise SystemExit(f"unknown mode {mode!r}")
