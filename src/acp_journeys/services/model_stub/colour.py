"""The colour of an image, as a word: what the stub "sees" in the image it was sent.

Rules of this module: pure functions of image bytes. Pillow decodes any format it knows (PNG,
JPEG, WebP, GIF); the average colour of the visible pixels is named by the nearest of a few
colour words, so lossy JPEG noise or a resize by the agent does not change the answer.
"""

from __future__ import annotations

import io
from dataclasses import dataclass

COLOUR_NAMES: tuple[tuple[str, tuple[int, int, int]], ...] = (
    ("red", (220, 20, 20)), ("green", (20, 160, 20)), ("blue", (20, 20, 220)),
    ("yellow", (235, 225, 20)), ("orange", (245, 140, 0)), ("purple", (130, 20, 140)),
    ("pink", (250, 160, 190)), ("cyan", (20, 220, 220)), ("magenta", (230, 20, 230)),
    ("brown", (140, 80, 30)), ("white", (250, 250, 250)), ("black", (5, 5, 5)),
    ("gray", (128, 128, 128)),
)


@dataclass(frozen=True)
class Seen:
    colour: str
    average: tuple[int, int, int]
    size: tuple[int, int]


def nearest_name(rgb: tuple[float, float, float]) -> str:
    def distance(ref: tuple[int, int, int]) -> float:
        return sum((a - b) ** 2 for a, b in zip(rgb, ref))
    return min(COLOUR_NAMES, key=lambda item: distance(item[1]))[0]


def look(data: bytes) -> Seen | None:
    """The average colour of an image, or None when Pillow cannot decode the bytes."""
    from PIL import Image, ImageStat  # loaded here: only image requests need it

    try:
        with Image.open(io.BytesIO(data)) as image:
            image.load()
            size = image.size
            rgba = image.convert("RGBA")
    except Exception:  # Pillow raises many kinds for bad data; all mean "cannot see it"
        return None
    # Only the visible pixels count: a transparent border is no colour of the image.
    mask = rgba.getchannel("A").point(lambda a: 255 if a >= 128 else 0)
    if mask.getbbox() is None:
        return None
    mean = ImageStat.Stat(rgba.convert("RGB"), mask=mask).mean
    average = (round(mean[0]), round(mean[1]), round(mean[2]))
    return Seen(nearest_name(average), average, size)
