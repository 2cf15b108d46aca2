#!/usr/bin/env python3
"""Feeds raw 16 kHz S16_LE mono PCM into a FIFO at real-time pace, looping, so ALSA's
`file` plugin (which does not pace reads itself) captures like a real microphone.

The plugin makes one read(2) per snd_pcm_readi and counts a short read as all it asked for, so
the feeder writes exactly what the agent reads at once (2 s, what one wake of a real device
brings) in one write each, into a pipe made large enough to hold it whole.

usage: pcm-feeder.py INPUT.raw FIFO
"""
import fcntl
import sys
import time

RATE_BYTES = 16000 * 2
BLOCK = 2 * RATE_BYTES     # 2 s: what the agent asks for in one read
F_SETPIPE_SZ = 1031        # fcntl.F_SETPIPE_SZ, Python 3.10+


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    data = open(sys.argv[1], "rb").read()
    if not data:
        sys.exit("pcm-feeder: empty input")
    sent = 0
    while True:
        # Opening blocks until a reader (the capture device) opens the FIFO; when the
        # reader closes it (the stream paused or restarted), wait for the next one.
        with open(sys.argv[2], "wb", buffering=0) as fifo:
            # A default pipe holds 64 KiB, exactly one block: room for four, so a write is
            # never split for lack of room and the reader never sees half a block.
            try:
                fcntl.fcntl(fifo.fileno(), F_SETPIPE_SZ, 4 * BLOCK)
            except OSError:
                pass
            start = time.monotonic()
            sent_here = 0
            try:
                while True:
                    offset = sent % len(data)
                    block = (data[offset:] + data)[:BLOCK] if offset + BLOCK > len(data) else data[offset:offset + BLOCK]
                    fifo.write(block)
                    sent += len(block)
                    sent_here += len(block)
                    ahead = sent_here / RATE_BYTES - (time.monotonic() - start)
                    if ahead > 0:
                        time.sleep(ahead)
            except BrokenPipeError:
                pass


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:
        pass
