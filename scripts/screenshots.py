"""Take the README's screenshots of the real app on a real X server with a real tray host.

Run by scripts/screenshots.sh, which starts Xvfb, a window manager (evilwm) and a tray host
(trayer) and sets DISPLAY. Everything happens in a throwaway home; the model is the test suite's
scripted OpenAI server on 127.0.0.1 (no model is downloaded), so the replies are fixed text.

It does what a person would: types the memory passphrase, reads the welcome that the first start
shows (the scripted server found where Ollama listens) and closes it, opens the chat from the
tray, asks
"list files in ~/Documents", answers the permission dialog with "Allow for 5 min", reads the
reply, opens Permissions (the grant counting down), Memory, Activity and Settings, then asks
something long and presses Stop. Each picture is cut from a grab of the whole screen. Then, in
a second process at QT_SCALE_FACTOR=1.5 with no model server, the welcome again: the embedded
model answers (`--welcome-only`).
"""

from __future__ import annotations

import argparse
import asyncio
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
LISTING = (
    "Your **Documents** folder holds four files:\n\n"
    "- `budget-2026.ods`\n- `holiday plan.md`\n- `notes.txt`\n- `tax return.pdf`"
)
LONG_REPLY = (
    "## Choosing a password manager\n\n"
    "Here is how the three you asked about compare. **Bitwarden** is open source and its "
    "free plan syncs across devices; **1Password** has the most polished apps and travel "
    "mode; **KeePassXC** keeps everything in one encrypted file you sync yourself.\n\n"
    + "- a point worth weighing, explained at some length so the reply keeps coming\n"
    * 60
)
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
    for name, text in (
        ("budget-2026.ods", "x"),
        ("holiday plan.md", "# Lisbon\n"),
        ("notes.txt", "call the bank\n"),
        ("tax return.pdf", "%PDF"),
    ):
        (user / "Documents" / name).write_text(text)
    os.environ.update(
        HOME=str(user),
        CHAMBERLAIN_HOME=str(scratch / "chamberlain"),
        XDG_CONFIG_HOME=str(user / ".config"),
        PYTHON_KEYRING_BACKEND="keyring.backends.fail.Keyring",
    )


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
    from app.main import DesktopApp
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
        # The chat as it opens at this scale on this screen: all of it, Stop included, on it.
        chat = shell.show_window("chat")
        assert chat is not None
        await asyncio.sleep(1.0)
        _grab_region(out / f"chat-{scale}x.png", 0, 0, 1280, 800)
    finally:
        shell.quit()


async def _shots(out: Path) -> None:
    from PySide6.QtCore import QPoint
    from PySide6.QtWidgets import QApplication

    from app.main import DesktopApp
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
            return Text(LISTING)
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
        chat.resize(940, 640)
        chat.move(40, 60)
        await asyncio.sleep(0.5)
        chat.input.setPlainText("list files in ~/Documents")  # type: ignore[attr-defined]
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
        _grab(chat, out / "chat.png")

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

        # A pasted log (its first lines, "Show all") and a reply with a code block (Copy).
        chat.new_chat()  # type: ignore[attr-defined]
        chat.input.setPlainText(PASTED_LOG)  # type: ignore[attr-defined]
        chat.submit()  # type: ignore[attr-defined]
        await _until(lambda: not shell.assistant.busy)
        await asyncio.sleep(0.8)
        _grab(chat, out / "chat-code.png")
    finally:
        shell.quit()
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
