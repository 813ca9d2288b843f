"""The desktop app's start-up box (app/main.py `_main`): a failure it can put in words while the
session is built (keys, audit log, grants, policy, self test) is said on stderr and in a box a
person starting it from a menu sees, and the app ends with 1 — never a traceback.

Real parts: `_main` on a real home holding a real damaged key file, the real box offscreen,
clicked as a person clicks it.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from tests.app.gui.conftest import until
from tests.app.gui.test_settings_repair import box_saying

# Showing the tray on the offscreen platform, which has none: its noise, not the app's.
pytestmark = pytest.mark.qt_log_ignore("systemTrayWindowChanged")


def test_a_damaged_token_key_is_said_in_the_start_up_box_and_the_app_ends_with_1(
    app_home: Path, event_loop_qt: Any, qtbot: Any, monkeypatch: Any, capsys: Any
) -> None:
    from app.main import _main

    # No keyring here (as on a desktop without one): the token secret is read from its file.
    monkeypatch.setenv("PYTHON_KEYRING_BACKEND", "keyring.backends.fail.Keyring")
    (app_home / "token.key").write_text("not a key\n")
    said = f"cannot read the token secret in {app_home / 'token.key'}"

    seen: list[str] = []

    async def person() -> None:
        await until(lambda: box_saying(said) is not None)
        box = box_saying(said)
        assert box is not None
        seen.append(box.text())
        box.buttons()[0].click()

    async def start() -> int:
        # The app's own coroutine is the one the loop runs (it ends the other pending work).
        clicking = asyncio.ensure_future(person())
        code = await _main(app_home)
        assert clicking.done()
        return code

    # Run as the app runs it: `_main` ends the loop's other pending work as it returns, so it
    # cannot sit under the `run` fixture's wait_for.
    assert event_loop_qt.run_until_complete(start()) == 1
    (text,) = seen
    assert text.startswith(f"Chamberlain cannot start: {said}: it is not hex text;")
    assert "remove the file to continue" in text
    err = capsys.readouterr().err
    assert err.startswith(f"chamberlain: {said}: it is not hex text;")
    assert "Traceback" not in err
