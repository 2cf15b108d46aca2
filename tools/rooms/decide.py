#!/usr/bin/env python3
"""How the adaptive bit rate's decision would judge the noises rooms make, measured each way
it could be made: a replica of `BitratePlan` (the room's floor and spread, the margin, runs
of 3 frames, the 200 ms before and the 2 s after; docs/decisions/0011 and 0019) fed with
each frame's level taken one of several ways. A benchmark tool, not part of the package.

    python3 tools/rooms/decide.py [--bench .build/debug/ariata-bench] [--noise keyboard,traffic,brown]
                                  [--noise-db -55] [--speech-db -20,-51] [--threshold -55] [--work DIR]

The stretch is the `silence` benchmark's (`ariata-bench silence --noise`): 30 s of the noise
alone, not counted, then two spells of 300 s, each 240 s of the noise alone and 60 s of the
demo's speech (tools/demo/speech.opus) over it, in 2 s blocks. Printed per row: the share of
frames at the quiet rate, and the speech frames among them (a speech frame as the benchmark
counts it). The replica gives the benchmark's shares to about 0.1 point; the benchmark, with
the agent's own encoder, is what performance.md quotes. The ways to measure a frame:

- whole: its RMS in dBFS (decision 0011);
- band: above 300 Hz (fourth-order Butterworth high-pass), the whole frame;
- band-half: above 300 Hz, the quieter of its two 10 ms halves (decision 0019, `SpeechBandMeter`).

Needs: python3-numpy python3-scipy opus-tools
"""
import argparse
import os
import subprocess
import tempfile
import wave

import numpy as np
from scipy.signal import butter, sosfilt

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
RATE, FRAME = 16000, 320


def frame_db(energies):
    return np.maximum(-100, 10 * np.log10(np.maximum(energies, 1e-30) / 32768 ** 2))


def whole(x):
    n = len(x) // FRAME
    return frame_db(np.mean(x[:n * FRAME].reshape(n, FRAME) ** 2, axis=1))


HIGH_PASS = butter(4, 300, btype="highpass", fs=RATE, output="sos")


def band(x):
    return whole(sosfilt(HIGH_PASS, x))


def band_half(x):
    y = sosfilt(HIGH_PASS, x)
    n = len(y) // FRAME
    return frame_db(np.min(np.mean(y[:n * FRAME].reshape(n, 2, FRAME // 2) ** 2, axis=2), axis=1))


MEASURES = {"whole": whole, "band": band, "band-half": band_half}


class RoomFloor:
    """The 10th percentile and the median of the last 1,500 frames, to 0.5 dB bins."""

    def __init__(self, window=1500):
        self.window, self.levels = window, []

    def add(self, levels):
        self.levels = (self.levels + list(levels))[-self.window:]

    def percentile(self, fraction):
        if len(self.levels) < 50:
            return None
        binned = np.sort(np.floor((np.array(self.levels) + 100) / 0.5) * 0.5 - 100)
        return binned[max(1, int(np.ceil(len(binned) * fraction))) - 1]

    def floor(self):
        return self.percentile(0.10)

    def spread(self):
        floor = self.floor()
        return None if floor is None else self.percentile(0.5) - floor


class Plan:
    """`BitratePlan`'s rule, frame for frame: which frames of a block are at the full rate."""

    def __init__(self, threshold=-55, margin=3, look_ahead=10, hold=100, minimum_run=3):
        self.threshold, self.margin, self.look_ahead, self.hold, self.minimum_run = threshold, margin, look_ahead, hold, minimum_run
        self.since, self.open_run, self.room, self.alone = None, 0, RoomFloor(), RoomFloor()

    def level(self):
        floor, spread = self.room.floor(), self.alone.spread()
        spread = self.room.spread() if spread is None else spread
        if floor is None or spread is None:
            return self.threshold
        return max(self.threshold, floor + self.margin + min(8, 2 * max(0, spread)))

    def full_rate(self, levels):
        level, n = self.level(), len(levels)
        loud = [x >= level for x in levels]
        above = [loud[i] or (0 < i < n - 1 and loud[i - 1] and loud[i + 1]) for i in range(n)]
        sound, holds, brief = [False] * n, [False] * n, [False] * n
        start = 0
        while start < n:
            if not above[start]:
                start += 1
                continue
            end = start
            while end < n and above[end]:
                end += 1
            long = end - start + (self.open_run if start == 0 else 0) >= self.minimum_run
            for i in range(start, end):
                if long or end == n:
                    sound[i], holds[i] = True, long
                else:
                    brief[i] = True
            start = end
        trailing = 0
        for a in reversed(above):
            if not a:
                break
            trailing += 1
        self.open_run = trailing + (self.open_run if trailing == n else 0)
        full, until = [False] * n, None
        for i in reversed(range(n)):
            leads_in = brief[i] and until is not None and until < self.look_ahead + 1
            until = 0 if sound[i] or leads_in else (None if until is None else until + 1)
            full[i] = until is not None and until <= self.look_ahead
        for i in range(n):
            if holds[i]:
                self.since = 0
            elif self.since is not None:
                self.since += 1
            if self.since is not None and self.since <= self.hold:
                full[i] = True
        self.room.add(levels)
        self.alone.add([x for x in levels if x < level])
        return full


def run(args, **kw):
    return subprocess.run(args, check=True, capture_output=True, **kw)


def noise(bench, kind, db, seconds, seed, work):
    path = f"{work}/{kind}{db:g}-{seed}.raw"
    if not os.path.exists(path):
        run([bench, "noise", "--kind", kind, f"--db={db}", "--seconds", str(seconds), "--seed", str(seed), "--output", path])
    return np.fromfile(path, dtype="<i2").astype(np.float64)


def speech(work):
    wav = f"{work}/speech.wav"
    if not os.path.exists(wav):
        run(["opusdec", "--quiet", "--rate", str(RATE), "--force-wav", f"{ROOT}/tools/demo/speech.opus", wav])
    with wave.open(wav) as f:
        return np.frombuffer(f.readframes(f.getnframes()), dtype="<i2").astype(np.float64)


def stretch(bench, kind, noise_db, speech_db, talk, work, quiet_percent=80, spell=300):
    """The benchmark's stretch and which of its frames are speech."""
    level = 10 * np.log10(np.mean(talk * talk) / 32768 ** 2)
    gain = 10 ** ((speech_db - level) / 20)
    parts, is_speech = [noise(bench, kind, noise_db, 30, 0, work)], [np.zeros(30 * 50, bool)]
    for seed in (1, 2):
        room = noise(bench, kind, noise_db, spell, seed, work)
        quiet = spell * quiet_percent // 100 * RATE
        said = np.resize(talk, spell * RATE - quiet) * gain
        mixed = room.copy()
        mixed[quiet:quiet + len(said)] += said
        clean, under = whole(np.concatenate([np.zeros(quiet), said])), whole(room)
        frames = (clean >= speech_db - 20) & (clean >= under - 10)
        frames[:quiet // FRAME] = False
        parts.append(np.clip(np.round(mixed), -32768, 32767))
        is_speech.append(frames)
    return np.concatenate(parts), np.concatenate(is_speech)


def judge(samples, is_speech, measure, threshold):
    levels, plan, full = MEASURES[measure](samples), Plan(threshold=threshold), []
    for block in range(0, len(levels), 100):
        full += plan.full_rate(list(levels[block:block + 100]))
    full, is_speech = np.array(full[1500:]), is_speech[1500:len(full)]
    return 100 * (1 - full.mean()), int((is_speech & ~full).sum()), int(is_speech.sum())


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bench", default=f"{ROOT}/.build/debug/ariata-bench")
    parser.add_argument("--noise", default="keyboard,traffic,brown")
    parser.add_argument("--noise-db", default="-55")
    parser.add_argument("--speech-db", default="-20,-51")
    parser.add_argument("--threshold", type=float, default=-55, help="sound_threshold_db")
    parser.add_argument("--work")
    args = parser.parse_args()
    work = args.work or tempfile.mkdtemp(prefix="ariata-rooms-")
    talk = speech(work)
    print(f"sound_threshold_db {args.threshold:g}; quiet share (speech frames at the quiet rate of those counted)")
    print("| noise | noise dBFS | speech dBFS | " + " | ".join(MEASURES) + " |")
    print("|---|---|---|" + "---|" * len(MEASURES))
    for kind in args.noise.split(","):
        for noise_db in map(float, args.noise_db.split(",")):
            for speech_db in map(float, args.speech_db.split(",")):
                samples, is_speech = stretch(args.bench, kind, noise_db, speech_db, talk, work)
                cells = [judge(samples, is_speech, m, args.threshold) for m in MEASURES]
                print(f"| {kind} | {noise_db:g} | {speech_db:g} | "
                      + " | ".join(f"{q:.1f} % ({a} of {t})" for q, a, t in cells) + " |", flush=True)


if __name__ == "__main__":
    main()
