"""Checks that DIR holds NAME.png for each NAME: a PNG signature, an IHDR chunk with a plausible
size, and more than a few kilobytes (an empty figure is smaller).

usage: check_pngs.py DIR NAME...
"""
import os
import struct
import sys

folder, names = sys.argv[1], sys.argv[2:]
errors = []
for name in names:
    path = os.path.join(folder, name + ".png")
    if not os.path.exists(path):
        errors.append(f"{path} missing")
        continue
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n" or data[12:16] != b"IHDR":
        errors.append(f"{path} is not a PNG")
        continue
    width, height = struct.unpack(">II", data[16:24])
    if not (300 <= width <= 4000 and 200 <= height <= 4000) or len(data) < 8000:
        errors.append(f"{path}: {width}x{height}, {len(data)} bytes")
if errors:
    print("\n".join(errors))
    sys.exit(1)
print(f"ok: {len(names)} PNGs")
