"""tools/ocr.py: the PP-OCR models run without OpenCV. Real models, real onnxruntime, images drawn
here with a real font; the blob finder checked against a plain flood fill on random masks.

The recognition model (PP-OCRv4, trained mostly on Chinese) often leaves out the spaces between
English words, with rapidocr's own pipeline too ("Quarterlybudget 2026" there, for the first
image below): the texts are compared without spaces."""

from __future__ import annotations

from collections import deque

import numpy as np
import pytest
from PIL import Image, ImageDraw, ImageFont

from tools import ocr

FONT = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"


@pytest.fixture(scope="module")
def reader() -> ocr.Reader:
    try:
        return ocr.Reader()
    except FileNotFoundError as exc:
        pytest.skip(str(exc))


def _drawn(lines: list[tuple[str, tuple[int, int], int]], size=(900, 500)) -> Image.Image:
    image = Image.new("RGB", size, "white")
    draw = ImageDraw.Draw(image)
    for text, at, points in lines:
        draw.text(at, text, fill="black", font=ImageFont.truetype(FONT, points))
    return image


def test_lines_of_text_are_read_with_their_boxes(reader: ocr.Reader) -> None:
    image = _drawn([("Quarterly budget 2026", (40, 40), 28), ("invoice-4471.pdf", (60, 200), 18),
                    ("Delete the old files?", (300, 380), 22)])  # fmt: skip
    found = reader.read(image)
    texts = [box.text.replace(" ", "") for box in found]
    assert texts == ["Quarterlybudget2026", "invoice-4471.pdf", "Deletetheoldfiles?"]
    assert all(box.confidence > 0.9 for box in found)
    # The first line's box holds where it was drawn (left 40, top ~40, 28 pt high).
    xs = [x for x, _ in found[0].corners]
    ys = [y for _, y in found[0].corners]
    assert 25 <= min(xs) <= 45
    assert 30 <= min(ys) <= 50
    assert 60 <= max(ys) <= 85


def test_light_text_on_a_dark_window_is_read(reader: ocr.Reader) -> None:
    image = Image.new("RGB", (700, 200), (30, 30, 30))
    ImageDraw.Draw(image).text((30, 60), "Terminal: 3 tests failed", fill=(230, 230, 230),
                               font=ImageFont.truetype(FONT, 24))  # fmt: skip
    assert [box.text.replace(" ", "") for box in reader.read(image)] == ["Terminal:3testsfailed"]


def test_a_blank_image_has_no_text(reader: ocr.Reader) -> None:
    assert reader.read(Image.new("RGB", (800, 600), "white")) == []


def test_a_very_large_image_is_read_and_boxed_in_its_own_pixels(reader: ocr.Reader) -> None:
    image = _drawn([("Wide desktop", (3000, 1500), 60)], size=(3840, 2160))
    (box,) = reader.read(image)
    assert box.text.replace(" ", "") == "Widedesktop"
    assert min(x for x, _ in box.corners) > 2900


def _flood_count(mask: np.ndarray) -> int:
    seen = np.zeros_like(mask, dtype=bool)
    count = 0
    height, width = mask.shape
    for y0, x0 in zip(*np.nonzero(mask), strict=True):
        if seen[y0, x0]:
            continue
        count += 1
        queue = deque([(y0, x0)])
        seen[y0, x0] = True
        while queue:
            y, x = queue.popleft()
            for dy in (-1, 0, 1):
                for dx in (-1, 0, 1):
                    ny, nx = y + dy, x + dx
                    if 0 <= ny < height and 0 <= nx < width and mask[ny, nx] and not seen[ny, nx]:
                        seen[ny, nx] = True
                        queue.append((ny, nx))
    return count


@pytest.mark.parametrize("seed", range(25))
def test_blobs_are_the_8_connected_components(seed: int) -> None:
    rng = np.random.default_rng(seed)
    mask = rng.random((40, 60)) < rng.uniform(0.05, 0.6)
    blobs = ocr._blobs(mask)
    assert len(blobs) == _flood_count(mask)
    # Every run end lies on the mask, and each blob's points are its own.
    for points in blobs:
        assert mask[points[:, 1].astype(int), points[:, 0].astype(int)].all()
    assert sum(len(p) for p in blobs) == 2 * int(
        np.count_nonzero(np.diff(np.pad(mask.astype(np.int8), ((0, 0), (1, 0))), axis=1) == 1)
    )


def test_diagonal_neighbours_are_one_blob() -> None:
    mask = np.zeros((4, 4), dtype=bool)
    mask[0, 0] = mask[1, 1] = mask[2, 2] = True
    mask[0, 3] = True
    assert len(ocr._blobs(mask)) == 2
