"""tools/telemetry.py: no dependency's telemetry, however Chamberlain starts (invariant 7).

onnxruntime 1.31.1, the OCR engine's runtime, writes a device id and queued usage events into
the home on its first run unless ORT_DISABLE_TELEMETRY=1 is set before it loads. Every test here
runs the real OCR engine in a real subprocess with a fresh scratch home (HOME, and
XDG_CACHE_HOME unset or inside it; an environment built from nothing, so no CI variable — which
would silence onnxruntime by itself — comes along) and looks at what was written.

The first test is the control: onnxruntime left alone, in a network namespace of its own so that
nothing can reach Microsoft, does write its folder. Without it the others would prove nothing.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator, Sequence
from functools import cache
from pathlib import Path

import pytest

from tests.support.cli import REPO, ask_json, make_user
from tests.support.xvfb import XVFB, Xvfb, running_xvfb
from tools import telemetry

ORT_FOLDER = Path(".cache", "Microsoft", "DeveloperTools", ".onnxruntime")
HOOK = REPO / "packaging" / "hooks" / "rthook_telemetry_off.py"

# Real OCR with none of Chamberlain's switches in between: an image with a known word, read by
# the OCR reader on onnxruntime (tools/ocr.py, which sets nothing itself); prints what it read.
BARE_OCR = """
from PIL import Image, ImageDraw
from tools.ocr import Reader
image = Image.new("RGB", (400, 100), "white")
ImageDraw.Draw(image).text((10, 30), "hello pelican", fill="black")
print(" ".join(box.text for box in Reader().read(image)))
"""

# The same image through the screen tools' OCR engine, without any front end.
TOOL_OCR = """
from PIL import Image, ImageDraw
from tools.screen import OCR
image = Image.new("RGB", (400, 100), "white")
ImageDraw.Draw(image).text((10, 30), "hello pelican", fill="black")
print(" ".join(line.text for line in OCR.read(image).lines))
"""


def everything_under(root: Path) -> set[Path]:
    """Every file, folder and link under `root` (links not followed)."""
    found: set[Path] = set()
    for folder, dirs, files in os.walk(root):
        found.update(Path(folder, name) for name in (*dirs, *files))
    return found


@cache
def offline_prefix() -> tuple[str, ...] | None:
    """A command prefix that runs a program in a new network namespace with no network, or None.

    Root can make one directly; anyone else needs unprivileged user namespaces.
    """
    unshare = shutil.which("unshare")
    if unshare is None:
        return None
    for prefix in ((unshare, "--net"), (unshare, "--user", "--map-root-user", "--net")):
        probe = subprocess.run([*prefix, "true"], capture_output=True, check=False)
        if probe.returncode == 0:
            return prefix
    return None


def scratch_env(home: Path, **extra: str) -> dict[str, str]:
    """An environment built from nothing: PATH, the scratch HOME, our code on the path."""
    return {"PATH": os.environ.get("PATH", ""), "HOME": str(home), "PYTHONPATH": str(REPO), **extra}


def run_python(
    code: str, env: dict[str, str], prefix: Sequence[str] = ()
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*prefix, sys.executable, "-c", code],
        cwd=env["HOME"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.fixture
def scratch_home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    return home


def test_onnxruntime_left_alone_writes_a_device_id_and_queued_events_into_the_home(
    scratch_home: Path,
) -> None:
    """The control: this is what the switch prevents. If this fails, onnxruntime no longer
    writes telemetry here (a new version?) and the tests below need a new control."""
    prefix = offline_prefix()
    if prefix is None:
        pytest.skip("no network namespace can be made here, and onnxruntime would upload")
    done = run_python(BARE_OCR, scratch_env(scratch_home), prefix)
    assert done.returncode == 0, done.stderr
    assert "pelican" in done.stdout
    folder = scratch_home / ORT_FOLDER
    assert (folder / "deviceid").is_file()
    assert (folder / "onnxruntime.db").is_file()


def test_the_screen_tools_ocr_engine_writes_nothing_into_the_home(scratch_home: Path) -> None:
    """tools/screen.py switches telemetry off itself: code that reaches the OCR engine without
    a front end (no `app` import) is covered too."""
    done = run_python(TOOL_OCR, scratch_env(scratch_home), offline_prefix() or ())
    assert done.returncode == 0, done.stderr
    assert "pelican" in done.stdout
    assert everything_under(scratch_home) == set()


def test_the_bundles_runtime_hook_turns_it_off_before_anything_loads(tmp_path: Path) -> None:
    """The PyInstaller runtime hook, run as the bundle runs it (before any other code), then
    bare onnxruntime: nothing in the home nor in an XDG cache folder inside it."""
    home = tmp_path / "home"
    cache_dir = home / "cache"
    cache_dir.mkdir(parents=True)
    code = f"import runpy; runpy.run_path({str(HOOK)!r})\n{BARE_OCR}"
    env = scratch_env(home, XDG_CACHE_HOME=str(cache_dir))
    done = run_python(code, env, offline_prefix() or ())
    assert done.returncode == 0, done.stderr
    assert "pelican" in done.stdout
    assert everything_under(home) == {cache_dir}


@pytest.mark.parametrize("front_end", ["app.launcher", "app.cli", "app.main"])
def test_every_front_end_turns_the_switches_on_whatever_the_environment_said(
    scratch_home: Path, front_end: str
) -> None:
    """Importing any front end sets every switch in the process environment, where onnxruntime
    reads it and programs started with that environment inherit it — a person's
    ORT_DISABLE_TELEMETRY=0 included (there is no opt-in)."""
    names = list(telemetry.SWITCHES)
    code = (
        f"import os, json, {front_end}\n"
        f"print(json.dumps({{name: os.environ.get(name) for name in {names!r}}}))"
    )
    env = scratch_env(scratch_home, ORT_DISABLE_TELEMETRY="0", QT_QPA_PLATFORM="offscreen")
    done = run_python(code, env)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == dict(telemetry.SWITCHES)


# --- the real CLI reading a real screen ----------------------------------------------------------

KNOWN = "Chamberlain osprey 6190"


@pytest.fixture
def screen() -> Iterator[Xvfb]:
    if XVFB is None:
        if os.environ.get("CI"):
            pytest.fail("Xvfb is not installed; scripts/setup.sh installs it")
        pytest.skip("Xvfb is not installed (scripts/setup.sh installs it with apt-get)")
    with running_xvfb(1280, 800) as server:
        server.show_text("notice", KNOWN)
        yield server


def test_reading_the_screen_with_the_cli_writes_nothing_outside_chamberlains_folder(
    tmp_path: Path, screen: Xvfb
) -> None:
    """`chamberlain ask "what's on my screen?"` as a person runs it: real capture, real OCR, in
    a fresh home. Afterwards everything new under the scratch folder is in Chamberlain's own
    folder — no `.cache/Microsoft`, nothing else."""
    user = make_user(tmp_path / "user")
    before = everything_under(tmp_path)

    proc, turn = ask_json(
        user,
        "what's on my screen?",
        "--llm",
        "none",
        "--approve",
        "screen_read=once",
        env={"DISPLAY": screen.display},
    )

    assert proc.returncode == 0, proc.stderr
    assert "osprey" in turn["reply"].lower()
    chamberlain = user / ".chamberlain"
    new = everything_under(tmp_path) - before
    assert {path for path in new if not path.is_relative_to(chamberlain)} == set()
    assert not (user / ".cache").exists()
