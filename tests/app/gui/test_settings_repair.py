"""The desktop app with a broken settings.json: it starts, says what is wrong, offers a way out.

Real parts: the app's DesktopApp on a real home with a real broken file, the real message box shown
through the app's one dialog seam (app.async_dialog), offscreen, clicked as a person clicks it.
The desktop's editor, which "Open the File" hands the file to, is the one edge not run here: a
recorder stands in for it.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import QUrl
from PySide6.QtWidgets import QApplication, QMessageBox

from app.main import DesktopApp
from app.settings_repair import OPENED, offer_repair
from broker.settings import Settings, read_settings
from tests.app.gui.conftest import until

# Showing the tray on the offscreen platform, which has none: its noise, not the app's.
pytestmark = pytest.mark.qt_log_ignore("systemTrayWindowChanged")

TRUNCATED = '{\n  "llm": {\n    "url": "http://127.0.0.1:11434/v1",\n    "model": "qw'


def box_saying(words: str) -> QMessageBox | None:
    for widget in QApplication.topLevelWidgets():
        if not isinstance(widget, QMessageBox) or not widget.isVisible():
            continue
        if words in widget.text() + widget.informativeText():
            return widget
    return None


def click(box: QMessageBox, name: str) -> None:
    [button] = [b for b in box.buttons() if b.objectName() == name]
    button.click()


def test_the_app_starts_on_defaults_says_which_line_and_reset_keeps_the_broken_file(
    app_home: Path, run: Any, qtbot: Any
) -> None:
    path = app_home / "settings.json"
    path.write_text(TRUNCATED)
    shell = DesktopApp(app_home, use_tray=True, connect_model=False)
    try:
        assert shell.loaded_settings.settings == Settings()
        shell.start()
        assert shell.tray.icon.isVisible()  # the app is up, the question does not hold it back

        async def person() -> str:
            await until(lambda: box_saying("settings file is broken") is not None)
            box = box_saying("settings file is broken")
            assert box is not None
            assert not box.isModal()
            assert f"{path} line 4: not valid JSON" in box.informativeText()
            click(box, "reset")
            await until(lambda: box_saying("Settings reset") is not None)
            told = box_saying("Settings reset")
            assert told is not None
            text = told.text()
            told.buttons()[0].click()
            return text

        said = run(person())
    finally:
        shell.quit()
    [kept] = list(app_home.glob("settings.json.broken-*"))
    assert kept.read_text() == TRUNCATED
    assert f"The broken file is kept as {kept}." in said
    assert json.loads(path.read_text()) == {"schema_version": Settings().schema_version}
    assert read_settings(app_home).problem is None


def test_a_wrong_setting_is_named_and_the_rest_of_the_file_stays_in_use(
    app_home: Path, run: Any, qtbot: Any
) -> None:
    path = app_home / "settings.json"
    path.write_text('{\n  "llm": {"url": "none"},\n  "executor": {"max_iterations": 0}\n}\n')
    shell = DesktopApp(app_home, use_tray=True, connect_model=False)
    try:
        assert shell.loaded_settings.settings.llm.url == "none"
        shell.start()

        async def person() -> QMessageBox:
            await until(lambda: box_saying("executor.max_iterations") is not None)
            box = box_saying("executor.max_iterations")
            assert box is not None
            click(box, "later")
            await asyncio.sleep(0.05)
            return box

        box = run(person())
    finally:
        shell.quit()
    assert "the default for executor.max_iterations" in box.text()
    assert f"{path} line 3: executor.max_iterations:" in box.informativeText()
    # "Not Now" leaves the file as it was, and writes nothing beside it.
    assert path.read_text().startswith('{\n  "llm"')
    assert sorted(p.name for p in app_home.iterdir() if p.name.startswith("settings")) == [
        "settings.json"
    ]


def test_open_the_file_hands_that_file_to_the_desktop(app_home: Path, run: Any, qtbot: Any):
    path = app_home / "settings.json"
    path.write_text("{ nope")
    loaded = read_settings(app_home)
    opened: list[QUrl] = []

    def editor(url: QUrl) -> bool:
        opened.append(url)
        return True

    async def io(work: Any, *args: Any) -> Any:
        return work(*args)

    async def person() -> str:
        asking = asyncio.ensure_future(offer_repair(loaded, app_home, io, open_url=editor))
        await until(lambda: box_saying("settings file is broken") is not None)
        box = box_saying("settings file is broken")
        assert box is not None
        click(box, "open")
        return await asking

    assert run(person()) == OPENED
    assert [url.toLocalFile() for url in opened] == [str(path)]
    assert path.read_text() == "{ nope"


def test_an_invalid_environment_variable_is_said_in_a_box_and_the_app_ends_with_1(
    app_home: Path, run: Any, qtbot: Any, monkeypatch: Any, capsys: Any
) -> None:
    """No default can stand in for a variable the person set for this start: the app says which
    one, on stderr and in a box a person starting it from a menu sees, and does not start."""
    from app.main import _main

    monkeypatch.setenv("CHAMBERLAIN_EXECUTOR__MAX_ITERATIONS", "99")
    variable = "CHAMBERLAIN_EXECUTOR__MAX_ITERATIONS"

    async def person() -> int:
        ending = asyncio.ensure_future(_main(app_home))
        await until(lambda: box_saying(variable) is not None)
        box = box_saying(variable)
        assert box is not None
        assert box.text().startswith(
            f"Chamberlain cannot start: the environment variable {variable}"
        )
        box.buttons()[0].click()
        return await ending

    assert run(person()) == 1
    assert capsys.readouterr().err == (
        f"chamberlain: the environment variable {variable} is not a valid setting: "
        "executor.max_iterations: Input should be less than or equal to 10; change or unset "
        f"{variable}\n"
    )
