#!/usr/bin/env python3
"""A reference ingest receiver for ariata-agent: tests, benchmarks and the demo.

A real HTTP server (on 127.0.0.1 unless told otherwise) that speaks the ingest contract
(shared/contract/ingest.md): it checks the device token and the body, answers as the
Ariata server does (including its 200 with accepted 0 / rejected N when one record of
a batch is bad), and stores what it accepted, one row per record id, in SQLite, so a
test can count lost and duplicated records.

What it does with a batch that holds a bad record (--on-bad-record, or
/_control/config {"on_bad_record": ...}) plays the servers in use:

  refuse         (default) nothing of the batch is stored; 200 with accepted 0 and
                 rejected equal to the batch size (or --reject-status)
  store-good     the good records are stored; 200 with accepted = the good ones and
                 rejected = the bad ones
  buffer-prefix  like the Ariata server: refused as with `refuse`, but the records before
                 the first bad one are kept in a buffer that is stored with the stream's
                 next good batch

In every case the answer names the bad records under "errors" ([{"id", "error"}]),
unless --unnamed-errors (or {"name_errors": false}) leaves the ids out.
"duplicates" counts records a client sent again after they were stored;
"buffered_duplicates" counts the copies the server's own prefix buffer stored of
records already stored (Ariata's raw archive holds those twice, its tables once).

Streams are routed like the Ariata server routes them: not by `source`, but by name
among the push streams of the device connection the token belongs to (a phone-kind
connection: location, microphone, healthkit). A batch for any other stream name is
answered 200 with accepted 0 and rejected equal to the batch size, as the real server
does; --streams (or /_control/config {"streams": [...]}) narrows the list to play a
server that lacks a stream.

It also pairs devices like the Ariata server: POST /api/devices/pairing/complete with
{"code": ..., "device_info": {...}} exchanges a one-time pairing code (made with
--pairing-code, or /_control/pairing) for the device token and the device's push
streams; an unknown or used code gets 400 "Invalid or expired pairing code", an
expired one 400 "Pairing code has expired".

Virtues mode (--generation virtues) plays the successor server's linking (a device's
token is its own device id): the code flow above answers 400 "Pairing code flow is
deprecated. Use /link or QR pairing endpoint."; POST /api/devices/pairing/link
{"device_id", "name", "device_type"} (what the web UI's link page sends) links an
id; POST /api/devices/pairing/{source_id}/complete
{"device_id", "device_info"} completes a pending source made with
/_control/pending-pairing (once, within its ttl; unknown: 404 "Pairing session not
found"); GET /api/devices/health answers 200 for a linked id (and, in both modes, for
the --token), 401 otherwise;
available_streams are listed as {"descriptor": {"name": ...}, "config_schema",
"config_example"}; ingest accepts every linked id as the token (and --token).
/_control/login-wall {"on": true} plays the 2026-02 release whose web login answers
every device route 401 {"error":"Unauthorized"}.

It models the servers' leniency: by default it checks what the Ariata and Virtues
servers check (token, JSON body, the envelope's fields, record ids, timestamps, numbers,
and the health limits: a top-level heart_rate or resting_heart_rate outside 30..250, a
negative hrv, steps or distance fail the whole batch) and no more; --strict adds the contract's own checks that no server makes (an X-Batch-Id,
metadata.source, a known health metric, audio that is an Ogg file). Like both servers it
answers a gzip body 400 with a plain-text error, unless --inflate plays a proxy in front
that inflates bodies.

GET /health answers as each generation's public health route does: Ariata {"status",
"version"}; Virtues adds "commit", "built_at" and "min_ios_version" (--server-version,
--server-commit, --server-built-at set them).

It answers POST /api/devices/verify (Bearer token, no body) in the Ariata server's shape:
only the push streams switched on, each with its config, and configuration_complete
while at least one is on; settable with --verify or /_control/verify ({"status": N}
answers N instead; --verify-shape explicit, or {"shape": "explicit"}, lists the streams
switched off too, with is_enabled false, as a server may). Pairing a device by code
switches every stream off, as Ariata does: nothing is on until the person (a test:
/_control/verify) switches streams on. In virtues mode it answers 404, as Virtues has
no such route.

GET /_control/readable reports how many received records each server generation's
transforms would read, per stream, by the rules of the contract's table "What the servers
make of the records" (health records of the kinds no transform reads are counted apart).

It can be told to misbehave, from the command line (--fault) or at run time through a
small control API under /_control/ on the same port:

  GET    /_control/health             {"ok": true}
  GET    /_control/stats              request counts (finished and in flight), records stored
                                      per stream, duplicate records, repeated batch ids
  GET    /_control/requests           one entry per ingest request, in the order they
                                      arrived (no payloads; the answer's accepted and
                                      rejected counts)
  GET    /_control/records?stream=S   ids stored for stream S, in the order stored
                                      (with "copies": how often each id was stored)
  GET    /_control/payloads?stream=S  the records stored for stream S, in the order stored
  POST   /_control/faults             {"faults": ["status=503,times=2", ...]} appends faults
  DELETE /_control/faults             clears the faults
  POST   /_control/config             {"token": "...", "reject_status": 422, "max_body_bytes": N,
                                       "streams": ["location", "microphone", "healthkit"],
                                       "on_bad_record": "refuse", "name_errors": true}
  POST   /_control/reset              forgets everything stored and seen
  POST   /_control/pairing            {"code": "A1B2C3", "ttl": 600} makes a one-time pairing code
  GET    /_control/pairings           the devices that paired, with the device_info they sent
  POST   /_control/pending-pairing    {"source_id": "...", "ttl": 600} a QR code's pending source
                                      (virtues mode; source_id made when left out)
  POST   /_control/login-wall         {"on": true} every device route answers 401 Unauthorized
                                      (virtues mode)
  GET    /_control/links              the ids linked (by hand or QR), with the device_info sent
  GET    /_control/verify             the verify answer now, and the verify requests seen
  POST   /_control/verify             {"location": {"is_enabled": false, "config": {...}}, ...}
                                      changes streams' switches (config keys are merged);
                                      {"status": 404} answers verify with that status instead
                                      (null: the Ariata answer again); {"shape": "explicit"}
                                      lists switched-off streams with is_enabled false
  GET    /_control/readable           per generation and stream: records received, records
                                      its transforms read

A fault is KIND[=VALUE][,key=value...], used by the next matching ingest request(s):

  status=503[,retry_after=120][,retry_after_date=120]   answer that status (Retry-After in
                                                        seconds, or as an HTTP-date N s ahead)
  slow=5                                                answer normally after 5 seconds
  hang[=SECONDS]                                        read the request, never answer
  reset                                                 read the request, reset the connection
  close                                                 read the request, close without answer
  lie=html|json|short                                   answer 200 without storing anything: a web
                                                        page (a captive portal), the JSON {} (another
                                                        app), or accepted one less than sent with
                                                        rejected 0 (a server that lost records)
  options: times=N (default 1) or times=forever; stream=NAME (only that stream's requests)

Faults apply in order: the first whose stream matches is used and counts down.
Only the Python 3 standard library is used.
"""

import argparse
import base64
import binascii
import datetime
import gzip
import json
import os
import signal
import socket
import sqlite3
import ssl
import struct
import sys
import threading
import time
import uuid
from email.utils import format_datetime
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

# The push streams of a phone-kind device connection on the Ariata server: the wire names.
STREAMS = ("location", "microphone", "healthkit")
LIES = ("html", "json", "short")
BAD_RECORD_MODES = ("refuse", "store-good", "buffer-prefix")
PAIRING_PATH = "/api/devices/pairing/complete"
VERIFY_PATH = "/api/devices/verify"
HEALTH_METRICS = ("heart_rate", "resting_heart_rate", "heart_rate_variability", "steps",
                  "active_energy", "distance", "oxygen_saturation", "sleep", "workout")
# An oversize body up to this size is read before the 413 is answered.
DRAINED_OVERSIZE = 64 * 1024 * 1024
# What the servers' JSON extractor answers to a gzip body (they do not inflate).
GZIP_REFUSED = "Failed to parse the request body as JSON: expected value at line 1 column 1"
EARLIEST = datetime.datetime(2000, 1, 1, tzinfo=datetime.timezone.utc)
MAX_AHEAD = datetime.timedelta(minutes=5)


class BadRequest(Exception):
    """The body as a whole breaks the contract (answered 400)."""


# ---------------------------------------------------------------- faults

class Fault:
    KINDS = ("status", "slow", "hang", "reset", "close", "lie")

    def __init__(self, spec):
        self.spec = spec.strip()
        self.kind = None
        self.value = None
        self.times = 1
        self.stream = None
        self.retry_after = None
        self.retry_after_date = None
        for index, part in enumerate(p.strip() for p in self.spec.split(",") if p.strip()):
            key, _, value = part.partition("=")
            key = key.strip()
            value = value.strip()
            if index == 0:
                if key not in self.KINDS:
                    raise ValueError(f"unknown fault kind {key!r} in {spec!r}: use one of {', '.join(self.KINDS)}")
                self.kind = key
                self.value = value or None
            elif key == "times":
                self.times = None if value == "forever" else int(value)
            elif key == "stream":
                if value not in STREAMS:
                    raise ValueError(f"unknown stream {value!r} in {spec!r}")
                self.stream = value
            elif key == "retry_after":
                self.retry_after = value
            elif key == "retry_after_date":
                self.retry_after_date = float(value)
            else:
                raise ValueError(f"unknown fault option {key!r} in {spec!r}")
        if self.kind is None:
            raise ValueError("empty fault")
        if self.kind == "status" and (self.value is None or not self.value.isdigit()):
            raise ValueError(f"status needs a code, as in status=503: {spec!r}")
        if self.kind == "lie" and self.value not in LIES:
            raise ValueError(f"lie needs one of {', '.join(LIES)}, as in lie=html: {spec!r}")
        if self.kind == "slow" and self.value is None:
            raise ValueError(f"slow needs seconds, as in slow=5: {spec!r}")

    def matches(self, stream):
        return self.stream is None or self.stream == stream


# ---------------------------------------------------------------- stream switches (verify)

# What the Ariata server's web UI shows for each push stream; `config` holds its defaults.
VERIFY_STREAMS = {
    "location": {"display_name": "Location", "description": "GPS location", "config": {"accuracy": "high"},
                 "default_cron_schedule": "0 */5 * * * *"},
    "microphone": {"display_name": "Microphone", "description": "Audio recording",
                   "config": {"enable_transcription": True, "store_audio": True, "sample_duration_seconds": 30},
                   "default_cron_schedule": "0 */5 * * * *"},
    "healthkit": {"display_name": "HealthKit", "description": "Health data",
                  "config": {"sampling_interval_seconds": 300}, "default_cron_schedule": "0 */15 * * * *"},
}


class StreamSwitches:
    """The server's per-stream settings that POST /api/devices/verify answers with. Guarded
    by the Receiver's lock."""

    SHAPES = ("ariata", "explicit")

    def __init__(self, specs, shape="ariata"):
        self.enabled = {name: True for name in STREAMS}
        # ariata: only the streams switched on are listed (the real server's answer);
        # explicit: every stream, with is_enabled false for those switched off.
        self.shape = parse_verify_shape(shape)
        self.config = {name: dict(VERIFY_STREAMS[name]["config"]) for name in STREAMS}
        self.status = None  # an HTTP status to answer instead (404: a server without the route)
        self.calls = []  # time.time() of each verify request, with its answer's status
        for spec in specs or []:
            self.apply_spec(spec)

    def apply_spec(self, spec):
        """STREAM=on|off, or STREAM.KEY=VALUE (a JSON value, else text; a comma-separated
        list for enabled_metrics)."""
        target, sep, value = spec.partition("=")
        if not sep:
            raise ValueError(f"--verify {spec!r}: use STREAM=on|off or STREAM.KEY=VALUE")
        name, _, key = target.strip().partition(".")
        if name not in STREAMS:
            raise ValueError(f"--verify {spec!r}: unknown stream {name!r}: use one of {', '.join(STREAMS)}")
        value = value.strip()
        if not key:
            if value not in ("on", "off"):
                raise ValueError(f"--verify {spec!r}: a stream is on or off")
            self.enabled[name] = value == "on"
        elif key == "enabled_metrics":
            self.config[name][key] = [m.strip() for m in value.split(",") if m.strip()]
        else:
            try:
                self.config[name][key] = json.loads(value)
            except ValueError:
                self.config[name][key] = value

    def update(self, request):
        """A /_control/verify body: {"status": N|null} and/or per stream {"is_enabled", "config"}."""
        if not isinstance(request, dict):
            raise ValueError("the body must be a JSON object")
        for name, change in request.items():
            if name == "status":
                self.status = None if change is None else int(change)
                continue
            if name == "shape":
                self.shape = parse_verify_shape(change)
                continue
            if name not in STREAMS or not isinstance(change, dict):
                raise ValueError(f"unknown stream {name!r}, or its change is not an object")
            if "is_enabled" in change:
                self.enabled[name] = bool(change["is_enabled"])
            if isinstance(change.get("config"), dict):
                self.config[name].update(change["config"])

    def switch_all_off(self):
        """What pairing leaves: the Ariata server switches no stream on for a new device."""
        for name in STREAMS:
            self.enabled[name] = False

    def answer(self, streams):
        """The Ariata server's 200 answer for a device whose connection has `streams`: only
        the streams switched on (api/device_pairing.rs filters on is_enabled), and
        configuration_complete while at least one is on."""
        enabled = []
        for name in streams:
            if self.shape == "ariata" and not self.enabled[name]:
                continue
            meta = VERIFY_STREAMS[name]
            enabled.append({"stream_name": name, "display_name": meta["display_name"],
                            "description": meta["description"], "is_enabled": self.enabled[name],
                            "config": dict(self.config[name]), "supports_incremental": False,
                            "default_cron_schedule": meta["default_cron_schedule"]})
        complete = any(self.enabled[name] for name in streams)
        return {"source_id": "receiver-source", "configuration_complete": complete, "enabled_streams": enabled}


def parse_verify_shape(value):
    if value not in StreamSwitches.SHAPES:
        raise ValueError(f"unknown verify shape {value!r}: use one of {', '.join(StreamSwitches.SHAPES)}")
    return value


# ---------------------------------------------------------------- what each server generation reads

def is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def is_integer(value):
    """An integer literal on the wire: json gives `12` as int and `12.0` as float."""
    return isinstance(value, int) and not isinstance(value, bool)


def has_time(record, field):
    return isinstance(record.get(field), str) and bool(record.get(field))


# Health kinds some transform reads; the others (active_energy, distance,
# oxygen_saturation) are archived raw by both and read by neither.
READ_HEALTH_KINDS = ("heart_rate", "resting_heart_rate", "heart_rate_variability", "steps", "sleep", "workout")


def virtues_reads(stream, record):
    """The Virtues transforms' rules (contract table, left column)."""
    if stream == "location":
        return is_number(record.get("latitude")) and is_number(record.get("longitude")) and has_time(record, "timestamp")
    if stream == "microphone":
        return ((has_time(record, "timestamp_start") or has_time(record, "timestamp"))
                and has_time(record, "timestamp_end") and is_number(record.get("duration_seconds")))
    if stream == "healthkit":
        kind, value = record.get("metric_type"), record.get("value")
        metadata = record.get("metadata") if isinstance(record.get("metadata"), dict) else {}
        if kind in ("heart_rate", "resting_heart_rate", "heart_rate_variability"):
            return is_number(value)
        if kind == "steps":
            return is_integer(value)
        if kind == "sleep":
            minutes = is_integer(metadata.get("duration_minutes")) or is_integer(record.get("sleep_duration"))
            return minutes and isinstance(record.get("sleep_stage"), str)
        if kind == "workout":
            name = record.get("workout_type") if record.get("workout_type") is not None else value
            duration = record.get("workout_duration")
            measures = all(record.get(f) is None or is_number(record.get(f)) for f in ("active_energy", "distance", "heart_rate"))
            return isinstance(name, str) and (duration is None or is_integer(duration)) and measures
    return False


def ariata_reads(stream, record):
    """The Ariata transforms' rules (contract table, right column): health by its
    top-level fields only, whatever metric_type says."""
    if stream == "location":
        return is_number(record.get("latitude")) and is_number(record.get("longitude")) and has_time(record, "timestamp")
    if stream == "microphone":
        return is_number(record.get("duration_seconds"))
    if stream == "healthkit":
        kind = record.get("metric_type")
        if kind in ("heart_rate", "resting_heart_rate"):
            return is_number(record.get("heart_rate"))
        if kind == "heart_rate_variability":
            return is_number(record.get("hrv"))
        if kind == "steps":
            return is_integer(record.get("steps"))
        if kind == "sleep":
            return is_integer(record.get("sleep_duration")) and isinstance(record.get("sleep_stage"), str)
        if kind == "workout":
            return isinstance(record.get("workout_type"), str)
    return False


def readable_report(rows):
    """From (stream, record JSON) rows: per generation and stream, the records received
    and the records its transforms read; health records of kinds no transform reads are
    left out of both and counted under "archived_only"."""
    report = {gen: {name: {"received": 0, "read": 0} for name in STREAMS} for gen in ("ariata", "virtues")}
    archived_only = {name: 0 for name in STREAMS}
    for stream, text in rows:
        if stream not in STREAMS:
            continue
        try:
            record = json.loads(text)
        except (TypeError, ValueError):
            record = None
        if not isinstance(record, dict):
            continue
        if stream == "healthkit" and record.get("metric_type") not in READ_HEALTH_KINDS:
            archived_only[stream] += 1
            continue
        for gen, reads in (("ariata", ariata_reads), ("virtues", virtues_reads)):
            report[gen][stream]["received"] += 1
            report[gen][stream]["read"] += 1 if reads(stream, record) else 0
    report["archived_only"] = archived_only
    return report


# ---------------------------------------------------------------- state

class Receiver:
    """Everything the server remembers; one lock guards it all."""

    def __init__(self, args):
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.token = args.token
        self.path = args.path
        self.reject_status = args.reject_status
        self.max_body_bytes = args.max_body_bytes
        self.keep_payloads = not args.discard_payloads
        self.streams = parse_streams(args.streams)
        self.on_bad_record = parse_bad_record_mode(args.on_bad_record)
        self.name_errors = not args.unnamed_errors
        self.strict = args.strict
        self.inflate = args.inflate
        self.switches = StreamSwitches(args.verify, args.verify_shape)
        # code -> expiry (time.time()); a code works once.
        self.pairing_codes = {code: time.time() + args.pairing_ttl for code in args.pairing_code or []}
        self.paired = []
        self.generation = args.generation
        self.server_version = args.server_version or ("0.4.2" if args.generation == "virtues" else "0.1.0")
        self.server_commit = args.server_commit
        self.server_built_at = args.server_built_at
        self.virtues = VirtuesLinks(args.token)
        self.faults = [Fault(spec) for spec in args.fault or []]
        self.db = sqlite3.connect(args.store or ":memory:", check_same_thread=False, isolation_level=None)
        self.db.execute("PRAGMA journal_mode = WAL")
        self.db.execute("PRAGMA synchronous = NORMAL")
        self.db.execute("""CREATE TABLE IF NOT EXISTS records (
            id TEXT PRIMARY KEY, stream TEXT NOT NULL, batch_id TEXT NOT NULL,
            received_at TEXT NOT NULL, record TEXT, copies INTEGER NOT NULL DEFAULT 1)""")
        if "copies" not in [row[1] for row in self.db.execute("PRAGMA table_info(records)")]:
            self.db.execute("ALTER TABLE records ADD COLUMN copies INTEGER NOT NULL DEFAULT 1")  # an older --store file
        self.in_flight = 0  # not reset: requests running now still finish
        self.arrivals = 0
        self.reset_counters()

    def reset_counters(self):
        self.requests = []
        self.statuses = {}
        self.duplicates = 0
        self.buffered_duplicates = 0
        self.prefix_buffers = {}  # stream -> records kept from refused batches (buffer-prefix)
        self.batch_ids = set()
        self.repeated_batch_ids = 0

    def add_pairing_code(self, code, ttl):
        if not isinstance(code, str) or not code.strip():
            raise ValueError("a pairing code must be a non-empty string")
        with self.lock:
            self.pairing_codes[code.strip()] = time.time() + float(ttl)

    def complete_pairing(self, code, device_info):
        """Returns (status, answer) as the Ariata server's pairing endpoint does."""
        with self.lock:
            expiry = self.pairing_codes.get(code) if isinstance(code, str) else None
            if expiry is None:
                return 400, {"error": "Invalid or expired pairing code"}
            del self.pairing_codes[code]
            if time.time() > expiry:
                return 400, {"error": "Pairing code has expired"}
            self.paired.append({"code": code, "device_info": device_info})
            if self.generation == "ariata":
                self.switches.switch_all_off()
            return 200, {"source_id": str(uuid.uuid4()), "device_token": self.token,
                         "available_streams": [{"name": name, "display_name": name} for name in self.streams]}

    def health_report(self):
        """GET /health, public on both generations: Ariata {status, version}; Virtues adds
        the build's commit and time (core/src/server/mod.rs)."""
        report = {"status": "healthy", "version": self.server_version}
        if self.generation == "virtues":
            report.update({"commit": self.server_commit, "built_at": self.server_built_at, "min_ios_version": "1.0",
                           "database": "connected"})
        return report

    def accepts_token(self, token):
        """The --token; in virtues mode also every device id linked (the id is the token)."""
        with self.lock:
            expected = self.token
        return token == expected or (self.generation == "virtues" and self.virtues.is_linked(token))

    def reset(self):
        with self.lock:
            self.db.execute("DELETE FROM records")
            self.faults = []
            self.reset_counters()

    def take_fault(self, stream):
        with self.lock:
            for fault in self.faults:
                if fault.matches(stream):
                    if fault.times is not None:
                        fault.times -= 1
                        if fault.times <= 0:
                            self.faults.remove(fault)
                    return fault
        return None

    def store(self, stream, batch_id, records, flush_buffer=True):
        """Stores records by id (then, in buffer-prefix mode, the stream's buffered
        records, as the Ariata server sends its buffer out with the next good batch);
        returns how many of `records` were new."""
        now = datetime.datetime.now(datetime.timezone.utc).isoformat()
        with self.lock:
            repeated = batch_id in self.batch_ids
            self.batch_ids.add(batch_id)
            if repeated:
                self.repeated_batch_ids += 1
            buffered = self.prefix_buffers.pop(stream, []) if flush_buffer else []
            self.db.execute("BEGIN")
            new = self._insert(stream, batch_id, now, records)
            buffered_new = self._insert(stream, batch_id, now, buffered)
            self.db.execute("COMMIT")
            self.duplicates += len(records) - new
            self.buffered_duplicates += len(buffered) - buffered_new
            return new

    def _insert(self, stream, batch_id, now, records):
        new = 0
        for record in records:
            text = json.dumps(record, separators=(",", ":")) if self.keep_payloads else None
            rid = record["id"].lower()
            cursor = self.db.execute(
                "INSERT OR IGNORE INTO records (id, stream, batch_id, received_at, record) VALUES (?, ?, ?, ?, ?)",
                (rid, stream, batch_id, now, text))
            if cursor.rowcount == 0:
                self.db.execute("UPDATE records SET copies = copies + 1 WHERE id = ?", (rid,))
            new += cursor.rowcount
        return new

    def keep_prefix(self, stream, records):
        """Buffer-prefix mode: the records before a refused batch's first bad one wait
        for the stream's next good batch."""
        with self.lock:
            self.prefix_buffers.setdefault(stream, []).extend(records)

    def arrived(self):
        """The next arrival number: the request log is kept in the order requests came,
        not the order their threads finished (a connection closed under a request is
        noted after the client's resend on a new connection has often been)."""
        with self.lock:
            self.arrivals += 1
            return self.arrivals

    def note(self, entry):
        with self.lock:
            at = len(self.requests)
            while at > 0 and self.requests[at - 1]["arrival"] > entry["arrival"]:
                at -= 1
            self.requests.insert(at, entry)
            key = str(entry["status"])
            self.statuses[key] = self.statuses.get(key, 0) + 1

    def stats(self):
        with self.lock:
            per_stream = dict(self.db.execute("SELECT stream, COUNT(*) FROM records GROUP BY stream").fetchall())
            return {
                "requests": len(self.requests),
                "in_flight": self.in_flight,
                "statuses": dict(self.statuses),
                "records": {s: per_stream.get(s, 0) for s in STREAMS},
                "duplicates": self.duplicates,
                "buffered_duplicates": self.buffered_duplicates,
                "buffered": {s: len(b) for s, b in self.prefix_buffers.items() if b},
                "repeated_batch_ids": self.repeated_batch_ids,
                "faults_pending": [f.spec for f in self.faults],
            }

    def stored_ids(self, stream):
        """The ids stored for `stream` in order, and how often each id that was stored
        more than once was stored."""
        with self.lock:
            rows = self.db.execute("SELECT id, copies FROM records WHERE stream = ? ORDER BY rowid", (stream,)).fetchall()
            return [row[0] for row in rows], {row[0]: row[1] for row in rows if row[1] != 1}

    def stored_payloads(self, stream):
        """The records stored for `stream` in order, as JSON objects (none without payloads)."""
        with self.lock:
            rows = self.db.execute("SELECT record FROM records WHERE stream = ? ORDER BY rowid", (stream,)).fetchall()
        return [json.loads(row[0]) for row in rows if row[0]]

    def readable(self):
        """`readable_report` of every stored record (null without payloads)."""
        if not self.keep_payloads:
            return None
        with self.lock:
            rows = self.db.execute("SELECT stream, record FROM records ORDER BY rowid").fetchall()
        return readable_report(rows)

    def verify(self, token):
        """(status, answer) of POST /api/devices/verify for a request with `token`."""
        with self.lock:
            sw = self.switches
            if self.generation == "virtues":
                # Virtues has no such route: its switches live in its web UI only.
                status, answer = 404, {"error": "Not Found"}
            elif sw.status is not None:
                status, answer = sw.status, {"error": "Not Found" if sw.status == 404 else f"status {sw.status}"}
            elif not token or token != self.token:
                status, answer = 401, {"error": "Invalid device token"}
            else:
                status, answer = 200, sw.answer(self.streams)
            sw.calls.append({"at": time.time(), "status": status})
            return status, answer


# ---------------------------------------------------------------- validation

def parse_streams(value):
    """The push streams of the device connection, from a list or a comma-separated text."""
    names = value.split(",") if isinstance(value, str) else list(value)
    names = [str(n).strip() for n in names if str(n).strip()]
    for name in names:
        if name not in STREAMS:
            raise ValueError(f"unknown stream {name!r}: the Ariata server's push streams are {', '.join(STREAMS)}")
    return tuple(names)


def parse_bad_record_mode(value):
    if value not in BAD_RECORD_MODES:
        raise ValueError(f"unknown on_bad_record {value!r}: use one of {', '.join(BAD_RECORD_MODES)}")
    return value


def parse_time(value, field, now, check_range=True):
    if not isinstance(value, str):
        raise ValueError(f"{field} must be an RFC 3339 string")
    try:
        parsed = datetime.datetime.fromisoformat(value)
    except ValueError:
        raise ValueError(f"{field} {value!r} is not RFC 3339") from None
    if parsed.tzinfo is None:
        raise ValueError(f"{field} {value!r} has no time zone")
    if check_range:
        if parsed < EARLIEST:
            raise ValueError(f"{field} {value} is before 2000-01-01")
        if parsed > now + MAX_AHEAD:
            raise ValueError(f"{field} {value} is more than 5 minutes in the future")
    return parsed


def number(record, field):
    value = record.get(field)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{field} must be a number")
    return value


def check_record(stream, record, now, strict=True):
    """Raises ValueError naming what is wrong with one record. Without `strict`, only
    what the servers check: no metadata.source, known metric or Ogg header demanded."""
    if not isinstance(record, dict):
        raise ValueError("a record must be a JSON object")
    try:
        uuid.UUID(str(record.get("id")))
    except ValueError:
        raise ValueError("id must be a UUID") from None
    if stream == "location":
        parse_time(record.get("timestamp"), "timestamp", now)
        if not -90 <= number(record, "latitude") <= 90:
            raise ValueError("latitude out of range")
        if not -180 <= number(record, "longitude") <= 180:
            raise ValueError("longitude out of range")
    elif stream == "microphone":
        start = parse_time(record.get("timestamp_start"), "timestamp_start", now)
        end = parse_time(record.get("timestamp_end"), "timestamp_end", now)
        if end < start:
            raise ValueError("timestamp_end is before timestamp_start")
        audio = record.get("audio_data")
        if not isinstance(audio, str):
            raise ValueError("audio_data must be a base64 string")
        try:
            head = base64.b64decode(audio[:8], validate=True)
            binascii.a2b_base64(audio)
        except (binascii.Error, ValueError):
            raise ValueError("audio_data is not base64") from None
        if strict and not head.startswith(b"OggS"):
            raise ValueError("audio_data is not an Ogg file")
    elif stream == "healthkit":
        parse_time(record.get("timestamp"), "timestamp", now)
        check_health_limits(record)
        if strict and record.get("metric_type") not in HEALTH_METRICS:
            raise ValueError(f"metric_type {record.get('metric_type')!r} is unknown")
        if record.get("metric_type") in ("sleep", "workout") and isinstance(record.get("value"), str):
            pass  # a sleep record's value is its stage's name, a workout's its type
        elif strict:
            number(record, "value")
        metadata = record.get("metadata")
        if strict and (not isinstance(metadata, dict) or not isinstance(metadata.get("source"), str)):
            raise ValueError("metadata must be an object with a source")


# Both servers' limits on a health record's top-level fields (validation.rs and
# healthkit/mod.rs, the same in both generations); `value` and `metadata` are not checked.
HEART_RATE_LIMITS = (30, 250)


def check_health_limits(record):
    """Raises ValueError as the servers do for a top-level field outside their limits:
    one such record fails its whole batch."""
    low, high = HEART_RATE_LIMITS
    for field in ("heart_rate", "resting_heart_rate"):
        value = record.get(field)
        if is_number(value) and not low <= value <= high:
            raise ValueError(f"Invalid heart rate: {value} bpm. Must be between {low} and {high}")
    for field, name in (("hrv", "HRV"), ("distance", "Distance")):
        value = record.get(field)
        if is_number(value) and value < 0:
            raise ValueError(f"{name} must be positive, got {value}")
    steps = record.get("steps")
    if is_integer(steps) and steps < 0:
        raise ValueError("Steps cannot be negative")
    fat = record.get("body_fat_percentage")
    if is_number(fat) and not 0 <= fat <= 100:
        raise ValueError(f"Body fat percentage must be between 0 and 100, got {fat}")


def check_body(body, now):
    if not isinstance(body, dict):
        raise BadRequest("the body must be a JSON object")
    for field in ("source", "stream", "device_id", "timestamp"):
        if not isinstance(body.get(field), str) or not body.get(field):
            raise BadRequest(f"{field} is required and must be a non-empty string")
    if not isinstance(body.get("records"), list):
        raise BadRequest("records is required and must be an array")
    try:
        parse_time(body["timestamp"], "timestamp", now, check_range=False)
    except ValueError as error:
        raise BadRequest(str(error)) from None


# ---------------------------------------------------------------- Virtues linking

VIRTUES_CODE_FLOW_GONE = "Pairing code flow is deprecated. Use /link or QR pairing endpoint."
VIRTUES_PENDING_TTL = 600  # a pending QR pairing lives 10 minutes on the server


class VirtuesLinks:
    """Devices linked by id, as the Virtues server keeps them (--generation virtues): the
    device's id is its token. Linked by hand (POST /api/devices/pairing/link, what the
    web UI's link page sends) or by completing a pending source of a QR code
    (POST /api/devices/pairing/{source_id}/complete, the pending source made with
    /_control/pending-pairing). The --token counts as linked from the start."""

    def __init__(self, token):
        self.lock = threading.Lock()
        self.linked = {token: {"device_id": token, "source_id": "source_token", "how": "token", "device_info": None}}
        self.pending = {}  # source_id -> {"expires": time.time(), "claimed": bool}
        self.login_wall = False  # every device route answers 401 {"error":"Unauthorized"}

    def is_linked(self, device_id):
        with self.lock:
            return device_id in self.linked

    def link(self, device_id, how, source_id=None, device_info=None):
        with self.lock:
            entry = self.linked.get(device_id) or {"source_id": source_id or "source_" + uuid.uuid4().hex[:12]}
            entry.update({"device_id": device_id, "how": how, "device_info": device_info})
            self.linked[device_id] = entry
            return entry["source_id"]

    def add_pending(self, source_id, ttl):
        source_id = source_id or "source_" + uuid.uuid4().hex[:12]
        if not isinstance(source_id, str):
            raise ValueError("source_id must be a string")
        with self.lock:
            self.pending[source_id] = {"expires": time.time() + float(ttl), "claimed": False}
        return source_id

    def complete(self, source_id, device_id, device_info):
        """(status, answer) of POST /api/devices/pairing/{source_id}/complete."""
        if not isinstance(device_id, str) or not device_id.strip():
            return 400, {"error": "Invalid input: Device ID cannot be empty"}
        with self.lock:
            session = self.pending.get(source_id)
            if session is None:
                return 404, {"error": "Pairing session not found"}
            if session["claimed"]:
                return 400, {"error": "Invalid input: Pairing session already claimed by another device"}
            if time.time() > session["expires"]:
                return 400, {"error": "Invalid input: Pairing session expired. Please generate a new QR code."}
            session["claimed"] = True
        self.link(device_id, "qr", source_id=source_id, device_info=device_info)
        return 200, {"source_id": source_id, "device_token": device_id}

    def entries(self):
        with self.lock:
            return [dict(entry) for entry in self.linked.values() if entry["how"] != "token"]


def virtues_streams(names):
    """available_streams as Virtues lists them: each stream's descriptor, schema and example."""
    return [{"descriptor": {"name": name, "source": "ios", "display_name": name.capitalize(),
                            "table_name": f"stream_ios_{name}", "supports_incremental": False},
             "config_schema": {}, "config_example": {}} for name in names]


# ---------------------------------------------------------------- HTTP

class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, so the agent's connection reuse is real
    server_version = "ariata-ingest-receiver/1"
    receiver = None  # set by main
    verbose = False
    _entry = None  # the ingest request being answered: the answer's counts go into its log entry

    def log_message(self, format, *args):
        if self.verbose:
            sys.stderr.write("%s %s\n" % (self.log_date_time_string(), format % args))

    def finish(self):
        try:
            super().finish()
        except OSError:
            pass  # a fault that reset the connection on purpose

    # -- plumbing

    def answer(self, status, payload, headers=None):
        if self._entry is not None and isinstance(payload, dict):
            for key in ("accepted", "rejected"):
                if isinstance(payload.get(key), int):
                    self._entry[key] = payload[key]
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def read_body(self):
        length = self.headers.get("Content-Length")
        if length is None or not length.isdigit():
            return None
        remaining = int(length)
        chunks = []
        while remaining > 0:
            chunk = self.rfile.read(min(remaining, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            remaining -= len(chunk)
        return b"".join(chunks)

    # -- control API

    def do_GET(self):
        url = urlparse(self.path)
        r = self.receiver
        if url.path == "/health":
            self.answer(200, r.health_report())
            return
        if self.virtues_get(url.path):
            return
        if url.path == "/_control/health":
            self.answer(200, {"ok": True})
        elif url.path == "/_control/stats":
            self.answer(200, r.stats())
        elif url.path == "/_control/requests":
            with r.lock:
                self.answer(200, {"requests": list(r.requests)})
        elif url.path == "/_control/verify":
            with r.lock:
                self.answer(200, {"status": r.switches.status, "calls": list(r.switches.calls),
                                  "answer": r.switches.answer(r.streams)})
        elif url.path == "/_control/readable":
            self.answer(200, {"readable": r.readable()})
        elif url.path == "/_control/pairings":
            with r.lock:
                self.answer(200, {"paired": list(r.paired)})
        elif url.path == "/_control/payloads":
            stream = parse_qs(url.query).get("stream", [""])[0]
            self.answer(200, {"stream": stream, "records": r.stored_payloads(stream)})
        elif url.path == "/_control/records":
            stream = parse_qs(url.query).get("stream", [""])[0]
            ids, copies = r.stored_ids(stream)
            self.answer(200, {"stream": stream, "ids": ids, "copies": copies})
        else:
            self.answer(404 if url.path != r.path else 405, {"error": f"no GET {url.path} here"})

    def do_DELETE(self):
        if urlparse(self.path).path == "/_control/faults":
            with self.receiver.lock:
                self.receiver.faults = []
            self.answer(200, {"faults": []})
        else:
            self.answer(404, {"error": "not found"})

    def control_post(self, path):
        r = self.receiver
        try:
            request = json.loads(self.read_body() or b"{}")
            if self.virtues_control(path, request):
                return
            if path == "/_control/faults":
                faults = [Fault(spec) for spec in request.get("faults", [])]
                with r.lock:
                    r.faults.extend(faults)
                    specs = [f.spec for f in r.faults]
                self.answer(200, {"faults": specs})
            elif path == "/_control/config":
                with r.lock:
                    if "token" in request:
                        r.token = request["token"]
                    if "reject_status" in request:
                        r.reject_status = int(request["reject_status"])
                    if "max_body_bytes" in request:
                        r.max_body_bytes = int(request["max_body_bytes"])
                    if "streams" in request:
                        r.streams = parse_streams(request["streams"])
                    if "on_bad_record" in request:
                        r.on_bad_record = parse_bad_record_mode(request["on_bad_record"])
                    if "name_errors" in request:
                        r.name_errors = bool(request["name_errors"])
                self.answer(200, {"ok": True})
            elif path == "/_control/verify":
                with r.lock:
                    r.switches.update(request)
                self.answer(200, {"ok": True})
            elif path == "/_control/reset":
                r.reset()
                self.answer(200, {"ok": True})
            elif path == "/_control/pairing":
                r.add_pairing_code(request.get("code"), request.get("ttl", 600))
                self.answer(200, {"ok": True})
            else:
                self.answer(404, {"error": "not found"})
        except (ValueError, AttributeError, TypeError) as error:
            self.answer(400, {"error": str(error)})

    # -- ingest

    def do_POST(self):
        path = urlparse(self.path).path
        if path.startswith("/_control/"):
            self.control_post(path)
            return
        if self.virtues_post(path):
            return
        if path == PAIRING_PATH:
            self.pairing()
            return
        if path == VERIFY_PATH:
            self.verify_device()
            return
        started = time.monotonic()
        entry = {"at": time.time(), "arrival": self.receiver.arrived(), "path": path, "stream": None, "batch_id": self.headers.get("X-Batch-Id"),
                 "records": 0, "record_ids": [], "body_bytes": 0,
                 "wire_bytes": int(self.headers.get("Content-Length") or 0),
                 "encoding": self.headers.get("Content-Encoding"), "user_agent": self.headers.get("User-Agent"),
                 "content_type": self.headers.get("Content-Type"), "client_port": self.client_address[1],
                 "fault": None, "status": None, "accepted": None, "rejected": None}
        with self.receiver.lock:
            self.receiver.in_flight += 1
        self._entry = entry
        try:
            status = self.ingest(path, entry)
        except (BrokenPipeError, ConnectionResetError):
            status = "client went away"
        finally:
            self._entry = None
            with self.receiver.lock:
                self.receiver.in_flight -= 1
        entry["status"] = status
        entry["seconds"] = round(time.monotonic() - started, 4)
        self.receiver.note(entry)
        if self.verbose or status not in (200, "client went away"):
            sys.stderr.write(f"POST {path} stream={entry['stream']} records={entry['records']} "
                             f"bytes={entry['wire_bytes']} fault={entry['fault']} -> {status}\n")

    def verify_device(self):
        """POST /api/devices/verify: the Ariata server's stream settings for this device."""
        self.read_body()
        authorization = self.headers.get("Authorization") or ""
        token = authorization[len("Bearer "):] if authorization.startswith("Bearer ") else None
        status, answer = self.receiver.verify(token)
        self.answer(status, answer)
        if self.verbose:
            sys.stderr.write(f"POST {VERIFY_PATH} -> {status}\n")

    def answer_text(self, status, text):
        """A plain-text answer, as the servers' JSON extractor gives for a body it cannot read."""
        data = text.encode()
        self.send_response(status)
        self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def pairing(self):
        try:
            request = json.loads(self.read_body() or b"")
        except ValueError:
            self.answer(400, {"error": "the body is not JSON"})
            return
        if not isinstance(request, dict) or not isinstance(request.get("device_info"), dict):
            self.answer(400, {"error": "code and device_info are required"})
            return
        info = request["device_info"]
        missing = [k for k in ("device_id", "device_name", "device_model", "os_version", "app_version")
                   if not isinstance(info.get(k), str) or not info.get(k)]
        if missing:
            self.answer(400, {"error": f"device_info lacks {', '.join(missing)}"})
            return
        status, answer = self.receiver.complete_pairing(request.get("code"), info)
        self.answer(status, answer)

    # -- Virtues (--generation virtues): linking by device id

    def virtues_device_route(self, path):
        """The routes Virtues' release of 2026-02 put behind its web login."""
        return path == self.receiver.path or path.startswith("/api/devices/")

    def virtues_get(self, path):
        """GET /_control/links in any mode; GET /api/devices/health (both generations: Ariata
        has it since 2025-11-19; a Virtues id linked is a token there).
        Returns True when it answered."""
        r = self.receiver
        if path == "/_control/links":
            self.answer(200, {"linked": r.virtues.entries()})
            return True
        if not self.virtues_device_route(path) or (r.generation != "virtues" and path != "/api/devices/health"):
            return False
        if r.generation == "virtues" and r.virtues.login_wall:
            self.answer(401, {"error": "Unauthorized"})
        elif path == "/api/devices/health":
            token = self.headers.get("X-Device-Token")
            authorization = self.headers.get("Authorization")
            if authorization is not None:
                if not authorization.startswith("Bearer "):
                    self.answer(401, {"error": "Invalid Authorization header format. Expected: Bearer <token>"})
                    return True
                token = authorization[len("Bearer "):]
            if token is None:
                self.answer(401, {"error": "Missing authentication header. Provide Authorization: Bearer <token> "
                                           "or X-Device-Token: <token>"})
            elif r.accepts_token(token):
                with r.virtues.lock:
                    source_id = r.virtues.linked.get(token, {}).get("source_id", "source_token")
                self.answer(200, {"status": "active", "source_id": source_id})
            else:
                self.answer(401, {"error": "Invalid or revoked device token"})
        else:
            return False
        return True

    def virtues_post(self, path):
        """Virtues' device routes in virtues mode; returns True when it answered."""
        r = self.receiver
        if r.generation != "virtues" or not self.virtues_device_route(path):
            return False
        if r.virtues.login_wall:
            self.read_body()
            self.answer(401, {"error": "Unauthorized"})
            return True
        if path == PAIRING_PATH:
            self.read_body()
            self.answer(400, {"error": VIRTUES_CODE_FLOW_GONE})
            return True
        parts = path.split("/")  # "", api, devices, pairing, {source_id}, complete
        is_link = path == "/api/devices/pairing/link"
        is_complete = len(parts) == 6 and parts[3] == "pairing" and parts[5] == "complete"
        if not (is_link or is_complete):
            return False
        try:
            request = json.loads(self.read_body() or b"")
        except ValueError:
            self.answer(400, {"error": "the body is not JSON"})
            return True
        if not isinstance(request, dict):
            self.answer(422, {"error": "the body must be a JSON object"})
            return True
        if is_link:
            device_id = request.get("device_id")
            if not isinstance(device_id, str) or not isinstance(request.get("name"), str) \
                    or not isinstance(request.get("device_type"), str):
                self.answer(422, {"error": "device_id, name and device_type are required"})
                return True
            if not device_id.strip():
                self.answer(400, {"error": "Invalid input: Device ID cannot be empty"})
                return True
            status, answer = 200, {"source_id": r.virtues.link(device_id, "link"), "device_token": device_id}
        else:
            info = request.get("device_info")
            missing = [k for k in ("device_id", "device_name", "device_model", "os_version")
                       if not isinstance(info, dict) or not isinstance(info.get(k), str)]
            if not isinstance(request.get("device_id"), str) or missing:
                self.answer(422, {"error": "device_id and device_info (device_id, device_name, device_model, "
                                           "os_version) are required"})
                return True
            status, answer = r.virtues.complete(parts[4], request["device_id"], info)
        if status == 200:
            with r.lock:
                answer["available_streams"] = virtues_streams(r.streams)
        self.answer(status, answer)
        return True

    def virtues_control(self, path, request):
        """POST /_control/pending-pairing {"source_id"?, "ttl"?}: a QR code's pending source;
        /_control/login-wall {"on": bool}: every device route answers 401 Unauthorized.
        Returns True when it answered."""
        r = self.receiver
        if path == "/_control/pending-pairing":
            source_id = r.virtues.add_pending(request.get("source_id"), request.get("ttl", VIRTUES_PENDING_TTL))
            self.answer(200, {"source_id": source_id})
        elif path == "/_control/login-wall":
            with r.virtues.lock:
                r.virtues.login_wall = bool(request.get("on", True))
            self.answer(200, {"ok": True})
        else:
            return False
        return True

    def ingest(self, path, entry):
        r = self.receiver
        if path != r.path:
            self.read_body()
            self.answer(404, {"error": f"no ingest endpoint at {path}; it is {r.path}"})
            return 404
        length = self.headers.get("Content-Length")
        if length is None or not length.isdigit():
            self.close_connection = True
            self.answer(411, {"error": "Content-Length is required"})
            return 411
        if int(length) > r.max_body_bytes:
            self.close_connection = True
            if int(length) <= DRAINED_OVERSIZE:
                # Read first: answering while the client still sends makes its send fail
                # with a broken pipe instead of reading the 413 (a race that load decides).
                self.read_body()
            self.answer(413, {"error": f"body of {length} bytes is over the limit of {r.max_body_bytes}"})
            return 413
        raw = self.read_body()

        # Decode enough to know the stream before picking a fault.
        body = None
        problem = None
        encoding = (self.headers.get("Content-Encoding") or "identity").lower()
        data = raw
        if encoding == "gzip" and not r.inflate:
            problem = GZIP_REFUSED
        elif encoding == "gzip":
            try:
                data = gzip.decompress(raw)
            except (OSError, EOFError) as error:
                problem = f"the body is not valid gzip: {error}"
        elif encoding != "identity":
            problem = f"Content-Encoding {encoding} is not supported: send identity or gzip"
        if problem is None:
            entry["body_bytes"] = len(data)
            try:
                body = json.loads(data)
            except ValueError as error:
                problem = f"the body is not JSON: {error}"
        stream = body.get("stream") if isinstance(body, dict) else None
        entry["stream"] = stream
        if isinstance(body, dict) and isinstance(body.get("records"), list):
            entry["records"] = len(body["records"])
            entry["record_ids"] = [rec.get("id") for rec in body["records"] if isinstance(rec, dict)]

        self._records = body.get("records") if isinstance(body, dict) and isinstance(body.get("records"), list) else None
        fault = r.take_fault(stream)
        if fault is not None:
            entry["fault"] = fault.spec
            outcome = self.apply(fault)
            if outcome is not None:
                return outcome

        token = self.headers.get("X-Device-Token")
        authorization = self.headers.get("Authorization") or ""
        if not token and authorization.startswith("Bearer "):
            token = authorization[len("Bearer "):]
        if not token or not r.accepts_token(token):
            self.answer(401, {"error": "invalid or missing device token"})
            return 401
        if not (self.headers.get("Content-Type") or "").startswith("application/json"):
            self.answer(400, {"error": "Content-Type must be application/json"})
            return 400
        if problem is GZIP_REFUSED:
            # Neither server inflates bodies: their JSON extractor fails on the gzip bytes.
            self.answer_text(400, GZIP_REFUSED)
            return 400
        batch_id = self.headers.get("X-Batch-Id")
        if r.strict:
            try:
                uuid.UUID(batch_id or "")
            except ValueError:
                self.answer(400, {"error": "X-Batch-Id must be a UUID"})
                return 400
        batch_id = batch_id or str(uuid.uuid4())
        if problem is not None:
            self.answer(400, {"error": problem})
            return 400
        now = datetime.datetime.now(datetime.timezone.utc)
        try:
            check_body(body, now)
        except BadRequest as error:
            self.answer(400, {"error": str(error)})
            return 400

        records = body["records"]
        with r.lock:
            known = stream in r.streams
        if not known:
            # The real server looks the stream up by name among the connection's push
            # streams; a name it does not find refuses every record, with a 200.
            self.answer(200, {"accepted": 0, "rejected": len(records), "next_checkpoint": None,
                              "activity_id": None, "error": f"stream {stream!r} is not a push stream of this device"})
            return 200
        errors = []
        good = []
        first_bad = None
        for index, record in enumerate(records):
            try:
                check_record(stream, record, now, strict=r.strict)
                good.append(record)
            except ValueError as error:
                rid = record.get("id") if isinstance(record, dict) else None
                errors.append({"id": rid, "error": str(error)})
                first_bad = index if first_bad is None else first_bad
        if errors:
            with r.lock:
                mode, named = r.on_bad_record, r.name_errors
            if not named:
                errors = [{"error": e["error"]} for e in errors]
            if mode == "store-good" and good:
                new = r.store(stream, batch_id.lower(), good, flush_buffer=False)
                self.answer(200, {"accepted": len(good), "rejected": len(errors), "next_checkpoint": None,
                                  "activity_id": str(uuid.uuid4()), "new": new, "errors": errors})
                return 200
            if mode == "buffer-prefix":
                r.keep_prefix(stream, records[:first_bad])
            # The Ariata server refuses the whole batch for one bad record.
            status = r.reject_status
            self.answer(status, {"accepted": 0, "rejected": len(records), "next_checkpoint": None,
                                 "activity_id": None, "errors": errors})
            return status
        new = r.store(stream, batch_id.lower(), records)
        self.answer(200, {"accepted": len(records), "rejected": 0, "next_checkpoint": None,
                          "activity_id": str(uuid.uuid4()), "new": new})
        return 200

    def apply(self, fault):
        """Carries out a fault; returns the status answered, or None to go on normally."""
        if fault.kind == "status":
            headers = {}
            if fault.retry_after is not None:
                headers["Retry-After"] = fault.retry_after
            if fault.retry_after_date is not None:
                when = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=fault.retry_after_date)
                headers["Retry-After"] = format_datetime(when, usegmt=True)
            status = int(fault.value)
            self.answer(status, {"error": f"injected fault: {fault.spec}"}, headers)
            return status
        if fault.kind == "lie":
            if fault.value == "html":
                page = b"<!DOCTYPE html><html><head><title>Sign in</title></head><body>Please sign in to continue.</body></html>"
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(page)))
                self.end_headers()
                self.wfile.write(page)
            elif fault.value == "json":
                self.answer(200, {})
            else:
                sent = len(self._records) if self._records is not None else 0
                self.answer(200, {"accepted": max(sent - 1, 0), "rejected": 0, "next_checkpoint": None,
                                  "activity_id": str(uuid.uuid4())})
            return 200
        if fault.kind == "slow":
            self.receiver.stopping.wait(float(fault.value))
            return None
        if fault.kind == "hang":
            self.receiver.stopping.wait(float(fault.value) if fault.value else None)
            self.close_connection = True
            return "hang"
        if fault.kind == "reset":
            # SO_LINGER 0 makes close() send RST instead of FIN.
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.connection.close()
            self.close_connection = True
            return "reset"
        if fault.kind == "close":
            self.connection.shutdown(socket.SHUT_RDWR)
            self.close_connection = True
            return "close"
        return None


class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 64


def main(argv=None):
    parser = argparse.ArgumentParser(
        description="Reference ingest receiver for ariata-agent (tests and demo).",
        epilog=__doc__.split("\n\n", 2)[2], formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=0, help="port to listen on; 0 picks a free one (default)")
    parser.add_argument("--port-file", help="write the port here once listening")
    parser.add_argument("--token", required=True, help="the device token to accept")
    parser.add_argument("--path", default="/ingest", help="path of the ingest endpoint (default /ingest)")
    parser.add_argument("--store", help="SQLite file for accepted records (default: in memory)")
    parser.add_argument("--discard-payloads", action="store_true",
                        help="store only ids and streams, not the records (benchmarks)")
    parser.add_argument("--reject-status", type=int, default=200, choices=(200, 400, 422),
                        help="status for a batch with a bad record: 200 with rejected N like the Ariata server (default), or 400/422")
    parser.add_argument("--streams", default=",".join(STREAMS),
                        help="the device connection's push streams, comma-separated (default: %(default)s); "
                             "a batch for another stream gets 200 with every record rejected, like the Ariata server")
    parser.add_argument("--on-bad-record", default="refuse", choices=BAD_RECORD_MODES,
                        help="what a batch with a bad record does: refuse it whole and store nothing (default); "
                             "store-good: store its good records and answer accepted/rejected counts; "
                             "buffer-prefix: refuse it whole but keep the records before the first bad one "
                             "for the stream's next good batch, like the Ariata server")
    parser.add_argument("--unnamed-errors", action="store_true",
                        help="leave the record ids out of the errors of an answer that refuses records")
    parser.add_argument("--pairing-code", action="append", metavar="CODE",
                        help="a one-time pairing code a device may exchange for the token (repeatable)")
    parser.add_argument("--pairing-ttl", type=float, default=600, metavar="SECONDS",
                        help="how long a --pairing-code stays valid (default 600)")
    parser.add_argument("--strict", action="store_true",
                        help="also make the contract's checks no server makes: an X-Batch-Id UUID, metadata.source "
                             "and a known metric_type with a numeric value on health records, an Ogg file as audio_data "
                             "(default: only what the Ariata and Virtues servers check)")
    parser.add_argument("--inflate", action="store_true",
                        help="inflate gzip request bodies, as a proxy in front of the server would (default: answer "
                             "a gzip body 400 with a plain-text error, as both servers do)")
    parser.add_argument("--verify", action="append", metavar="SPEC",
                        help="a stream switch for POST /api/devices/verify (repeatable): STREAM=on|off, or "
                             "STREAM.KEY=VALUE for its config, e.g. location.update_interval_seconds=30 or "
                             "healthkit.enabled_metrics=heart_rate,steps (default: every stream on)")
    parser.add_argument("--verify-shape", choices=StreamSwitches.SHAPES, default="ariata",
                        help="how verify lists switched-off streams: ariata (default: left out, as the real "
                             "server does) or explicit (listed with is_enabled false)")
    parser.add_argument("--max-body-bytes", type=int, default=32 * 1024 * 1024,
                        help="larger bodies get 413 (default 32 MiB)")
    parser.add_argument("--fault", action="append", metavar="SPEC", help="a fault to inject (repeatable); see below")
    parser.add_argument("--tls-cert", metavar="PEM", help="serve HTTPS with this certificate (chain) file")
    parser.add_argument("--tls-key", metavar="PEM", help="the private key of --tls-cert")
    parser.add_argument("--generation", choices=("ariata", "virtues"), default="ariata", help="the server generation to play: ariata (default) or virtues (linking by device id; see Virtues mode below)")
    parser.add_argument("--server-version", help="the version GET /health reports (default 0.1.0 for ariata, 0.4.2 for virtues)")
    parser.add_argument("--server-commit", default="d561967a3f0e4b1c9a8f2e6d7b5c4a3f2e1d0c9b",
                        help="virtues mode: the commit GET /health reports")
    parser.add_argument("--server-built-at", default="2026-03-10T12:00:00Z",
                        help="virtues mode: the build time GET /health reports (default after the 2026-02 login wall)")
    parser.add_argument("--verbose", action="store_true", help="log every request to stderr")
    args = parser.parse_args(argv)

    try:
        receiver = Receiver(args)
    except ValueError as error:
        parser.error(str(error))
    Handler.receiver = receiver
    Handler.verbose = args.verbose
    server = Server((args.host, args.port), Handler)
    port = server.server_address[1]
    scheme = "http"
    if args.tls_cert:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(args.tls_cert, args.tls_key)
        server.socket = context.wrap_socket(server.socket, server_side=True)
        scheme = "https"

    def stop(signum, frame):
        receiver.stopping.set()
        threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    if args.port_file:
        temporary = args.port_file + ".tmp"
        with open(temporary, "w") as handle:
            handle.write(f"{port}\n")
        os.replace(temporary, args.port_file)
    print(f"listening on {scheme}://{args.host}:{port}{args.path}", flush=True)
    server.serve_forever(poll_interval=0.2)
    server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
