"""Chamberlain's two keys: the secret that signs permission tokens, and the memory database key.

Both live in the system keyring. Where no keyring works (a headless box, a test run):
- the install secret falls back to a file under the home directory readable only by the user,
  and says so (`doctor` reports which one is in use). It signs tokens that last one session, and
  keys (through `derive_key`) the MACs on saved grants and on the audit head: a new secret
  makes saved grants untrusted and the audit head unverifiable, which both report plainly;
- the memory key is never written to a file: the user gives a passphrase instead (an environment
  variable or a terminal prompt), or explicitly opts out of encryption. Never silently plaintext.

Beside them, the API keys of model endpoints the user saves in Settings: in the keyring only,
one per endpoint. With no keyring they are not saved anywhere (`KeyringUnavailable` says to use
the environment variable `llm.api_key_env` names instead); never a file.

Every keyring call has a deadline (`KEYRING_TIMEOUT_S`): a Secret Service that never answers
(a hung keyring daemon, a D-Bus that drops the call) is taken as no keyring for the rest of the
process, and the fallback above is used and said so. The call itself is left on a daemon thread,
which can neither be stopped nor keep the process from exiting.

Keys are never logged, never sent to a model, never written to the audit log.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import hmac
import logging
import os
import secrets
import sys
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from core.errors import Remedy, SecretUnavailable

log = logging.getLogger("chamberlain.broker.keys")

SERVICE = "chamberlain"
KEY_BYTES = 32

T = TypeVar("T")

# How long one keyring call may take. D-Bus gives up on a Secret Service that never answers only
# after 120 s; until then the caller (the app's io thread, and its Quit with it) would wait. A
# locked keyring's unlock prompt may take longer than this: the fallback is then used until the
# next start.
KEYRING_TIMEOUT_S = 5.0


class KeyringTimeout(SecretUnavailable):
    """The system keyring did not answer within KEYRING_TIMEOUT_S (now or earlier in this
    process); the message says so in words a person can act on."""


# Why the keyring is no longer asked in this process: it did not answer once already, and every
# further call would wait out the deadline again (the first call is still stuck in it).
_stalled: str | None = None


def keyring_stalled() -> str | None:
    """Why the system keyring is not asked any more in this process, or None when it answers."""
    return _stalled


def _keyring_call(work: Callable[[], T]) -> T:
    """`work()` (a call into the keyring), or KeyringTimeout after KEYRING_TIMEOUT_S.

    The call runs on a daemon thread: a stuck D-Bus call cannot be interrupted, and a daemon
    thread does not hold the process at exit (a ThreadPoolExecutor's worker would). Whatever
    `work` raised is raised here.
    """
    global _stalled
    if _stalled is not None:
        raise KeyringTimeout(_stalled)
    box: list[tuple[bool, Any]] = []
    done = threading.Event()

    def run() -> None:
        try:
            box.append((True, work()))
        except BaseException as exc:  # noqa: BLE001 - handed to the waiting caller, who reports it
            box.append((False, exc))
        finally:
            done.set()

    threading.Thread(target=run, name="keyring-call", daemon=True).start()
    if not done.wait(KEYRING_TIMEOUT_S):
        _stalled = (
            f"the system keyring did not answer within {KEYRING_TIMEOUT_S:g} s (its service "
            "may be hung or waiting to be unlocked)"
        )
        log.warning("%s; it is not asked again until Chamberlain restarts", _stalled)
        raise KeyringTimeout(_stalled)
    ok, value = box[0]
    if not ok:
        raise value
    return value  # type: ignore[no-any-return]


class KeyFileError(SecretUnavailable, ValueError):
    """The fallback key file exists but does not hold a key; it is kept for the user to see."""


@dataclass(frozen=True)
class InstallSecret:
    key: bytes
    # "keyring (<backend>)" or "file <path> (no system keyring available: <why>)"
    source: str

    @property
    def in_keyring(self) -> bool:
        return self.source.startswith("keyring")

    @property
    def grants_key(self) -> bytes:
        """The key of the MACs on saved grants (`grants.json`)."""
        return derive_key(self.key, GRANTS_KEY_PURPOSE)

    @property
    def audit_key(self) -> bytes:
        """The key of the MACs on the audit head and its anchor."""
        return derive_key(self.key, AUDIT_KEY_PURPOSE)

    def __repr__(self) -> str:  # never show the key material, even in a traceback
        return f"InstallSecret(source={self.source!r})"


GRANTS_KEY_PURPOSE = "grants v1"
AUDIT_KEY_PURPOSE = "audit head v1"


def derive_key(secret: bytes, purpose: str) -> bytes:
    """A key for one purpose only: HMAC-SHA256(secret, "chamberlain " + purpose).

    The raw secret signs permission tokens; each file MAC gets its own derived key, so a MAC
    made for one purpose can never pass as another's, nor as a token signature.
    """
    return hmac.new(secret, f"chamberlain {purpose}".encode(), hashlib.sha256).digest()


def _keyring_user(home: Path, purpose: str) -> str:
    # One secret per home directory, so test homes and real homes never share a key.
    digest = hashlib.sha256(str(home.resolve()).encode()).hexdigest()[:16]
    return f"{purpose}-{digest}"


# Backends that hold nothing. Named in PYTHON_KEYRING_BACKEND (as on a headless box or in a
# test run), they are what keyring would load, so they are known to be unusable without
# importing keyring at all, which costs about 60 ms of a command's start-up. Once keyring is
# imported, a program may have chosen another backend (keyring.set_keyring): then it is asked.
_NO_KEYRING_BACKENDS = frozenset({"keyring.backends.fail.Keyring", "keyring.backends.null.Keyring"})


def _from_keyring(
    home: Path, purpose: str = "token-secret", *, create: bool = True
) -> tuple[bytes | None, str]:
    chosen = os.environ.get("PYTHON_KEYRING_BACKEND", "").strip()
    if chosen in _NO_KEYRING_BACKENDS and "keyring" not in sys.modules:
        return None, f"no usable keyring backend ({chosen})"
    try:
        import keyring  # noqa: F401 - only whether it is there; it is used on the call's thread
    except ImportError:
        return None, "the keyring package is not installed"
    try:
        return _keyring_call(lambda: _ask_keyring(home, purpose, create))
    except KeyringTimeout as exc:
        return None, str(exc)


def _ask_keyring(home: Path, purpose: str, create: bool) -> tuple[bytes | None, str]:
    """_from_keyring's questions to the keyring: choosing the backend may ask D-Bus too."""
    import keyring
    from keyring.errors import KeyringError

    backend = keyring.get_keyring()
    priority = getattr(backend, "priority", 0)
    name = type(backend).__module__ + "." + type(backend).__name__
    if priority is None or priority <= 0 or "fail" in name:
        return None, f"no usable keyring backend ({name})"
    user = _keyring_user(home, purpose)
    try:
        stored = keyring.get_password(SERVICE, user)
        if stored is None and not create:
            return None, f"the keyring ({name}) holds no {purpose}"
        if stored is None:
            stored = secrets.token_hex(KEY_BYTES)
            keyring.set_password(SERVICE, user, stored)
        return bytes.fromhex(stored), f"keyring ({name})"
    except (KeyringError, ValueError, OSError) as exc:
        return None, f"the keyring ({name}) failed: {exc}"


def _damaged(path: Path, why: str) -> KeyFileError:
    return KeyFileError(
        f"cannot read the token secret in {path}: {why}; it should hold a {KEY_BYTES}-byte key "
        "as hex text. Nothing was signed with it now; remove the file to continue and "
        "Chamberlain will create a new one (saved `always` grants will then be ignored until "
        "granted again, and the audit check will report that its head was signed with another "
        "key)"
    )


def _publish(path: Path, key: bytes) -> bool:
    """Write the key to ``path`` atomically: a private temporary file, written in full and
    fsynced, then linked into place, which fails if the name exists. So a crash or a full disk
    leaves no file or the whole key, never an empty or partial one, and when two processes
    start at once exactly one key wins. False when another process's key was there first."""
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            data = key.hex().encode("ascii")
            while data:
                data = data[os.write(fd, data) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        try:
            os.link(tmp, path)
        except FileExistsError:
            return False
        except OSError as exc:
            if exc.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EMLINK):
                raise
            # A file system without hard links: rename, which could replace a key another
            # process published a moment ago; the re-read in _from_file then settles on one.
            if path.exists():
                return False
            os.replace(tmp, path)
    except OSError as exc:
        if exc.errno in (errno.ENOSPC, errno.EDQUOT):
            raise KeyFileError(
                f"the disk is full: the token secret could not be saved in {path}",
                remedy=Remedy.FREE_DISK_SPACE,
            ) from exc
        raise
    finally:
        with contextlib.suppress(OSError):
            tmp.unlink()
    with contextlib.suppress(OSError):
        dir_fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)  # the new name itself survives a power cut
        finally:
            os.close(dir_fd)
    return True


def _set_aside_empty(path: Path) -> None:
    """Remove an empty key file. It is renamed first, so of two processes that found it only
    one removes it; a file that is no longer empty by then is put back and read as it is."""
    aside = path.with_name(f".{path.name}.{secrets.token_hex(6)}.empty")
    try:
        os.rename(path, aside)
    except FileNotFoundError:
        return  # another process got there first
    if aside.stat().st_size:
        try:
            os.link(aside, path)
        except OSError:
            log.error("%s was written while it was being replaced; it was kept as %s", path, aside)
            return
    aside.unlink()


def _from_file(path: Path) -> tuple[bytes, bool]:
    """The key in ``path``, created when missing. Also whether an empty file was replaced.

    An empty file is replaced. It is what the earlier non-atomic writer left when it crashed
    or met a full disk between creating the file and writing the key; it never held a key, so
    nothing (no token, no grant MAC, no audit head MAC) was ever signed with what it holds:
    every reader refused it. Any other content that is not a key is kept and reported: it may
    be the only copy of a key that did sign something.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    replaced = False
    for _attempt in range(5):
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            key = secrets.token_bytes(KEY_BYTES)
            if _publish(path, key):
                return key, replaced
            continue  # another process published first: read its key
        if not raw:
            log.warning("%s was empty (an interrupted first start); replacing it", path)
            _set_aside_empty(path)
            replaced = True
            continue
        try:
            data = bytes.fromhex(raw.decode("ascii").strip())
        except ValueError:  # UnicodeDecodeError included: not hex text at all
            raise _damaged(path, "it is not hex text") from None
        if len(data) != KEY_BYTES:
            # Replacing the file silently would hide whatever damaged it. A new secret loses
            # the saved grants (their MACs no longer check) and the audit head's MAC.
            raise _damaged(path, f"it holds {len(data)} bytes")
        return data, replaced
    raise _damaged(path, "it kept changing while it was read (another program is writing it)")


def load_install_secret(home: Path) -> InstallSecret:
    key, why = _from_keyring(home)
    if key is not None:
        return InstallSecret(key, why)
    path = home / "token.key"
    log.info("token secret kept in %s: %s", path, why)
    key, replaced = _from_file(path)
    note = "; it replaced an empty file left by an interrupted first start" if replaced else ""
    return InstallSecret(key, f"file {path} (no system keyring: {why}{note})")


# --- the memory key --------------------------------------------------------------------------

PASSPHRASE_ENV = "CHAMBERLAIN_MEMORY_PASSPHRASE"
KEYING_FILE = "memory.keying"


class MemoryKeyUnavailable(SecretUnavailable):
    """Memory is encrypted and no key can be had here; the message says what to do.

    `needs_passphrase`: a passphrase would open it (none was given, or the ones typed for a new
    memory did not match), as opposed to a keyring that is locked or gone.
    """

    def __init__(
        self, message: str, *, needs_passphrase: bool = False, remedy: Remedy | None = None
    ) -> None:
        super().__init__(message, remedy=remedy)
        self.needs_passphrase = needs_passphrase


@dataclass(frozen=True)
class MemoryKey:
    # Exactly one of key / passphrase for an encrypted store; neither when unencrypted.
    key: bytes | None
    passphrase: str | None
    keyed_by: str  # "keyring", "passphrase" or "none"
    source: str
    # The passphrase was typed at the prompt just now (so a wrong one may be typed again).
    typed: bool = False

    @property
    def encrypted(self) -> bool:
        return self.keyed_by != "none"

    def __repr__(self) -> str:  # never show the key material, even in a traceback
        return f"MemoryKey(keyed_by={self.keyed_by!r}, source={self.source!r})"


def recorded_keying(home: Path) -> str | None:
    """How the existing memory database was keyed ("keyring", "passphrase", "none"), if known."""
    try:
        value = (home / KEYING_FILE).read_text("ascii").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return value if value in {"keyring", "passphrase", "none"} else None


def record_keying(home: Path, keyed_by: str) -> None:
    """Remember how the memory database was keyed (not the key): the next run asks the same way."""
    path = home / KEYING_FILE
    if recorded_keying(home) != keyed_by:
        path.write_text(keyed_by + "\n", "ascii")


# Said before a new passphrase is chosen: nothing else holds it, so nothing can bring it back.
NEW_PASSPHRASE_WARNING = (
    "Memory will be encrypted with a passphrase you choose now. It is kept nowhere and cannot "
    "be recovered: if you forget it, everything Chamberlain remembers is lost.\n"
)
PASSPHRASE_TRIES = 3


def _choose_passphrase(ask: Callable[[str], str | None], notice: str = "") -> str | None:
    """A new passphrase, typed twice (with `notice` and the warning first). None when nothing
    was typed; MemoryKeyUnavailable when the two never matched, so no memory is created with a
    typo."""
    prompt = notice + NEW_PASSPHRASE_WARNING + "New memory passphrase: "
    for _attempt in range(PASSPHRASE_TRIES):
        first = ask(prompt)
        if not first:
            return None
        if ask("Type it again to confirm: ") == first:
            return first
        prompt = "The two did not match. New memory passphrase: "
    raise MemoryKeyUnavailable(
        f"the passphrases typed did not match ({PASSPHRASE_TRIES} tries), so no memory was "
        "created and nothing was remembered; try again",
        needs_passphrase=True,
    )


def load_memory_key(
    home: Path,
    mode: str,
    *,
    ask_passphrase: Callable[[str], str | None] | None = None,
    environ: Mapping[str, str] | None = None,
    new: bool = False,
) -> MemoryKey:
    """The key for the memory database, chosen by the settings' `mode` and how it was made.

    An existing database is opened the way it was created, whatever the setting says now.
    `new`: no database exists yet, so a passphrase asked for is a new one, confirmed.
    """
    env = os.environ if environ is None else environ
    keyed_by = recorded_keying(home)
    wanted = keyed_by or {"off": "none"}.get(mode, mode)
    if wanted == "none":
        return MemoryKey(None, None, "none", "unencrypted (memory.encryption = off)")
    why = "chosen in settings" if keyed_by is None else "how this memory was created"
    # Why the keyring is not used, when the reason is news to the person: a keyring that is
    # there but did not answer (no keyring at all is the ordinary passphrase case).
    keyring_trouble = ""
    if wanted == "keyring":
        key, why = _from_keyring(home, "memory-key", create=keyed_by is None)
        if key is not None:
            return MemoryKey(key, None, "keyring", why)
        if keyed_by == "keyring":
            raise MemoryKeyUnavailable(
                f"the memory key is kept in the system keyring, which is not available now "
                f"({why}); unlock or start the keyring and try again"
            )
        if keyring_stalled() is not None:
            keyring_trouble = why
            why = "the system keyring did not answer"
    passphrase = env.get(PASSPHRASE_ENV) or None
    typed = False
    if passphrase is None and ask_passphrase is not None:
        if new:
            notice = (
                f"{keyring_trouble[0].upper()}{keyring_trouble[1:]}.\n" if keyring_trouble else ""
            )
            passphrase = _choose_passphrase(ask_passphrase, notice)
        else:
            passphrase = ask_passphrase("Memory passphrase: ") or None
        typed = passphrase is not None
    if passphrase is None:
        no_keyring = keyring_trouble or "there is no system keyring here"
        # What to do (give a passphrase, or start a keyring) is the front end's to word.
        raise MemoryKeyUnavailable(
            f"memory is encrypted and {no_keyring}",
            needs_passphrase=True,
            remedy=Remedy.UNLOCK_MEMORY,
        )
    return MemoryKey(None, passphrase, "passphrase", f"passphrase ({why})", typed=typed)


# --- API keys for model endpoints --------------------------------------------------------------

DEFAULT_API_KEY_ENV = "CHAMBERLAIN_API_KEY"


class KeyringUnavailable(SecretUnavailable):
    """There is no usable system keyring, so an API key cannot be kept safely here.

    `env_var` is the environment variable to give the key in instead (the setting
    `llm.api_key_env`); the message says so, and a front end may phrase it its own way.
    """

    def __init__(self, why: str, env_var: str) -> None:
        super().__init__(
            f"There is no system keyring here ({why}), so an API key cannot be kept safely "
            f"and none is saved. Give the key in the environment variable {env_var} instead "
            "(the setting llm.api_key_env names that variable)."
        )
        self.why = why
        self.env_var = env_var


def _api_key_user(url: str) -> str:
    """The keyring entry of an endpoint's key: one per base URL, however it was typed
    ("localhost:1234" and "http://localhost:1234/v1/" are the same endpoint)."""
    from broker.llm.endpoints import normalise_url

    return f"api-key {normalise_url(url)}"


def _api_keyring(env_var: str) -> Any:
    """The keyring module, when a real backend is there; else KeyringUnavailable."""
    chosen = os.environ.get("PYTHON_KEYRING_BACKEND", "").strip()
    if chosen in _NO_KEYRING_BACKENDS and "keyring" not in sys.modules:
        raise KeyringUnavailable(f"the keyring backend is {chosen}", env_var)
    try:
        import keyring
    except ImportError:
        raise KeyringUnavailable("the keyring package is not installed", env_var) from None
    try:
        # Choosing the backend asks D-Bus whether a Secret Service is there.
        backend = _keyring_call(keyring.get_keyring)
    except KeyringTimeout as exc:
        raise KeyringUnavailable(str(exc), env_var) from None
    priority = getattr(backend, "priority", 0)
    name = type(backend).__module__ + "." + type(backend).__name__
    if priority is None or priority <= 0 or "fail" in name:
        raise KeyringUnavailable(f"the keyring backend is {name}", env_var)
    return keyring


def save_api_key(url: str, key: str, *, env_var: str = DEFAULT_API_KEY_ENV) -> None:
    """Keep the API key of the endpoint at `url` in the system keyring (never in a file).

    Raises KeyringUnavailable when there is no keyring (or it refuses), naming `env_var` as
    the place to give the key instead; InvalidEndpoint for a `url` that is not an endpoint;
    ValueError for an empty key or one with line breaks (a paste gone wrong).
    """
    key = key.strip()
    if not key or "\n" in key or "\r" in key:
        raise ValueError("The API key is empty or spans several lines; nothing was saved.")
    user = _api_key_user(url)
    keyring = _api_keyring(env_var)
    from keyring.errors import KeyringError

    try:
        _keyring_call(lambda: keyring.set_password(SERVICE, user, key))
    except KeyringTimeout as exc:
        raise KeyringUnavailable(str(exc), env_var) from None
    except (KeyringError, OSError) as exc:
        raise KeyringUnavailable(f"the keyring refused it: {exc}", env_var) from exc
    log.info("API key for %s saved in the keyring", user.removeprefix("api-key "))


def load_api_key(url: str) -> str | None:
    """The API key kept for the endpoint at `url`, or None: none saved, no keyring here (so
    none can have been saved), the keyring locked or failing, or `url` not an endpoint."""
    from broker.llm.endpoints import InvalidEndpoint

    try:
        user = _api_key_user(url)
        keyring = _api_keyring(DEFAULT_API_KEY_ENV)
    except (KeyringUnavailable, InvalidEndpoint):
        return None
    from keyring.errors import KeyringError

    try:
        stored = _keyring_call(lambda: keyring.get_password(SERVICE, user))
    except (KeyringTimeout, KeyringError, OSError) as exc:
        log.warning("the keyring could not be read for the API key: %s", exc)
        return None
    return str(stored) if stored else None


def delete_api_key(url: str, *, env_var: str = DEFAULT_API_KEY_ENV) -> bool:
    """Remove the endpoint's API key from the keyring; False when none was kept there.
    Raises KeyringUnavailable when there is no keyring to remove it from."""
    user = _api_key_user(url)
    keyring = _api_keyring(env_var)
    from keyring.errors import KeyringError, PasswordDeleteError

    def delete() -> bool:
        if keyring.get_password(SERVICE, user) is None:
            return False
        keyring.delete_password(SERVICE, user)
        return True

    try:
        return _keyring_call(delete)
    except KeyringTimeout as exc:
        raise KeyringUnavailable(str(exc), env_var) from None
    except PasswordDeleteError:
        return False
    except (KeyringError, OSError) as exc:
        raise KeyringUnavailable(f"the keyring refused it: {exc}", env_var) from exc


def api_keyring_problem(env_var: str = DEFAULT_API_KEY_ENV) -> str | None:
    """Why an API key cannot be saved here (the KeyringUnavailable message), or None when a
    keyring is there to take it. Asks nothing of the keyring but which backend it has."""
    try:
        _api_keyring(env_var)
    except KeyringUnavailable as exc:
        return str(exc)
    return None


# What Chamberlain keeps in the keyring for one home (besides API keys, kept per endpoint).
HOME_SECRETS = ("token-secret", "memory-key")


def forget_home_secrets(home: Path) -> list[str]:
    """Remove this home's install secret and memory key from the system keyring; the purposes
    removed ([] when none were there, or there is no usable keyring)."""
    removed: list[str] = []
    chosen = os.environ.get("PYTHON_KEYRING_BACKEND", "").strip()
    if chosen in _NO_KEYRING_BACKENDS:
        return removed
    try:
        import keyring
        from keyring.errors import KeyringError, PasswordDeleteError
    except ImportError:
        return removed
    for purpose in HOME_SECRETS:
        user = _keyring_user(home, purpose)

        def delete(user: str = user) -> bool:
            if keyring.get_password(SERVICE, user) is None:
                return False
            keyring.delete_password(SERVICE, user)
            return True

        try:
            if not _keyring_call(delete):
                continue
        except (KeyringTimeout, PasswordDeleteError, KeyringError, OSError) as exc:
            log.warning("the keyring kept %s: %s", purpose, exc)
            continue
        removed.append(purpose)
    return removed
