"""Choosing llama.cpp's CPU build (`broker/llm/cpu_variants.py`, with the worker that loads it).

A build that cannot run on this CPU is played by a real shared library compiled here, carrying
the two functions ggml asks of a CPU build, whose code dies with a real illegal instruction
(`__builtin_trap`, x86's ud2) — exactly what an AVX-512 or AMX build does on a processor whose
kernel never enabled those instructions. It sits beside the real builds in a folder of links,
with the highest score, so it is the one a naive loader would pick.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from broker.llm.cpu_variants import (
    VariantRecord,
    build_signature,
    cpu_signature,
    load_record,
    save_record,
    variant_files,
)
from broker.llm.embedded import EmbeddedChatModel, bundled_model_path, runtime_available

# Scored far above any real build; faults when llama.cpp initialises it.
CRASH_ON_LOAD = r"""
#include <stdio.h>
#include <stdlib.h>
int ggml_backend_score(void) {
    const char *mark = getenv("CHAMBERLAIN_TEST_SCORED");
    if (mark) { FILE *f = fopen(mark, "a"); if (f) { fputs("scored\n", f); fclose(f); } }
    return 1 << 24;
}
void *ggml_backend_init(void) { __builtin_trap(); return 0; }
"""
# Faults as soon as it is loaded, before anyone can ask its score.
CRASH_WHEN_OPENED = r"""
__attribute__((constructor)) static void boom(void) { __builtin_trap(); }
int ggml_backend_score(void) { return 1 << 25; }
"""

real_builds = variant_files()
needs_model = pytest.mark.skipif(
    bundled_model_path() is None or not runtime_available() or not real_builds,
    reason="needs llama-cpp-python built with its CPU variants (scripts/setup.sh) and the weights",
)


def compile_library(source: str, path: Path) -> Path:
    compiler = shutil.which("gcc") or shutil.which("cc")
    if compiler is None:
        pytest.skip("no C compiler to build the crashing CPU build with")
    src = path.with_suffix(".c")
    src.write_text(source)
    subprocess.run([compiler, "-shared", "-fPIC", "-O0", "-o", str(path), str(src)], check=True)
    return path


def folder_with(tmp_path: Path, **fakes: str) -> Path:
    """A folder of links to the real CPU builds plus the fake ones (name → C source)."""
    folder = tmp_path / "builds"
    folder.mkdir()
    for path in real_builds.values():
        (folder / path.name).symlink_to(path)
    for name, source in fakes.items():
        compile_library(source, folder / f"libggml-cpu-{name}.so")
    return folder


@needs_model
def test_a_build_that_crashes_with_an_illegal_instruction_is_skipped_and_remembered(
    tmp_path, monkeypatch
):
    folder = folder_with(tmp_path, zzcrash=CRASH_ON_LOAD)
    marks = tmp_path / "scored.txt"
    monkeypatch.setenv("CHAMBERLAIN_TEST_SCORED", str(marks))
    record = tmp_path / "llm-cpu.json"

    model = EmbeddedChatModel(
        max_reply_tokens=8, timeout_s=300, record_path=record, variant_folders=[folder]
    )
    try:
        reply = model.chat([{"role": "user", "content": "Hi!"}])
        assert reply.content.strip()
        assert model.variant in real_builds
    finally:
        model.close()
    saved = json.loads(record.read_text())
    assert saved["failed"]["zzcrash"] == "an illegal instruction"
    assert saved["working"] == model.variant
    touched = marks.read_text().count("scored")
    assert touched >= 1

    # The next start on this machine goes straight to the build that worked: nothing is
    # scored or probed again, and the crashing build is never touched.
    again = EmbeddedChatModel(
        max_reply_tokens=8, timeout_s=300, record_path=record, variant_folders=[folder]
    )
    try:
        assert again.chat([{"role": "user", "content": "Hi!"}]).content.strip()
        assert again.variant == saved["working"]
    finally:
        again.close()
    assert marks.read_text().count("scored") == touched


@needs_model
def test_a_build_that_crashes_as_soon_as_it_is_opened_is_skipped_too(tmp_path):
    folder = folder_with(tmp_path, zzopen=CRASH_WHEN_OPENED)
    record = tmp_path / "llm-cpu.json"
    model = EmbeddedChatModel(
        max_reply_tokens=8, timeout_s=300, record_path=record, variant_folders=[folder]
    )
    try:
        assert model.chat([{"role": "user", "content": "Hi!"}]).content.strip()
    finally:
        model.close()
    saved = json.loads(record.read_text())
    assert "zzopen" in saved["failed"]
    assert saved["working"] in real_builds


@needs_model
def test_when_no_build_runs_the_call_says_so_and_names_what_crashed(tmp_path):
    folder = tmp_path / "builds"
    folder.mkdir()
    compile_library(CRASH_ON_LOAD, folder / "libggml-cpu-zzcrash.so")
    model = EmbeddedChatModel(
        max_reply_tokens=8, timeout_s=300, record_path=None, variant_folders=[folder]
    )
    try:
        from broker.llm.base import ModelUnavailable

        with pytest.raises(ModelUnavailable) as caught:
            model.chat([{"role": "user", "content": "Hi!"}])
        message = str(caught.value)
        assert "None of llama.cpp's CPU builds runs on this computer" in message
        assert "zzcrash (an illegal instruction)" in message
        assert "local model server" in message
    finally:
        model.close()


@needs_model
def test_doctor_runs_the_probe_and_names_the_build_that_works(tmp_path):
    from tests.support.cli import make_user, run_cli

    user = make_user(tmp_path / "user")
    proc = run_cli(user, "doctor", "--json", env={"CHAMBERLAIN_LLM__EMBEDDED_FALLBACK": "true"})
    checks = {check["name"]: check for check in json.loads(proc.stdout)}
    backend = checks["model backend"]
    assert backend["ok"] is True, backend
    assert "CPU build" in backend["detail"]
    assert "-token probe" in backend["detail"]
    working = [name for name in real_builds if f"llama.cpp's {name} CPU build" in backend["detail"]]
    assert len(working) == 1, backend["detail"]


# --- the record --------------------------------------------------------------------------------


def test_a_record_from_another_machine_or_build_teaches_nothing(tmp_path):
    path = tmp_path / "llm-cpu.json"
    save_record(path, VariantRecord(cpu="other", build="b", working="haswell", failed={"x": "y"}))
    fresh = load_record(path, cpu="mine", build="b")
    assert (fresh.working, fresh.failed) == (None, {})
    fresh = load_record(path, cpu="other", build="another")
    assert (fresh.working, fresh.failed) == (None, {})
    same = load_record(path, cpu="other", build="b")
    assert (same.working, same.failed) == ("haswell", {"x": "y"})


@pytest.mark.parametrize(
    "content",
    [b"", b"{", b"[]", b'{"format": 1, "cpu": 3}', b"x" * 70_000, b'{"format": 99}'],
)
def test_an_unreadable_record_is_a_fresh_start(tmp_path, content):
    path = tmp_path / "llm-cpu.json"
    path.write_bytes(content)
    record = load_record(path, cpu="c", build="b")
    assert (record.working, record.failed) == (None, {})


def test_a_planted_record_can_only_name_builds_that_are_installed(tmp_path):
    """The record holds names, never paths: a name that is not an installed build is no
    candidate, and the working one is tried first only among installed ones."""
    record = VariantRecord(cpu="c", build="b", working="../../tmp/evil", failed={})
    assert record.candidates({"haswell": 3, "sse42": 1}) == ["haswell", "sse42"]
    record = VariantRecord(cpu="c", build="b", working="sse42", failed={"haswell": "crash"})
    assert record.candidates({"haswell": 3, "sse42": 1, "x64": 0}) == ["sse42"]


def test_the_signatures_change_with_the_processor_and_the_build(tmp_path):
    lib = tmp_path / "libggml-cpu-haswell.so"
    lib.write_bytes(b"a")
    first = build_signature(variant_files([tmp_path]))
    lib.write_bytes(b"ab")
    assert build_signature(variant_files([tmp_path])) != first
    assert variant_files([tmp_path]) == {"haswell": lib}
    assert len(cpu_signature()) == 24
