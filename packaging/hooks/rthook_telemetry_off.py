"""PyInstaller runtime hook: our dependencies' telemetry is off before any of them can load.

Runtime hooks run before the bundle's entry script imports anything, so this holds even if a
later change made the entry point import a dependency before the `app` package (which sets the
same switches). It sets the switches of tools/telemetry.py (onnxruntime's ORT_DISABLE_TELEMETRY
among them) in this process's environment, where onnxruntime reads them and every program the
bundle starts inherits them. It must never import anything but that stdlib-only module.
"""

from tools import telemetry

telemetry.switch_off()
