"""The per-install token secret: from the keyring when one works, else a private file that says so.

conftest sets PYTHON_KEYRING_BACKEND to keyring's fail backend, so by default every test here
meets "no system keyring". The keyring tests install a real in-memory backend (a KeyringBackend
subclass defined below) through keyring's own API, and restore the previous one afterwards.
"""

from __future__ import annotations

import errno
import os
import stat
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from app.errors import FrontEnd, user_message
from broker.keys import KEY_BYTES, SERVICE, KeyFileError, load_install_secret
from core.errors import Remedy

# --- no keyring: the file fallback -------------------------------------------------------------


def test_without_a_keyring_the_secret_falls_back_to_a_private_file(tmp_path):
    secret = load_install_secret(tmp_path)
    path = tmp_path / "token.key"
    assert secret.in_keyring is False
    assert secret.source.startswith(f"file {path} (no system keyring: ")
    assert "fail" in secret.source  # which backend was unusable
    assert len(secret.key) == KEY_BYTES
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert path.read_text("ascii") == secret.key.hex()


def test_the_fallback_returns_the_same_key_every_time(tmp_path):
    first = load_install_secret(tmp_path)
    second = load_install_secret(tmp_path)
    assert second.key == first.key
    assert load_install_secret(tmp_path / "other-home").key != first.key


def test_the_fallback_creates_a_missing_home(tmp_path):
    home = tmp_path / "not" / "yet"
    secret = load_install_secret(home)
    assert (home / "token.key").read_text("ascii") == secret.key.hex()


@pytest.mark.parametrize(
    "content",
    [b"not hex at all", b"abcd", b"\xff\xfe garbage", b"\n"],
    ids=["not-hex", "too-short", "not-ascii", "blank-line"],
)
def test_a_corrupt_key_file_is_a_clear_error_and_is_kept(tmp_path, content):
    path = tmp_path / "token.key"
    path.write_bytes(content)
    with pytest.raises(ValueError, match=r"token\.key") as caught:
        load_install_secret(tmp_path)
    message = str(caught.value)
    assert str(path) in message
    assert f"{KEY_BYTES}-byte" in message
    assert "remove the file" in message.lower()  # says what to do about it
    # The same wording family as a damaged grants file.
    assert message.startswith(f"cannot read the token secret in {path}: ")
    assert path.read_bytes() == content


def test_an_empty_key_file_from_an_interrupted_start_is_replaced_and_said_so(tmp_path):
    """Decision: an empty token.key never held a key (the old writer created the file, then
    crashed or met a full disk before writing), and every reader refused it, so nothing was
    ever signed with it. It is replaced, and the source says so (doctor shows it)."""
    path = tmp_path / "token.key"
    path.write_bytes(b"")
    secret = load_install_secret(tmp_path)
    assert len(secret.key) == KEY_BYTES
    assert path.read_text("ascii") == secret.key.hex()
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert "replaced an empty file left by an interrupted first start" in secret.source
    again = load_install_secret(tmp_path)
    assert again.key == secret.key
    assert "replaced" not in again.source
    assert sorted(p.name for p in tmp_path.iterdir()) == ["token.key"]


_CREATE_WITH_NO_ROOM = """
import resource, signal, sys
from pathlib import Path
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))  # no file may grow: writes fail with EFBIG
from broker.keys import load_install_secret
try:
    load_install_secret(Path(sys.argv[1]))
except OSError as exc:
    print("refused:", exc)
else:
    print("created")
"""


def test_a_key_that_cannot_be_written_in_full_leaves_no_key_file_behind(tmp_path):
    """A real process whose writes fail (RLIMIT_FSIZE 0, as on a disk with no room): the old
    writer left an empty token.key that broke every later command; now nothing is left, and
    the next start with room creates the key."""
    proc = subprocess.run(
        [sys.executable, "-B", "-c", _CREATE_WITH_NO_ROOM, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=Path(__file__).resolve().parents[2],
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("refused:"), proc.stdout
    assert list(tmp_path.iterdir()) == []
    secret = load_install_secret(tmp_path)
    assert (tmp_path / "token.key").read_text("ascii") == secret.key.hex()


def test_a_full_disk_while_creating_the_key_is_a_plain_error_and_leaves_nothing(
    tmp_path, monkeypatch
):
    """A fake at the edge: os.write fails with ENOSPC, as on a full disk (which a test cannot
    make without mounting a file system)."""

    def no_space(fd: int, data: bytes) -> int:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "write", no_space)
    with pytest.raises(KeyFileError) as caught:
        load_install_secret(tmp_path)
    # What happened; what to do is the remedy, worded by the front end as it always read.
    assert str(caught.value) == (
        f"the disk is full: the token secret could not be saved in {tmp_path / 'token.key'}"
    )
    assert caught.value.remedy is Remedy.FREE_DISK_SPACE
    assert user_message(caught.value, FrontEnd.CLI) == (
        f"the disk is full: the token secret could not be saved in {tmp_path / 'token.key'}; "
        "free some space and try again"
    )
    assert list(tmp_path.iterdir()) == []


def test_two_first_starts_at_once_agree_on_one_key(tmp_path):
    with ThreadPoolExecutor(max_workers=8) as pool:
        keys = list(pool.map(lambda _: load_install_secret(tmp_path).key, range(16)))
    assert len(set(keys)) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["token.key"]


# --- a working keyring -------------------------------------------------------------------------


def test_with_a_keyring_the_secret_lives_there_and_no_file_is_written(tmp_path, memory_keyring):
    secret = load_install_secret(tmp_path)
    assert secret.in_keyring is True
    assert secret.source == "keyring (tests.support.keyring.DictKeyring)"
    assert len(secret.key) == KEY_BYTES
    [(service, _user)] = memory_keyring.store
    assert service == SERVICE
    assert memory_keyring.store[(service, _user)] == secret.key.hex()
    assert not (tmp_path / "token.key").exists()
    assert list(tmp_path.iterdir()) == []


def test_the_keyring_secret_is_stable_and_per_home(tmp_path, memory_keyring):
    first = load_install_secret(tmp_path / "a")
    again = load_install_secret(tmp_path / "a")
    other = load_install_secret(tmp_path / "b")
    assert again.key == first.key
    assert other.key != first.key
    assert len(memory_keyring.store) == 2


# --- a keyring that never answers --------------------------------------------------------------
# A real keyring backend that blocks in every call (tests/support/keyring.py), installed through
# keyring's own API; the deadline is shortened so each test waits half a second, not five.


@pytest.fixture
def hanging_keyring(monkeypatch):
    import keyring

    from broker import keys
    from tests.support.keyring import HangingKeyring

    previous = keyring.get_keyring()
    HangingKeyring.reset()
    backend = HangingKeyring()
    keyring.set_keyring(backend)
    monkeypatch.setattr(keys, "KEYRING_TIMEOUT_S", 0.5)
    monkeypatch.setattr(keys, "_stalled", None)
    try:
        yield backend
    finally:
        keyring.set_keyring(previous)
        HangingKeyring.release()  # the abandoned calls end now


def test_a_keyring_that_never_answers_gives_way_to_the_file_and_says_why(tmp_path, hanging_keyring):
    secret = load_install_secret(tmp_path)
    assert secret.in_keyring is False
    assert secret.source.startswith(f"file {tmp_path / 'token.key'} (no system keyring: ")
    assert "the system keyring did not answer within 0.5 s" in secret.source
    assert (tmp_path / "token.key").read_text("ascii") == secret.key.hex()


def test_a_keyring_that_did_not_answer_is_not_waited_for_again(tmp_path, hanging_keyring):
    from broker.keys import keyring_stalled

    load_install_secret(tmp_path / "a")
    assert keyring_stalled() is not None
    again = load_install_secret(tmp_path / "b")
    assert "did not answer" in again.source
    assert hanging_keyring.calls == 1  # the second start did not ask it (and wait) again


def test_a_new_memory_asks_for_a_passphrase_saying_the_keyring_did_not_answer(
    tmp_path, hanging_keyring
):
    from broker.keys import load_memory_key

    prompts: list[str] = []

    def type_passphrase(prompt: str) -> str:
        prompts.append(prompt)
        return "correct horse battery"

    key = load_memory_key(tmp_path, "keyring", ask_passphrase=type_passphrase, environ={}, new=True)
    assert key.keyed_by == "passphrase"
    assert key.passphrase == "correct horse battery"
    assert prompts[0].startswith("The system keyring did not answer within 0.5 s")
    assert "cannot be recovered" in prompts[0]  # the usual warning follows


def test_with_no_passphrase_to_ask_a_hung_keyring_leaves_memory_closed_never_plaintext(
    tmp_path, hanging_keyring
):
    from broker.keys import MemoryKeyUnavailable, load_memory_key

    with pytest.raises(MemoryKeyUnavailable) as caught:
        load_memory_key(tmp_path, "keyring", environ={}, new=True)
    assert caught.value.needs_passphrase
    message = str(caught.value)
    assert message.startswith("memory is encrypted and the system keyring did not answer")
    # What to do is a remedy each front end words (the CLI names the variable, the app does not).
    assert caught.value.remedy is Remedy.UNLOCK_MEMORY
    assert "CHAMBERLAIN_MEMORY_PASSPHRASE" not in message
    assert "terminal" not in message
    assert "give a passphrase in CHAMBERLAIN_MEMORY_PASSPHRASE" in (
        user_message(caught.value, FrontEnd.CLI) or ""
    )


def test_memory_kept_in_a_keyring_that_hangs_stays_closed_and_says_to_unlock_it(
    tmp_path, hanging_keyring
):
    from broker.keys import MemoryKeyUnavailable, load_memory_key, record_keying

    record_keying(tmp_path, "keyring")
    asked: list[str] = []
    with pytest.raises(MemoryKeyUnavailable) as caught:
        load_memory_key(tmp_path, "keyring", ask_passphrase=asked.append, environ={})
    assert asked == []  # its key is in the keyring: a passphrase would not open it
    assert "did not answer within 0.5 s" in str(caught.value)
    assert "unlock or start the keyring and try again" in str(caught.value)


def test_an_api_key_is_not_saved_to_a_hung_keyring_and_none_is_read_from_it(
    tmp_path, hanging_keyring
):
    from broker.keys import KeyringUnavailable, load_api_key, save_api_key

    with pytest.raises(KeyringUnavailable) as caught:
        save_api_key("http://127.0.0.1:8080/v1", "sk-test", env_var="MY_KEY")
    assert "did not answer" in str(caught.value)
    assert "MY_KEY" in str(caught.value)  # where to give the key instead
    assert load_api_key("http://127.0.0.1:8080/v1") is None
