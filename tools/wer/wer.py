#!/usr/bin/env python3
"""Word error rates of an offline recogniser (pocketsphinx, pocketsphinx-en-us) on the same
speech encoded three ways: 16 kbit/s throughout, the agent's level-adaptive rate and
6 kbit/s throughout. A benchmark tool, not part of the package.

    python3 tools/wer/wer.py [--bench .build/debug/ariata-bench] [--levels -20,-40,-51]
                             [--room-db -58] [--gap 4] [--work DIR] [--jobs 2]
                             [--noise brown,keyboard,...] [--seeds N] [--voices-per-sentence K]
                             [--settings "16 kbit/s,adaptive"]

The sentences are tools/wer/sentences.txt (one a line), spoken by the espeak-ng voices in
VOICES in turn (sentence i by VOICES[i % len(VOICES)]), each resampled by sox to 16 kHz mono without dither (`sox -D`, so every run has the same PCM)
and scaled so its RMS is the level. At each level the sentences follow each other with
--gap seconds of quiet between them (and before the first), and white noise at --room-db
dBFS (the room) runs under all of it, so the adaptive rate drops to the quiet rate between
sentences. --noise takes the noises rooms make instead (`ariata-bench noise`: white, pink,
brown, hum50, hum60, fan, keyboard, traffic), one table each. --voices-per-sentence K speaks
each sentence with K voices in turn (more words, more voices). --seeds N repeats every
scene with N different noises of the same kind: the recogniser is deterministic for the
same PCM, so the spread over seeds is its run-to-run spread on audio that differs only in
what it does not transcribe, and each table shows it (min-max) beside the mean, and the
difference adaptive minus 16 kbit/s seed by seed. The same PCM is encoded by `ariata-bench encode` (the agent's encoder) at
--bitrate 16000 --quiet-bitrate 16000, at the default adaptive settings and at 6000/6000,
decoded by opusdec and recognised by pocketsphinx_continuous; the unencoded PCM is
recognised too. WER is the word-level Levenshtein distance between the reference (all the
sentences) and all the recogniser's utterances, lowercase, punctuation but in-word
apostrophes stripped, over the reference's words.

The demo recording (tools/demo/speech.opus) has no transcript in the repository; its row is
the same distance against what the recogniser makes of the recording itself (decoded, not
re-encoded, at -20 dBFS with no noise): how much each encoding changes the transcript, not
an error rate against the truth.

Needs: apt-get install pocketsphinx pocketsphinx-en-us espeak-ng sox opus-tools python3-numpy
"""
import argparse
import concurrent.futures
import os
import re
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
VOICES = ["en-us", "en-gb-x-rp", "en-us+f3", "en-gb-scotland", "en-us-nyc", "en-gb-x-gbclan", "en-029", "en-gb+f2"]
MODEL = "/usr/share/pocketsphinx/model/en-us"
RATE = 16000
SEED = 1
# Seconds of the gap kept either side of a sentence cut out for the recogniser.
MARGIN = 0.3
# Resamplings of the utterances for the paired difference's interval.
BOOTSTRAP = 4000
# (name, ariata-bench encode options)
SETTINGS = [
    ("16 kbit/s", ["--bitrate", "16000", "--quiet-bitrate", "16000"]),
    ("adaptive", []),  # the config's defaults: bitrate 16000, quiet_bitrate, sound_threshold_db
    ("6 kbit/s", ["--bitrate", "6000", "--quiet-bitrate", "6000"]),
]


def run(args, **kw):
    return subprocess.run(args, check=True, capture_output=True, text=True, **kw)


def words(text):
    text = text.lower().replace("\u2019", "'")
    return [w.strip("'") for w in re.findall(r"[a-z0-9']+", text) if w.strip("'")]


def distance(ref, hyp):
    prev = list(range(len(hyp) + 1))
    for i, r in enumerate(ref, 1):
        cur = [i] + [0] * len(hyp)
        for j, h in enumerate(hyp, 1):
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (r != h))
        prev = cur
    return prev[-1]


def read_raw(path):
    return np.fromfile(path, dtype="<i2").astype(np.float64) / 32768


def write_raw(samples, path):
    np.clip(np.round(samples * 32768), -32768, 32767).astype("<i2").tofile(path)


def rms_db(x):
    return 20 * np.log10(max(np.sqrt(np.mean(x * x)), 1e-12))


def synthesise_spoken(spoken, work):
    """Each (sentence, voice) spoken by espeak-ng, resampled without dither."""
    clips = []
    for i, (text, voice) in enumerate(spoken):
        wav, raw = f"{work}/s{i:03d}.wav", f"{work}/s{i:03d}.raw"
        run(["espeak-ng", "-v", voice, "-w", wav, text])
        run(["sox", "-D", wav, "-r", str(RATE), "-c", "1", "-b", "16", "-e", "signed-integer", "-t", "raw", raw])
        clips.append(read_raw(raw))
    return clips


def demo_speech(work):
    run(["opusdec", "--quiet", "--rate", str(RATE), f"{ROOT}/tools/demo/speech.opus", f"{work}/demo.wav"])
    run(["sox", "-D", f"{work}/demo.wav", "-r", str(RATE), "-c", "1", "-b", "16", "-e", "signed-integer", "-t", "raw", f"{work}/demo.raw"])
    return read_raw(f"{work}/demo.raw")


def scene(clips, level, room_db, gap, seed, noise=None, bench=None, work=None):
    """The clips at `level` dBFS RMS each, `gap` s apart, with white noise at `room_db` under
    them, or `noise` from `ariata-bench noise` (the same samples for the same seed)."""
    parts, bounds, at = [np.zeros(int(gap * RATE))], [], int(gap * RATE)
    for clip in clips:
        parts += [clip * 10 ** ((level - rms_db(clip)) / 20), np.zeros(int(gap * RATE))]
        bounds.append((at, at + len(clip)))
        at += len(clip) + int(gap * RATE)
    signal = np.concatenate(parts)
    if room_db is not None and noise is not None:
        path = f"{work}/noise-{noise}-{seed}.raw"
        run([bench, "noise", "--kind", noise, f"--db={room_db}", "--seconds", f"{len(signal) / RATE + 1:.0f}",
             "--seed", str(seed), "--output", path])
        signal += read_raw(path)[:len(signal)]
    elif room_db is not None:
        white = np.random.default_rng(seed).standard_normal(len(signal))
        signal += white * 10 ** (room_db / 20) / np.sqrt(np.mean(white * white))
    return signal, bounds


def recognise(wav):
    out = run(["pocketsphinx_continuous", "-infile", wav, "-hmm", f"{MODEL}/en-us", "-lm", f"{MODEL}/en-us.lm.bin",
               "-dict", f"{MODEL}/cmudict-en-us.dict", "-logfn", "/dev/null"])
    return " ".join(line.strip() for line in out.stdout.splitlines() if line.strip())


def recognise_sentences(raw, bounds, stem):
    """Each sentence cut from `raw` at its known place (MARGIN s either side) and recognised
    as one utterance by pocketsphinx_batch: the recogniser's own segmentation and its
    cepstral mean carried across utterances and gaps left out."""
    samples = np.fromfile(raw, dtype="<i2")
    os.makedirs(stem, exist_ok=True)
    margin = int(MARGIN * RATE)
    with open(f"{stem}/ctl", "w") as ctl:
        for i, (start, end) in enumerate(bounds):
            samples[max(0, start - margin):end + margin].tofile(f"{stem}/u{i:02d}.raw")
            ctl.write(f"u{i:02d}\n")
    run(["pocketsphinx_batch", "-adcin", "yes", "-cepdir", stem, "-cepext", ".raw", "-ctl", f"{stem}/ctl",
         "-hyp", f"{stem}/hyp", "-hmm", f"{MODEL}/en-us", "-lm", f"{MODEL}/en-us.lm.bin",
         "-dict", f"{MODEL}/cmudict-en-us.dict", "-logfn", "/dev/null"])
    return read_hypotheses(stem, len(bounds))


def read_hypotheses(stem, count):
    """The recogniser's words for each of `count` utterances, from pocketsphinx_batch's hyp file."""
    hyps = {}
    with open(f"{stem}/hyp") as f:
        for line in f:
            m = re.match(r"(.*)\((u\d+)[^)]*\)\s*$", line)
            if m:
                hyps[m.group(2)] = m.group(1).strip()
    return [hyps.get(f"u{i:02d}", "") for i in range(count)]


def to_wav(raw, wav):
    run(["sox", "-D", "-t", "raw", "-r", str(RATE), "-c", "1", "-b", "16", "-e", "signed-integer", raw, wav])


def encode_and_recognise(bench, raw, name, options, stem, bounds=None, reuse=False):
    """(transcript, the bench's line about the file, each sentence's transcript or None).
    With `bounds`, sentence by sentence; with `reuse`, a work directory's earlier
    recognition of the same scene is read back instead of run again."""
    if reuse and bounds is not None and os.path.exists(f"{stem}-utts/hyp"):
        utterances = read_hypotheses(f"{stem}-utts", len(bounds))
        return " ".join(utterances), "", utterances
    if options is None:
        wav, decoded, line = f"{stem}.wav", raw, "unencoded"
        to_wav(raw, wav)
    else:
        opus, wav, decoded = f"{stem}.opus", f"{stem}.wav", f"{stem}.dec.raw"
        line = run([bench, "encode", "--input", raw, "--output", opus] + options).stdout.strip()
        run(["opusdec", "--quiet", "--rate", str(RATE), opus, wav])
        run(["sox", "-D", wav, "-t", "raw", "-b", "16", "-e", "signed-integer", decoded])
    if bounds is not None:
        utterances = recognise_sentences(decoded, bounds, f"{stem}-utts")
        return " ".join(utterances), line, utterances
    return recognise(wav), line, None


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bench", default=f"{ROOT}/.build/debug/ariata-bench")
    parser.add_argument("--levels", default="-20,-40,-51")
    parser.add_argument("--room-db", type=float, default=-58)
    parser.add_argument("--gap", type=float, default=4)
    parser.add_argument("--work")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--no-demo", action="store_true", help="leave the demo recording out")
    parser.add_argument("--noise", help="comma-separated noises of ariata-bench noise instead of the white room")
    parser.add_argument("--seeds", type=int, default=1, help="noises of each kind, for the run-to-run spread")
    parser.add_argument("--voices-per-sentence", type=int, default=1)
    parser.add_argument("--settings", help="comma-separated encodings to run (default: all)")
    parser.add_argument("--reuse", action="store_true",
                        help="read back the recognitions a run left in --work (the same sentences, voices and noises) instead of running them again")
    parser.add_argument("--continuous", action="store_true",
                        help="recognise the sentences' whole file with pocketsphinx_continuous (its own segmentation) "
                             "instead of each sentence cut at its known place")
    args = parser.parse_args()
    levels = [float(x) for x in args.levels.split(",")]
    noises = args.noise.split(",") if args.noise else [None]
    seeds = [SEED + i for i in range(args.seeds)]
    work = args.work or tempfile.mkdtemp(prefix="ariata-wer-")
    os.makedirs(work, exist_ok=True)

    with open(f"{HERE}/sentences.txt") as f:
        sentences = [line.strip() for line in f if line.strip()]
    k = max(1, args.voices_per_sentence)
    # Sentence i by voices k*i ... k*i+k-1 (mod the voices), so every voice speaks as often.
    spoken = [(text, VOICES[(k * i + j) % len(VOICES)]) for i, text in enumerate(sentences) for j in range(k)]
    reference = [w for text, _ in spoken for w in words(text)]
    utterance_words = [words(text) for text, _ in spoken]
    clips = synthesise_spoken(spoken, work)
    demo = None if args.no_demo else demo_speech(work)

    chosen = args.settings.split(",") if args.settings else None
    settings = [(n, o) for n, o in [("unencoded", None)] + SETTINGS if chosen is None or n in chosen]
    jobs = {}
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        if demo is not None:
            write_raw(demo * 10 ** ((-20 - rms_db(demo)) / 20), f"{work}/demo-clean.raw")
            jobs[("demo", "reference")] = pool.submit(encode_and_recognise, args.bench, f"{work}/demo-clean.raw", "", None,
                                                     f"{work}/demo-clean")
        for noise in noises:
            for seed in seeds:
                for level in levels:
                    tag = f"{noise or 'white'}{seed}{level:g}"
                    signal, bounds = scene(clips, level, args.room_db, args.gap, seed, noise, args.bench, work)
                    write_raw(signal, f"{work}/speech{tag}.raw")
                    if demo is not None and seed == SEED:
                        write_raw(scene([demo], level, args.room_db, args.gap, seed + 1000, noise, args.bench, work)[0],
                                  f"{work}/demo{tag}.raw")
                    for name, options in settings:
                        slug = name.replace(" ", "").replace("/", "")
                        jobs[("sentences", noise, seed, level, name)] = pool.submit(
                            encode_and_recognise, args.bench, f"{work}/speech{tag}.raw", name, options,
                            f"{work}/speech{tag}-{slug}", None if args.continuous else bounds, args.reuse)
                        if demo is not None and seed == SEED:
                            jobs[("demo", noise, seed, level, name)] = pool.submit(
                                encode_and_recognise, args.bench, f"{work}/demo{tag}.raw", name, options, f"{work}/demo{tag}-{slug}")
        results = {key: job.result() for key, job in jobs.items()}

    print(f"sentences: {len(sentences)} from tools/wer/sentences.txt, each by {k} voice(s): {len(spoken)} utterances, "
          f"{len(reference)} words per level; voices in turn: {', '.join(VOICES)}; {args.gap:g} s gaps; "
          f"room {args.room_db:g} dBFS ({args.noise or 'white'}); seeds {seeds}; work {work}")
    for key, (text, line, _) in sorted(results.items(), key=str):
        with open(f"{work}/{'-'.join(str(k) for k in key).replace(' ', '').replace('/', '')}.txt", "w") as f:
            f.write(text + "\n")
        if line not in ("unencoded", ""):
            print(f"  {key}: {line}")

    def wer(kind, noise, seed, level, name, truth):
        return 100 * distance(truth, words(results[(kind, noise, seed, level, name)][0])) / max(1, len(truth))

    def spread(values):
        return f"{np.mean(values):.1f}" if len(values) == 1 else f"{np.mean(values):.1f} ({min(values):.1f}–{max(values):.1f})"

    def table(kind, truth, noise, seeds):
        """One row a level: each encoding's WER (mean, and min-max over the seeds), and
        adaptive minus 16 kbit/s seed by seed."""
        names = [name for name, _ in settings]
        paired = "adaptive" in names and "16 kbit/s" in names
        interval = paired and kind == "sentences" and not args.continuous
        print("| level | " + " | ".join(names) + (" | adaptive − 16 kbit/s |" if paired else " |")
              + (" paired over the utterances (95 %) |" if interval else "") + " words |")
        print("|" + "---|" * (len(names) + 2 + paired + interval))
        for level in levels:
            row = [spread([wer(kind, noise, s, level, name, truth) for s in seeds]) for name in names]
            if paired:
                row.append(spread([wer(kind, noise, s, level, "adaptive", truth) - wer(kind, noise, s, level, "16 kbit/s", truth)
                                   for s in seeds]))
                if kind == "sentences" and not args.continuous:
                    row.append(paired_interval(noise, seeds, level))
            print(f"| {level:g} dBFS | " + " | ".join(row) + f" | {len(truth)} |")

    def paired_interval(noise, seeds, level, noises_pooled=None):
        """Adaptive minus 16 kbit/s over every utterance of every seed, in points of WER,
        with its 95 % interval by resampling the utterances (the pairs: the same speech in
        the same noise, encoded both ways), so that what the recogniser does with one
        utterance either way counts once, as the spread of that utterance's pair."""
        differences, counted = [], []
        for n, s in [(n, s) for n in (noises_pooled or [noise]) for s in seeds]:
            adaptive = results[("sentences", n, s, level, "adaptive")][2]
            flat = results[("sentences", n, s, level, "16 kbit/s")][2]
            for truth, a, f in zip(utterance_words, adaptive, flat):
                differences.append(distance(truth, words(a)) - distance(truth, words(f)))
                counted.append(len(truth))
        differences, counted = np.array(differences, float), np.array(counted, float)
        rng = np.random.default_rng(SEED)
        picks = rng.integers(0, len(differences), size=(BOOTSTRAP, len(differences)))
        resampled = 100 * differences[picks].sum(axis=1) / counted[picks].sum(axis=1)
        low, high = np.percentile(resampled, [2.5, 97.5])
        return f"{100 * differences.sum() / counted.sum():+.1f} ({low:+.1f} to {high:+.1f})"

    pairs = {"adaptive", "16 kbit/s"} <= {name for name, _ in settings}
    if len(noises) > 1 and pairs and not args.continuous:
        print(f"\nadaptive − 16 kbit/s, every utterance of every noise ({', '.join(noises)}) and seed pooled, "
              f"95 % interval from resampling the utterances:")
        print("| level | adaptive − 16 kbit/s (95 %) | utterances |")
        print("|---|---|---|")
        for level in levels:
            print(f"| {level:g} dBFS | {paired_interval(None, seeds, level, noises)} | {len(noises) * len(seeds) * len(spoken)} |")
    for noise in noises:
        print(f"\nWER (%), espeak-ng sentences, room {noise or 'white (numpy)'} at {args.room_db:g} dBFS, "
              f"mean (min–max) over {len(seeds)} noise seed(s):")
        table("sentences", reference, noise, seeds)
        if demo is not None:
            demo_ref = words(results[("demo", "reference")][0])
            print(f"\ndemo recording: words differing (%) from the recogniser's transcript of the recording itself "
                  f"({len(demo_ref)} words), no reference transcript:")
            table("demo", demo_ref, noise, [SEED])


if __name__ == "__main__":
    sys.exit(main())
