#!/usr/bin/python3
# png_stats.py - Counts the pixels of given colours in a PNG (stdlib only: zlib + unfiltering).
"""Usage: png_stats.py FILE.png RRGGBB [RRGGBB...]

Prints "size W H", "nonwhite N" (pixels not near white), then "RRGGBB N" per colour:
how many pixels lie within TOL (default 8, env PNG_TOL) of it on every channel.
Handles 8-bit greyscale, RGB, grey+alpha and RGBA, non-interlaced (what Chromium writes).
Exits 1 with a one-line message on a file it cannot read.
"""
import collections
import os
import struct
import sys
import zlib

CHANNELS = {0: 1, 2: 3, 4: 2, 6: 4}


def decode(path):
    """Returns (width, height, channels, rows): rows is a list of bytes, unfiltered."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    pos, idat, ihdr = 8, [], None
    while pos + 8 <= len(data):
        length, ctype = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        pos += 12 + length
        if ctype == b"IHDR":
            ihdr = struct.unpack(">IIBBBBB", body)
        elif ctype == b"IDAT":
            idat.append(body)
        elif ctype == b"IEND":
            break
    if ihdr is None:
        raise ValueError("no IHDR chunk")
    w, h, depth, colour, _, _, interlace = ihdr
    if depth != 8 or colour not in CHANNELS or interlace != 0:
        raise ValueError("unsupported PNG (depth %d, colour type %d, interlace %d)"
                         % (depth, colour, interlace))
    bpp = CHANNELS[colour]
    raw = zlib.decompress(b"".join(idat))
    stride = w * bpp
    prev = bytearray(stride)
    rows = []
    for y in range(h):
        start = y * (stride + 1)
        ftype = raw[start]
        line = bytearray(raw[start + 1:start + 1 + stride])
        if ftype == 1:      # Sub
            for i in range(bpp, stride):
                line[i] = (line[i] + line[i - bpp]) & 0xFF
        elif ftype == 2:    # Up
            line = bytearray((a + b) & 0xFF for a, b in zip(line, prev))
        elif ftype == 3:    # Average
            for i in range(stride):
                left = line[i - bpp] if i >= bpp else 0
                line[i] = (line[i] + ((left + prev[i]) >> 1)) & 0xFF
        elif ftype == 4:    # Paeth
            for i in range(stride):
                a = line[i - bpp] if i >= bpp else 0
                b = prev[i]
                c = prev[i - bpp] if i >= bpp else 0
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                if pa <= pb and pa <= pc:
                    pr = a
                elif pb <= pc:
                    pr = b
                else:
                    pr = c
                line[i] = (line[i] + pr) & 0xFF
        elif ftype != 0:
            raise ValueError("bad filter type %d on row %d" % (ftype, y))
        rows.append(bytes(line))
        prev = line
    return w, h, bpp, rows


def histogram(bpp, rows):
    """Counter of (r, g, b) over every pixel (alpha ignored)."""
    hist = collections.Counter()
    for line in rows:
        if bpp >= 3:
            hist.update(zip(line[0::bpp], line[1::bpp], line[2::bpp]))
        else:
            hist.update((g, g, g) for g in line[0::bpp])
    return hist


def main(argv):
    if len(argv) < 2 or argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if len(argv) >= 2 else 2
    tol = int(os.environ.get("PNG_TOL", "8"))
    try:
        w, h, bpp, rows = decode(argv[1])
    except (OSError, ValueError, zlib.error, struct.error) as e:
        print("png_stats: %s: %s" % (argv[1], e), file=sys.stderr)
        return 1
    hist = histogram(bpp, rows)
    print("size %d %d" % (w, h))
    print("nonwhite %d" % sum(n for (r, g, b), n in hist.items() if min(r, g, b) < 240))
    for hexc in argv[2:]:
        want = tuple(int(hexc.lstrip("#")[i:i + 2], 16) for i in (0, 2, 4))
        n = sum(cnt for rgb, cnt in hist.items()
                if all(abs(x - y) <= tol for x, y in zip(rgb, want)))
        print("%s %d" % (hexc.lstrip("#").lower(), n))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
