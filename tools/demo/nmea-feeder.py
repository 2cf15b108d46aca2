#!/usr/bin/env python3
"""Plays a bundled track into gpsd as NMEA, one fix per second stamped with the current
UTC time (so the agent's records carry times the server accepts).

usage: nmea-feeder.py TRACK.csv DEVICE   (DEVICE: the pty end gpsd is not reading)
"""
import datetime
import sys
import time


def checksum(body):
    c = 0
    for ch in body.encode("ascii"):
        c ^= ch
    return f"${body}*{c:02X}\r\n"


def degrees(value, hemispheres, width):
    hemi = hemispheres[0] if value >= 0 else hemispheres[1]
    value = abs(value)
    whole = int(value)
    minutes = (value - whole) * 60
    return f"{whole:0{width}d}{minutes:07.4f}", hemi


def sentences(row, now):
    _, lat, lon, alt, speed, course, sats, hdop = row
    hhmmss = now.strftime("%H%M%S") + f".{now.microsecond // 10000:02d}"
    ddmmyy = now.strftime("%d%m%y")
    la, ns = degrees(lat, "NS", 2)
    lo, ew = degrees(lon, "EW", 3)
    knots = speed * 3600 / 1852
    out = [
        checksum(f"GPGGA,{hhmmss},{la},{ns},{lo},{ew},1,{int(sats):02d},{hdop:.1f},{alt:.1f},M,44.0,M,,"),
        checksum(f"GPGSA,A,3,01,03,07,08,11,14,17,22,,,,,{hdop + 0.6:.1f},{hdop:.1f},{hdop + 0.4:.1f}"),
        checksum(f"GPRMC,{hhmmss},A,{la},{ns},{lo},{ew},{knots:.2f},{course:.1f},{ddmmyy},,,A"),
    ]
    return "".join(out)


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    rows = []
    with open(sys.argv[1]) as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            rows.append([float(x) for x in line.split(",")])
    with open(sys.argv[2], "w", buffering=1) as dev:
        i = 0
        while True:
            now = datetime.datetime.now(datetime.timezone.utc)
            dev.write(sentences(rows[i % len(rows)], now))
            dev.flush()
            i += 1
            time.sleep(1 - (time.time() % 1))


if __name__ == "__main__":
    try:
        main()
    except (KeyboardInterrupt, BrokenPipeError):
        pass
