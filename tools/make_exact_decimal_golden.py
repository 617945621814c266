#!/usr/bin/python3
"""Goldens for io/exact_decimal.hpp, from Python's decimal module:
decimal.Decimal(x) is the exact value of the double x, and
format(Decimal(x), "f") its positional decimal expansion.

    /usr/bin/python3 tools/make_exact_decimal_golden.py tests/golden/exact_decimal.txt

One line per value: the double's hex (float.hex) and the expansion. The
values: zeros, the classroom's 0.1 in every format it shows (the fp32,
bf16, fp16 and fp8 values are doubles too), integers, powers of two at
both ends of the range, subnormals, the largest finite double, and 60
seeded random bit patterns (rerunning gives a byte-identical file).
"""
import random
import struct
import sys
from decimal import Decimal

FIXED = [
    "0x0.0p+0", "-0x0.0p+0", "0x1.999999999999ap-4", "0x1.99999ap-4", "0x1.9ap-4", "0x1.998p-4",
    "0x1.ap-4", "0x1.cp-4", "0x1.0p+0", "-0x1.8p+1", "0x1.5af1d78b58c4p+66", "0x1.0p+1023",
    "0x1.fffffffffffffp+1023", "0x1.0p-1022", "0x0.0000000000001p-1022", "-0x0.fffffffffffffp-1022",
    "0x1.5555555555555p-2", "0x1.edd2f1a9fbe77p+6", "0x1.0p+53", "0x1.0000000000001p+52",
]


def main():
    rng = random.Random(46)
    values = [float.fromhex(h) for h in FIXED]
    while len(values) < len(FIXED) + 60:
        x = struct.unpack("<d", struct.pack("<Q", rng.getrandbits(64)))[0]
        if x == x and abs(x) != float("inf"):
            values.append(x)
    with open(sys.argv[1], "w") as out:
        out.write("# tools/make_exact_decimal_golden.py: float.hex(x) format(Decimal(x), 'f')\n")
        for x in values:
            out.write(f"{x.hex()} {format(Decimal(x), 'f')}\n")


if __name__ == "__main__":
    main()
