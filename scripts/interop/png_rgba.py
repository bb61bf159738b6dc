#!/usr/bin/env python3
"""An independent PNG reader for tests: decodes an 8-bit, non-interlaced PNG of colour type 6
(RGBA) or 2 (RGB) with nothing but zlib (every row filter: none, sub, up, average, Paeth;
every CRC checked) and prints `WIDTH HEIGHT HEX`: its RGBA pixels, row by row, in hex.

    python3 scripts/interop/png_rgba.py FILE
"""
import struct
import sys
import zlib


def read(path):
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise SystemExit("not a PNG")
    at, idat, header = 8, b"", None
    while at < len(data):
        length, kind = struct.unpack(">I4s", data[at:at + 8])
        body = data[at + 8:at + 8 + length]
        (crc,) = struct.unpack(">I", data[at + 8 + length:at + 12 + length])
        if zlib.crc32(kind + body) & 0xFFFFFFFF != crc:
            raise SystemExit(f"bad CRC in {kind!r}")
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        elif kind == b"IEND":
            break
        at += 12 + length
    width, height, depth, colour, _, _, interlace = header
    if depth != 8 or colour not in (2, 6) or interlace != 0:
        raise SystemExit(f"unsupported: depth {depth}, colour {colour}, interlace {interlace}")
    channels = 4 if colour == 6 else 3
    stride = width * channels
    raw = zlib.decompress(idat)
    out, previous = bytearray(), bytearray(stride)
    for y in range(height):
        kind = raw[y * (stride + 1)]
        row = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            left = row[i - channels] if i >= channels else 0
            up = previous[i]
            corner = previous[i - channels] if i >= channels else 0
            if kind == 1:
                row[i] = (row[i] + left) & 255
            elif kind == 2:
                row[i] = (row[i] + up) & 255
            elif kind == 3:
                row[i] = (row[i] + (left + up) // 2) & 255
            elif kind == 4:
                p = left + up - corner
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
                best = left if pa <= pb and pa <= pc else (up if pb <= pc else corner)
                row[i] = (row[i] + best) & 255
            elif kind != 0:
                raise SystemExit(f"bad filter {kind}")
        previous = row
        if channels == 4:
            out += row
        else:
            for x in range(width):
                out += row[x * 3:x * 3 + 3] + b"\xff"
    return width, height, bytes(out).hex()


if __name__ == "__main__":
    print(*read(sys.argv[1]))
