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

Box mode (--generation box) plays the Virtues box, the 0.1.x server of 2026-09
(virtues-os/virtues; the contract's section "The Virtues box"). It has no /ingest and
no token. Plain HTTP on --port (the box's :8000) answers only the box's public routes:
GET /health ({"status", "version" (the build's codename, --box-codename), "api_version",
"channel", "commit", "built_at", "min_ios_version", "database", "pool"}), GET
/api/box/health, GET /api/box/identity and POST /api/pair/consume; an unknown /api/ or
/auth/ path answers 404 {"error":"not_found","path":...}, every other route 401
{"error":"Unauthorized"}; every answer carries x-virtues-box-build: VERSION COMMIT7
(--server-version, --server-commit). Pairing: a device posts {"token" (a code made with
/_control/box/pairing: 6 digits, single use, 30 minutes), "kind" (mobile_app, desktop_app,
sensor or cli), "source" ("ios" gets the ios_ingest applet), "label", "device_info",
"device_node_id" (its iroh EndpointId)} and gets 200 {"device_id", "redirect",
"applet_ids": {"ios_ingest": ID}, "box_node_id", "box_direct_addrs"} (relay_url only
when set with /_control/box/config: the box runs LAN-only; "action_ids" instead of
"applet_ids" when told to play an older box; no reach ticket when told the endpoint is
not up); 401 invalid_or_expired_token, 400 missing_token|invalid_kind|invalid_source,
429 {"error":"too_many_attempts","retry_after_secs":1800} from the 11th try of an IP
address within 30 minutes. Everything else goes over iroh (box_transport.py, needs the
PyPI package iroh): an endpoint on 127.0.0.1:--box-iroh-port (minimal preset, relay
disabled) accepting ALPN virtues/http/1 closes a connection from a key that no paired,
unforgotten device named with code 1 "not allowlisted", and serves each bidirectional
stream as one HTTP/1.1 connection: POST /webhook/APPLET_ID (401 when the device's
device_node_id is not, as text, the key the connection proved; 409 with status
"skipped" for a body that is not JSON (wrong content type, gzip, over 512 MiB); 404 no
such applet; 403 not the device's applet; 409 {"run_id":null,"status":"skipped"} while a
run of the same applet is still going; 500 for a stream name other than healthkit,
location, microphone, eventkit, contacts, financekit; else the records are stored once
by id and the answer is 200 {"run_id", "status":"success"}) and GET
/api/devices/applet-ids ({"device_id", "applet_ids"}). A client that ends its sending
side before the answer is written gets none (the stream ends empty), as from hyper; a
request without "Connection: close" leaves the stream open for a next request (hyper's
keep-alive), so a client that reads to the end of the stream waits. iroh reads a
device_node_id as 64 lower-case hex digits (or 52 base32 characters), after trimming:
an upper-case one names no key, so its connections are closed "not allowlisted"; a
base32 or padded one is allowlisted but not equal as text to the key, so 401. The
box checks no record value: a heart rate of 400 is stored as 400, but each stored record
is marked with the first check the older servers would have failed it on (stats
"invalid_records", /_control/payloads "problems") and with whether the box's ios_ingest
transforms read it ("box_unread"; /_control/readable "box"). The box's state (paired
devices, applets, its secret key and iroh port) is kept in --store, so a restart with the
same --store keeps its identity and its devices. It refuses to start while a network
interface other than loopback is up (run it in a network namespace with only lo up), as
nothing may leave the machine, unless --box-allow-network.

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
  GET    /_control/box                box mode: the iroh endpoint (endpoint_id, port, direct_addrs),
                                      the box's settings and counters (pair attempts, connections
                                      refused, requests abandoned), live connections per key
  POST   /_control/box/pairing        {"code": "123456", "ttl": 1800, "standing": false} makes a pairing
                                      code (6 random digits when left out; standing: many uses
                                      within its ttl, like the box's rotating code); answers {"code"}
  GET    /_control/box/recordings     box mode: the audio rows its ios_ingest applet writes for the
                                      microphone records stored, in order (microphone.rs ingest_one:
                                      started_at, ended_at, duration_seconds, audio_url null without
                                      audio, is_silent, average_db_level, metadata {"muted_by"})
  GET    /_control/box/devices        the devices paired: device_id, kind, source, label, device_info,
                                      device_node_id as sent, applet_id, allowlisted, forgotten
  POST   /_control/box/forget         {"device_id": ...} or {"device_node_id": ...}: revoked, off the
                                      allowlist (its next connection is closed "not allowlisted";
                                      requests on a connection it keeps get 401); "close_connections":
                                      true also closes its live connections (a box restart)
  POST   /_control/box/rotate-applet  {"device_id": ...} (default: the last device paired with an
                                      applet): a new applet id; the old one answers 404
  POST   /_control/box/config         {"reach_ticket": false (as before the endpoint is up),
                                       "ids_key": "action_ids" (an older box), "relay_url": "...",
                                       "run_seconds": 2 (each run takes that long), "rate_limit": false,
                                       "exempt_loopback": true (the box's own exemption for 127.0.0.1),
                                       "max_body_bytes": N, "fin_grace": 0.02}

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

In box mode the same faults apply to the next webhook requests (a stream over iroh), in the
box's shapes: status=409 (a body the box could not read), status=404 (no such applet),
status=403, status=500 (the applet failed), any other status; skipped (409
{"run_id":null,"status":"skipped"}); slow, hang; reset (the stream is reset); close (the
stream ends without an answer); lie=json|html (200 without storing), lie=short (200
success without storing).

Faults apply in order: the first whose stream matches is used and counts down.
Only the Python 3 standard library is used, except by box mode, whose transport
(box_transport.py) needs the PyPI package iroh (1.2.0); it is imported in box mode only.
"""

import argparse
import asyncio
import base64
import binascii
import datetime
import gzip
import ipaddress
import json
import os
import random
import secrets
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
from urllib.parse import parse_qs, unquote, urlparse

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

# Box mode (--generation box): the Virtues box of 2026-09. Paths are in virtues-os/virtues.
# The stream names applets/ios_ingest/main.rs dispatches on; any other fails the run (500).
BOX_STREAMS = ("healthkit", "location", "microphone", "eventkit", "contacts", "financekit")
# api/pair.rs consume_handler: the kinds it takes.
BOX_KINDS = ("mobile_app", "desktop_app", "sensor", "cli")
# applets/sources.toml: the sources a device may declare, and the ingest applet (the
# command of its per-device fan-out, virtues_helpers::auth::fanout_applet_ids) each gets.
BOX_SOURCES = {"ios": "ios_ingest", "mac": "mac_ingest", "google": None, "notion": None, "strava": None,
               "plaid": None, "github": None, "x": None, "instagram": None, "chat_import": None}
# middleware/rate_limit.rs: 10 consume attempts per IP address in a sliding 30 minutes.
BOX_RATE_ATTEMPTS = 10
BOX_RATE_WINDOW = 30 * 60
BOX_CODE_TTL = 30 * 60  # a code from `virtues pair` (CLI_REDEEM_TTL_MIN); 5 minutes from the web UI
BOX_BODY_LIMIT = 512 * 1024 * 1024  # server/mod.rs: DefaultBodyLimit on /webhook/:applet_id
BOX_DEFAULT_VERSION = "0.1.9"
BOX_DEFAULT_COMMIT = "5e1c0de4a7b2c9d8e3f6a1b0c5d4e7f8a9b2c3d1"
VIRTUES_DEFAULT_COMMIT = "d561967a3f0e4b1c9a8f2e6d7b5c4a3f2e1d0c9b"


class BadRequest(Exception):
    """The body as a whole breaks the contract (answered 400)."""


# ---------------------------------------------------------------- faults

class Fault:
    KINDS = ("status", "slow", "hang", "reset", "close", "lie", "skipped")

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
                if value not in STREAMS + BOX_STREAMS:
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


def box_reads(stream, record):
    """Whether the box's ios_ingest applet writes a table row for the record (it archives
    every record raw either way): location.rs write_locations needs numeric latitude and
    longitude; healthkit.rs takes `value` first and the top-level field as fallback
    (as_f64, steps as_i64, sleep metadata.duration_minutes or sleep_duration as_i64,
    workout workout_type or value as a string), and has no table for other metric types
    (main.rs healthkit_ingest counts them "unknown"); microphone.rs ingest_one needs
    audio_data that decodes (externalize_blobs) or is_silent as a JSON boolean true.
    eventkit, contacts and financekit are not modelled (counted as read)."""
    if not isinstance(record, dict):
        return False
    if stream == "location":
        return is_number(record.get("latitude")) and is_number(record.get("longitude"))
    if stream == "healthkit":
        kind = record.get("metric_type") if isinstance(record.get("metric_type"), str) else ""
        value = record.get("value")
        metadata = record.get("metadata") if isinstance(record.get("metadata"), dict) else {}
        fallback = {"heart_rate": "heart_rate", "resting_heart_rate": "heart_rate", "heart_rate_variability": "hrv",
                    "active_energy": "active_energy", "distance": "distance"}
        if kind in fallback:
            return is_number(value) or is_number(record.get(fallback[kind]))
        if kind == "steps":
            return is_integer(value) or is_integer(record.get("steps"))
        if kind == "sleep":
            return is_integer(metadata.get("duration_minutes")) or is_integer(record.get("sleep_duration"))
        if kind == "workout":
            return isinstance(record.get("workout_type"), str) or isinstance(value, str)
        return False
    if stream == "microphone":
        audio = record.get("audio_data")
        if isinstance(audio, str):
            try:
                base64.b64decode(audio, validate=True)
                return True
            except (binascii.Error, ValueError):
                pass
        return record.get("is_silent") is True
    return True


def box_audio_row(record):
    """The data_audio_recording row the box's applets/ios_ingest microphone.rs ingest_one
    writes for a microphone record, or None where it writes none (no audio that decodes
    and not is_silent): the times as sent (timestamp_start, or timestamp), the duration,
    the audio stored once as a lake object (here "lake:<id>") or NULL for a record without
    audio (a silent chunk, a muted span), is_silent, average_db_level, and metadata holding
    muted_by when the record names one (a span the device muted on purpose: "schedule" or
    "place")."""
    if not box_reads("microphone", record):
        return None
    audio = record.get("audio_data")
    metadata = {}
    if isinstance(record.get("muted_by"), str):
        metadata["muted_by"] = record["muted_by"]
    duration = record.get("duration_seconds")
    level = record.get("average_db_level")
    return {"id": box_record_id("microphone", record),
            "started_at": record.get("timestamp_start") or record.get("timestamp"),
            "ended_at": record.get("timestamp_end"),
            "duration_seconds": duration if is_number(duration) else None,
            "audio_url": f"lake:{box_record_id('microphone', record)}" if isinstance(audio, str) else None,
            "audio_format": record.get("audio_format") if isinstance(record.get("audio_format"), str) else "m4a",
            "is_silent": record.get("is_silent") is True,
            "average_db_level": level if is_number(level) else None,
            "metadata": metadata}


def older_servers_problem(stream, record, now):
    """The first check of the older servers (Ariata, Virtues to 2026-02) the record fails,
    or None: what check_record makes without --strict. The box stores such records (it
    checks nothing); tests use this to hold the agent to the older servers' limits. A
    silent microphone chunk sent without audio_data (the box's own shape) is checked
    without its audio."""
    if stream not in STREAMS:
        return None
    if stream == "microphone" and isinstance(record, dict) and record.get("is_silent") is True \
            and "audio_data" not in record:
        record = dict(record, audio_data="")
    try:
        check_record(stream, record, now, strict=False)
    except ValueError as error:
        return str(error)
    return None


def readable_report(rows):
    """From (stream, record JSON) rows: per generation and stream, the records received
    and the records its transforms read; health records of kinds no transform reads are
    left out of both and counted under "archived_only". "box" counts every record of the
    box's streams by box_reads (the box stores active_energy and distance too)."""
    report = {gen: {name: {"received": 0, "read": 0} for name in STREAMS} for gen in ("ariata", "virtues")}
    report["box"] = {name: {"received": 0, "read": 0} for name in BOX_STREAMS}
    archived_only = {name: 0 for name in STREAMS}
    for stream, text in rows:
        if stream not in BOX_STREAMS:
            continue
        try:
            record = json.loads(text)
        except (TypeError, ValueError):
            record = None
        report["box"][stream]["received"] += 1
        report["box"][stream]["read"] += 1 if box_reads(stream, record) else 0
        if stream not in STREAMS or not isinstance(record, dict):
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
        self.server_version = args.server_version or {"virtues": "0.4.2", "box": BOX_DEFAULT_VERSION}.get(
            args.generation, "0.1.0")
        self.server_commit = args.server_commit or (BOX_DEFAULT_COMMIT if args.generation == "box" else VIRTUES_DEFAULT_COMMIT)
        self.server_built_at = args.server_built_at
        self.virtues = VirtuesLinks(args.token)
        self.verbose = args.verbose
        self.faults = [Fault(spec) for spec in args.fault or []]
        self.db = sqlite3.connect(args.store or ":memory:", check_same_thread=False, isolation_level=None)
        self.db.execute("PRAGMA journal_mode = WAL")
        self.db.execute("PRAGMA synchronous = NORMAL")
        self.db.execute("""CREATE TABLE IF NOT EXISTS records (
            id TEXT PRIMARY KEY, stream TEXT NOT NULL, batch_id TEXT NOT NULL,
            received_at TEXT NOT NULL, record TEXT, copies INTEGER NOT NULL DEFAULT 1)""")
        columns = [row[1] for row in self.db.execute("PRAGMA table_info(records)")]
        if "copies" not in columns:
            self.db.execute("ALTER TABLE records ADD COLUMN copies INTEGER NOT NULL DEFAULT 1")  # an older --store file
        # Box mode: the older servers' first complaint about a record it stored, and
        # whether the box's transforms read it.
        if "problem" not in columns:
            self.db.execute("ALTER TABLE records ADD COLUMN problem TEXT")
        if "box_read" not in columns:
            self.db.execute("ALTER TABLE records ADD COLUMN box_read INTEGER")
        self.box = BoxState(self, args) if args.generation == "box" else None
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
        if self.generation == "box":
            return self.box.health()
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
            if self.box is not None:
                self.box.reset_counters()

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

    def store_box(self, stream, batch_id, records):
        """Box mode: stores records once by id as applets/ios_ingest does (the `id` string
        as sent, or a hash of the record when it has none: virtues_helpers::ios
        stream_id_or_hash), each marked with older_servers_problem and box_reads; returns
        (new, repeated)."""
        now = datetime.datetime.now(datetime.timezone.utc)
        with self.lock:
            repeated_batch = batch_id in self.batch_ids
            self.batch_ids.add(batch_id)
            if repeated_batch:
                self.repeated_batch_ids += 1
            self.db.execute("BEGIN")
            new = 0
            for record in records:
                rid = box_record_id(stream, record)
                text = json.dumps(record, separators=(",", ":")) if self.keep_payloads else None
                cursor = self.db.execute(
                    "INSERT OR IGNORE INTO records (id, stream, batch_id, received_at, record, problem, box_read) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (rid, stream, batch_id, now.isoformat(), text, older_servers_problem(stream, record, now),
                     1 if box_reads(stream, record) else 0))
                if cursor.rowcount == 0:
                    self.db.execute("UPDATE records SET copies = copies + 1 WHERE id = ?", (rid,))
                new += cursor.rowcount
            self.db.execute("COMMIT")
            self.duplicates += len(records) - new
            return new, len(records) - new

    def stored_problems(self, stream):
        """Per record stored for `stream`, in order: the older servers' complaint or None."""
        with self.lock:
            rows = self.db.execute("SELECT record, problem FROM records WHERE stream = ? ORDER BY rowid",
                                   (stream,)).fetchall()
        return [row[1] for row in rows if row[0]]

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
            invalid = self.db.execute("SELECT COUNT(*) FROM records WHERE problem IS NOT NULL").fetchone()[0]
            unread = self.db.execute("SELECT COUNT(*) FROM records WHERE box_read = 0").fetchone()[0]
            return {
                "requests": len(self.requests),
                "in_flight": self.in_flight,
                "statuses": dict(self.statuses),
                "records": {s: per_stream.get(s, 0) for s in (BOX_STREAMS if self.generation == "box" else STREAMS)},
                "invalid_records": invalid,
                "box_unread": unread,
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


# ---------------------------------------------------------------- the Virtues box (--generation box)

# Stored ids of records without an `id` string: a UUID v5 of the stream and the record, so
# a resend of the same record maps to the same id (the box hashes such records the same
# way; this namespace is the receiver's own).
BOX_ID_NAMESPACE = uuid.UUID("6f1d2c4e-8a3b-4c5d-9e7f-0a1b2c3d4e5f")
BOX_PUBLIC_PATHS = ("/health", "/api/box/health", "/api/box/identity")
# Routes of the box that need an authenticated device (server/mod.rs protected_routes and
# the hard-AuthUser public ones): 401 on plain HTTP, never 404.
BOX_PROTECTED = ("/api/devices", "/api/devices/self/reach", "/api/devices/self/push-address",
                 "/api/devices/enroll-peer", "/api/pair/mint", "/api/pair/mint-collector",
                 "/api/pair/reopen-onboarding", "/api/events", "/api/sudo/request", "/api/audit/auth",
                 "/api/box/status", "/auth/session")
BOX_PROTECTED_PREFIXES = ("/api/devices/", "/api/pair/status/", "/api/pair/deny/", "/api/sudo/status/")
BOX_VARY = "origin, access-control-request-method, access-control-request-headers"


def box_record_id(stream, record):
    """The id the box keeps a record once by: its `id` when that is a non-empty string,
    else a hash of the record (virtues_helpers::ios stream_id_or_hash)."""
    if isinstance(record, dict) and isinstance(record.get("id"), str) and record["id"]:
        return record["id"]
    canonical = json.dumps(record, separators=(",", ":"), sort_keys=True, ensure_ascii=False)
    return str(uuid.uuid5(BOX_ID_NAMESPACE, f"stream_ios_{stream}\x1f{canonical}"))


def up_interfaces():
    """Network interfaces other than loopback that are up, in this process's own network
    namespace (asked of the kernel with SIOCGIFFLAGS: /sys/class/net shows the namespace
    /sys was mounted in, which `unshare --net` does not change)."""
    import fcntl
    try:
        names = [name for _, name in socket.if_nameindex()]
    except OSError as error:
        return [f"(cannot list the network interfaces: {error})"]
    up = []
    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        for name in sorted(names):
            if name == "lo":
                continue
            try:
                request = struct.pack("16sH14x", name.encode()[:15], 0)
                flags = struct.unpack("16sH14x", fcntl.ioctl(probe, 0x8913, request))[1]  # SIOCGIFFLAGS
            except OSError:
                flags = 1
            if flags & 0x1:  # IFF_UP
                up.append(name)
    finally:
        probe.close()
    return up


def ascii_lower(text):
    return "".join(c.lower() if c.isascii() else c for c in text)


def is_json_content_type(value):
    """axum's Json extractor: application/json or application/*+json, parameters ignored."""
    if not value:
        return False
    essence = value.split(";", 1)[0].strip().lower()
    kind, _, subtype = essence.partition("/")
    return kind == "application" and (subtype == "json" or subtype.endswith("+json"))


SERDE_MESSAGES = (("Expecting value", "expected value"), ("Extra data", "trailing characters"),
                  ("Unterminated string", "EOF while parsing a string"),
                  ("Expecting ',' delimiter", "expected `,` or `}`"), ("Expecting ':' delimiter", "expected `:`"),
                  ("Expecting property name", "key must be a string"), ("Invalid control character", "control character (\\u0000-\\u001F) found while parsing a string"),
                  ("Invalid \\escape", "invalid escape"))


def parse_json_like_serde(raw):
    """(value, None), or (None, a message shaped like serde_json's) for a body that is not
    JSON. The wording follows serde_json for the common cases only."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None, "expected value at line 1 column 1"
    if not text.strip():
        return None, f"EOF while parsing a value at line {text.count(chr(10)) + 1} column 0"

    def refuse(name):
        raise ValueError(f"expected value: {name}")

    try:
        return json.loads(text, parse_constant=refuse), None
    except json.JSONDecodeError as error:
        message = error.msg
        for python, serde in SERDE_MESSAGES:
            if message.startswith(python):
                message = serde
                break
        return None, f"{message} at line {error.lineno} column {error.colno}"
    except ValueError:
        return None, "expected value at line 1 column 1"


def serde_kind(value):
    """How serde_json names a JSON value's type in an `invalid type` error."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"boolean `{'true' if value else 'false'}`"
    if isinstance(value, int):
        return f"integer `{value}`"
    if isinstance(value, float):
        return f"floating point `{value}`"
    if isinstance(value, str):
        return f"string {json.dumps(value)}"
    if isinstance(value, list):
        return "sequence"
    return "map"


def consume_request_problem(body, text_length):
    """What serde makes of a /api/pair/consume body that is JSON but not a ConsumeRequest
    (api/pair.rs: token and kind required strings; label, source, device_node_id optional
    strings; device_info any JSON), or None."""
    where = f"at line 1 column {text_length}"
    if not isinstance(body, dict):
        return f"invalid type: {serde_kind(body)}, expected struct ConsumeRequest at line 1 column 1"
    for key, value in body.items():
        if key in ("token", "kind") and not isinstance(value, str):
            return f"invalid type: {serde_kind(value)}, expected a string {where}"
        if key in ("label", "source", "device_node_id") and value is not None and not isinstance(value, str):
            return f"invalid type: {serde_kind(value)}, expected a string {where}"
    for key in ("token", "kind"):
        if key not in body:
            return f"missing field `{key}` {where}"
    return None


class BoxState:
    """What the box keeps: pairing codes, the devices paired (app_device), their ingest
    applets (app_applets), runs in progress, the pairing rate limiter, and the iroh
    endpoint's identity. Guarded by the Receiver's lock; devices, applets, the secret key
    and the iroh port are kept in --store (table box_state)."""

    def __init__(self, receiver, args):
        self.r = receiver
        self.codes = {}  # code -> {"expires": time.time(), "standing": bool}
        self.devices = []  # in pairing order
        self.applets = {}  # applet id -> {"device_id", "command"}
        self.running = set()  # applet ids with a run in progress (the concurrency gate)
        self.config = {"reach_ticket": True, "ids_key": "action_ids" if args.box_older else "applet_ids",
                       "relay_url": None, "run_seconds": 0.0, "rate_limit": True, "exempt_loopback": False,
                       "max_body_bytes": BOX_BODY_LIMIT, "fin_grace": 0.02}
        self.codename = args.box_codename
        self.channel = args.box_channel
        self.built_at = args.server_built_at
        self.iroh_host = args.box_iroh_host
        self.iroh_port = args.box_iroh_port
        self.secret_key = bytes.fromhex(args.box_secret_key) if args.box_secret_key else None
        if self.secret_key is not None and len(self.secret_key) != 32:
            raise ValueError("--box-secret-key must be 32 bytes in hex (64 characters)")
        self.endpoint = None  # {"endpoint_id", "port", "direct_addrs"} once the iroh endpoint is bound
        self.transport = None
        self.parse_key = self.plain_parse_key
        receiver.db.execute("CREATE TABLE IF NOT EXISTS box_state (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        self.load()
        if self.secret_key is None:
            self.secret_key = os.urandom(32)
        self.reset_counters()
        for code in args.box_pairing_code or []:
            self.codes[code] = {"expires": time.time() + args.pairing_ttl, "standing": False}

    @staticmethod
    def plain_parse_key(text):
        """Before the transport is up: 64 lower-case hex digits after trimming (iroh also
        takes the 52-character base32 spelling; box_transport asks iroh itself)."""
        text = text.strip() if isinstance(text, str) else ""
        if len(text) == 64 and all(c in "0123456789abcdef" for c in text):
            return text
        return None

    def reset_counters(self):
        self.attempts = {}  # rate-limit key -> [time.monotonic() of each attempt counted]
        self.pair_attempts = []
        self.refused = []
        self.aborted = 0
        self.ids_calls = []

    # -- persistence (callers hold the receiver's lock, or run before serving)

    def load(self):
        rows = dict(self.r.db.execute("SELECT key, value FROM box_state").fetchall())
        if "devices" in rows:
            self.devices = json.loads(rows["devices"])
            self.applets = json.loads(rows["applets"])
        if self.secret_key is None and "secret_key" in rows:
            self.secret_key = bytes.fromhex(rows["secret_key"])
        if not self.iroh_port and "iroh_port" in rows:
            self.iroh_port = int(rows["iroh_port"])

    def save(self):
        values = {"devices": json.dumps(self.devices), "applets": json.dumps(self.applets),
                  "secret_key": self.secret_key.hex()}
        if self.endpoint is not None:
            values["iroh_port"] = str(self.endpoint["port"])
        for key, value in values.items():
            self.r.db.execute("INSERT OR REPLACE INTO box_state (key, value) VALUES (?, ?)", (key, value))

    # -- identity

    @property
    def build(self):
        """The x-virtues-box-build header: `<version> <commit7>` (server/mod.rs stamp_box_build)."""
        return f"{self.r.server_version} {self.r.server_commit[:7]}"

    def number(self):
        """The box's four digits ("Virtues 4812"), from its endpoint id here."""
        seed = self.endpoint["endpoint_id"] if self.endpoint else self.secret_key.hex()
        return 1000 + int(seed[:8], 16) % 9000

    def live_devices(self):
        return [d for d in self.devices if d["revoked_at"] is None and d["device_id"] != "local-console"]

    def health(self):
        """GET /health (server/mod.rs `health`)."""
        return {"status": "healthy", "version": self.codename, "api_version": 1, "channel": self.channel,
                "commit": self.r.server_commit, "built_at": self.built_at, "min_ios_version": "1.0",
                "database": "connected", "pool": {"size": 5, "idle": 4}}

    def box_health(self):
        """GET /api/box/health (api/box_status.rs compute_health): not linked to an account."""
        with self.r.lock:
            paired = bool(self.live_devices())
        gates = {"infra": True, "identity": True, "linked": False, "paired": paired}
        return {"ready": gates["identity"] and gates["linked"] and gates["paired"], "gates": gates,
                "inference": {"accelerator": "cpu", "precision": "q4_k_m", "models_baked": False, "models": []}}

    def identity(self):
        """GET /api/box/identity (api/identity.rs)."""
        with self.r.lock:
            claimed = bool(self.live_devices())
        number = self.number()
        return {"name": f"virtues-{number}", "label": "Your server" if claimed else f"Virtues {number}",
                "claimed": claimed, "linked": False, "online": False}

    # -- pairing

    def add_code(self, code, ttl, standing):
        if code is None:
            code = "".join(random.SystemRandom().choice("0123456789") for _ in range(6))
        if not isinstance(code, str) or not code.strip():
            raise ValueError("a pairing code must be a non-empty string")
        with self.r.lock:
            self.codes[code.strip()] = {"expires": time.time() + float(ttl), "standing": bool(standing)}
        return code.strip()

    def rate_key(self, ip):
        if ip is None or not self.config["rate_limit"]:
            return None
        try:
            loopback = ipaddress.ip_address(ip.removeprefix("::ffff:")).is_loopback
        except ValueError:
            loopback = False
        if loopback and self.config["exempt_loopback"]:
            return None
        return ip

    def consume(self, raw, content_type, ip, user_agent):
        """POST /api/pair/consume (api/pair.rs consume_handler): (status, payload, is_text)."""
        attempt = {"at": time.time(), "ip": ip}
        status, payload, text = self._consume(raw, content_type, ip, attempt)
        attempt["status"] = status
        if not text and isinstance(payload, dict) and "error" in payload:
            attempt["error"] = payload["error"]
        elif text:
            attempt["error"] = payload
        with self.r.lock:
            self.pair_attempts.append(attempt)
        return status, payload, text

    def _consume(self, raw, content_type, ip, attempt):
        # axum's Json<ConsumeRequest> extractor first: 415, 400 and 422 as plain text.
        if not is_json_content_type(content_type):
            return 415, "Expected request with `Content-Type: application/json`", True
        body, problem = parse_json_like_serde(raw)
        if problem is not None:
            return 400, f"Failed to parse the request body as JSON: {problem}", True
        problem = consume_request_problem(body, len(raw))
        if problem is not None:
            return 422, f"Failed to deserialize the JSON body into the target type: {problem}", True
        token = body["token"].strip()
        if not token:
            return 400, {"error": "missing_token"}, False
        now = time.time()
        with self.r.lock:
            key = self.rate_key(ip)
            if key is not None:
                window = [t for t in self.attempts.get(key, []) if t > time.monotonic() - BOX_RATE_WINDOW]
                if len(window) >= BOX_RATE_ATTEMPTS:
                    self.attempts[key] = window
                    return 429, {"error": "too_many_attempts", "retry_after_secs": BOX_RATE_WINDOW}, False
                window.append(time.monotonic())
                self.attempts[key] = window
            kind = body["kind"]
            if kind not in BOX_KINDS:
                return 400, {"error": "invalid_kind"}, False
            source = (body.get("source") or "").strip()
            if source and source not in BOX_SOURCES:
                return 400, {"error": "invalid_source"}, False
            source_id = source or ("ios" if kind == "mobile_app" else "__device__")
            code = self.codes.get(token)
            if code is None or code["expires"] <= now:
                return 401, {"error": "invalid_or_expired_token"}, False
            if not code["standing"]:
                del self.codes[token]
            attempt["code"] = token
            device = self._pair(body, kind, source_id, ip)
            attempt["device_id"] = device["device_id"]
            answer = {"device_id": device["device_id"], "redirect": "/"}
            ids = self.applet_ids_for(device)
            if ids:
                answer[self.config["ids_key"]] = ids
            if self.endpoint is not None and self.config["reach_ticket"]:
                answer["box_node_id"] = self.endpoint["endpoint_id"]
                if self.config["relay_url"]:
                    answer["relay_url"] = self.config["relay_url"]
                if self.endpoint["direct_addrs"]:
                    answer["box_direct_addrs"] = list(self.endpoint["direct_addrs"])
            self.save()
            return 200, answer, False

    def _pair(self, body, kind, source_id, ip):
        """The app_device row (insert_device_row: a live row with the same node_id, compared
        as text, is updated and keeps its id), then the applet fan-out."""
        info = body.get("device_info")
        info = {} if info is None else info
        label = (body.get("label") or "").strip()
        if not label:
            name = info.get("device_name") if isinstance(info, dict) else None
            model = info.get("device_model") if isinstance(info, dict) else None
            label = name if isinstance(name, str) and name else model if isinstance(model, str) and model else \
                {"mobile_app": "Mobile app", "desktop_app": "Desktop app", "sensor": "Sensor"}.get(kind, "Device")
        node_id = body.get("device_node_id")
        device = None
        if node_id is not None:
            device = next((d for d in self.devices if d["device_node_id"] == node_id and d["revoked_at"] is None), None)
        if device is None:
            device = {"device_id": "dev_" + secrets.token_hex(8), "device_node_id": node_id,
                      "paired_at": time.time(), "revoked_at": None, "pairings": 0}
            self.devices.append(device)
        device.update({"kind": kind, "label": label, "device_info": info, "source": body.get("source"),
                       "source_id": source_id, "ip": ip, "last_paired_at": time.time()})
        device["pairings"] += 1
        command = BOX_SOURCES.get(source_id)
        if command and not any(a["device_id"] == device["device_id"] and a["command"] == command
                               for a in self.applets.values()):
            self.applets[self.new_applet_id(command)] = {"device_id": device["device_id"], "command": command}
        return device

    def new_applet_id(self, command):
        prefix = "action" if self.config["ids_key"] == "action_ids" else "applet"
        return f"{prefix}_{command}_{secrets.token_hex(8)}"

    def applet_ids_for(self, device):
        """virtues_helpers::auth::fanout_applet_ids: command -> applet id of the device's applets."""
        return {a["command"]: applet_id for applet_id, a in self.applets.items() if a["device_id"] == device["device_id"]}

    # -- the transport's questions

    def allowed(self, peer):
        """The iroh allowlist (relay.rs allowed_ids): every live device's node_id that parses
        as a key."""
        with self.r.lock:
            return any(self.parse_key(d["device_node_id"]) == peer for d in self.devices
                       if d["revoked_at"] is None and d["device_node_id"] is not None)

    def auth(self, peer):
        """middleware/auth.rs validate_iroh_peer: the live device whose node_id is, as text,
        the proven key's lower-case hex; None (401) otherwise."""
        with self.r.lock:
            return next((d for d in self.devices if d["revoked_at"] is None and d["device_node_id"] == peer), None)

    def start_run(self, applet_id):
        """The concurrency gate (action_runner.rs prepare_run): a run id, or None while a run
        of the applet is in progress."""
        with self.r.lock:
            if applet_id in self.running:
                return None
            self.running.add(applet_id)
            return "run_" + secrets.token_hex(8)

    def end_run(self, applet_id):
        with self.r.lock:
            self.running.discard(applet_id)

    # -- control

    def forget(self, device_id=None, node_id=None, close_connections=False):
        with self.r.lock:
            found = [d for d in self.devices if d["revoked_at"] is None
                     and ((device_id is not None and d["device_id"] == device_id)
                          or (node_id is not None and d["device_node_id"] == node_id))]
            for device in found:
                device["revoked_at"] = time.time()
            self.save()
        closed = 0
        if close_connections and self.transport is not None:
            for device in found:
                key = self.parse_key(device["device_node_id"]) if device["device_node_id"] else None
                if key:
                    closed += self.transport.close_connections_of(key)
        return [d["device_id"] for d in found], closed

    def rotate(self, device_id=None):
        with self.r.lock:
            candidates = [(applet_id, a) for applet_id, a in self.applets.items()
                          if device_id is None or a["device_id"] == device_id]
            if not candidates:
                raise ValueError("no applet to rotate" + (f" for device {device_id}" if device_id else ""))
            old, applet = candidates[-1]
            del self.applets[old]
            new = self.new_applet_id(applet["command"])
            self.applets[new] = applet
            self.save()
            return {"device_id": applet["device_id"], "old": old, "new": new}

    def configure(self, request):
        with self.r.lock:
            for key, value in request.items():
                if key not in self.config:
                    raise ValueError(f"unknown box setting {key!r}: use one of {', '.join(self.config)}")
                if key == "ids_key" and value not in ("applet_ids", "action_ids"):
                    raise ValueError("ids_key is applet_ids or action_ids")
                if key in ("reach_ticket", "rate_limit", "exempt_loopback"):
                    value = bool(value)
                elif key in ("run_seconds", "fin_grace"):
                    value = float(value)
                elif key == "max_body_bytes":
                    value = int(value)
                self.config[key] = value

    def devices_report(self):
        live = self.transport.live_connections() if self.transport is not None else {}
        with self.r.lock:
            out = []
            for d in self.devices:
                key = self.parse_key(d["device_node_id"]) if d["device_node_id"] is not None else None
                applets = self.applet_ids_for(d)
                out.append({"device_id": d["device_id"], "kind": d["kind"], "source": d["source"],
                            "source_id": d["source_id"], "label": d["label"], "device_info": d["device_info"],
                            "device_node_id": d["device_node_id"], "key": key,
                            "allowlisted": key is not None and d["revoked_at"] is None,
                            "forgotten": d["revoked_at"] is not None, "applet_ids": applets,
                            "applet_id": next(iter(applets.values()), None), "paired_at": d["paired_at"],
                            "pairings": d["pairings"], "ip": d["ip"], "connections": live.get(key, 0) if key else 0})
            return out

    def report(self):
        live = self.transport.live_connections() if self.transport is not None else {}
        with self.r.lock:
            return {"endpoint_id": self.endpoint["endpoint_id"] if self.endpoint else None,
                    "port": self.endpoint["port"] if self.endpoint else None,
                    "direct_addrs": list(self.endpoint["direct_addrs"]) if self.endpoint else [],
                    "alpn": "virtues/http/1", "build": self.build, "config": dict(self.config),
                    "codes": len(self.codes), "devices": len(self.live_devices()),
                    "applets": {k: dict(v) for k, v in self.applets.items()}, "running": sorted(self.running),
                    "pair_attempts": list(self.pair_attempts), "refused_connections": list(self.refused),
                    "aborted": self.aborted, "applet_ids_calls": list(self.ids_calls),
                    "live_connections": live}


class BoxAnswer:
    """Answers in the shapes box_transport writes (imported lazily: it needs iroh)."""

    @staticmethod
    def json(status, payload, headers=None):
        from box_transport import Answer
        return Answer(status, [("content-type", "application/json")] + list(headers or []),
                      json.dumps(payload, separators=(",", ":")).encode())

    @staticmethod
    def text(status, text):
        from box_transport import Answer
        return Answer(status, [("content-type", "text/plain; charset=utf-8")], text.encode())

    @staticmethod
    def empty(status, headers=None):
        from box_transport import Answer
        return Answer(status, list(headers or []), b"")


class BoxApp:
    """The box's router as box_transport serves it over iroh (server/mod.rs build_app):
    public routes, pairing, the webhook and the applet-ids route."""

    def __init__(self, receiver):
        self.r = receiver
        self.box = receiver.box
        self.stopping = receiver.stopping

    # -- asked by the transport

    def allowed(self, peer):
        return self.box.allowed(peer)

    def noted_refused(self, peer):
        with self.r.lock:
            self.box.refused.append({"at": time.time(), "peer": peer})
        if self.r.verbose:
            sys.stderr.write(f"iroh connection from {peer} closed: not allowlisted\n")

    def noted_aborted(self, request, answered=False):
        with self.r.lock:
            self.box.aborted += 1
        path = urlparse(request.target).path
        if not answered and path.startswith("/webhook/"):
            entry = self.entry(request, path)
            entry["status"] = "aborted"
            entry["seconds"] = 0
            self.r.note(entry)
        sys.stderr.write(f"{request.method} {path} over iroh: the client ended its sending side early; no answer\n")

    def fin_grace(self):
        return self.box.config["fin_grace"]

    def common_headers(self, request):
        return [("x-virtues-box-build", self.box.build), ("x-request-id", "r" + secrets.token_hex(8)),
                ("vary", BOX_VARY)]

    # -- requests

    async def handle(self, request):
        json_answer, empty = BoxAnswer.json, BoxAnswer.empty
        path = urlparse(request.target).path
        method = request.method
        box = self.box
        if path in BOX_PUBLIC_PATHS:
            if method != "GET":
                return empty(405, [("allow", "GET,HEAD")])
            return json_answer(200, {"/health": box.health, "/api/box/health": box.box_health,
                                     "/api/box/identity": box.identity}[path]())
        if path == "/api/pair/consume":
            if method != "POST":
                return empty(405, [("allow", "POST")])
            status, payload, text = box.consume(request.body, request.header("Content-Type"), None,
                                                request.header("User-Agent"))
            return BoxAnswer.text(status, payload) if text else json_answer(status, payload)
        if path.startswith("/webhook/") and path.count("/") == 2 and len(path) > len("/webhook/"):
            if method != "POST":
                return empty(405, [("allow", "POST")])
            return await self.webhook(request, unquote(path[len("/webhook/"):]))
        ids_key = box.config["ids_key"]
        if path == ("/api/devices/action-ids" if ids_key == "action_ids" else "/api/devices/applet-ids"):
            if method != "GET":
                return empty(405, [("allow", "GET,HEAD")])
            device = box.auth(request.peer)
            with self.r.lock:
                box.ids_calls.append({"at": time.time(), "peer": request.peer,
                                      "device_id": device["device_id"] if device else None})
            if device is None:
                return json_answer(401, {"error": "Unauthorized"})
            with self.r.lock:
                ids = box.applet_ids_for(device)
            return json_answer(200, {"device_id": device["device_id"], ids_key: ids})
        if path.startswith("/api/") or path.startswith("/auth/"):
            return json_answer(404, {"error": "not_found", "path": path}, [("cache-control", "no-store")])
        return empty(404)

    def entry(self, request, path):
        return {"at": time.time(), "arrival": self.r.arrived(), "path": path, "transport": "iroh",
                "peer": request.peer, "applet_id": path[len("/webhook/"):], "device_id": None, "stream": None,
                "batch_id": request.header("X-Batch-Id"), "records": 0, "record_ids": [],
                "body_bytes": len(request.body), "wire_bytes": request.wire_bytes,
                "encoding": request.header("Content-Encoding"), "user_agent": request.header("User-Agent"),
                "content_type": request.header("Content-Type"), "client_port": request.connection_id,
                "fault": None, "status": None, "accepted": None, "rejected": None, "run_id": None, "new": None}

    async def webhook(self, request, applet_id):
        """POST /webhook/:applet_id (server/webhook.rs webhook, action_runner.rs run_action,
        applets/ios_ingest/main.rs)."""
        started = time.monotonic()
        entry = self.entry(request, "/webhook/" + applet_id)
        entry["applet_id"] = applet_id
        with self.r.lock:
            self.r.in_flight += 1
        try:
            status, answer = await self._webhook(request, applet_id, entry)
        finally:
            with self.r.lock:
                self.r.in_flight -= 1
        entry["status"] = status
        entry["seconds"] = round(time.monotonic() - started, 4)
        self.r.note(entry)
        if self.r.verbose or status not in (200,):
            sys.stderr.write(f"POST /webhook/{applet_id} over iroh stream={entry['stream']} records={entry['records']} "
                             f"bytes={entry['wire_bytes']} fault={entry['fault']} -> {status}\n")
        return answer

    async def _webhook(self, request, applet_id, entry):
        from box_transport import ABORT, RESET
        json_answer = BoxAnswer.json
        box = self.box
        raw = request.body
        body, problem = parse_json_like_serde(raw)
        stream = body.get("stream") if isinstance(body, dict) else None
        entry["stream"] = stream if isinstance(stream, str) else None
        records = body.get("records") if isinstance(body, dict) and isinstance(body.get("records"), list) else None
        if records is not None:
            entry["records"] = len(records)
            entry["record_ids"] = [rec.get("id") if isinstance(rec, dict) and isinstance(rec.get("id"), str) else None
                                   for rec in records]

        delay, hang = 0.0, None
        fault = self.r.take_fault(entry["stream"])
        if fault is not None:
            entry["fault"] = fault.spec
            if fault.kind == "slow":
                delay = float(fault.value)
            elif fault.kind == "hang":
                hang = float(fault.value) if fault.value else None
            elif fault.kind == "reset":
                return "reset", RESET
            elif fault.kind == "close":
                return "close", ABORT
            else:
                return self.fault_answer(fault, records)

        # 1. AuthUser: the proven key must be a live device's node_id, as text.
        device = box.auth(request.peer)
        if device is None:
            return 401, json_answer(401, {"error": "Unauthorized"})
        entry["device_id"] = device["device_id"]
        # 2. Json<Value>: a body the extractor rejects is a retryable 409.
        detail = None
        if not is_json_content_type(request.header("Content-Type")):
            detail = "Expected request with `Content-Type: application/json`"
        elif len(raw) > box.config["max_body_bytes"]:
            detail = "Failed to buffer the request body: length limit exceeded"
        elif problem is not None:
            detail = f"Failed to parse the request body as JSON: {problem}"
        if detail is not None:
            return 409, json_answer(409, {"run_id": None, "status": "skipped", "error": "invalid webhook body",
                                          "detail": detail})
        if not isinstance(body, dict):
            return 409, json_answer(409, {"run_id": None, "status": "skipped",
                                          "error": "webhook body must be a JSON object"})
        # 3. The applet exists, 4. and is this device's.
        with self.r.lock:
            applet = box.applets.get(applet_id)
        if applet is None:
            return 404, json_answer(404, {"error": "action not found"})
        if applet["device_id"] != device["device_id"]:
            return 403, json_answer(403, {"error": "device does not own this action"})
        # 5. One run at a time per applet.
        run_id = box.start_run(applet_id)
        if run_id is None:
            return 409, json_answer(409, {"run_id": None, "status": "skipped"})
        entry["run_id"] = run_id
        try:
            seconds = box.config["run_seconds"] + delay
            if seconds > 0:
                await self.sleep(seconds, request)
            if fault is not None and fault.kind == "hang":
                await self.sleep(hang, request)
                return "hang", ABORT
            if request.client_finished():
                return "aborted", ABORT  # hyper dropped the handler with the connection
            name, error = ios_ingest_stream(body)
            if error is None and not isinstance(body.get("records"), list):
                error = f"ios_ingest({name}) requires a `records` array in the payload"
            if error is not None:
                return 500, json_answer(500, {"error": "webhook action failed", "detail": error, "run_id": run_id})
            new, repeated = self.r.store_box(name, request.header("X-Batch-Id") or run_id, body["records"])
            entry["new"] = new
        finally:
            box.end_run(applet_id)
        if request.client_finished():
            return "aborted", ABORT  # stored, but the answer never leaves
        return 200, json_answer(200, {"run_id": run_id, "status": "success"})

    async def sleep(self, seconds, request):
        """Waits `seconds` (None: until the receiver stops or the client resets the stream)."""
        deadline = None if seconds is None else time.monotonic() + seconds
        while not self.stopping.is_set() and not request.client_reset():
            left = 0.1 if deadline is None else min(0.1, deadline - time.monotonic())
            if left <= 0:
                return
            await asyncio.sleep(left)

    def fault_answer(self, fault, records):
        json_answer = BoxAnswer.json
        if fault.kind == "skipped":
            return 409, json_answer(409, {"run_id": None, "status": "skipped"})
        if fault.kind == "lie":
            if fault.value == "html":
                from box_transport import Answer
                page = b"<!DOCTYPE html><html><head><title>Sign in</title></head><body>Please sign in to continue.</body></html>"
                return 200, Answer(200, [("content-type", "text/html; charset=utf-8")], page)
            if fault.value == "json":
                return 200, json_answer(200, {})
            return 200, json_answer(200, {"run_id": "run_" + secrets.token_hex(8), "status": "success"})
        status = int(fault.value)
        headers = []
        if fault.retry_after is not None:
            headers.append(("retry-after", fault.retry_after))
        if fault.retry_after_date is not None:
            when = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=fault.retry_after_date)
            headers.append(("retry-after", format_datetime(when, usegmt=True)))
        injected = f"injected fault: {fault.spec}"
        payload = {409: {"run_id": None, "status": "skipped", "error": "invalid webhook body", "detail": injected},
                   404: {"error": "action not found"}, 403: {"error": "device does not own this action"},
                   401: {"error": "Unauthorized"},
                   500: {"error": "webhook action failed", "detail": injected, "run_id": "run_" + secrets.token_hex(8)},
                   }.get(status, {"error": injected})
        return status, json_answer(status, payload, headers)


def ios_ingest_stream(body):
    """applets/ios_ingest/main.rs resolve_stream + the dispatch: (stream, None) or (None, the
    run's error). Normalised as the box does: an `ios_` prefix is stripped from the trimmed
    name (an unprefixed name is not trimmed), then ASCII lower case."""
    stream = body.get("stream")
    if not isinstance(stream, str):
        return None, "ios_ingest: no stream selector — expected payload.stream (or argv[1])"
    trimmed = stream.strip()
    name = ascii_lower(trimmed[len("ios_"):] if trimmed.startswith("ios_") else stream)
    if name not in BOX_STREAMS:
        return None, (f"ios_ingest: unknown stream '{name}' "
                      "(expected one of healthkit, location, eventkit, contacts, microphone, financekit)")
    return name, None


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

    def end_headers(self):
        if self.receiver is not None and self.receiver.generation == "box":
            # server/mod.rs: stamp_box_build and request_id wrap every answer.
            self.send_header("x-virtues-box-build", self.receiver.box.build)
            self.send_header("x-request-id", "r" + secrets.token_hex(8))
        super().end_headers()

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
        if r.generation == "box" and (url.path.startswith("/_control/box") or not url.path.startswith("/_control/")):
            self.box_plain("GET")
            return
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
            self.answer(200, {"stream": stream, "records": r.stored_payloads(stream),
                              "problems": r.stored_problems(stream)})
        elif url.path == "/_control/records":
            stream = parse_qs(url.query).get("stream", [""])[0]
            ids, copies = r.stored_ids(stream)
            self.answer(200, {"stream": stream, "ids": ids, "copies": copies})
        else:
            self.answer(404 if url.path != r.path else 405, {"error": f"no GET {url.path} here"})

    def do_DELETE(self):
        if self.receiver.generation == "box" and not urlparse(self.path).path.startswith("/_control/"):
            self.box_plain("DELETE")
            return
        if urlparse(self.path).path == "/_control/faults":
            with self.receiver.lock:
                self.receiver.faults = []
            self.answer(200, {"faults": []})
        else:
            self.answer(404, {"error": "not found"})

    def do_PUT(self):
        self.box_plain("PUT") if self.receiver.generation == "box" else self.send_error(501)

    def do_PATCH(self):
        self.box_plain("PATCH") if self.receiver.generation == "box" else self.send_error(501)

    # -- box mode on plain HTTP (the box's :8000)

    def box_plain(self, method):
        """The box's plain-HTTP listener as a LAN device meets it: public routes and pairing
        answer; routes behind the device check answer 401 {"error":"Unauthorized"}; an
        unknown /api/ or /auth/ path 404 {"error":"not_found","path"}; everything else 401.
        /_control/box... is the control API."""
        r = self.receiver
        box = r.box
        url = urlparse(self.path)
        path = url.path
        raw = self.read_body() if method != "GET" else None
        if path.startswith("/_control/box"):
            self.box_control(method, path, raw)
            return
        if path in BOX_PUBLIC_PATHS:
            if method != "GET":
                self.answer_empty(405, {"allow": "GET,HEAD"})
                return
            self.answer(200, {"/health": box.health, "/api/box/health": box.box_health,
                              "/api/box/identity": box.identity}[path]())
            return
        if path == "/api/pair/consume":
            if method != "POST":
                self.answer_empty(405, {"allow": "POST"})
                return
            status, payload, text = box.consume(raw or b"", self.headers.get("Content-Type"), self.client_address[0],
                                                self.headers.get("User-Agent"))
            if r.verbose or status != 200:
                sys.stderr.write(f"POST /api/pair/consume from {self.client_address[0]} -> {status} "
                                 f"{payload if text else payload.get('error', '')}\n")
            if text:
                self.answer_text(status, payload)
            else:
                self.answer(status, payload)
            return
        protected = path in BOX_PROTECTED or any(path.startswith(p) for p in BOX_PROTECTED_PREFIXES)
        if (path.startswith("/api/") or path.startswith("/auth/")) and not protected:
            self.answer(404, {"error": "not_found", "path": path}, {"Cache-Control": "no-store"})
            return
        self.answer(401, {"error": "Unauthorized"})

    def answer_empty(self, status, headers=None):
        self.send_response(status)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def box_control(self, method, path, raw):
        """The control API's box part: /_control/box, /box/pairing, /box/devices,
        /box/forget, /box/rotate-applet, /box/config."""
        box = self.receiver.box
        try:
            request = json.loads(raw or b"{}") if method != "GET" else {}
            if not isinstance(request, dict):
                raise ValueError("the body must be a JSON object")
            if path == "/_control/box" and method == "GET":
                self.answer(200, box.report())
            elif path == "/_control/box/recordings" and method == "GET":
                rows = [box_audio_row(record) for record in self.receiver.stored_payloads("microphone")]
                self.answer(200, {"recordings": [row for row in rows if row is not None]})
            elif path == "/_control/box/devices" and method == "GET":
                self.answer(200, {"devices": box.devices_report()})
            elif path == "/_control/box/pairing" and method == "POST":
                code = box.add_code(request.get("code"), request.get("ttl", BOX_CODE_TTL), request.get("standing", False))
                self.answer(200, {"code": code})
            elif path == "/_control/box/forget" and method == "POST":
                if request.get("device_id") is None and request.get("device_node_id") is None:
                    raise ValueError("name the device: device_id or device_node_id")
                forgotten, closed = box.forget(request.get("device_id"), request.get("device_node_id"),
                                               bool(request.get("close_connections", False)))
                self.answer(200, {"forgotten": forgotten, "closed_connections": closed})
            elif path == "/_control/box/rotate-applet" and method == "POST":
                self.answer(200, box.rotate(request.get("device_id")))
            elif path == "/_control/box/config" and method == "POST":
                box.configure(request)
                self.answer(200, {"config": dict(box.config)})
            else:
                self.answer(404, {"error": f"no {method} {path} here"})
        except (ValueError, TypeError, AttributeError) as error:
            self.answer(400, {"error": str(error)})

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
        if self.receiver.generation == "box" and (path.startswith("/_control/box") or not path.startswith("/_control/")):
            self.box_plain("POST")
            return
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
        if fault.kind == "skipped":  # the box's answer while a run is going
            self.answer(409, {"run_id": None, "status": "skipped"})
            return 409
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
    parser.add_argument("--token", help="the device token to accept (required, except in box mode, which has none)")
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
    parser.add_argument("--generation", choices=("ariata", "virtues", "box"), default="ariata",
                        help="the server generation to play: ariata (default), virtues (linking by device id; see "
                             "Virtues mode below) or box (the Virtues box of 2026-09: pairing over HTTP, then HTTP "
                             "over iroh; see Box mode below)")
    parser.add_argument("--server-version", help="the version GET /health reports (default 0.1.0 for ariata, 0.4.2 for "
                                                 "virtues); box mode: the version in x-virtues-box-build (default "
                                                 f"{BOX_DEFAULT_VERSION})")
    parser.add_argument("--server-commit",
                        help=f"virtues and box modes: the commit GET /health reports (default {VIRTUES_DEFAULT_COMMIT} "
                             f"for virtues, {BOX_DEFAULT_COMMIT} for box; its first 7 characters go into "
                             "x-virtues-box-build)")
    parser.add_argument("--server-built-at", default="2026-03-10T12:00:00Z",
                        help="virtues mode: the build time GET /health reports (default after the 2026-02 login wall)")
    box = parser.add_argument_group("box mode (--generation box)")
    box.add_argument("--box-iroh-host", default="127.0.0.1", help="address the iroh endpoint binds (default 127.0.0.1)")
    box.add_argument("--box-iroh-port", type=int, default=0,
                     help="UDP port of the iroh endpoint (the box's is 51820); 0 (default): the one a --store kept, "
                          "else a free one")
    box.add_argument("--box-secret-key", metavar="HEX",
                     help="the endpoint's 32-byte secret key in hex (default: the one a --store kept, else a new one)")
    box.add_argument("--box-endpoint-file", metavar="PATH",
                     help='write {"endpoint_id", "port", "direct_addrs"} here (JSON) once the iroh endpoint is bound')
    box.add_argument("--box-pairing-code", action="append", metavar="CODE",
                     help="a single-use pairing code for POST /api/pair/consume (repeatable; valid --pairing-ttl "
                          "seconds); more with /_control/box/pairing")
    box.add_argument("--box-codename", default="amber-otter",
                     help="the build's codename, the `version` GET /health reports (default amber-otter)")
    box.add_argument("--box-channel", default="stable", help="the `channel` GET /health reports (default stable)")
    box.add_argument("--box-older", action="store_true",
                     help="play a box from before 2026-07-30: pairing answers action_ids, ids are action_..., the "
                          "device route is GET /api/devices/action-ids")
    box.add_argument("--box-allow-network", action="store_true",
                     help="bind the iroh endpoint even though a network interface other than loopback is up "
                          "(by default box mode refuses: nothing may leave the machine)")
    parser.add_argument("--verbose", action="store_true", help="log every request to stderr")
    args = parser.parse_args(argv)
    if args.generation != "box" and not args.token:
        parser.error("--token is required (except with --generation box)")
    if args.generation == "box" and not args.box_allow_network and up_interfaces():
        parser.error(f"box mode binds an iroh endpoint, and these network interfaces are up: "
                     f"{', '.join(up_interfaces())}. Run it in a network namespace with only loopback up "
                     f"(ip netns add boxtest; ip netns exec boxtest ip link set lo up; ip netns exec boxtest "
                     f"python3 receiver.py --generation box ...), or pass --box-allow-network.")

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

    transport = None
    if args.generation == "box":
        transport = start_box_transport(receiver, args)

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
    if transport is not None:
        print(f"listening on {scheme}://{args.host}:{port} (the box's plain HTTP: /health, /api/pair/consume)", flush=True)
    else:
        print(f"listening on {scheme}://{args.host}:{port}{args.path}", flush=True)
    server.serve_forever(poll_interval=0.2)
    server.server_close()
    if transport is not None:
        transport.stop()
    return 0


def start_box_transport(receiver, args):
    """Binds the box's iroh endpoint (box_transport.py, which needs the PyPI package iroh)
    and notes it in the box's state, the --box-endpoint-file and stdout."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    try:
        from box_transport import BoxTransport
    except ImportError as error:
        sys.exit(f"box mode needs the PyPI package iroh (pip install iroh==1.2.0): {error}")
    box = receiver.box
    transport = BoxTransport(BoxApp(receiver), args.box_iroh_host, box.iroh_port, box.secret_key)
    try:
        info = transport.start()
    except RuntimeError as error:
        sys.exit(f"box mode: {error} (host {args.box_iroh_host}, port {box.iroh_port})")
    with receiver.lock:
        box.transport = transport
        box.parse_key = BoxTransport.parse_key
        box.endpoint = {"endpoint_id": info["endpoint_id"], "port": info["port"],
                        "direct_addrs": [f"{args.box_iroh_host}:{info['port']}"]
                        if args.box_iroh_host not in ("0.0.0.0", "::") else info["direct_addrs"]}
        box.save()
    if args.box_endpoint_file:
        temporary = args.box_endpoint_file + ".tmp"
        with open(temporary, "w") as handle:
            json.dump(box.endpoint, handle)
            handle.write("\n")
        os.replace(temporary, args.box_endpoint_file)
    print(f"box endpoint {info['endpoint_id']} on {args.box_iroh_host}:{info['port']} "
          f"(iroh, ALPN virtues/http/1, relay disabled)", flush=True)
    return transport


if __name__ == "__main__":
    sys.exit(main())
