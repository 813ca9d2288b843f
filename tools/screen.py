"""The screen tools: capture the screen (all monitors, one monitor or the active window) with OCR,
and say which window is active.

Capture uses mss on X11, Windows and macOS, and on Wayland the desktop portal or grim
(tools/wayland.py: a Wayland session is never read through XWayland); text comes from the PP-OCR
models the rapidocr-onnxruntime wheel ships, run by tools/ocr.py (it never downloads anything).
Loading the OCR engine takes about half a second, so it is made once, on first use, and shared;
it runs on the runner's worker thread, never on the caller's. Screenshots are kept as PNG files
(0600) in a folder only the user can open (0700), and files older than the retention setting
are deleted on every capture.

Both tools name the display they read as their target (`display::99`, `display:wayland-0`,
`display:main`), so a grant can be scoped to one display. They must never capture or read
anything when no display can be found (a clear error instead of a traceback), never log or
audit OCR text or pixels (sizes, timings and counts only), never delete a file in the screenshot
folder that they did not name, and never put the image itself into the data sent to the model
as text."""

from __future__ import annotations

import base64
import io
import logging
import os
import re
import stat
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any, Literal, get_args

from PIL import Image
from pydantic import Field

from tools import telemetry, wayland
from tools.arguments import ToolArguments
from tools.manual import (
    Capability,
    HealthCheck,
    Prepared,
    RequestWords,
    Tool,
    ToolError,
    ToolManual,
    ToolResult,
    typed_tool,
)
from tools.registry import ToolConfig
from tools.windows import (
    Geometry,
    WindowInfo,
    macos_active_window,
    win32_active_window,
    x11_active_window,
    x11_refused_message,
)

log = logging.getLogger("chamberlain.tools.screen")

Target = Literal["all", "monitor", "active_window"]
TARGETS: tuple[str, ...] = get_args(Target)
# OCR lines the engine is less sure of than this are left out.
OCR_MIN_CONFIDENCE = 0.6
MAX_OCR_LINES = 400
MAX_OCR_CHARS = 16_000
# The text detector's input: the short side is scaled to at least this (tools/ocr.py's
# DET_MIN_SIDE; not imported here, as tools/ocr.py loads NumPy and every start builds this module).
OCR_MIN_SIDE = 736
# An attached image is scaled down to at most this width (models downscale larger ones anyway).
ATTACH_MAX_WIDTH = 1280
# zlib level for saved screenshots: on a text desktop, level 6 makes files half the size of
# level 1's for about 20 ms more at 1920×1080 (bench/screen_capture.py), next to seconds of OCR.
PNG_COMPRESS_LEVEL = 6
SCREENSHOT_PREFIX = "screenshot-"
_SCREENSHOT_NAME = re.compile(r"^screenshot-\d{8}-\d{6}-\d{6}(?:-[a-z0-9]+)?(?:-\d+)?\.png$")
_DISPLAY_NAME = re.compile(r"^(?P<host>[^\s]*):(?P<number>\d+)(?:\.\d+)?$")

NO_DISPLAY_CAPTURE = "Screen capture needs a display; none was found ($DISPLAY is unset)"
NO_DISPLAY_WINDOW = "Reading the active window needs a display; none was found ($DISPLAY is unset)"

Platform = Literal["x11", "wayland", "windows", "macos"]


# --- which display -------------------------------------------------------------------------------


def normalise_display(raw: str) -> str:
    """':99.0' -> ':99', 'localhost:10.0' -> 'localhost:10': the display, without the screen."""
    match = _DISPLAY_NAME.match(raw.strip())
    if match is None:
        raise ToolError(f"$DISPLAY is set to {raw[:100]!r}, which is not an X display name")
    return f"{match['host']}:{int(match['number'])}"


@dataclass(frozen=True)
class ScreenSession:
    """The display the screen tools would read, as found in the environment."""

    platform: Platform
    # What the platform's API is given: $DISPLAY as it is set on X11, the compositor's socket
    # name on Wayland, "main" elsewhere.
    name: str
    # The display without its screen number: what a grant's scope names.
    scope_name: str

    @property
    def target(self) -> str:
        return f"display:{self.scope_name}"


def find_screen(
    *,
    missing: str = NO_DISPLAY_CAPTURE,
    environ: Mapping[str, str] | None = None,
    platform: str | None = None,
) -> ScreenSession:
    """The display to use, or a ToolError that says why there is none. A Wayland session is
    read as Wayland even where $DISPLAY names its XWayland server (which sees only X11 windows)."""
    env = os.environ if environ is None else environ
    system = sys.platform if platform is None else platform
    if system == "win32":
        return ScreenSession("windows", "main", "main")
    if system == "darwin":
        return ScreenSession("macos", "main", "main")
    if wayland.is_wayland(env):
        name = wayland.wayland_name(env)
        return ScreenSession("wayland", name, name)
    raw = env.get("DISPLAY", "").strip()
    if not raw:
        raise ToolError(missing)
    return ScreenSession("x11", raw, normalise_display(raw))


# --- capture -------------------------------------------------------------------------------------


@dataclass
class Capture:
    image: Image.Image
    region: Geometry
    monitors: list[dict[str, Any]]
    monitor: dict[str, Any] | None = None
    window: WindowInfo | None = None
    # How a Wayland desktop gave the pixels ("xdg-desktop-portal", "grim"); empty elsewhere.
    method: str = ""
    # Why the ways tried before it gave nothing (Wayland: "no session bus ...").
    passed_over: tuple[str, ...] = ()


def _monitor_dict(index: int, raw: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "index": index,
        "left": int(raw["left"]),
        "top": int(raw["top"]),
        "width": int(raw["width"]),
        "height": int(raw["height"]),
        "primary": bool(raw.get("is_primary", index == 1)),
    }


def active_window(session: ScreenSession) -> WindowInfo:
    if session.platform == "windows":
        return win32_active_window()
    if session.platform == "macos":
        return macos_active_window()
    if session.platform == "wayland":
        return wayland.active_window(os.environ)
    return x11_active_window(session.name)


def _clip(region: Geometry, bounds: Geometry) -> Geometry | None:
    left, top = max(region.left, bounds.left), max(region.top, bounds.top)
    right = min(region.left + region.width, bounds.left + bounds.width)
    bottom = min(region.top + region.height, bounds.top + bounds.height)
    if right <= left or bottom <= top:
        return None
    return Geometry(left, top, right - left, bottom - top)


def grab(session: ScreenSession, target: str, monitor: int | None = None) -> Capture:
    """Capture `target` ("all", "monitor" or "active_window") on the session's display."""
    if session.platform == "wayland":
        return _grab_wayland(target, monitor)
    import mss

    window = active_window(session) if target == "active_window" else None
    kwargs: dict[str, Any] = {"display": session.name} if session.platform == "x11" else {}
    try:
        with mss.MSS(**kwargs) as shooter:
            raw_monitors = shooter.monitors
            monitors = [_monitor_dict(i, m) for i, m in enumerate(raw_monitors) if i > 0]
            everything = raw_monitors[0]
            bounds = Geometry(
                everything["left"], everything["top"], everything["width"], everything["height"]
            )
            region, chosen = _region(target, monitors, monitor, window, bounds)
            shot = shooter.grab(region.as_dict())
    except mss.ScreenShotError as exc:
        if "connect" in str(exc).lower():
            raise ToolError(x11_refused_message(session.name)) from exc
        raise ToolError(f"Screen capture failed: {exc}") from exc
    # BGRA from the X server (and GDI, and Quartz) straight into an RGB image, one pass.
    image = Image.frombuffer("RGB", shot.size, shot.bgra, "raw", "BGRX", 0, 1)
    return Capture(image, region, monitors, chosen, window)


def _region(
    target: str,
    monitors: list[dict[str, Any]],
    monitor: int | None,
    window: WindowInfo | None,
    bounds: Geometry,
) -> tuple[Geometry, dict[str, Any] | None]:
    """What to capture of `bounds` (the whole desktop): one monitor, the active window's frame,
    or all; and the monitor chosen, if one was."""
    if target == "monitor":
        chosen = _pick_monitor(monitors, monitor)
        return Geometry(chosen["left"], chosen["top"], chosen["width"], chosen["height"]), chosen
    if window is not None:
        clipped = _clip(window.frame or window.geometry, bounds)
        if clipped is None:
            raise ToolError(
                f"The active window ({window.title[:80]!r}) is not on the screen "
                "(minimised or moved off it); nothing to capture"
            )
        return clipped, None
    return bounds, None


def _pick_monitor(monitors: list[dict[str, Any]], monitor: int | None) -> dict[str, Any]:
    index = 1 if monitor is None else monitor
    if not 1 <= index <= len(monitors):
        count = len(monitors)
        raise ToolError(
            f"There is no monitor {index}: this display has {count} "
            f"monitor{'s' if count != 1 else ''} (numbered from 1)"
        )
    return monitors[index - 1]


def _grab_wayland(target: str, monitor: int | None) -> Capture:
    """The whole desktop from the portal (or grim), cut to a monitor or the active window with
    the compositor's layout where it gives one (logical pixels, scaled to the image's)."""
    env = os.environ
    window = wayland.active_window(env) if target == "active_window" else None
    layout = wayland.outputs(env)
    shot = wayland.wayland_screenshot(env)
    try:
        with Image.open(io.BytesIO(shot.png)) as raw:
            image = raw.convert("RGB")
    except (OSError, ValueError, Image.DecompressionBombError) as exc:
        raise ToolError(
            f"The screenshot from {shot.method} is not a readable image: {exc}"
        ) from exc
    if layout:
        left = min(g.left for g in layout)
        top = min(g.top for g in layout)
        right = max(g.left + g.width for g in layout)
        bottom = max(g.top + g.height for g in layout)
        bounds = Geometry(left, top, right - left, bottom - top)
    else:
        bounds = Geometry(0, 0, image.width, image.height)
        layout = [bounds]
    scale = image.width / bounds.width if bounds.width else 1.0
    monitors = [
        _monitor_dict(i, {"left": g.left, "top": g.top, "width": g.width, "height": g.height})
        for i, g in enumerate(layout, start=1)
    ]
    region, chosen = _region(target, monitors, monitor, window, bounds)
    if region != bounds:
        box = (
            round((region.left - bounds.left) * scale),
            round((region.top - bounds.top) * scale),
            round((region.left - bounds.left + region.width) * scale),
            round((region.top - bounds.top + region.height) * scale),
        )
        image = image.crop(box)
    return Capture(image, region, monitors, chosen, window, shot.method, shot.passed_over)


# --- OCR -----------------------------------------------------------------------------------------


@dataclass
class OcrLine:
    text: str
    confidence: float
    # left, top, width, height in screen coordinates.
    box: tuple[int, int, int, int]


@dataclass
class OcrResult:
    lines: list[OcrLine]
    seconds: float
    # Set when this call had to load the engine first: how long that took.
    engine_load_s: float | None = None


class OcrEngine:
    """The OCR reader (tools/ocr.py), loaded on first use and then shared.

    One recognition at a time: two images in parallel on a small machine would only make both
    slower.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._engine: Any = None
        self.load_seconds: float | None = None

    @property
    def loaded(self) -> bool:
        return self._engine is not None

    def _load(self) -> float | None:
        if self._engine is not None:
            return None
        start = time.perf_counter()
        # onnxruntime reads its telemetry switch once, when it first sets itself up: here at the
        # latest, whoever imported this module (tools/telemetry.py).
        telemetry.switch_off()
        try:
            from tools.ocr import Reader
        except ImportError as exc:
            raise ToolError(f"OCR is not available: onnxruntime cannot be loaded ({exc})") from exc
        telemetry.suppress_onnxruntime_events()
        try:
            self._engine = Reader()
        except (OSError, RuntimeError, ValueError, ImportError) as exc:
            raise ToolError(f"OCR is not available: its models failed to load ({exc})") from exc
        self.load_seconds = time.perf_counter() - start
        log.info("OCR engine loaded in %.2f s", self.load_seconds)
        return self.load_seconds

    def load(self) -> float | None:
        """Load the engine now; the seconds it took, or None if it was already loaded."""
        with self._lock:
            return self._load()

    def read(self, image: Image.Image, origin: tuple[int, int] = (0, 0)) -> OcrResult:
        with self._lock:
            loaded_now = self._load()
            start = time.perf_counter()
            found = self._engine.read(_pad_small(image))
            seconds = time.perf_counter() - start
        lines: list[OcrLine] = []
        for box in found:
            confidence = box.confidence
            text = box.text
            if confidence < OCR_MIN_CONFIDENCE or not text.strip():
                continue
            xs = [x for x, _y in box.corners]
            ys = [y for _x, y in box.corners]
            left, top = round(min(xs)) + origin[0], round(min(ys)) + origin[1]
            box = (left, top, round(max(xs) - min(xs)), round(max(ys) - min(ys)))
            lines.append(OcrLine(str(text).strip(), confidence, box))
        return OcrResult(reading_order(lines), seconds, loaded_now)


OCR = OcrEngine()


def _pad_small(image: Image.Image) -> Image.Image:
    """A small capture (one window) on a canvas of at least the detector's input size.

    The text detector scales an image up until its short side is OCR_MIN_SIDE pixels; a 100-pixel
    high window scaled 7× splits its words apart. Padding with the corner's colour instead keeps
    the text at its real size and the boxes at the same coordinates.
    """
    if image.width >= OCR_MIN_SIDE and image.height >= OCR_MIN_SIDE:
        return image
    size = (max(image.width, OCR_MIN_SIDE), max(image.height, OCR_MIN_SIDE))
    canvas = Image.new("RGB", size, image.getpixel((0, 0)))
    canvas.paste(image, (0, 0))
    return canvas


def reading_order(lines: list[OcrLine]) -> list[OcrLine]:
    """Top to bottom, and left to right within a row.

    Boxes whose vertical extents overlap by at least half the smaller height share a row, so a
    slightly taller word or a box a few pixels lower does not jump ahead of its neighbours.
    """
    rows: list[tuple[float, float, list[OcrLine]]] = []
    for line in sorted(lines, key=lambda item: (item.box[1] + item.box[3] / 2, item.box[0])):
        top, bottom = line.box[1], line.box[1] + line.box[3]
        for index, (row_top, row_bottom, members) in enumerate(rows):
            overlap = min(bottom, row_bottom) - max(top, row_top)
            if overlap >= 0.5 * min(line.box[3], row_bottom - row_top):
                members.append(line)
                rows[index] = (min(top, row_top), max(bottom, row_bottom), members)
                break
        else:
            rows.append((top, bottom, [line]))
    ordered: list[OcrLine] = []
    for _, _, members in sorted(rows, key=lambda row: row[0]):
        ordered.extend(sorted(members, key=lambda item: item.box[0]))
    return ordered


def ocr_text(lines: list[OcrLine]) -> str:
    """Rows on separate lines; separate boxes on one row kept apart by two spaces."""
    out: list[str] = []
    row: list[OcrLine] = []
    for line in lines:
        if row and not _same_row(row[-1], line):
            out.append("  ".join(item.text for item in row))
            row = []
        row.append(line)
    if row:
        out.append("  ".join(item.text for item in row))
    return "\n".join(out)


def _same_row(a: OcrLine, b: OcrLine) -> bool:
    overlap = min(a.box[1] + a.box[3], b.box[1] + b.box[3]) - max(a.box[1], b.box[1])
    return overlap >= 0.5 * min(a.box[3], b.box[3]) and b.box[0] >= a.box[0]


# --- where screenshots are kept ------------------------------------------------------------------


class ScreenshotFolder:
    """The folder screenshots are written to, private to the user, pruned on every capture."""

    def __init__(
        self, directory: Path | None, retention_days: float, clock: Callable[[], float]
    ) -> None:
        self._directory = directory
        self.retention_days = max(0.0, retention_days)
        self._clock = clock

    @property
    def path(self) -> Path:
        if self._directory is not None:
            return self._directory
        uid = os.getuid() if hasattr(os, "getuid") else os.getpid()
        return Path(tempfile.gettempdir()) / f"chamberlain-screenshots-{uid}"

    def ensure(self) -> Path:
        """The folder, created 0700; refused if it is a symlink or someone else's."""
        path = self.path
        try:
            path.mkdir(mode=0o700, parents=True, exist_ok=True)
            st = os.lstat(path)
        except OSError as exc:
            raise ToolError(f"Cannot create the screenshot folder {path}: {exc}") from exc
        if stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode):
            raise ToolError(f"The screenshot folder {path} is not a folder (or is a symlink)")
        if hasattr(os, "getuid"):
            if st.st_uid != os.getuid():
                raise ToolError(f"The screenshot folder {path} belongs to another user")
            if stat.S_IMODE(st.st_mode) & 0o077:
                try:
                    os.chmod(path, 0o700)
                except OSError as exc:
                    raise ToolError(f"Cannot make {path} private to this user: {exc}") from exc
        return path

    def save(self, png: bytes, label: str, when: float) -> Path:
        folder = self.ensure()
        now = datetime.fromtimestamp(when)
        stem = f"{SCREENSHOT_PREFIX}{now:%Y%m%d-%H%M%S-%f}-{label}"
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL
        flags |= getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
        flags |= getattr(os, "O_BINARY", 0)
        for attempt in range(100):
            path = folder / (f"{stem}.png" if attempt == 0 else f"{stem}-{attempt}.png")
            try:
                fd = os.open(path, flags, 0o600)
            except FileExistsError:
                continue
            except OSError as exc:
                raise ToolError(f"Cannot save the screenshot in {folder}: {exc}") from exc
            try:
                if hasattr(os, "fchmod"):
                    os.fchmod(fd, 0o600)  # exactly 0600, whatever the umask
                view = memoryview(png)
                while view:
                    view = view[os.write(fd, view) :]
            except OSError as exc:
                os.close(fd)
                path.unlink(missing_ok=True)
                raise ToolError(f"Cannot save the screenshot in {folder}: {exc}") from exc
            os.close(fd)
            return path
        raise ToolError(f"Cannot find a free screenshot name in {folder}")

    def prune(self, keep: Path | None = None) -> int:
        """Delete our screenshots older than the retention period; how many went."""
        folder = self.path
        cutoff = self._clock() - self.retention_days * 86400
        removed = 0
        try:
            entries = list(os.scandir(folder))
        except FileNotFoundError:
            return 0
        except OSError as exc:
            log.warning("cannot list the screenshot folder for pruning: %s", exc.strerror)
            return 0
        for entry in entries:
            if not _SCREENSHOT_NAME.match(entry.name) or (keep and entry.path == str(keep)):
                continue
            try:
                st = entry.stat(follow_symlinks=False)
                if stat.S_ISREG(st.st_mode) and st.st_mtime < cutoff:
                    os.unlink(entry.path)
                    removed += 1
            except FileNotFoundError:
                continue
            except OSError as exc:
                log.warning("cannot delete an old screenshot: %s", exc.strerror)
        if removed:
            log.debug("deleted %d screenshots older than %g days", removed, self.retention_days)
        return removed


def encode_png(image: Image.Image, level: int = PNG_COMPRESS_LEVEL) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format="PNG", compress_level=level)
    return buffer.getvalue()


def attachment(image: Image.Image, max_width: int = ATTACH_MAX_WIDTH) -> tuple[str, list[int]]:
    """The image as base64 PNG, scaled down to at most `max_width` pixels wide."""
    if image.width > max_width:
        height = max(1, round(image.height * max_width / image.width))
        image = image.resize((max_width, height), Image.Resampling.LANCZOS)
    return base64.b64encode(encode_png(image)).decode("ascii"), [image.width, image.height]


# --- the tools -----------------------------------------------------------------------------------


class ScreenCaptureArguments(ToolArguments):
    target: Target | None = Field(None, description="what to capture (default: all)")
    monitor: Annotated[int, Field(ge=1, le=64)] | None = Field(
        None, description="which monitor, from 1, for target 'monitor' (default 1)"
    )
    ocr: bool = Field(True, description="recognise the text on the screenshot (default true)")


class ActiveWindowArguments(ToolArguments):
    pass


def _arguments(args: ScreenCaptureArguments) -> tuple[str, int | None, bool]:
    target, monitor = args.target, args.monitor
    if target is None:
        target = "monitor" if monitor is not None else "all"
    if monitor is not None and target != "monitor":
        raise ToolError("'monitor' is only used with target 'monitor'")
    return target, monitor, args.ocr


def _label(target: str, capture: Capture) -> str:
    if capture.monitor is not None:
        return f"monitor{capture.monitor['index']}"
    return "window" if target == "active_window" else "all"


def _describe(data: dict[str, Any]) -> str:
    what = {
        "all": "all monitors",
        "monitor": f"monitor {data['monitor']['index'] if data.get('monitor') else ''}".strip(),
        "active_window": "the active window",
    }[data["target"]]
    parts = [f"Screenshot of {what} on display {data['display']}, {data['size']}: {data['path']}"]
    if data.get("window"):
        parts.append(f"Window: {data['window']['title']!r}")
    ocr = data.get("ocr")
    if ocr is None:
        parts.append("Text recognition was not asked for.")
    elif "error" in ocr:
        parts.append(f"Text recognition failed: {ocr['error']}")
    elif ocr["text"]:
        parts.append(f"Text on the screen ({len(ocr['lines'])} lines):\n{ocr['text']}")
    else:
        parts.append("No text was recognised.")
    if data.get("note"):
        parts.append(data["note"])
    return "\n".join(parts)


@dataclass
class _ScreenTools:
    config: ToolConfig
    clock: Callable[[], float] = time.time
    ocr: OcrEngine = field(default_factory=lambda: OCR)

    def __post_init__(self) -> None:
        self.folder = ScreenshotFolder(
            self.config.screenshot_dir, self.config.screenshot_retention_days, self.clock
        )

    # A call is prepared before the grant check: it checks the arguments and reads the
    # environment, and touches nothing else.
    @staticmethod
    def prepare_capture(args: ScreenCaptureArguments) -> Prepared:
        _arguments(args)
        return Prepared.of(args, [find_screen().target], "easy")

    @staticmethod
    def prepare_window(args: ActiveWindowArguments) -> Prepared:
        screen = find_screen(missing=NO_DISPLAY_WINDOW)
        return Prepared.of(args, [screen.target], "easy")

    def capture(self, args: ScreenCaptureArguments, _prepared: Prepared) -> ToolResult:
        target, monitor, want_ocr = _arguments(args)
        session = find_screen()
        started = time.perf_counter()
        capture = grab(session, target, monitor)
        grab_s = time.perf_counter() - started
        taken = self.clock()
        png = encode_png(capture.image)
        path = self.folder.save(png, _label(target, capture), taken)
        deleted = self.folder.prune(keep=path)
        width, height = capture.image.size
        data: dict[str, Any] = {
            "display": session.scope_name,
            "target": target,
            "size": f"{width}×{height}",
            "width": width,
            "height": height,
            "region": capture.region.as_dict(),
            "monitor": capture.monitor,
            "monitors": capture.monitors,
            "path": str(path),
            "bytes": len(png),
            "captured_at": datetime.fromtimestamp(taken).astimezone().isoformat(timespec="seconds"),
        }
        if capture.window is not None:
            data["window"] = capture.window.as_dict()
        truncated = False
        if want_ocr:
            data["ocr"], truncated = self._ocr(capture)
        else:
            data["ocr"] = None
        if deleted:
            data["old_screenshots_deleted"] = deleted
        if capture.method:
            data["captured_by"] = capture.method
        if capture.passed_over:
            data["passed_over"] = list(capture.passed_over)
        meta: dict[str, Any] = {"grab_s": grab_s}
        if self.config.attach_images:
            meta["image_png_b64"], meta["image_size"] = attachment(capture.image)
            meta["image_mime"] = "image/png"
        data["image_attached"] = self.config.attach_images
        log.debug("captured %s %dx%d in %.3f s (%d bytes)", target, width, height, grab_s, len(png))
        return ToolResult(data=data, text=_describe(data), truncated=truncated, meta=meta)

    def _ocr(self, capture: Capture) -> tuple[dict[str, Any], bool]:
        try:
            result = self.ocr.read(capture.image, (capture.region.left, capture.region.top))
        except ToolError as exc:
            return {"error": str(exc)}, False
        lines = result.lines
        truncated = len(lines) > MAX_OCR_LINES
        lines = lines[:MAX_OCR_LINES]
        text = ocr_text(lines)
        if len(text) > MAX_OCR_CHARS:
            text = text[:MAX_OCR_CHARS] + "…"
            truncated = True
        found: dict[str, Any] = {
            "text": text,
            "lines": [
                {"text": line.text, "confidence": round(line.confidence, 3), "box": list(line.box)}
                for line in lines
            ],
            "min_confidence": OCR_MIN_CONFIDENCE,
            "seconds": round(result.seconds, 3),
            "truncated": truncated,
        }
        if result.engine_load_s is not None:
            found["engine_load_s"] = round(result.engine_load_s, 3)
        log.debug("OCR found %d lines in %.2f s", len(lines), result.seconds)
        return found, truncated

    def window(self, _args: ActiveWindowArguments, _prepared: Prepared) -> ToolResult:
        session = find_screen(missing=NO_DISPLAY_WINDOW)
        info = active_window(session)
        data = {"display": session.scope_name, **info.as_dict()}
        g = info.geometry
        who = ", ".join(
            part
            for part in (
                info.application,
                f"process {info.process}" if info.process else None,
                f"pid {info.pid}" if info.pid else None,
            )
            if part
        )
        text = (
            f"The active window is {info.title or '(untitled)'!r}"
            + (f" ({who})" if who else "")
            + f", at {g.left},{g.top}, {g.width}×{g.height}."
        )
        return ToolResult(data=data, text=text)


CAPTURE_MANUAL = ToolManual(
    name="screen_capture",
    description=(
        "Take a screenshot of all monitors, one monitor, or the active window, save it as a "
        "PNG, and return its size, path and the text on it (OCR), in reading order."
    ),
    parameters=ScreenCaptureArguments.parameters(),
    capability=Capability.SCREEN_READ,
    category="screen",
    risk="moderate",
    mutating=False,
    reversibility="easy",
    timeout_s=60.0,
)

WINDOW_MANUAL = ToolManual(
    name="get_active_window",
    description=(
        "Which window is active: its title, application and process, and where it is on the screen."
    ),
    parameters=ActiveWindowArguments.parameters(),
    capability=Capability.SCREEN_READ,
    category="screen",
    risk="safe",
    mutating=False,
    reversibility="easy",
    timeout_s=10.0,
)


def make_screen_tools(
    config: ToolConfig, *, clock: Callable[[], float] = time.time, ocr: OcrEngine | None = None
) -> list[Tool]:
    """screen_capture and get_active_window, built from the user's tool settings."""
    tools = _ScreenTools(config, clock, ocr or OCR)
    return [
        typed_tool(
            CAPTURE_MANUAL,
            ScreenCaptureArguments,
            prepare=tools.prepare_capture,
            run=tools.capture,
            user_scopes_of=_screen_scope,
            health=_screen_health,
        ),
        typed_tool(
            WINDOW_MANUAL,
            ActiveWindowArguments,
            prepare=tools.prepare_window,
            run=tools.window,
        ),
    ]


def _screen_scope(words: RequestWords) -> list[str]:
    """A request to look at the screen names the display it would see."""
    if not words.needs_screen_read:
        return []
    try:
        return [find_screen().target]
    except ToolError:
        return []  # no display: the screen tools say so themselves


def _screen_health() -> list[HealthCheck]:
    """A real capture of the whole screen (not kept), and which way worked."""
    try:
        screen = find_screen()
        started = time.perf_counter()
        capture = grab(screen, "all")
        took = time.perf_counter() - started
    except ToolError as exc:
        return [HealthCheck("screen capture", False, f"{exc}; the CLI works without", False)]
    where = screen.target.removeprefix("display:")
    width, height = capture.image.size
    how = f" through {capture.method}" if capture.method else ""
    detail = f"display {where}{how}: {width}×{height} in {took:.2f} s"
    if capture.passed_over:
        detail += f" (not before it: {'; '.join(capture.passed_over)})"
    if not capture.image.getbbox():  # every pixel black
        detail += " (every pixel black: an empty screen, or one not shown to this app)"
    return [HealthCheck("screen capture", True, detail, False)]
