"""Read the pixels of a PNG with zlib alone (Pillow is not a dependency): enough to tell a blank
screenshot from a rendered page. Handles 8-bit RGB and RGBA, non-interlaced: what Chromium writes."""

from __future__ import annotations

import struct
import zlib
from collections import Counter
from pathlib import Path


def png_pixels(path: Path) -> tuple[int, int, Counter[tuple[int, ...]]]:
    """(width, height, count of each RGB colour)."""
    data = path.read_bytes()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError(f"{path} is not a PNG")
    position, chunks, header = 8, [], None
    while position < len(data):
        length, kind = struct.unpack(">I4s", data[position:position + 8])
        body = data[position + 8:position + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            chunks.append(body)
        position += 12 + length
    assert header is not None, "no IHDR chunk"
    width, height, depth, colour, _, _, interlace = header
    if depth != 8 or colour not in (2, 6) or interlace:
        raise ValueError(f"unsupported PNG: depth {depth}, colour type {colour}, interlace {interlace}")
    channels = 3 if colour == 2 else 4
    stride = width * channels
    raw = zlib.decompress(b"".join(chunks))
    previous = bytearray(stride)
    counts: Counter[tuple[int, ...]] = Counter()
    for row in range(height):
        start = row * (stride + 1)
        kind, line = raw[start], bytearray(raw[start + 1:start + 1 + stride])
        _unfilter(kind, line, previous, channels)
        for x in range(0, stride, channels):
            counts[(line[x], line[x + 1], line[x + 2])] += 1
        previous = line
    return width, height, counts


def _unfilter(kind: int, line: bytearray, up: bytearray, bpp: int) -> None:
    """Undo one row's PNG filter in place (None, Sub, Up, Average, Paeth)."""
    if kind == 0:
        return
    for i in range(len(line)):
        left = line[i - bpp] if i >= bpp else 0
        above = up[i]
        if kind == 1:
            line[i] = (line[i] + left) & 0xFF
        elif kind == 2:
            line[i] = (line[i] + above) & 0xFF
        elif kind == 3:
            line[i] = (line[i] + ((left + above) >> 1)) & 0xFF
        else:
            corner = up[i - bpp] if i >= bpp else 0
            estimate = left + above - corner
            a, b, c = abs(estimate - left), abs(estimate - above), abs(estimate - corner)
            line[i] = (line[i] + (left if a <= b and a <= c else above if b <= c else corner)) & 0xFF
