"""One instance per user and home: a second launch brings the first to the front.

Real QLocalServer/QLocalSocket on this machine; socket names made unique per test.
"""

from __future__ import annotations

import os
import socket
import uuid
from pathlib import Path

import pytest
from PySide6.QtCore import QDir

from app.single_instance import SingleInstance, server_name


@pytest.fixture
def name() -> str:
    return f"chamberlain-test-{uuid.uuid4().hex[:12]}"


def test_a_second_launch_is_refused_and_brings_the_first_forward(qapp, qtbot, name):
    first = SingleInstance(name)
    assert first.claim() is True
    second = SingleInstance(name)
    with qtbot.waitSignal(first.activated, timeout=5000):
        assert second.claim() is False
    first.release()


def test_a_socket_left_by_a_crashed_instance_does_not_block_a_new_one(qapp, name):
    stale = Path(QDir.tempPath()) / name
    leftover = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    leftover.bind(str(stale))
    leftover.close()  # never listened, never unlinked: what a crash leaves
    assert stale.exists()
    instance = SingleInstance(name)
    assert instance.claim() is True
    instance.release()
    assert not stale.exists()  # and nothing is left behind on a clean exit


def test_names_differ_per_home_and_say_whose_they_are(tmp_path):
    a, b = server_name(tmp_path / "a"), server_name(tmp_path / "b")
    assert a != b
    assert a.startswith(f"chamberlain-{os.getuid()}-")
