"""Take the README's screenshots of the real app on a real X server with a real tray host.

Run by scripts/screenshots.sh, which starts Xvfb, a window manager (evilwm) and a tray host
(trayer) and sets DISPLAY. Everything happens in a throwaway home; the model is the test suite's
scripted OpenAI server on 127.0.0.1 (no model is downloaded): its replies are fixed text, or
built from the real tool result it is given (the listing names the files the tool found).

It does what a person would: types the memory passphrase, reads the welcome that the first start
shows (the scripted server found where Ollama listens) and closes it, opens the chat from the
tray, asks "list my documents", answers the permission dialog with "Allow for 5 min", opens the
listing's Result (a Hebrew file name as it is, one hiding ".sh" behind a right-to-left override
escaped), then follows up with "summarise the second one", which reads the file listed second.
Then it opens Permissions (the grant counting down), Memory, Activity and Settings, asks
something long and presses Stop, asks to remember a health fact (the chat's Approve / Edit… /
Reject line), and pastes a long log (shown by its first lines) whose reply has a code block with
Copy. Each picture is cut from a grab of the whole screen. Then, in a second process at
QT_SCALE_FACTOR=1.5 with no model server, the welcome again (the embedded model answers) and the
chat with a fact waiting for consent (`--welcome-only`).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tests.support.openai_server import Turn

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

PASSPHRASE = "screenshots only"
# ~/Documents as the shots find it. Listed in this order, so "the second one" is the plan. One
# name is Hebrew (right to left, shown as it is); one hides ".sh" behind a right-to-left
# override (shown escaped, `report\u202efdp.sh`, so it cannot pass for a PDF).
DOCUMENTS = (
    ("budget-2026.ods", "x"),
    (
        "holiday plan.md",
        "# Lisbon, 12–19 May\n\nFlights booked (TAP, Saturday 08:40). Hotel in Alfama, paid.\n"
        "Still to do: book the Sintra day trip, ask Ana about dinner on Tuesday, buy a "
        "travel adapter.\n",
    ),
    ("notes.txt", "call the bank\n"),
    ("report\u202efdp.sh", "echo hello\n"),
    ("tax return.pdf", "%PDF"),
    ("מתכון לחלה.txt", "קמח, מים, שמרים\n"),
)
SUMMARY = (
    "**holiday plan.md** is your plan for Lisbon, 12–19 May:\n\n"
    "- the flights are booked (TAP, Saturday 08:40) and the hotel in Alfama is paid;\n"
    "- still to do: book the Sintra day trip, ask Ana about dinner on Tuesday, and buy a "
    "travel adapter."
)
LONG_REPLY = (
    "## Choosing a password manager\n\n"
    "Here is how the three you asked about compare. **Bitwarden** is open source and its "
    "free plan syncs across devices; **1Password** has the most polished apps and travel "
    "mode; **KeePassXC** keeps everything in one encrypted file you sync yourself.\n\n"
    + "- a point worth weighing, explained at some length so the reply keeps coming\n"
    * 60
)
# A fact that waits for the person's consent (health is personal), in the chat's own line.
CONSENT = "remember that I take insulin every morning"
# A pasted log and the reply with a command in a code block (chat-code.png).
PASTED_LOG = "my backup script fails, why?\n" + "\n".join(
    f"2026-11-27 09:{n:02d}:14 rsync: [sender] send_files failed to open "
    f'"/home/me/Documents/tax/{n:02d}.pdf": Permission denied (13)'
    for n in range(40)
)
CODE_REPLY = (
    "The files under `Documents/tax` are not readable by the user the backup runs as. "
    "Give yourself read access again, then run the backup once by hand to check:\n\n"
    "```bash\nchmod -R u+rX ~/Documents/tax\n"
    "rsync -avz --delete --exclude '.cache' ~/Documents/ "
    "backup@nas.local:/srv/backups/me/Documents/ --log-file=~/backup.log\n```\n\n"
    "If it still fails, the log file says which file it stopped at."
)


def _environment(scratch: Path) -> None:
    user = scratch / "user"
    (user / "Documents").mkdir(parents=True)
    for name, text in DOCUMENTS:
        (user / "Documents" / name).write_text(text)
    os.environ.update(
        HOME=str(user),
        CHAMBERLAIN_HOME=str(scratch / "chamberlain"),
        XDG_CONFIG_HOME=str(user / ".config"),
        PYTHON_KEYRING_BACKEND="keyring.backends.fail.Keyring",
    )


def _phrased(request: dict[str, Any]) -> Turn:
    """The scripted model's answer from a tool's result, as a model would phrase it: the
    listing's names as the tool gave them, or the summary of the plan it read."""
    from tests.support.openai_server import Text

    shown = str(request["messages"][-1].get("content", ""))
    result = json.loads(shown.partition("\n")[2])
    if "entries" not in result:
        return Text(SUMMARY)
    names = [str(entry["name"]) for entry in result["entries"]]
    listed = "\n".join(f"- `{name}`" for name in names)
    return Text(f"Your **Documents** folder holds {len(names)} files:\n\n{listed}")


async def _until(done: object, seconds: float = 20.0) -> None:
    for _ in range(int(seconds / 0.05)):
        if callable(done) and done():
            return
        await asyncio.sleep(0.05)
    raise TimeoutError(f"timed out waiting for {done}")


def _grab(widget: object, out: Path, margin: int = 12) -> None:
    """Cut `widget`'s frame (with its decorations and a margin) from a grab of the screen."""
    import mss
    import mss.tools
    from PySide6.QtWidgets import QWidget

    assert isinstance(widget, QWidget)
    # The screen is grabbed in device pixels; Qt's geometry is in logical ones (QT_SCALE_FACTOR).
    ratio = widget.devicePixelRatioF()
    rect = widget.frameGeometry()
    x, y = round(rect.x() * ratio), round(rect.y() * ratio)
    w, h = round(rect.width() * ratio), round(rect.height() * ratio)
    with mss.MSS() as screen:
        full = screen.monitors[1]
        left = max(0, x - margin)
        top = max(0, y - margin)
        width = min(full["width"] - left, w + 2 * margin)
        height = min(full["height"] - top, h + 2 * margin)
        shot = screen.grab({"left": left, "top": top, "width": width, "height": height})
        mss.tools.to_png(shot.rgb, shot.size, output=str(out))
    print(f"wrote {out}")


def _close_notices() -> None:
    """Close the tray's notification balloons, as a person clicks their x once read: one that
    lingers over the chat would hide what the shot shows."""
    from PySide6.QtWidgets import QApplication

    for widget in QApplication.topLevelWidgets():
        if widget.metaObject().className() == "QBalloonTip" and widget.isVisible():
            widget.close()


def _grab_region(out: Path, left: int, top: int, width: int, height: int) -> None:
    import mss
    import mss.tools

    with mss.MSS() as screen:
        shot = screen.grab({"left": left, "top": top, "width": width, "height": height})
        mss.tools.to_png(shot.rgb, shot.size, output=str(out))
    print(f"wrote {out}")


async def _type_passphrase() -> None:
    """Answer the memory passphrase dialog once it shows, as a person would."""
    from PySide6.QtWidgets import QApplication

    from app.passphrase import PassphraseDialog

    def shown() -> PassphraseDialog | None:
        for widget in QApplication.topLevelWidgets():
            if isinstance(widget, PassphraseDialog) and widget.isVisible():
                return widget
        return None

    await _until(lambda: shown() is not None)
    dialog = shown()
    assert dialog is not None
    dialog.first.setText(PASSPHRASE)
    dialog.second.setText(PASSPHRASE)
    dialog.ok.click()


async def _welcome(shell: Any, out: Path) -> None:
    """Grab the welcome the first start showed, once it says what the app found; close it."""
    from app.windows.welcome import LOOKING, OPENING

    welcome = shell.windows["welcome"]
    await _until(
        lambda: welcome.model_line.text() != LOOKING and welcome.memory_line.text() != OPENING
    )
    welcome.move(40, 40)
    await asyncio.sleep(0.8)
    _grab(welcome, out)
    welcome.close()


async def _welcome_only(out: Path) -> None:
    """The welcome where no model server answers (the embedded model does), for a 1.5x shot."""
    from app.main import DesktopApp, end_pending_work
    from broker.llm import endpoints
    from tests.support.openai_server import free_port

    endpoints.PROBE_PORTS[:] = [("Ollama", free_port())]
    shell = DesktopApp(Path(os.environ["CHAMBERLAIN_HOME"]))
    try:
        shell.start()
        typing = asyncio.ensure_future(_type_passphrase())
        await shell.load()
        await typing
        scale = os.environ.get("QT_SCALE_FACTOR", "1")
        await _welcome(shell, out / f"welcome-{scale}x.png")
        # The chat as it opens at this scale on this screen (all of it, Stop included, on it),
        # with a fact waiting for consent: no model is needed to remember.
        chat = shell.show_window("chat")
        assert chat is not None
        await asyncio.sleep(0.5)
        await chat.send(CONSENT)  # type: ignore[attr-defined]
        await asyncio.sleep(1.0)
        _close_notices()
        await asyncio.sleep(0.3)
        _grab_region(out / f"chat-{scale}x.png", 0, 0, 1280, 800)
    finally:
        shell.quit()
        await end_pending_work()


async def _shots(out: Path) -> None:
    from PySide6.QtCore import QPoint
    from PySide6.QtWidgets import QApplication

    from app.main import DesktopApp, end_pending_work
    from app.passphrase import PassphraseDialog
    from app.permission_dialog import PermissionDialog
    from app.permission_prompt import Choice
    from broker.llm.openai_client import OpenAIChatModel
    from tests.support.openai_server import ScriptedOpenAIServer, Text, Trickle

    def visible(kind: type) -> object:
        for widget in QApplication.topLevelWidgets():
            if isinstance(widget, kind) and widget.isVisible():
                return widget
        return None

    def answer(request: dict[str, Any]) -> Turn:
        """The scripted model: nothing worth remembering, a phrased listing, a long essay."""
        if "response_format" in request:
            return Text('{"facts": []}')
        system = str(request["messages"][0].get("content", ""))
        if system.startswith("You are Chamberlain, a local desktop assistant. A tool already"):
            return _phrased(request)
        if "my backup script fails" in str(request["messages"][-1].get("content", "")):
            return Text(CODE_REPLY)
        return Trickle(Text(LONG_REPLY), interval=0.0005)

    from broker.llm import endpoints

    server = ScriptedOpenAIServer([answer], model="llama3.2:3b", fragments=200).start()
    # "auto" finds the scripted server where Ollama listens, and the welcome names it.
    endpoints.PROBE_PORTS[:] = [("Ollama", server.port)]
    home = Path(os.environ["CHAMBERLAIN_HOME"])
    shell = DesktopApp(home)
    try:
        shell.start()
        loading = asyncio.ensure_future(shell.load())
        await _until(lambda: visible(PassphraseDialog))
        dialog = visible(PassphraseDialog)
        assert isinstance(dialog, PassphraseDialog)
        dialog.move(380, 200)
        await asyncio.sleep(0.5)
        _grab(dialog, out / "passphrase.png")
        dialog.first.setText(PASSPHRASE)
        dialog.second.setText(PASSPHRASE)
        dialog.ok.click()
        await loading
        await _welcome(shell, out / "welcome.png")
        session = shell.assistant.session
        session.use_model(OpenAIChatModel(server.base_url, model="llama3.2:3b"))
        store = session.memory
        assert store is not None
        from memory.types import FactSource, FactStatus, Sensitivity

        for fact, level, category in (
            ("my sister Ana lives in Lisbon", Sensitivity.LOW, "people"),
            ("I am allergic to peanuts", Sensitivity.PERSONAL, "health"),
            ("I prefer replies in British English", Sensitivity.LOW, "general"),
        ):
            store.add(fact, sensitivity=level, category=category)
        store.add(
            "my daughter's school is Escola Azul",
            sensitivity=Sensitivity.PERSONAL,
            category="people",
            source=FactSource.EXTRACTED,
            status=FactStatus.PENDING,
        )

        # The tray menu, as a click on the icon in the tray host opens it.
        shell.tray.menu.popup(QPoint(1030, 34))
        await asyncio.sleep(0.6)
        geometry = shell.tray.menu.geometry()
        left = geometry.x() - 40
        _grab_region(out / "tray.png", left, 0, 1280 - left, geometry.bottom() + 16)
        shell.tray.menu.hide()

        shell.tray.actions["chat"].trigger()  # "Open chat" in the tray menu
        await asyncio.sleep(0.2)
        chat = shell.windows["chat"]
        # Tall enough for a follow-up and the turn it follows.
        chat.resize(940, 740)
        chat.move(40, 20)
        await asyncio.sleep(0.5)
        chat.input.setPlainText("list my documents")  # type: ignore[attr-defined]
        chat.submit()  # type: ignore[attr-defined]
        await _until(lambda: visible(PermissionDialog))
        permission = visible(PermissionDialog)
        assert isinstance(permission, PermissionDialog)
        await _until(lambda: permission.armed)
        await asyncio.sleep(0.3)
        _grab_region(out / "permission-dialog.png", 0, 0, 1280, 800)
        permission.select(Choice.TIMED)
        permission.duration_box.setCurrentIndex(permission.duration_box.findData(5))
        permission.allow_button.click()
        await _until(lambda: not shell.assistant.busy)
        await asyncio.sleep(0.6)
        # The listing as the tool gave it (Result): the Hebrew name as it is, the name that
        # hides ".sh" behind a right-to-left override escaped.
        from app.chat_view import ToolCard

        [listing] = [w for w in chat.transcript.widgets() if isinstance(w, ToolCard)]  # type: ignore[attr-defined]
        listing.toggle.click()
        await asyncio.sleep(0.4)
        _grab(chat, out / "chat.png")
        listing.toggle.click()

        # A follow-up: "the second one" is the file the listing showed second. Reading it is
        # covered by the 5-minute grant for ~/Documents; a question, if one came, is allowed once.
        followup = asyncio.ensure_future(chat.send("summarise the second one"))  # type: ignore[attr-defined]
        await _until(lambda: followup.done() or visible(PermissionDialog))
        asked = visible(PermissionDialog)
        if isinstance(asked, PermissionDialog):
            await _until(lambda: asked.armed)
            asked.select(Choice.ONCE)
            asked.allow_button.click()
        await followup
        await asyncio.sleep(0.6)
        _grab(chat, out / "chat-followup.png")

        for name, size in (
            ("permissions", (900, 560)),
            ("memory", (980, 600)),
            ("activity", (1100, 640)),
            ("settings", (760, 720)),
        ):
            window = shell.show_window(name)
            assert window is not None
            window.resize(*size)
            window.move(60, 40)
            await asyncio.sleep(1.2)
            _grab(window, out / f"{name}.png")
            if name == "permissions":
                # Watch it count down, then revoke it as a person would: select, Revoke.
                await asyncio.sleep(2.0)
                view = window.live_view  # type: ignore[attr-defined]
                view.selectRow(0)
                window.revoke_button.click()  # type: ignore[attr-defined]
                await _until(lambda: not session.permissions.grants.live())
                print("the 5-minute grant was revoked from the Permissions window")
            window.hide()

        chat.show()
        chat.raise_()
        chat.input.setPlainText("compare the top 3 password managers for me")  # type: ignore[attr-defined]
        chat.submit()  # type: ignore[attr-defined]
        await asyncio.sleep(4.0)
        _grab(chat, out / "chat-streaming.png")
        chat.stop()  # type: ignore[attr-defined]
        await _until(lambda: not shell.assistant.busy)
        await asyncio.sleep(0.5)
        _grab(chat, out / "chat-stopped.png")

        # Memory consent in the chat: a health fact waits for Approve, Edit… or Reject.
        chat.new_chat()  # type: ignore[attr-defined]
        await chat.send(CONSENT)  # type: ignore[attr-defined]
        await asyncio.sleep(0.8)
        _close_notices()
        await asyncio.sleep(0.3)
        _grab(chat, out / "chat-consent.png")

        # A pasted log (its first lines, "Show all") and a reply with a code block (Copy).
        chat.new_chat()  # type: ignore[attr-defined]
        chat.input.setPlainText(PASTED_LOG)  # type: ignore[attr-defined]
        chat.submit()  # type: ignore[attr-defined]
        await _until(lambda: not shell.assistant.busy)
        await asyncio.sleep(0.8)
        _grab(chat, out / "chat-code.png")
    finally:
        shell.quit()
        # As the app ends: what quitting set off (a window's refresh) is cancelled, not run
        # once more after the loop's last turn with the io thread gone.
        await end_pending_work()
        server.stop()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(REPO / "docs" / "screenshots"))
    parser.add_argument(
        "--welcome-only", action="store_true", help="only the welcome, with the embedded model"
    )
    args = parser.parse_args()
    out = Path(args.out)
    caller = dict(os.environ)
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="chamberlain-shots-") as scratch:
        _environment(Path(scratch))
        import qasync
        from PySide6.QtWidgets import QApplication

        app = QApplication(["chamberlain"])
        # As app/main.py names it: Qt adds " — Chamberlain" to every window's title.
        app.setApplicationName("Chamberlain")
        app.setApplicationDisplayName("Chamberlain")
        app.setQuitOnLastWindowClosed(False)
        loop = qasync.QEventLoop(app)
        asyncio.set_event_loop(loop)
        with loop:
            loop.run_until_complete(_welcome_only(out) if args.welcome_only else _shots(out))
    if not args.welcome_only:
        # QT_SCALE_FACTOR is read when Qt starts: a process of its own.
        scaled = {**caller, "QT_SCALE_FACTOR": "1.5"}
        command = [sys.executable, __file__, "--welcome-only", "--out", str(out)]
        return subprocess.run(command, env=scaled, check=False).returncode
    return 0


if __name__ == "__main__":
    sys.exit(main())
