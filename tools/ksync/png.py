"""A minimal PNG writer (pure Python: zlib + struct) and the data-loss heatmap of issue 4.

What this is: an encoder for 8-bit RGB PNG images (one IDAT chunk, filter type 0 on every
scanline) and ``heatmap_png``, which draws a grid of values in [0, 1] as cells shaded from
white (0) to red (1).  It serves the loss map of Small & Manley 1997 section 6.4 (serial
characters lost while a long PIO disk handler runs): rows = baud rates, columns = PIO
sectors per disk interrupt.  No measurement here; the numbers come from irq_loss rows
(docs/protocol.md section 5).  No matplotlib: the report must build from the standard
library alone.

Public API: ``encode_rgb(width, height, pixels) -> bytes``, ``shade(fraction)``,
``heatmap_png(grid, cell=32, gap=1) -> bytes``, ``write_png(path, data)``, ``MISSING``,
``GAP``.
"""
from __future__ import annotations

import struct
import zlib
from pathlib import Path
from typing import Sequence

SIGNATURE = b"\x89PNG\r\n\x1a\n"
WHITE = (255, 255, 255)
RED = (255, 0, 0)
MISSING = (200, 200, 200)   # a cell with no measurement
GAP = (128, 128, 128)       # grid lines between cells

RGB = tuple[int, int, int]


def _chunk(kind: bytes, payload: bytes) -> bytes:
    crc = zlib.crc32(kind + payload) & 0xFFFFFFFF
    return struct.pack(">I", len(payload)) + kind + payload + struct.pack(">I", crc)


def encode_rgb(width: int, height: int, pixels: Sequence[Sequence[RGB]]) -> bytes:
    """PNG bytes for ``height`` rows of ``width`` (r, g, b) tuples, 0..255 each."""
    if width < 1 or height < 1:
        raise ValueError(f"PNG size must be at least 1x1 (got {width}x{height})")
    if len(pixels) != height or any(len(r) != width for r in pixels):
        raise ValueError("pixel rows do not match the width and height")
    raw = bytearray()
    for row in pixels:
        raw.append(0)  # filter type 0 (None)
        for r, g, b in row:
            raw += bytes((r, g, b))
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)  # 8-bit truecolour
    return (SIGNATURE + _chunk(b"IHDR", ihdr) + _chunk(b"IDAT", zlib.compress(bytes(raw), 9))
            + _chunk(b"IEND", b""))


def shade(fraction: float | None) -> RGB:
    """White at 0, red at 1, linear in between (clamped); ``None`` -> grey (no data)."""
    if fraction is None or fraction != fraction:  # None or NaN
        return MISSING
    f = min(1.0, max(0.0, float(fraction)))
    gb = round(255 * (1.0 - f))
    return (255, gb, gb)


def heatmap_png(grid: Sequence[Sequence[float | None]], cell: int = 32, gap: int = 1) -> bytes:
    """One ``cell`` x ``cell`` square per value (row 0 at the top, column 0 at the left),
    ``gap`` pixels of grey between cells and around the edge."""
    nrows = len(grid)
    ncols = max((len(r) for r in grid), default=0)
    if nrows == 0 or ncols == 0:
        raise ValueError("heatmap needs at least one cell")
    if cell < 1 or gap < 0:
        raise ValueError("cell must be >= 1 pixel and gap >= 0")
    width = ncols * cell + (ncols + 1) * gap
    height = nrows * cell + (nrows + 1) * gap
    gap_row = [GAP] * width
    pixels: list[list[RGB]] = []
    for _ in range(gap):
        pixels.append(gap_row)
    for r in range(nrows):
        line: list[RGB] = [GAP] * gap
        for c in range(ncols):
            v = grid[r][c] if c < len(grid[r]) else None
            line += [shade(v)] * cell + [GAP] * gap
        for _ in range(cell):
            pixels.append(line)
        for _ in range(gap):
            pixels.append(gap_row)
    return encode_rgb(width, height, pixels)


def write_png(path: Path, data: bytes) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path
