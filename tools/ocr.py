"""Text on a screenshot, read with the PP-OCRv4 models (text detection and recognition, ONNX) that
the rapidocr-onnxruntime wheel ships, run with onnxruntime, NumPy and Pillow — without OpenCV.

Why not rapidocr's own pipeline: it needs OpenCV for a dozen image operations, and OpenCV's
wheel is ~150 MiB of the installed package (its FFmpeg and codecs included) for what Pillow,
NumPy, shapely and pyclipper (all already bundled) do here. rapidocr's Python package is never
imported (its __init__ imports cv2): only its model files are used, found with find_spec.

The steps, for one image:
1. Detection: the image (first brought down to DET_MAX_SIDE if it is larger) scaled so that its
   short side is at least DET_MIN_SIDE, each side a multiple of 32, normalised as the model was
   trained (BGR, (x/255 - 0.5) / 0.5); the model gives each pixel the probability of text.
2. Boxes: pixels above DET_THRESHOLD, grown by one pixel right and down, form blobs (8-connected,
   found by joining runs row by row); each blob's smallest rotated rectangle is kept when the
   mean probability inside it is at least BOX_THRESHOLD, then widened by UNCLIP_RATIO (area ×
   ratio / perimeter, with pyclipper) as the model's training shrank its labels, and mapped back
   to the image.
3. Recognition: each box cut out straight (Pillow's quadrilateral transform), scaled to 48 px
   high, read in batches of six by the recognition model; the best class per step, repeats and
   blanks dropped (CTC), gives the text, and the mean probability of its characters the
   confidence.
Screens show upright text, so the text-direction classifier rapidocr also runs is left out.
"""

from __future__ import annotations

import importlib.util
import math
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image, ImageDraw

MODEL_PACKAGE = "rapidocr_onnxruntime"
DET_MODEL = "ch_PP-OCRv4_det_infer.onnx"
REC_MODEL = "ch_PP-OCRv4_rec_infer.onnx"

DET_MIN_SIDE = 736
DET_MAX_SIDE = 2000
DET_THRESHOLD = 0.3
BOX_THRESHOLD = 0.5
UNCLIP_RATIO = 1.6
MAX_BOXES = 1000
MIN_BOX_SIDE = 3
REC_HEIGHT = 48
REC_WIDTH = 320
REC_BATCH = 6


@dataclass(frozen=True)
class TextBox:
    """A line of text: its four corners (top-left, top-right, bottom-right, bottom-left, in the
    image's pixels), the text, and the mean probability of its characters."""

    corners: tuple[tuple[float, float], ...]
    text: str
    confidence: float


def model_folder() -> Path:
    """The folder holding the ONNX models (the rapidocr wheel's `models/`), found without
    importing the package."""
    try:
        spec = importlib.util.find_spec(MODEL_PACKAGE)
    except (ImportError, ValueError):
        spec = None
    for place in (spec.submodule_search_locations or []) if spec is not None else []:
        folder = Path(place) / "models"
        if (folder / DET_MODEL).is_file() and (folder / REC_MODEL).is_file():
            return folder
    raise FileNotFoundError(f"the OCR models ({DET_MODEL}, {REC_MODEL}) are not installed")


class Reader:
    """The two models, loaded once; `read(image)` gives the text boxes. One image at a time."""

    def __init__(self, folder: Path | None = None) -> None:
        import onnxruntime

        folder = folder or model_folder()
        options = onnxruntime.SessionOptions()
        options.log_severity_level = 3
        providers = ["CPUExecutionProvider"]
        self._det = onnxruntime.InferenceSession(
            str(folder / DET_MODEL), options, providers=providers
        )
        self._rec = onnxruntime.InferenceSession(
            str(folder / REC_MODEL), options, providers=providers
        )
        listed = self._rec.get_modelmeta().custom_metadata_map.get("character", "")
        # Class 0 is CTC's blank; then the model's characters; the last class is a space.
        self._classes = ["", *listed.splitlines(), " "]
        self._lock = threading.Lock()

    def read(self, image: Image.Image) -> list[TextBox]:
        work = image.convert("RGB")
        # A very large image is read at DET_MAX_SIDE (the models' text sizes), the boxes given in
        # the image's own pixels.
        scale = min(1.0, DET_MAX_SIDE / max(work.size))
        if scale < 1.0:
            size = (max(1, round(work.width * scale)), max(1, round(work.height * scale)))
            work = work.resize(size, Image.Resampling.BILINEAR)
        with self._lock:
            boxes = self._detect(work)
            texts = self._recognise([_cut(work, box) for box in boxes])
        return [
            TextBox(tuple((float(x) / scale, float(y) / scale) for x, y in box), text, confidence)
            for box, (text, confidence) in zip(boxes, texts, strict=True)
        ]

    # -- detection --------------------------------------------------------------------------------

    def _detect(self, image: Image.Image) -> list[np.ndarray]:
        width, height = image.size
        scale = max(1.0, DET_MIN_SIDE / min(width, height))
        net_w = max(32, round(width * scale / 32) * 32)
        net_h = max(32, round(height * scale / 32) * 32)
        resized = image.resize((net_w, net_h), Image.Resampling.BILINEAR)
        batch = _normalised(resized)[np.newaxis]
        (prob,) = self._det.run(None, {self._det.get_inputs()[0].name: batch})
        prob = prob[0, 0]
        mask = prob > DET_THRESHOLD
        grown = mask.copy()  # dilated by a 2×2 square, as the model's post-processing expects
        grown[:, 1:] |= mask[:, :-1]
        grown[1:, :] |= mask[:-1, :]
        grown[1:, 1:] |= mask[:-1, :-1]
        ratio_x, ratio_y = net_w / width, net_h / height
        boxes = []
        for points in _blobs(grown)[:MAX_BOXES]:
            rect = _min_rect(points)
            if rect is None or _short_side(rect) < MIN_BOX_SIDE:
                continue
            if _mean_inside(prob, rect) < BOX_THRESHOLD:
                continue
            widened = _unclip(rect)
            if widened is None or _short_side(widened) < MIN_BOX_SIDE + 2:
                continue
            widened[:, 0] = np.clip(widened[:, 0] / ratio_x, 0, width)
            widened[:, 1] = np.clip(widened[:, 1] / ratio_y, 0, height)
            boxes.append(widened)
        boxes.sort(key=lambda b: (round(float(b[0, 1]) / 10), float(b[0, 0])))
        return boxes

    # -- recognition ------------------------------------------------------------------------------

    def _recognise(self, crops: list[Image.Image]) -> list[tuple[str, float]]:
        results: list[tuple[str, float]] = [("", 0.0)] * len(crops)
        order = sorted(range(len(crops)), key=lambda i: crops[i].width / crops[i].height)
        for start in range(0, len(order), REC_BATCH):
            chunk = order[start : start + REC_BATCH]
            ratios = [crops[i].width / crops[i].height for i in chunk]
            width = int(REC_HEIGHT * max(REC_WIDTH / REC_HEIGHT, *ratios))
            batch = np.zeros((len(chunk), 3, REC_HEIGHT, width), dtype=np.float32)
            for row, (i, ratio) in enumerate(zip(chunk, ratios, strict=True)):
                fitted = min(width, math.ceil(REC_HEIGHT * ratio))
                scaled = crops[i].resize((fitted, REC_HEIGHT), Image.Resampling.BILINEAR)
                batch[row, :, :, :fitted] = _normalised(scaled)
            (probs,) = self._rec.run(None, {self._rec.get_inputs()[0].name: batch})
            for row, i in enumerate(chunk):
                results[i] = self._decode(probs[row])
        return results

    def _decode(self, steps: np.ndarray) -> tuple[str, float]:
        best = steps.argmax(axis=1)
        keep = best != 0
        keep[1:] &= best[1:] != best[:-1]
        if not keep.any():
            return "", 0.0
        chars = [self._classes[k] if k < len(self._classes) else "" for k in best[keep]]
        confidence = float(steps.max(axis=1)[keep].mean())
        return "".join(chars), confidence


def _normalised(image: Image.Image) -> np.ndarray:
    """CHW float32 in BGR order, (x / 255 - 0.5) / 0.5, as PaddleOCR's models were trained."""
    pixels = np.asarray(image, dtype=np.float32)[:, :, ::-1]
    return ((pixels / 127.5) - 1.0).transpose(2, 0, 1)


def _blobs(mask: np.ndarray) -> list[np.ndarray]:
    """The 8-connected blobs of `mask`, largest first, each as the (x, y) of its runs' two ends
    (every row's left- and rightmost pixels: the points its outline's hull is made of)."""
    height = mask.shape[0]
    edges = np.diff(np.pad(mask.astype(np.int8), ((0, 0), (1, 1))), axis=1)
    rows, starts = np.nonzero(edges == 1)
    _rows, ends = np.nonzero(edges == -1)  # exclusive; in the same order as the starts
    count = len(rows)
    if count == 0:
        return []
    parent = list(range(count))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    # Runs of one row are consecutive; a run touches one of the row above when they overlap
    # or meet at a corner.
    row_first = np.searchsorted(rows, np.arange(height + 1))
    starts_l, ends_l = starts.tolist(), ends.tolist()
    for r in range(1, height):
        a, a_end = int(row_first[r - 1]), int(row_first[r])
        b, b_end = a_end, int(row_first[r + 1])
        while a < a_end and b < b_end:
            if starts_l[a] <= ends_l[b] and starts_l[b] <= ends_l[a]:
                ra, rb = root(a), root(b)
                if ra != rb:
                    parent[rb] = ra
            if ends_l[a] < ends_l[b]:
                a += 1
            else:
                b += 1
    groups: dict[int, list[int]] = {}
    for i in range(count):
        groups.setdefault(root(i), []).append(i)
    blobs = []
    for members in groups.values():
        index = np.array(members)
        ys = rows[index]
        xs_left, xs_right = starts[index], ends[index] - 1
        points = np.concatenate(
            [np.stack([xs_left, ys], axis=1), np.stack([xs_right, ys], axis=1)]
        ).astype(np.float64)
        blobs.append(points)
    blobs.sort(key=len, reverse=True)
    return blobs


def _min_rect(points: np.ndarray) -> np.ndarray | None:
    """The smallest rotated rectangle around `points`, corners ordered top-left, top-right,
    bottom-right, bottom-left; None for a blob too thin to have one."""
    from shapely.geometry import MultiPoint, Polygon

    shape = MultiPoint(points).minimum_rotated_rectangle
    if not isinstance(shape, Polygon):
        return None
    return _ordered(np.array(shape.exterior.coords[:4], dtype=np.float64))


def _ordered(corners: np.ndarray) -> np.ndarray:
    by_x = corners[np.argsort(corners[:, 0], kind="stable")]
    left, right = by_x[:2], by_x[2:]
    top_left, bottom_left = left[np.argsort(left[:, 1], kind="stable")]
    top_right, bottom_right = right[np.argsort(right[:, 1], kind="stable")]
    return np.array([top_left, top_right, bottom_right, bottom_left])


def _short_side(rect: np.ndarray) -> float:
    return float(min(np.linalg.norm(rect[0] - rect[1]), np.linalg.norm(rect[1] - rect[2])))


def _mean_inside(prob: np.ndarray, rect: np.ndarray) -> float:
    height, width = prob.shape
    x0, y0 = (int(max(0, math.floor(rect[:, i].min()))) for i in (0, 1))
    x1 = int(min(width - 1, math.ceil(rect[:, 0].max())))
    y1 = int(min(height - 1, math.ceil(rect[:, 1].max())))
    if x1 < x0 or y1 < y0:
        return 0.0
    mask = Image.new("1", (x1 - x0 + 1, y1 - y0 + 1), 0)
    ImageDraw.Draw(mask).polygon([(x - x0, y - y0) for x, y in rect.tolist()], fill=1)
    inside = np.asarray(mask, dtype=bool)
    region = prob[y0 : y1 + 1, x0 : x1 + 1]
    return float(region[inside].mean()) if inside.any() else 0.0


def _unclip(rect: np.ndarray) -> np.ndarray | None:
    """`rect` widened by area × UNCLIP_RATIO / perimeter, as a rotated rectangle again."""
    import pyclipper
    from shapely.geometry import Polygon

    shape = Polygon(rect)
    if shape.length == 0:
        return None
    distance = shape.area * UNCLIP_RATIO / shape.length
    offset = pyclipper.PyclipperOffset()
    offset.AddPath(
        rect.round().astype(int).tolist(), pyclipper.JT_ROUND, pyclipper.ET_CLOSEDPOLYGON
    )
    grown: Any = offset.Execute(distance)
    if len(grown) != 1:
        return None
    return _min_rect(np.array(grown[0], dtype=np.float64))


def _cut(image: Image.Image, rect: np.ndarray) -> Image.Image:
    """The box cut out and turned straight; a tall one (a vertical line of text) laid down."""
    (tl, tr, br, bl) = rect
    width = max(1, round(max(np.linalg.norm(tr - tl), np.linalg.norm(br - bl))))
    height = max(1, round(max(np.linalg.norm(bl - tl), np.linalg.norm(br - tr))))
    quad = (*tl, *bl, *br, *tr)  # Pillow's order: upper left, lower left, lower right, upper right
    cut = image.transform(
        (width, height), Image.Transform.QUAD, tuple(float(v) for v in quad),
        Image.Resampling.BICUBIC,
    )  # fmt: skip
    if height / width >= 1.5:
        cut = cut.transpose(Image.Transpose.ROTATE_90)
    return cut
