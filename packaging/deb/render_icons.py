"""Render the app icon (an SVG) to the PNG sizes of the hicolor icon theme, for the .deb.

Run by packaging/build.sh with the project's Python (PySide6 is already a dependency, so the
build needs no extra tool): `render_icons.py SOURCE.svg DEST_HICOLOR_DIR 16 32 48 ...` writes
DEST/<n>x<n>/apps/<name>.png for each size. It writes nothing else and exits 1 with a plain
message when the SVG cannot be read or a PNG cannot be written.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path


def main(argv: list[str]) -> int:
    if len(argv) < 3:
        sys.stderr.write("usage: render_icons.py SOURCE.svg DEST_HICOLOR_DIR SIZE...\n")
        return 2
    source, dest, sizes = Path(argv[0]), Path(argv[1]), [int(s) for s in argv[2:]]
    # No display is needed to paint into an image.
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtCore import Qt
    from PySide6.QtGui import QGuiApplication, QImage, QPainter
    from PySide6.QtSvg import QSvgRenderer

    app = QGuiApplication.instance() or QGuiApplication(["render_icons"])
    renderer = QSvgRenderer(str(source))
    if not renderer.isValid():
        sys.stderr.write(f"render_icons: {source} is not a readable SVG\n")
        return 1
    for size in sizes:
        image = QImage(size, size, QImage.Format.Format_ARGB32_Premultiplied)
        image.fill(Qt.GlobalColor.transparent)
        painter = QPainter(image)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        renderer.render(painter)
        painter.end()
        target = dest / f"{size}x{size}" / "apps" / f"{source.stem}.png"
        target.parent.mkdir(parents=True, exist_ok=True)
        if not image.save(str(target), "PNG"):
            sys.stderr.write(f"render_icons: could not write {target}\n")
            return 1
    del app
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
