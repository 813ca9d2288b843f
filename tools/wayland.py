"""The screen and the active window in a Wayland session, never through XWayland.

A Wayland session gives no app the screen or other apps' windows. XWayland (which GNOME and KDE
start, setting $DISPLAY) sees only X11 windows: through it a capture is black where Wayland
windows are and the "active window" is whichever X11 window last had the focus. So the session
decides ($WAYLAND_DISPLAY, $XDG_SESSION_TYPE), never $DISPLAY, and on Wayland:

- the screen is read through the desktop portal's Screenshot interface (xdg-desktop-portal, on
  the session bus, with jeepney), non-interactive; where the portal has none, `grim` on wlroots
  compositors (sway, Hyprland, river). If the portal asked the person and they said no, that is
  the answer: nothing else is tried. The portal writes its PNG where its backend likes (the wlr
  backend: /tmp/out.png, readable by all); it is read at once, only if it is a regular file of
  this user's, and deleted.
- the active window comes from the compositor's own interface where there is one (sway's IPC,
  Hyprland's socket); elsewhere there is no way, and the tool says so.

Not here: KWin's ScreenShot2 (KDE's portal serves the Screenshot interface) and GNOME Shell's
own screenshot API (closed to apps it does not list; GNOME's portal serves it).
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import secrets
import shutil
import socket
import stat
import struct
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from tools.manual import ToolError
from tools.windows import Geometry, WindowInfo, process_name

PORTAL_BUS = "org.freedesktop.portal.Desktop"
PORTAL_PATH = "/org/freedesktop/portal/desktop"
SCREENSHOT_INTERFACE = "org.freedesktop.portal.Screenshot"
REQUEST_INTERFACE = "org.freedesktop.portal.Request"
# How long a portal may take to answer, a dialog it shows included.
PORTAL_TIMEOUT_S = 45.0
GRIM_TIMEOUT_S = 15.0
IPC_TIMEOUT_S = 5.0
# A screenshot file larger than this is not read (a 7680×4320 desktop is ~40 MB as PNG at most).
MAX_SHOT_BYTES = 200 * 1024 * 1024
_SOCKET_NAME = re.compile(r"^[A-Za-z0-9._-]{1,100}$")

NOT_AVAILABLE_WINDOW = (
    "This Wayland desktop ({desktop}) does not tell apps which window is active; reading it "
    "works on sway and Hyprland"
)


def is_wayland(environ: Mapping[str, str]) -> bool:
    """A Wayland session, whatever $DISPLAY says (XWayland sets it too)."""
    return bool(environ.get("WAYLAND_DISPLAY", "").strip()) or (
        environ.get("XDG_SESSION_TYPE", "").strip().lower() == "wayland"
    )


def wayland_name(environ: Mapping[str, str]) -> str:
    """The compositor's socket name ('wayland-0'), as a grant's scope names the display."""
    raw = environ.get("WAYLAND_DISPLAY", "").strip() or "wayland-0"
    name = os.path.basename(raw.rstrip("/"))
    if not _SOCKET_NAME.match(name):
        raise ToolError(f"$WAYLAND_DISPLAY is set to {raw[:100]!r}, which is not a socket name")
    return name


def desktop_name(environ: Mapping[str, str]) -> str:
    return environ.get("XDG_CURRENT_DESKTOP", "").strip()[:60] or "an unnamed desktop"


# --- the screenshot ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Shot:
    """A PNG of the whole desktop, and how it was taken."""

    png: bytes
    method: str  # "xdg-desktop-portal" or "grim"
    # Why the ways tried before this one gave nothing ("the desktop portal: ...").
    passed_over: tuple[str, ...] = ()


class PortalRefused(ToolError):
    """The portal asked the person, and they said no (or closed its dialog)."""


class _NoPortal(Exception):
    """No portal Screenshot interface on this session bus; another way may work."""


def session_bus_address(environ: Mapping[str, str]) -> str | None:
    """The session bus: $DBUS_SESSION_BUS_ADDRESS, else the systemd user bus's socket, else None."""
    address = environ.get("DBUS_SESSION_BUS_ADDRESS", "").strip()
    if address:
        return address
    runtime = environ.get("XDG_RUNTIME_DIR", "").strip()
    if runtime and Path(runtime, "bus").exists():
        return f"unix:path={runtime}/bus"
    return None


def _read_own_file(path: Path) -> bytes:
    """The file's bytes, only if it is a regular file of this user's (never through a link)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError as exc:
        raise ToolError(
            f"The portal's screenshot {str(path)[:200]!r} cannot be read: {exc}"
        ) from exc
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_uid != os.getuid():
            raise ToolError(
                f"The portal's screenshot {str(path)[:200]!r} is not a file of this user's; "
                "it was not read"
            )
        if info.st_size > MAX_SHOT_BYTES:
            raise ToolError(f"The portal's screenshot is {info.st_size} bytes; too large to read")
        with os.fdopen(fd, "rb", closefd=False) as handle:
            return handle.read(MAX_SHOT_BYTES + 1)
    finally:
        os.close(fd)


def portal_screenshot(environ: Mapping[str, str], timeout_s: float = PORTAL_TIMEOUT_S) -> Shot:
    """The whole desktop through xdg-desktop-portal; _NoPortal when there is none to ask."""
    from jeepney import DBusAddress, MatchRule, MessageType, message_bus, new_method_call
    from jeepney.io.blocking import Proxy, open_dbus_connection

    address = session_bus_address(environ)
    if address is None:
        raise _NoPortal("no session bus ($DBUS_SESSION_BUS_ADDRESS is unset)")
    try:
        conn = open_dbus_connection(bus=address)
    except (OSError, ValueError) as exc:
        raise _NoPortal(f"the session bus does not answer ({exc})") from exc
    with conn:
        token = "chamberlain" + secrets.token_hex(8)
        sender = (conn.unique_name or ":0").lstrip(":").replace(".", "_")
        handle = f"{PORTAL_PATH}/request/{sender}/{token}"
        rule = MatchRule(type="signal", interface=REQUEST_INTERFACE, member="Response", path=handle)
        Proxy(message_bus, conn).AddMatch(rule)
        portal = DBusAddress(PORTAL_PATH, bus_name=PORTAL_BUS, interface=SCREENSHOT_INTERFACE)
        options = {"handle_token": ("s", token), "interactive": ("b", False), "modal": ("b", False)}
        with conn.filter(rule) as responses:
            try:
                reply = conn.send_and_get_reply(
                    new_method_call(portal, "Screenshot", "sa{sv}", ("", options)), timeout=10
                )
            except TimeoutError as exc:
                raise _NoPortal("the desktop portal did not answer in 10 s") from exc
            if reply.header.message_type is MessageType.error:
                detail = str(reply.body[0])[:200] if reply.body else "an error"
                raise _NoPortal(f"the desktop portal has no screenshots here ({detail})")
            try:
                response = conn.recv_until_filtered(responses, timeout=timeout_s)
            except TimeoutError as exc:
                raise ToolError(
                    f"The desktop portal took the screenshot request but gave nothing back in "
                    f"{timeout_s:.0f} s"
                ) from exc
    code, results = response.body
    if code == 1:
        raise PortalRefused("The desktop did not allow the screenshot (its dialog said no)")
    if code != 0:
        raise ToolError("The desktop portal could not take the screenshot (it reported a failure)")
    uri = results.get("uri", ("s", ""))[1]
    parsed = urlparse(uri)
    if parsed.scheme != "file" or not parsed.path:
        raise ToolError(f"The desktop portal gave an address that is not a file: {uri[:200]!r}")
    path = Path(unquote(parsed.path))
    try:
        png = _read_own_file(path)
    finally:
        # World-readable in a shared folder: it goes now, whatever happened to the read.
        try:
            if path.is_file() and not path.is_symlink() and path.stat().st_uid == os.getuid():
                path.unlink()
        except OSError:
            pass
    return Shot(png, "xdg-desktop-portal")


def grim_screenshot(environ: Mapping[str, str], timeout_s: float = GRIM_TIMEOUT_S) -> Shot:
    """The whole desktop through grim (wlroots compositors' screencopy), as PNG on its stdout."""
    grim = shutil.which("grim", path=environ.get("PATH"))
    if grim is None:
        raise _NoPortal("grim is not installed")
    try:
        done = subprocess.run(
            [grim, "-t", "png", "-l", "1", "-"],
            capture_output=True,
            timeout=timeout_s,
            env=dict(environ),
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        raise ToolError(f"grim took more than {timeout_s:.0f} s; no screenshot") from exc
    if done.returncode != 0 or not done.stdout.startswith(b"\x89PNG"):
        why = done.stderr.decode("utf-8", "replace").strip().splitlines()
        raise _NoPortal(f"grim failed ({why[-1][:200] if why else f'exit {done.returncode}'})")
    return Shot(done.stdout, "grim")


def wayland_screenshot(environ: Mapping[str, str]) -> Shot:
    """The whole desktop: the portal first, then grim; a ToolError naming both when neither."""
    tried: list[str] = []
    for way in (portal_screenshot, grim_screenshot):
        try:
            shot = way(environ)
        except _NoPortal as exc:
            tried.append(str(exc))
            continue
        return Shot(shot.png, shot.method, tuple(tried))
    raise ToolError(
        "This Wayland desktop offers no way to read the screen: "
        + "; ".join(tried)
        + " (install xdg-desktop-portal with your desktop's backend, or grim on sway/Hyprland)"
    )


# --- the compositor's own interface: windows and outputs -----------------------------------------

_I3_MAGIC = b"i3-ipc"
_GET_OUTPUTS, _GET_TREE = 3, 4


def _sway_socket(environ: Mapping[str, str]) -> str | None:
    path = environ.get("SWAYSOCK", "").strip()
    return path if path and Path(path).exists() else None


def _hyprland_socket(environ: Mapping[str, str]) -> str | None:
    signature = environ.get("HYPRLAND_INSTANCE_SIGNATURE", "").strip()
    if not signature or not _SOCKET_NAME.match(signature):
        return None
    runtime = environ.get("XDG_RUNTIME_DIR", "").strip()
    for base in ([Path(runtime, "hypr")] if runtime else []) + [Path("/tmp/hypr")]:
        path = base / signature / ".socket.sock"
        if path.exists():
            return str(path)
    return None


def _recv_exactly(sock: socket.socket, size: int) -> bytes:
    chunks, left = [], size
    while left:
        chunk = sock.recv(min(left, 1 << 20))
        if not chunk:
            raise ToolError("The compositor closed its IPC connection mid-answer")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def sway_ipc(path: str, kind: int) -> Any:
    """One request on sway's IPC socket (the i3 protocol), its JSON answer."""
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(IPC_TIMEOUT_S)
            sock.connect(path)
            sock.sendall(_I3_MAGIC + struct.pack("=II", 0, kind))
            header = _recv_exactly(sock, len(_I3_MAGIC) + 8)
            if not header.startswith(_I3_MAGIC):
                raise ToolError("The compositor's IPC socket does not speak sway's protocol")
            length, _reply = struct.unpack("=II", header[len(_I3_MAGIC) :])
            if length > 64 * 1024 * 1024:
                raise ToolError("The compositor's IPC answer is too large")
            return json.loads(_recv_exactly(sock, length))
    except (OSError, ValueError) as exc:
        raise ToolError(f"sway's IPC socket does not answer ({exc})") from exc


def hyprland_ipc(path: str, command: str) -> Any:
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(IPC_TIMEOUT_S)
            sock.connect(path)
            sock.sendall(command.encode())
            chunks = []
            while chunk := sock.recv(1 << 16):
                chunks.append(chunk)
                if sum(map(len, chunks)) > 16 * 1024 * 1024:
                    raise ToolError("Hyprland's IPC answer is too large")
        return json.loads(b"".join(chunks))
    except (OSError, ValueError) as exc:
        raise ToolError(f"Hyprland's IPC socket does not answer ({exc})") from exc


def _rect(raw: Mapping[str, Any]) -> Geometry:
    return Geometry(int(raw["x"]), int(raw["y"]), int(raw["width"]), int(raw["height"]))


def _focused(node: Mapping[str, Any]) -> Mapping[str, Any] | None:
    if node.get("focused"):
        return node
    for child in list(node.get("nodes") or []) + list(node.get("floating_nodes") or []):
        found = _focused(child)
        if found is not None:
            return found
    return None


def _with_process(info: WindowInfo) -> WindowInfo:
    if info.pid:
        return dataclasses.replace(info, process=process_name(info.pid))
    return info


def sway_active_window(tree: Mapping[str, Any]) -> WindowInfo:
    """The focused window in sway's tree, or a ToolError when the desktop itself has the focus."""
    node = _focused(tree)
    if node is None or node.get("type") not in {"con", "floating_con"} or not node.get("pid"):
        raise ToolError("No window has the focus: the desktop itself has it")
    outer = _rect(node["rect"])
    inner = node.get("window_rect") or {}
    geometry = (
        Geometry(
            outer.left + int(inner["x"]),
            outer.top + int(inner["y"]),
            int(inner["width"]),
            int(inner["height"]),
        )
        if inner.get("width")
        else outer
    )
    deco = node.get("deco_rect") or {}
    frame = outer
    if int(deco.get("height") or 0) > 0 and node.get("type") == "floating_con":
        # A floating window's title bar lies above its rect (a tiled one's within it).
        lift = int(deco["height"])
        frame = Geometry(outer.left, outer.top - lift, outer.width, outer.height + lift)
    props = node.get("window_properties") or {}
    application = node.get("app_id") or props.get("class") or None
    pid = int(node["pid"])
    return _with_process(
        WindowInfo(
            title=str(node.get("name") or "")[:1000],
            geometry=geometry,
            application=str(application) if application else None,
            pid=pid,
            frame=frame,  # its border and title bar included
            window_id=str(node.get("id")),
            found_by="sway IPC (focused container)",
            pid_source="sway IPC",
        )
    )


def hyprland_active_window(raw: Mapping[str, Any]) -> WindowInfo:
    if not raw or not raw.get("address"):
        raise ToolError("No window has the focus: the desktop itself has it")
    x, y = (int(v) for v in raw["at"])
    width, height = (int(v) for v in raw["size"])
    pid = int(raw.get("pid") or 0) or None
    return _with_process(
        WindowInfo(
            title=str(raw.get("title") or "")[:1000],
            geometry=Geometry(x, y, width, height),
            application=str(raw.get("class") or "") or None,
            pid=pid,
            window_id=str(raw["address"]),
            found_by="Hyprland IPC (activewindow)",
            pid_source="Hyprland IPC" if pid else None,
        )
    )


def active_window(environ: Mapping[str, str]) -> WindowInfo:
    """The active window, from the compositor's interface; a ToolError where there is none."""
    if (path := _sway_socket(environ)) is not None:
        return sway_active_window(sway_ipc(path, _GET_TREE))
    if (path := _hyprland_socket(environ)) is not None:
        return hyprland_active_window(hyprland_ipc(path, "j/activewindow"))
    raise ToolError(NOT_AVAILABLE_WINDOW.format(desktop=desktop_name(environ)))


def outputs(environ: Mapping[str, str]) -> list[Geometry] | None:
    """The monitors in layout coordinates (logical pixels), where the compositor says; else None."""
    if (path := _sway_socket(environ)) is not None:
        raw = sway_ipc(path, _GET_OUTPUTS)
        return [_rect(o["rect"]) for o in raw if o.get("active")]
    if (path := _hyprland_socket(environ)) is not None:
        raw = hyprland_ipc(path, "j/monitors")
        found = []
        for mon in raw:
            scale = float(mon.get("scale") or 1.0) or 1.0
            found.append(
                Geometry(
                    int(mon["x"]),
                    int(mon["y"]),
                    round(int(mon["width"]) / scale),
                    round(int(mon["height"]) / scale),
                )
            )
        return found
    return None
