"""Which desktop window is in front: its title, its program and where it is on the screen.

"Windows" here means application windows on any platform. X11 is read through EWMH properties
with python-xlib (`_NET_ACTIVE_WINDOW`, `_NET_WM_NAME` / `WM_NAME`, `_NET_WM_PID`, the geometry
translated to root coordinates). python-xlib speaks the X protocol itself, so a lost connection
is a Python exception; libX11 through ctypes would call its I/O error handler, which exits the
whole process. The Windows (user32) and macOS (Quartz) paths are written against their APIs but
have never run: no such machine is available to this project. They are kept small and marked.

This module only reads. It must never move, raise, focus or close a window, read what a window
shows, or name a process from a PID that belongs to another host.
"""

from __future__ import annotations

import logging
import select
import socket
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import psutil

from tools.manual import ToolError

if TYPE_CHECKING:
    from Xlib.display import Display
    from Xlib.xobject.drawable import Window

log = logging.getLogger("chamberlain.tools.windows")

MAX_TITLE_CHARS = 1000
# How deep to look under a window manager's frame for the client window it wraps.
_FRAME_SEARCH_DEPTH = 3

NO_ACTIVE_WINDOW = "No window is active right now (the desktop itself has the focus)"
WENT_AWAY = "The active window went away while it was being read; try again"


@dataclass(frozen=True)
class Geometry:
    """A rectangle in screen (root window) coordinates, in pixels."""

    left: int
    top: int
    width: int
    height: int

    def as_dict(self) -> dict[str, int]:
        return {"left": self.left, "top": self.top, "width": self.width, "height": self.height}


@dataclass(frozen=True)
class WindowInfo:
    title: str
    geometry: Geometry
    # What the window system calls the program (X11 WM_CLASS class, macOS owner name).
    application: str | None = None
    pid: int | None = None
    # The process name psutil reports for `pid` on this machine.
    process: str | None = None
    # The window's outer rectangle including decorations, when the window manager says.
    frame: Geometry | None = None
    window_id: str | None = None
    # How the window was found (e.g. "_NET_ACTIVE_WINDOW"), and where the PID came from.
    found_by: str = ""
    pid_source: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "title": self.title,
            "application": self.application,
            "process": {"pid": self.pid, "name": self.process, "pid_source": self.pid_source},
            "geometry": self.geometry.as_dict(),
            "frame": self.frame.as_dict() if self.frame else None,
            "window_id": self.window_id,
            "found_by": self.found_by,
        }


def process_name(pid: int) -> str | None:
    try:
        return psutil.Process(pid).name()
    except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess, ValueError):
        return None


def _clip_title(title: str) -> str:
    title = title.replace("\x00", "")
    return title if len(title) <= MAX_TITLE_CHARS else title[:MAX_TITLE_CHARS] + "…"


# --- X11 -----------------------------------------------------------------------------------------


def x11_refused_message(display: str) -> str:
    return (
        f"Cannot connect to the X display {display}: the connection was refused or the display "
        "is not running (is $DISPLAY right, and may this user open it?)"
    )


def x11_not_allowed_message(display: str) -> str:
    return (
        f"The X display {display} refused the connection: it does not let this user in (X "
        "access control; the display's cookie, found through $XAUTHORITY, is missing or wrong)"
    )


class _PollingSelect:
    """`select.select` for python-xlib's one call, done with poll().

    python-xlib waits on its socket with select(), which raises ValueError for a descriptor
    number of 1024 (FD_SETSIZE) or more; a long-running process with many files and sockets
    open gets such numbers. poll() has no such limit. Hang-up and error count as readable, as
    select() reports them, so python-xlib then reads the end of the connection.
    """

    error = OSError

    @staticmethod
    def select(
        rlist: list[Any], wlist: list[Any], xlist: list[Any], timeout: float | None = None
    ) -> tuple[list[Any], list[Any], list[Any]]:
        masks: dict[int, int] = {}
        objects: dict[int, Any] = {}
        for items, mask in ((rlist, select.POLLIN), (wlist, select.POLLOUT)):
            for item in items:
                fd = item if isinstance(item, int) else item.fileno()
                masks[fd] = masks.get(fd, 0) | mask
                objects[fd] = item
        poller = select.poll()
        for fd, mask in masks.items():
            poller.register(fd, mask)
        events = poller.poll(None if timeout is None else timeout * 1000)
        broken = select.POLLHUP | select.POLLERR | select.POLLNVAL
        readable = [objects[fd] for fd, ev in events if ev & (select.POLLIN | broken)]
        writable = [objects[fd] for fd, ev in events if ev & (select.POLLOUT | broken)]
        return readable, writable, []


def use_poll_for_xlib() -> None:
    """Make python-xlib wait with poll() instead of select() (see _PollingSelect); idempotent."""
    if not hasattr(select, "poll"):
        return  # no poll() (Windows): python-xlib is not used there
    from Xlib.protocol import display as protocol

    # python-xlib reads its module global `select` at each wait, and only uses its .select and
    # .error; the stubs do not declare that global, hence the namespace itself.
    namespace = vars(protocol)
    if namespace.get("select") is not _PollingSelect:
        namespace["select"] = _PollingSelect


@contextmanager
def x11_display(name: str) -> Iterator[Display]:
    """An open python-xlib connection to `name`, closed afterwards; failures as ToolErrors."""
    from Xlib import error as xerror
    from Xlib.display import Display

    use_poll_for_xlib()
    try:
        display = Display(name)
    except xerror.DisplayNameError as exc:
        raise ToolError(f"$DISPLAY is set to {name!r}, which is not an X display name") from exc
    except xerror.DisplayConnectionError as exc:
        # The server's own reason, when it refused the setup ("Authorization required, …").
        reason = exc.msg.decode("utf-8", "replace") if isinstance(exc.msg, bytes) else exc.msg
        if "authoriz" in str(reason).lower():
            raise ToolError(x11_not_allowed_message(name)) from exc
        raise ToolError(x11_refused_message(name)) from exc
    except (xerror.XauthError, OSError) as exc:
        raise ToolError(x11_refused_message(name)) from exc
    except xerror.ConnectionClosedError as exc:
        # The server took the connection, then closed it during the setup before its refusal
        # could be read: what an X server with access control does to a client without the
        # right cookie, seen from the other side of the race.
        raise ToolError(x11_not_allowed_message(name)) from exc
    try:
        yield display
    except xerror.ConnectionClosedError as exc:
        raise ToolError(f"The X display {name} closed the connection") from exc
    finally:
        display.close()


def _property(display: Display, window: Window, name: str) -> Any:
    """A window property of any type (with .value, .format, .property_type), or None."""
    from Xlib import X

    return window.get_full_property(display.intern_atom(name), X.AnyPropertyType)


def _text_property(display: Display, window: Window, name: str) -> str | None:
    prop = _property(display, window, name)
    if prop is None:
        return None
    value = prop.value
    if isinstance(value, str):
        return value
    if not isinstance(value, bytes):
        return None
    # UTF8_STRING is what EWMH asks for; STRING is Latin-1 by definition; COMPOUND_TEXT is
    # ISO 2022, which for the common case of plain ASCII reads the same either way.
    if prop.property_type == display.intern_atom("STRING"):
        return value.decode("latin-1")
    return value.decode("utf-8", "replace")


def _cardinal(display: Display, window: Window, name: str) -> list[int] | None:
    prop = _property(display, window, name)
    if prop is None or prop.format != 32 or not len(prop.value):
        return None
    return [int(v) for v in prop.value]


def _top_level(display: Display, window: Window) -> Window:
    """The child of the root window that contains `window` (a frame, or the window itself)."""
    root = display.screen().root
    current = window
    for _ in range(64):
        tree = current.query_tree()
        if tree.parent is None or tree.parent.id in (0, root.id):
            return current
        current = tree.parent
    return current


def _client_window(display: Display, top: Window) -> Window:
    """The application's own window inside `top`: the one with WM_STATE (ICCCM), or `top`."""
    from Xlib import X

    wm_state = display.intern_atom("WM_STATE")
    queue: list[tuple[Window, int]] = [(top, 0)]
    while queue:
        window, depth = queue.pop(0)
        if window.get_full_property(wm_state, X.AnyPropertyType) is not None:
            return window
        if depth < _FRAME_SEARCH_DEPTH:
            queue.extend((child, depth + 1) for child in window.query_tree().children)
    return top


def _x11_find_active(display: Display) -> tuple[Window, str]:
    """The active client window and how it was found.

    A window manager that follows EWMH names it in `_NET_ACTIVE_WINDOW` on the root window.
    Without one (a bare X server such as Xvfb, or a minimal WM) the X server's own input focus
    is the answer; when that is PointerRoot, keystrokes go to the window under the pointer, so
    that window is the active one.
    """
    from Xlib import X

    root = display.screen().root
    active = _cardinal(display, root, "_NET_ACTIVE_WINDOW")
    if active is not None:
        if active[0] in (0, root.id):
            raise ToolError(NO_ACTIVE_WINDOW)
        return display.create_resource_object("window", active[0]), "_NET_ACTIVE_WINDOW"

    focus = display.get_input_focus().focus
    if focus == X.PointerRoot:
        child = root.query_pointer().child
        if not child or child == X.NONE:
            raise ToolError(NO_ACTIVE_WINDOW)
        found_by = "window under the pointer (no EWMH window manager; focus follows the pointer)"
        return _client_window(display, child), found_by
    if isinstance(focus, int) or focus.id == root.id:
        raise ToolError(NO_ACTIVE_WINDOW)
    top = _top_level(display, focus)
    return _client_window(display, top), "X input focus (no EWMH window manager)"


def _x11_pid(display: Display, window: Window) -> tuple[int | None, str | None, bool]:
    """(pid, where it came from, whether it is a process on this machine)."""
    pids = _cardinal(display, window, "_NET_WM_PID")
    if pids and pids[0] > 0:
        machine = _text_property(display, window, "WM_CLIENT_MACHINE")
        # Compared by short name: getfqdn() would ask DNS, which may hang on a laptop offline.
        here = socket.gethostname().split(".")[0].lower()
        local = machine is None or machine.split(".")[0].lower() == here
        return pids[0], "_NET_WM_PID", local
    # No _NET_WM_PID (many older toolkits, xmessage among them): the X-Resource extension
    # knows the PID of every client connected over a local socket.
    if display.has_extension("X-Resource"):
        from Xlib.ext import res

        reply = display.res_query_client_ids(
            [{"client": window.id, "mask": res.LocalClientPIDMask}]
        )
        for entry in reply.ids:
            if entry.spec.mask == res.LocalClientPIDMask and entry.value:
                return int(entry.value[0]), "X-Resource (local client)", True
    return None, None, False


def _x11_geometry(display: Display, window: Window) -> tuple[Geometry, Geometry | None]:
    root = display.screen().root
    size = window.get_geometry()
    origin = root.translate_coords(window, 0, 0)
    inner = Geometry(int(origin.x), int(origin.y), int(size.width), int(size.height))
    extents = _cardinal(display, window, "_NET_FRAME_EXTENTS")
    frame = None
    if extents is not None and len(extents) == 4:
        left, right, top, bottom = extents
        frame = Geometry(
            inner.left - left,
            inner.top - top,
            inner.width + left + right,
            inner.height + top + bottom,
        )
    return inner, frame


def x11_active_window(display_name: str) -> WindowInfo:
    """The active window on the X display `display_name` (as $DISPLAY spells it)."""
    from Xlib import error as xerror

    with x11_display(display_name) as display:
        try:
            window, found_by = _x11_find_active(display)
            title = _text_property(display, window, "_NET_WM_NAME")
            if title is None:
                title = _text_property(display, window, "WM_NAME")
            wm_class = window.get_wm_class()
            pid, pid_source, local = _x11_pid(display, window)
            geometry, frame = _x11_geometry(display, window)
        except xerror.XError as exc:
            # BadWindow and friends: the window closed between finding it and reading it.
            raise ToolError(WENT_AWAY) from exc
    log.debug("active X window 0x%x found by %s", window.id, found_by)
    if pid is not None and not local:
        pid_source = f"{pid_source} (a process on another host)"
    return WindowInfo(
        title=_clip_title(title or ""),
        geometry=geometry,
        application=wm_class[1] if wm_class else None,
        pid=pid,
        process=process_name(pid) if pid is not None and local else None,
        frame=frame,
        window_id=f"0x{window.id:x}",
        found_by=found_by,
        pid_source=pid_source,
    )


# --- Windows (UNTESTED: written against the user32 API, never run here) ---------------------------


def win32_active_window() -> WindowInfo:
    """The foreground window through user32. UNTESTED: no Windows machine is available."""
    if sys.platform != "win32":
        raise ToolError("The Windows active-window lookup only runs on Windows")
    import ctypes
    from ctypes import wintypes

    user32 = ctypes.WinDLL("user32", use_last_error=True)
    user32.GetForegroundWindow.restype = wintypes.HWND
    user32.GetWindowTextLengthW.argtypes = [wintypes.HWND]
    user32.GetWindowTextW.argtypes = [wintypes.HWND, wintypes.LPWSTR, ctypes.c_int]
    user32.GetWindowThreadProcessId.argtypes = [wintypes.HWND, ctypes.POINTER(wintypes.DWORD)]
    user32.GetWindowRect.argtypes = [wintypes.HWND, ctypes.POINTER(wintypes.RECT)]

    hwnd = user32.GetForegroundWindow()
    if not hwnd:
        raise ToolError(NO_ACTIVE_WINDOW)
    length = user32.GetWindowTextLengthW(hwnd)
    buffer = ctypes.create_unicode_buffer(length + 1)
    user32.GetWindowTextW(hwnd, buffer, length + 1)
    pid = wintypes.DWORD()
    user32.GetWindowThreadProcessId(hwnd, ctypes.byref(pid))
    rect = wintypes.RECT()
    if not user32.GetWindowRect(hwnd, ctypes.byref(rect)):
        raise ToolError(WENT_AWAY)
    # mss makes the process DPI-aware, so these are physical pixels like the capture's.
    geometry = Geometry(rect.left, rect.top, rect.right - rect.left, rect.bottom - rect.top)
    name = process_name(pid.value) if pid.value else None
    return WindowInfo(
        title=_clip_title(buffer.value),
        geometry=geometry,
        application=name,
        pid=pid.value or None,
        process=name,
        window_id=f"0x{int(hwnd):x}",
        found_by="GetForegroundWindow",
        pid_source="GetWindowThreadProcessId",
    )


# --- macOS (UNTESTED: written against Quartz, never run here) -------------------------------------


def macos_active_window() -> WindowInfo:
    """The frontmost normal window through Quartz. UNTESTED: no Mac is available.

    CGWindowListCopyWindowInfo lists on-screen windows front to back; the first one in the normal
    layer (0) belongs to the frontmost application. Since macOS 10.15 a window's title is only
    given to apps with the Screen Recording permission; without it the title is empty.
    """
    try:
        import Quartz
    except ImportError as exc:
        raise ToolError(
            "Reading the active window on macOS is not supported here: "
            "install pyobjc-framework-Quartz"
        ) from exc
    options = Quartz.kCGWindowListOptionOnScreenOnly | Quartz.kCGWindowListExcludeDesktopElements
    for info in Quartz.CGWindowListCopyWindowInfo(options, Quartz.kCGNullWindowID) or ():
        if info.get("kCGWindowLayer", -1) != 0:
            continue
        bounds = info.get("kCGWindowBounds") or {}
        pid = info.get("kCGWindowOwnerPID")
        return WindowInfo(
            title=_clip_title(str(info.get("kCGWindowName") or "")),
            geometry=Geometry(
                int(bounds.get("X", 0)),
                int(bounds.get("Y", 0)),
                int(bounds.get("Width", 0)),
                int(bounds.get("Height", 0)),
            ),
            application=info.get("kCGWindowOwnerName"),
            pid=int(pid) if pid else None,
            process=process_name(int(pid)) if pid else None,
            window_id=str(info.get("kCGWindowNumber")),
            found_by="CGWindowListCopyWindowInfo (frontmost normal window)",
            pid_source="kCGWindowOwnerPID",
        )
    raise ToolError(NO_ACTIVE_WINDOW)
