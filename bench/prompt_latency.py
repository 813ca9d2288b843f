"""From Enter on a direct action to the permission dialog on screen, against a bare dialog.

    python -m bench.prompt_latency [--runs 20] [--wm openbox|evilwm] [--cold] [--json]

A real X server (Xvfb, tests/support/xvfb.py) with a real window manager, Qt on its xcb
platform, a qasync loop, and the real chat window over the real QtSession and Session in a
scratch home, with the GuiPrompter that the app uses and the scripted OpenAI server on 127.0.0.1
as the model. Each run types a direct action ("list files in <folder>", a file-read question)
into the chat's input and presses Enter (a Qt key event on the input), and measures until the
permission dialog's window is exposed (the X server mapped it, the window manager having
reparented it): what a person sees as "on screen". It then waits until Allow arms (which must
be 0.8 s after that exposure, not after show()) and denies.

The baseline, interleaved run by run with the real one: the same Enter on the same input, which
there shows a bare QDialog (a label; the permission dialog's window flags: on top, a title and
a close button; not activating) at once; Enter → its exposure is what Qt and the window system
cost by themselves. The ratio of the medians is the figure that compares across machines; the
absolute figures depend on this shared machine's load.

Where the time goes, each run (medians reported), from timestamps taken by wrapping the parts
in this process: Enter → the chat's submit; → the router starts (on the turn's worker thread);
the router; → the permission gate asks (policy, executor, runner); → the UI thread receives it
(an event posted ahead of the turn's earlier reports; the dialog is shown in its handler); →
`open_question`; construction (none when the app had a dialog made ready,
`GuiPrompter.prepare`); filling in the question; → show(); → the window exposed (map, window
manager); → the first paint; and, apart, Enter → the person's message drawn in the chat. Model
requests to the local server before the dialog are counted (a direct action should need none).

The first question after start is reported on its own (one run): before it, the app warms the
dialog up when idle and keeps one made ready from then on (`GuiPrompter.prepare`), as the bench
does unless `--cold` (then every dialog is built for its question, as before that).

A benchmark reports figures; it asserts nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.machine import machine_details

# The stages, in order, between which the time is reported.
STAGES = (
    ("enter", "submit", "key event → chat submit"),
    ("submit", "route_start", "→ router starts (worker thread)"),
    ("route_start", "route_end", "router"),
    ("route_end", "gate", "→ gate asks (policy, executor, runner)"),
    ("gate", "ui_receives", "→ the UI thread receives it (posted event)"),
    ("ui_receives", "open", "→ open_question"),
    ("open", "bind_start", "construction (none when one was made ready)"),
    ("bind_start", "bind_end", "filling in the question"),
    ("bind_end", "show", "→ show() (sizing to the text)"),
    ("show", "show_event", "show() → showEvent (layout; polish, native window if new)"),
    ("show_event", "show_event_end", "showEvent"),
    ("show_event_end", "exposed", "→ window exposed (map, window manager)"),
    ("exposed", "painted", "exposed → first paint"),
)


class Marks:
    """perf_counter timestamps of the current run, first occurrence of each name wins."""

    def __init__(self) -> None:
        self.at: dict[str, float] = {}
        self.model_requests: list[float] = []

    def mark(self, name: str) -> None:
        self.at.setdefault(name, time.perf_counter())

    def reset(self) -> None:
        self.at = {}
        self.model_requests = []


def _wrap(owner: Any, name: str, before: str | None, after: str | None, marks: Marks) -> None:
    real = getattr(owner, name)

    @functools.wraps(real)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        if before:
            marks.mark(before)
        try:
            return real(*args, **kwargs)
        finally:
            if after:
                marks.mark(after)

    setattr(owner, name, wrapped)


def _instrument(marks: Marks) -> None:
    import app.permission_dialog as dialog_module
    from app.chat import ChatWindow
    from app.permission_prompt import GuiPrompter
    from broker import permissions
    from broker.session import Session

    _wrap(ChatWindow, "submit", "submit", None, marks)
    _wrap(ChatWindow, "_show_message", "message", None, marks)
    _wrap(GuiPrompter, "_enqueue", "ui_receives", None, marks)
    _wrap(Session, "route", "route_start", "route_end", marks)
    # The gate calls `pose` by its module's global name.
    _wrap(permissions, "pose", "gate", None, marks)
    # The prompter imports `open_question` from the module at each question.
    _wrap(dialog_module, "open_question", "open", None, marks)
    _wrap(dialog_module.PermissionDialog, "bind", "bind_start", "bind_end", marks)
    _wrap(dialog_module.PermissionDialog, "_arm", "armed", None, marks)
    _wrap(dialog_module.PermissionDialog, "showEvent", "show_event", "show_event_end", marks)
    # The app calls show() from Python (`open_question`): the wrapper on the class is called.
    _wrap(dialog_module.PermissionDialog, "show", "show", None, marks)


def _exposure_watch(marks: Marks) -> Any:
    """Marks the first expose and paint of the dialogs it follows. A filter on those two
    objects only: one on the whole application ran for thousands of events per run and cost
    the measured path several milliseconds itself."""
    from PySide6.QtCore import QEvent, QObject
    from PySide6.QtGui import QWindow

    class Watch(QObject):
        def follow(self, dialog: Any) -> None:
            window = dialog.windowHandle()
            if window is not None:
                window.installEventFilter(self)
            dialog.installEventFilter(self)

        def eventFilter(self, watched: QObject, event: QEvent) -> bool:
            kind = event.type()
            if kind == QEvent.Type.Expose:
                if isinstance(watched, QWindow) and watched.isExposed():
                    marks.mark("exposed")
            elif kind == QEvent.Type.Paint:
                marks.mark("painted")
            return False

    return Watch()


async def _until(done: Callable[[], object], seconds: float = 20.0) -> None:
    deadline = time.monotonic() + seconds
    while not done():
        if time.monotonic() > deadline:
            raise TimeoutError("the benchmark waited too long")
        await asyncio.sleep(0.002)


async def _measure(scratch: Path, runs: int, prepare: bool) -> dict[str, Any]:
    from PySide6.QtCore import QEvent, QObject, Qt
    from PySide6.QtTest import QTest
    from PySide6.QtWidgets import QApplication

    from app.chat import ChatWindow
    from app.permission_dialog import PermissionDialog
    from app.permission_prompt import GuiPrompter
    from app.qt_session import QtSession
    from broker.llm.openai_client import OpenAIChatModel
    from broker.session import Session
    from broker.settings import Settings
    from core.clock import SystemClock
    from tests.support.openai_server import ScriptedOpenAIServer, Text

    marks = Marks()
    _instrument(marks)
    app = QApplication.instance()
    assert isinstance(app, QApplication)
    watch = _exposure_watch(marks)
    real_show_event = PermissionDialog.showEvent

    def following(dialog: Any, event: Any) -> None:
        real_show_event(dialog, event)
        watch.follow(dialog)  # the window handle exists from show() on

    setattr(PermissionDialog, "showEvent", following)  # noqa: B010 - a bench's probe

    def answer(_request: dict[str, Any]) -> Text:
        marks.model_requests.append(time.perf_counter())
        return Text("You said no, so I did not list them.")

    baseline_mode = False
    bare: list[Any] = []

    class BareOnEnter(QObject):
        """In a baseline run, Enter on the input shows a bare dialog at once."""

        def eventFilter(self, watched: QObject, event: QEvent) -> bool:
            if not baseline_mode or event.type() != QEvent.Type.KeyPress:
                return False
            dialog = _bare_dialog()()
            dialog.create()  # as show() would, so that its window can be followed from before
            watch.follow(dialog)
            dialog.show()
            bare.append(dialog)
            return True

    user = scratch / "user"
    docs = user / "Documents"
    docs.mkdir(parents=True)
    server = ScriptedOpenAIServer([answer], repeat_last=True).start()
    settings = Settings()
    settings.memory.extract = False
    gui = GuiPrompter()
    session = Session(home=scratch / "home", settings=settings, clock=SystemClock(), prompter=gui)
    model = OpenAIChatModel(server.base_url, model="bench")
    session.use_model(model)
    assistant = QtSession(session)
    chat = ChatWindow(assistant, lambda: None)
    chat.resize(900, 650)
    chat.move(40, 40)
    chat.show()
    chat.activateWindow()
    if prepare:  # as the app does once it is idle after start-up
        gui.prepare()
    await asyncio.sleep(0.5)
    on_enter = BareOnEnter()
    chat.input.installEventFilter(on_enter)
    real: list[dict[str, float]] = []
    first: dict[str, float] = {}
    baseline: list[dict[str, float]] = []
    model_calls: list[int] = []
    arm_gaps: list[float] = []
    try:
        for index in range(runs + 1):  # the first pair warms imports, fonts and caches
            for mode in ("baseline", "real") if index % 2 else ("real", "baseline"):
                folder = docs / f"run-{index}-{mode}"
                folder.mkdir()
                (folder / "notes.txt").write_text("hello\n")
                chat.input.setPlainText(f"list files in {folder}")
                await asyncio.sleep(0.05)
                marks.reset()
                baseline_mode = mode == "baseline"
                marks.mark("enter")
                QTest.keyClick(chat.input, Qt.Key.Key_Return)
                await _until(lambda: "painted" in marks.at and "exposed" in marks.at)
                at = dict(marks.at)
                if baseline_mode:
                    baseline_mode = False
                    bare.pop().close()
                    chat.input.clear()
                    if index:
                        baseline.append(at)
                    continue
                [dialog] = [
                    w
                    for w in QApplication.topLevelWidgets()
                    if isinstance(w, PermissionDialog) and w.isVisible()
                ]
                await _until(functools.partial(_armed, dialog))
                at["armed"] = marks.at["armed"]
                if "message" in marks.at:  # drawn a moment after Enter (chat.MESSAGE_MS)
                    at["message"] = marks.at["message"]
                requests = sum(1 for t in marks.model_requests if t < at["exposed"])
                dialog.deny_button.click()
                await _until(lambda: not assistant.busy)
                if index:
                    real.append(at)
                    model_calls.append(requests)
                    arm_gaps.append(at["armed"] - at["exposed"])
                else:
                    first = at
                await asyncio.sleep(0.1)
    finally:
        chat.input.removeEventFilter(on_enter)
        setattr(PermissionDialog, "showEvent", real_show_event)  # noqa: B010
        gui.cancel_all()
        chat.close()
        assistant.close()
        model.close()
        server.stop()
    report = _report(runs, real, baseline, model_calls, arm_gaps)
    report["first_question"] = {
        "enter_to_exposed_ms": _ms(first["exposed"] - first["enter"]),
        "construction_ms": _ms(first["bind_end"] - first["open"]),
        "show_to_exposed_ms": _ms(first["exposed"] - first["show"]),
    }
    return report


@functools.cache
def _bare_dialog() -> type[Any]:
    """The baseline's class (defined once Qt is importable, after the display is chosen)."""
    from PySide6.QtCore import Qt
    from PySide6.QtWidgets import QDialog, QLabel, QVBoxLayout

    class Bare(QDialog):
        """The baseline: a dialog with one line of text, with the permission dialog's window
        flags (on top, a title and a close button), shown without activation."""

        def __init__(self) -> None:
            super().__init__()
            self.setWindowTitle("Baseline")
            self.setWindowFlags(
                Qt.WindowType.Dialog
                | Qt.WindowType.WindowStaysOnTopHint
                | Qt.WindowType.WindowTitleHint
                | Qt.WindowType.WindowCloseButtonHint
            )
            self.setAttribute(Qt.WidgetAttribute.WA_ShowWithoutActivating, True)
            QVBoxLayout(self).addWidget(QLabel("A bare dialog, for comparison."))

    return Bare


def _armed(dialog: Any) -> bool:
    return bool(dialog.armed)


def _percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def _ms(value: float) -> float:
    return round(value * 1000, 1)


def _report(
    runs: int,
    real: list[dict[str, float]],
    baseline: list[dict[str, float]],
    model_calls: list[int],
    arm_gaps: list[float],
) -> dict[str, Any]:
    total = [r["exposed"] - r["enter"] for r in real]
    bare = [r["exposed"] - r["enter"] for r in baseline]
    # The dialog's own part, without the turn before it: the question reaching the UI thread →
    # exposed (construction, polish, the window manager's map), against the same bare dialog.
    part = [r["exposed"] - r["ui_receives"] for r in real]
    stages = {}
    for start, end, words in STAGES:
        spans = [r[end] - r[start] for r in real if start in r and end in r]
        if spans:
            stages[words] = {
                "p50_ms": _ms(statistics.median(spans)),
                "p90_ms": _ms(_percentile(spans, 0.9)),
            }
    return {
        "machine": machine_details(),
        "runs": runs,
        "dialog_ms": {"p50": _ms(statistics.median(total)), "p90": _ms(_percentile(total, 0.9))},
        "bare_ms": {"p50": _ms(statistics.median(bare)), "p90": _ms(_percentile(bare, 0.9))},
        "ratio_p50": round(statistics.median(total) / statistics.median(bare), 2),
        "dialog_part_ms": {"p50": _ms(statistics.median(part)), "p90": _ms(_percentile(part, 0.9))},
        "dialog_part_ratio_p50": round(statistics.median(part) / statistics.median(bare), 2),
        "to_first_paint_ms": _ms(statistics.median(r["painted"] - r["enter"] for r in real)),
        "to_message_ms": _ms(
            statistics.median(r["message"] - r["enter"] for r in real if "message" in r)
        ),
        "stages": stages,
        "model_requests_before_dialog": sorted(set(model_calls)),
        "armed_after_exposed_ms": {
            "min": _ms(min(arm_gaps)),
            "p50": _ms(statistics.median(arm_gaps)),
        },
    }


def render(report: dict[str, Any]) -> str:
    m = report["machine"]
    dialog, bare, cold = report["dialog_ms"], report["bare_ms"], report["first_question"]
    part = report["dialog_part_ms"]
    lines = [
        f"machine: {m.get('cpu')} ({m.get('nproc')} cores), {m.get('ram')}, "
        f"load {m.get('load_average')}, {m.get('date')}",
        f"runs: {report['runs']} (each a permission dialog and a bare dialog, interleaved)",
        "",
        f"{'Enter → on screen':<46}{'p50 ms':>9}{'p90 ms':>9}",
        f"{'permission dialog':<46}{dialog['p50']:>9.1f}{dialog['p90']:>9.1f}",
        f"{'bare QDialog (baseline)':<46}{bare['p50']:>9.1f}{bare['p90']:>9.1f}",
        f"ratio (p50): {report['ratio_p50']:.2f}×; to the dialog's first paint: "
        f"{report['to_first_paint_ms']:.1f} ms; to the person's message drawn in the chat: "
        f"{report['to_message_ms']:.1f} ms",
        f"{'the dialog alone (question received → exposed)':<46}"
        f"{part['p50']:>9.1f}{part['p90']:>9.1f}  ({report['dialog_part_ratio_p50']:.2f}× bare)",
        "the first question after start (one run, not in the figures above): "
        f"{cold['enter_to_exposed_ms']:.1f} ms, of which construction and filling in "
        f"{cold['construction_ms']:.1f} ms and show() → exposed "
        f"{cold['show_to_exposed_ms']:.1f} ms",
        "",
        "where the time goes (permission dialog):",
    ]
    for words, row in report["stages"].items():
        lines.append(f"  {words:<48}{row['p50_ms']:>9.1f}{row['p90_ms']:>9.1f}")
    gaps = report["armed_after_exposed_ms"]
    lines += [
        "",
        f"model requests before the dialog: {report['model_requests_before_dialog']}",
        f"Allow armed after exposure: min {gaps['min']:.1f} ms, p50 {gaps['p50']:.1f} ms",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--wm", choices=("openbox", "evilwm"), default="openbox")
    parser.add_argument(
        "--cold", action="store_true", help="skip the app's warm-up of the dialog before the first"
    )
    parser.add_argument("--json", action="store_true")
    options = parser.parse_args(argv)
    from tests.support.xvfb import running_xvfb

    # Everything under one scratch folder, HOME too, before Qt starts (its caches follow HOME).
    with (
        tempfile.TemporaryDirectory(prefix="chamberlain-bench-") as tmp,
        running_xvfb(1280, 800) as server,
    ):
        scratch = Path(tmp)
        (scratch / "user").mkdir()
        os.environ["HOME"] = str(scratch / "user")
        for name in ("XDG_CACHE_HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME"):
            os.environ.pop(name, None)
        runtime = scratch / "runtime"
        runtime.mkdir(mode=0o700)
        os.environ["XDG_RUNTIME_DIR"] = str(runtime)
        server.start_window_manager(openbox=options.wm == "openbox")
        os.environ["DISPLAY"] = server.display
        os.environ.pop("WAYLAND_DISPLAY", None)
        os.environ["QT_QPA_PLATFORM"] = "xcb"
        os.environ["PYTHON_KEYRING_BACKEND"] = "keyring.backends.fail.Keyring"
        import qasync
        from PySide6.QtWidgets import QApplication

        app = QApplication.instance() or QApplication(["bench-prompt-latency"])
        assert isinstance(app, QApplication)
        app.setQuitOnLastWindowClosed(False)
        loop = qasync.QEventLoop(app)
        asyncio.set_event_loop(loop)
        with loop:
            report = loop.run_until_complete(_measure(scratch, options.runs, not options.cold))
        report["prepared"] = not options.cold
        report["window_manager"] = options.wm
    print(json.dumps(report, indent=2) if options.json else render(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
