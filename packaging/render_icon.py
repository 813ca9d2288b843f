"""Render Chamberlain's SVG icon into the raster icons each package needs.

    python render_icon.py SVG hicolor DIR [SIZE...]   Linux (.deb): DIR/<n>x<n>/apps/<svg name>.png
                                                      for each size (16 32 48 64 128 256 unless
                                                      given), the hicolor icon theme's layout
    python render_icon.py SVG ico OUT.ico             Windows: one .ico holding 16 to 256 px
    python render_icon.py SVG iconset DIR             macOS: DIR/icon_16x16.png ...
                                                      icon_512x512@2x.png, for `iconutil -c icns`

Each size is rendered from the vector by Qt's SVG renderer (PySide6, already in the build venv),
not scaled down from one big bitmap: small sizes stay sharp. Neither `sips` nor Pillow can read
SVG, which is why this exists. It runs on the offscreen Qt platform, so it needs no display.

Run here (Linux) for every output; the builds that call it for Windows and macOS (windows/build.ps1,
macos/build.sh) were not.
It must never write anywhere but the output it is given.
"""

from __future__ import annotations

import io
import os
import sys
from pathlib import Path

ICO_SIZES = (16, 20, 24, 32, 40, 48, 64, 128, 256)
# iconutil's names: each point size at 1x and 2x.
ICONSET = {
    f"icon_{points}x{points}{suffix}.png": points * scale
    for points in (16, 32, 128, 256, 512)
    for suffix, scale in (("", 1), ("@2x", 2))
}


def _render(svg: Path, size: int) -> bytes:
    """The SVG drawn into a size×size transparent PNG (its aspect ratio kept, centred)."""
    from PySide6.QtCore import QBuffer, QByteArray, QIODevice, QRectF
    from PySide6.QtGui import QImage, QPainter
    from PySide6.QtSvg import QSvgRenderer

    renderer = QSvgRenderer(str(svg))
    if not renderer.isValid():
        raise SystemExit(f"render_icon: {svg} is not an SVG Qt can read")
    image = QImage(size, size, QImage.Format.Format_ARGB32_Premultiplied)
    image.fill(0)
    box = renderer.viewBoxF()
    scale = size / max(box.width(), box.height())
    width, height = box.width() * scale, box.height() * scale
    painter = QPainter(image)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    renderer.render(painter, QRectF((size - width) / 2, (size - height) / 2, width, height))
    painter.end()
    data = QByteArray()
    buffer = QBuffer(data)
    buffer.open(QIODevice.OpenModeFlag.WriteOnly)
    image.save(buffer, "PNG")
    return bytes(data.data())


def write_ico(svg: Path, out: Path) -> None:
    from PIL import Image

    images = [Image.open(io.BytesIO(_render(svg, size))) for size in ICO_SIZES]
    largest = images[-1]
    largest.save(out, format="ICO", sizes=[(s, s) for s in ICO_SIZES], append_images=images[:-1])


def write_iconset(svg: Path, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for name, pixels in ICONSET.items():
        (out / name).write_bytes(_render(svg, pixels))


HICOLOR_SIZES = (16, 32, 48, 64, 128, 256)


def write_hicolor(svg: Path, out: Path, sizes: tuple[int, ...] = HICOLOR_SIZES) -> None:
    for size in sizes:
        target = out / f"{size}x{size}" / "apps" / f"{svg.stem}.png"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(_render(svg, size))


def main(argv: list[str]) -> int:
    kinds = ("hicolor", "ico", "iconset")
    if len(argv) < 3 or argv[1] not in kinds or (argv[1] != "hicolor" and len(argv) != 3):
        print(__doc__, file=sys.stderr)
        return 2
    svg, kind, out = Path(argv[0]), argv[1], Path(argv[2])
    try:
        sizes = tuple(int(size) for size in argv[3:]) or HICOLOR_SIZES
    except ValueError:
        print(f"render_icon: sizes are whole numbers, not {argv[3:]}", file=sys.stderr)
        return 2
    if not svg.is_file():
        print(f"render_icon: {svg} does not exist", file=sys.stderr)
        return 1
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtGui import QGuiApplication

    app = QGuiApplication.instance() or QGuiApplication([sys.argv[0]])
    if kind == "hicolor":
        write_hicolor(svg, out, sizes)
    else:
        (write_ico if kind == "ico" else write_iconset)(svg, out)
    del app
    print(f"render_icon: wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
