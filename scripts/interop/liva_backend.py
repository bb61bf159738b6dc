"""A production-shaped LIVA backend in Python (python-socketio 5.x on aiohttp), for end-to-end
tests of the Swift SDK against a real peer that is not the SDK's own reference backend.

It is written from docs/Protocol.md (the production wire contract), not from the Swift
reference backend: every type is the one docs/Protocol.md gives (ints as JSON ints,
`sprite_index_folder` the int 0, no `overlay_id` in frame objects: the client derives it).

    liva_backend.py --pack DIR [--utterances DIR] [--mode base64|binary]
                    [--scenario normal|reorder|bad-frames|legacy|cut|floats|retry|late-chunk0|ahead|stall]
                    [--scenario-limit N] [--chunk-gap S] [--acks] [--batch-size N]
                    [--stall S] [--stall-before N]
                    [--sections runs|single] [--default-utterance ID]
                    [--cut-how socketio|transport]
                    [--fault flood|unrequested|damaged-frame]
                    [--host H] [--port N] [--ping-interval S] [--ping-timeout S]

    --pack DIR            an avatar pack (Tools/Sources/LIVAServer/AvatarPack.swift): manifest.json,
                          base/<animation>/frame_%04d.png, overlays/<animation>/<frame>/mouth_<V>.webp
    --utterances DIR      pre-made speech, <id>/timing.json + chunk MP3s
                          (default: Tools/Sources/LIVAServer/Resources/utterances of this repository)
    --mode                image_data/audio_data as base64 strings (default) or raw bytes
                          (python-socketio then sends binary attachments). Base frames are
                          always data URLs (`data:image/png;base64,...`).
    --scenario            applied to every message (or the first N, see --scenario-limit):
        normal      per chunk: receive_audio (with animationFramesChunk; chunk 0 also with
                    first_frame_image), receive_frame_images_batch x ceil(frames/batch size),
                    chunk_images_ready; after the last chunk audio_end {}.
        reorder     per chunk: the batches, then chunk_images_ready, then receive_audio.
        bad-frames  as normal, but chunk 0 has three bad frames (printed as BAD lines at
                    start-up): position 12 has matched_sprite_frame_number -3, position 15 has
                    no matched_sprite_frame_number (both in the plan and in the image batch),
                    position 18's image_data is random bytes that are not an image.
        legacy      per chunk: animation_chunk_metadata, one receive_frame_image per image, an
                    audio-only receive_audio (no animationFramesChunk); then audio_end.
                    No chunk_images_ready.
        cut         as normal, but after chunk 0's receive_audio and first batch every socket
                    of the room is disconnected by the server and the message is abandoned.
                    --cut-how socketio (default): `sio.disconnect(sid)`, a namespace DISCONNECT
                    packet (python-socketio and socket.io JS clients take that as final and do
                    not reconnect by themselves); --cut-how transport: the WebSocket is closed
                    without any Engine.IO/Socket.IO close packet, as a network cut (those
                    clients reconnect).
        floats      as normal, but every int of the speech events is a float with a zero
                    fraction (7.0) (base-animation events keep ints), and optional fields
                    are null/false on some frames
                    (sequence_index k: k%5==1 viseme null, k%5==3 viseme false,
                    k%7==3 coordinates null, k%6==2 overlay_id null, k%8==5 image_mime null).
        retry       as normal, but every receive_frame_images_batch and every
                    chunk_images_ready is emitted twice in a row (a backend that re-sends after
                    a slow ack).
        late-chunk0 as normal, but chunk 0's first image batch is sent once more right after
                    chunk 1's receive_audio (a retry that lost a race).
        ahead       as normal, but no two chunks share a mouth: each chunk's sheet_filename
                    carries its master_chunk_index (mouth_<V>_m<N>.webp), so every chunk's
                    overlay ids are its own; sent as fast as made, a message's mouths then
                    outgrow a small overlay store (liva record --overlay-budget).
        stall       as normal, but the speech service stalls before chunk --stall-before
                    (default 1, the second chunk: every utterance here has two): that chunk is
                    sent --stall seconds (default 1.5) after the chunks before it would have
                    finished playing had playback begun when the message began streaming, so
                    the client waits about that long (less its way into speech) at the boundary.
    --fault               a backend bug, on top of the scenario:
        flood       before each message's speech, garbage the client must shed: 200 speech
                    events with wrong field types, 200 unknown events of 64 KB each, one
                    receive_frame_images_batch of 1,000,000 numbers and one of 200,000 empty
                    objects (printed as a FLOOD line).
        unrequested after each manifest, an animation nobody asked for is pushed: 100 frames of
                    pushed_1_s_pushed_1_e (PUSHED line).
        damaged-frame  the first download of idle_1_s_idle_1_e has frame 3 as a PNG signature
                    followed by zeros (DAMAGED line); later downloads are whole. Every request
                    of an animation prints REQUEST <name>.
    --scenario-limit N    apply the scenario to the first N messages only, later ones are normal
                          (default: every message; e.g. `--scenario cut --scenario-limit 1`).
    --chunk-gap S         seconds to sleep between two chunks of a message (default 0).
    --acks                emit every speech event asking for an acknowledgement, as a backend
                          that paces or retries on them does; each one answered prints ACKED.
    --batch-size N        frames per receive_frame_images_batch, 1...50 (default 50).
    --sections runs|single  the sections of a chunk: one per run of one base animation
                          (default), or one section holding every frame of the chunk (its
                          frames' animation_name still changes from frame to frame).
    --default-utterance ID  the utterance spoken for a message that names none (default: the
                          first id in sorted order).
    --stall S / --stall-before N  the stall scenario's stall and the chunk it comes before.

Speech: a message whose text (trimmed, case-insensitive) equals an utterance id or an
utterance's text speaks that utterance, any other message the default one. Chunk c of
duration d s has round(d * 30) frames; frame k of a chunk starting at message frame s shows
the viseme active at (s + k) / 30 s on base frame number k of the walk: the transition
idle_1_e_talking_1_s first (when the pack has it with speech and the client has it ready),
then talking_1_s_talking_1_e, talking_1_e_talking_1_s, talking_1_s_talking_1_e, ... (the
ping-pong, continuing across chunks). One image per frame (as production sends them).

Connection: the socket joins room `{user_id}-{agent_id}-instance-{instance_id}` (instance_id
default "default") from its query; any auth payload is accepted. Events handled:
request_base_animations_manifest, request_specific_base_animation, user_message,
set_session_id, user_full_audio; and `POST /messages` (header X-User-ID, JSON body
{AgentID, message, instance_id, userResolution, readyAnimations}) answers 202 and speaks to
that room. A new message to a room cancels the stream of the previous one there (chunk_index
restarts at 0; master_chunk_index counts on, server-wide).

Stdout (one line each, flushed):
    BAD <chunk_index> <position_in_chunk> <kind>   (bad-frames only, at start-up, before PORT)
    PORT <n>                                        listening
    CONNECT <room> / DISCONNECT <room>              a socket joined / left
    AUTH <json>                                     the auth payload of a connection
    SESSION <id>                                    set_session_id
    VOICE <n bytes>                                 user_full_audio
    HTTP_MESSAGE <text>                             POST /messages
    MESSAGE <n> <text>                              message n (1-based, server-wide) starts
    PLAN <n> <utterance id> <frames per chunk, comma-separated>
    SENT <event> <chunk_index>                      one per speech event (audio_end: the
                                                    last chunk's index)
    STREAMED <n> chunks=<c> frames=<f>              message n was streamed completely
    CANCELLED <n>                                   a newer message cancelled message n
    CUT <n> sockets=<k>                             cut scenario: the room was disconnected
    STALL <n> <chunk_index> <seconds>               stall scenario: the speech service stalls
                                                    before this chunk of message n
    RESENT <event> <chunk_index>                    retry/late-chunk0: an event sent again
    ACKED <event> <chunk_index>                     --acks: the client acknowledged the event
    ERROR <text>                                    a message could not be spoken
"""

import argparse
import asyncio
import base64
import bisect
import datetime
import json
import os
import random
import signal
import sys
import time
from urllib.parse import parse_qs

import aiohttp.web
import socketio

FPS = 30
MAX_BATCH = 50
ENTRY = "idle_1_e_talking_1_s"
FORWARD = "talking_1_s_talking_1_e"
BACKWARD = "talking_1_e_talking_1_s"
START_POSE = "idle_1_e"

# bad-frames: (position in chunk 0, kind)
BAD_FRAMES = [(12, "negative_matched_sprite_frame_number"),
              (15, "missing_matched_sprite_frame_number"),
              (18, "corrupt_image_data")]
BAD_NEGATIVE_FRAME = -3

PHONEME_CLASS = {"X": "silence", "C": "vowel", "D": "vowel", "E": "vowel", "F": "vowel",
                 "A": "consonant", "B": "consonant", "G": "consonant", "H": "consonant"}


def say(line):
    print(line.replace("\n", " ").replace("\r", " "), flush=True)


def warn(text):
    print(f"liva_backend: {text}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------------------
# Inputs


class Pack:
    """An avatar pack on disk: manifest.json, base/, overlays/."""

    def __init__(self, root):
        self.root = root
        try:
            with open(os.path.join(root, "manifest.json"), "rb") as handle:
                manifest = json.load(handle)
        except (OSError, ValueError) as error:
            raise SystemExit(f"{root}: no readable manifest.json: {error}")
        self.fps = int(manifest.get("fps", FPS))
        self.visemes = [str(v) for v in manifest["visemes"]]
        self.animations = {}
        for name, entry in manifest["animations"].items():
            frames = int(entry["frames"])
            mouths = [[int(v) for v in rect] for rect in entry["mouths"]]
            if len(mouths) != frames or any(len(rect) != 4 for rect in mouths):
                raise SystemExit(f"{root}: {name}: {len(mouths)} mouths for {frames} frames")
            self.animations[name] = {
                "frames": frames, "version": str(entry["version"]),
                "speech": entry.get("speech") is True, "mouths": mouths,
            }
        self.speech = sorted(n for n, a in self.animations.items() if a["speech"])
        if not any(n in self.speech for n in (FORWARD, BACKWARD)):
            raise SystemExit(f"{root}: no talking loop with mouth sprites")
        for name in self.speech:
            for frame in range(self.animations[name]["frames"]):
                for viseme in self.visemes:
                    path = self.sprite_path(name, frame, viseme)
                    if not os.path.isfile(path):
                        raise SystemExit(f"missing sprite {path}")
        self._sprites = {}

    @staticmethod
    def sheet_filename(viseme):
        return f"mouth_{viseme}.webp"

    def sprite_path(self, animation, frame, viseme):
        # The path under overlays/ is the protocol overlay_id {animation}/{frame}/{sheet}.
        return os.path.join(self.root, "overlays", animation, str(frame),
                            self.sheet_filename(viseme))

    def sprite(self, animation, frame, viseme):
        key = (animation, frame, viseme)
        if key not in self._sprites:
            with open(self.sprite_path(animation, frame, viseme), "rb") as handle:
                self._sprites[key] = handle.read()
        return self._sprites[key]

    def base_frame(self, animation, frame):
        path = os.path.join(self.root, "base", animation, f"frame_{frame:04d}.png")
        with open(path, "rb") as handle:
            return handle.read()

    def wire_manifest(self):
        return {"animations": {name: {"frames": a["frames"], "version": a["version"]}
                               for name, a in sorted(self.animations.items())}}


class Utterance:
    """<id>/timing.json and its chunk MP3s."""

    def __init__(self, directory):
        with open(os.path.join(directory, "timing.json"), "rb") as handle:
            timing = json.load(handle)
        self.id = str(timing.get("id") or os.path.basename(directory))
        self.text = str(timing.get("text", ""))
        self.sample_rate = int(timing["sample_rate"])
        cues = sorted(((float(c["start"]), str(c["viseme"])) for c in timing["visemes"]),
                      key=lambda cue: cue[0])
        self.cue_starts = [start for start, _ in cues]
        self.cue_visemes = [viseme for _, viseme in cues]
        self.chunks = []  # (mp3 bytes, frame count)
        for entry in timing["chunks"]:
            name = str(entry["file"])
            if "/" in name or name.startswith("."):
                raise SystemExit(f"{directory}: bad chunk file name {name!r}")
            with open(os.path.join(directory, name), "rb") as handle:
                audio = handle.read()
            samples = entry.get("samples")
            if samples is None:
                samples = int(entry["frames"]) * self.sample_rate // int(timing.get("fps", FPS))
            frames = round(int(samples) / self.sample_rate * FPS)
            if "frames" in entry and int(entry["frames"]) != frames:
                warn(f"{directory}/{name}: timing says {entry['frames']} frames, "
                     f"{samples} samples make {frames}; using {frames}")
            if frames <= 0 or not audio:
                raise SystemExit(f"{directory}/{name}: empty chunk")
            self.chunks.append((audio, frames))
        if not self.chunks:
            raise SystemExit(f"{directory}: no chunks")

    def viseme_at(self, seconds):
        """The viseme of the last cue starting at or before `seconds` (X before the first)."""
        index = bisect.bisect_right(self.cue_starts, seconds + 1e-9)
        return self.cue_visemes[index - 1] if index > 0 else "X"


def load_utterances(root):
    utterances = {}
    for name in sorted(os.listdir(root)):
        directory = os.path.join(root, name)
        if not name.startswith(".") and os.path.isfile(os.path.join(directory, "timing.json")):
            utterance = Utterance(directory)
            utterances[utterance.id] = utterance
    if not utterances:
        raise SystemExit(f"no utterances in {root}")
    return utterances


# ---------------------------------------------------------------------------------------
# Planning


def base_walk(pack, ready):
    """Endless (animation, base frame) pairs: into talking, then the talking ping-pong.

    Uses only animations with mouth sprites that the client has ready (`ready` None: all).
    When the ready ones have no talking loop, the pack's are used (the client asked for
    speech; it will download them)."""
    usable = [n for n in pack.speech if ready is None or n in ready]
    if not any(n in usable for n in (FORWARD, BACKWARD)):
        if ready is not None:
            warn(f"ready_animations {sorted(ready)} hold no talking loop; planning with the pack's")
        usable = list(pack.speech)
    loop = [n for n in (FORWARD, BACKWARD) if n in usable]
    sequence = ([ENTRY] if ENTRY in usable else []) + loop
    # Start the loop where the entry lands (talking_1_s) if it can.
    first = True
    while True:
        for name in sequence if first else loop:
            for frame in range(pack.animations[name]["frames"]):
                yield name, frame
        first = False


class Frame:
    __slots__ = ("chunk", "position", "animation", "base", "viseme", "rect", "section",
                 "frame_index")


def plan_message(pack, utterance, ready, sections_mode):
    """Per chunk: (mp3, start frame, [Frame], [[Frame]] sections)."""
    walk = base_walk(pack, ready)
    fallback = "X" if "X" in pack.visemes else pack.visemes[0]
    chunks = []
    start = 0
    for chunk_index, (audio, count) in enumerate(utterance.chunks):
        frames = []
        sections = []
        for position in range(count):
            animation, base = next(walk)
            viseme = utterance.viseme_at((start + position) / FPS)
            if viseme not in pack.visemes:
                viseme = fallback
            frame = Frame()
            frame.chunk, frame.position = chunk_index, position
            frame.animation, frame.base, frame.viseme = animation, base, viseme
            frame.rect = pack.animations[animation]["mouths"][base]
            if not sections or (sections_mode == "runs"
                                and sections[-1][-1].animation != animation):
                sections.append([])
            frame.section, frame.frame_index = len(sections) - 1, len(sections[-1])
            sections[-1].append(frame)
            frames.append(frame)
        chunks.append((audio, start, frames, sections))
        start += count
    return chunks


def pick_utterance(utterances, text, default_id):
    key = text.strip().lower()
    for utterance in utterances.values():
        if utterance.id.lower() == key:
            return utterance
    for utterance in utterances.values():
        if utterance.text.strip().lower() == key:
            return utterance
    return utterances[default_id]


# ---------------------------------------------------------------------------------------
# Event shapes (docs/Protocol.md)


def timestamp_now():
    now = datetime.datetime.now(datetime.timezone.utc)
    return now.strftime("%Y-%m-%d %H:%M:%S.") + f"{now.microsecond // 1000:03d}"


def frame_object(frame):
    return {
        "animation_name": frame.animation,
        "matched_sprite_frame_number": frame.base,
        "sequence_index": frame.position,
        "section_index": frame.section,
        "frame_index": frame.frame_index,
        "sprite_index_folder": 0,
        "sheet_filename": Pack.sheet_filename(frame.viseme),
        "coordinates": list(frame.rect),
        "char": PHONEME_CLASS.get(frame.viseme, "consonant"),
        "viseme": frame.viseme,
    }


def corrupt_bytes(seed):
    """Bytes no image decoder accepts (no PNG/JPEG/RIFF magic), the same on every run."""
    return b"\x00\x01BAD" + random.Random(seed).randbytes(93)


def floatify(value):
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int):
        return float(value)
    if isinstance(value, dict):
        return {k: floatify(v) for k, v in value.items()}
    if isinstance(value, list):
        return [floatify(v) for v in value]
    return value


def absent_values(obj, position, with_image):
    """floats scenario: nulls and booleans in optional fields, by position."""
    if position % 5 == 1:
        obj["viseme"] = None
    elif position % 5 == 3:
        obj["viseme"] = False
    if position % 7 == 3:
        obj["coordinates"] = None
    if position % 6 == 2:
        obj["overlay_id"] = None
    if with_image and position % 8 == 5:
        obj["image_mime"] = None
    return obj


# ---------------------------------------------------------------------------------------
# Server


class Backend:
    def __init__(self, args, pack, utterances):
        self.args = args
        self.pack = pack
        self.utterances = utterances
        self.default_utterance = args.default_utterance or sorted(utterances)[0]
        if self.default_utterance not in utterances:
            raise SystemExit(f"no utterance {self.default_utterance!r}")
        self.sio = socketio.AsyncServer(
            async_mode="aiohttp", ping_interval=args.ping_interval,
            ping_timeout=args.ping_timeout, max_http_buffer_size=64 << 20,
            # The Swift client sends `Origin: ws://host`, which python-engineio's same-origin
            # check refuses; production evidently accepts it.
            cors_allowed_origins="*")
        self.app = aiohttp.web.Application(client_max_size=64 << 20)
        self.sio.attach(self.app)
        self.app.router.add_post("/messages", self.http_message)
        self.rooms_of = {}       # sid -> room
        self.streams = {}        # room -> (message number, task)
        self.room_locks = {}     # room -> asyncio.Lock: one message start at a time
        self.messages = 0
        self.master_chunk = 0
        self.damaged = False
        self.register()

    def encode(self, data):
        return data if self.args.mode == "binary" else base64.b64encode(data).decode("ascii")

    # -- connection and requests

    def register(self):
        sio = self.sio

        @sio.event
        async def connect(sid, environ, auth=None):
            query = parse_qs(environ.get("QUERY_STRING", ""), keep_blank_values=True)

            def param(name, default=""):
                values = query.get(name)
                return values[0] if values else default
            room = (f"{param('user_id')}-{param('agent_id')}-instance-"
                    f"{param('instance_id', 'default') or 'default'}")
            self.rooms_of[sid] = room
            await sio.enter_room(sid, room)
            say(f"CONNECT {room}")
            if auth is not None:
                say(f"AUTH {json.dumps(auth, sort_keys=True)}")

        @sio.event
        async def disconnect(sid, reason=None):
            say(f"DISCONNECT {self.rooms_of.pop(sid, '?')}")

        @sio.on("request_base_animations_manifest")
        async def request_manifest(sid, data=None, *rest):
            await sio.emit("base_animations_manifest", self.pack.wire_manifest(), to=sid)
            if self.args.fault == "unrequested":
                await self.push_unrequested(sid)

        @sio.on("request_specific_base_animation")
        async def request_animation(sid, data=None, *rest):
            name = data.get("animationType") if isinstance(data, dict) else data
            if not isinstance(name, str) or name not in self.pack.animations:
                warn(f"unknown animation requested: {data!r}")
                return
            say(f"REQUEST {name}")
            total = self.pack.animations[name]["frames"]
            await sio.emit("animation_total_frames",
                           {"animation_type": name, "total_frames": total}, to=sid)
            damage = (self.args.fault == "damaged-frame" and not self.damaged
                      and name == "idle_1_s_idle_1_e" and total > 3)
            if damage:
                self.damaged = True
                say(f"DAMAGED {name} 3")
            for index in range(total):
                await asyncio.sleep(0)
                image = self.pack.base_frame(name, index)
                if damage and index == 3:
                    image = b"\x89PNG\r\n\x1a\n" + bytes(len(image))
                data_url = ("data:image/png;base64,"
                            + base64.b64encode(image).decode("ascii"))
                await sio.emit("receive_base_frame", {
                    "animation_type": name, "frame_index": index,
                    "frame_data": {"data": data_url}}, to=sid)
            await asyncio.sleep(0)
            await sio.emit("animation_frames_complete", {"animation_type": name}, to=sid)

        @sio.on("user_message")
        async def user_message(sid, data=None, *rest):
            if isinstance(data, dict):
                text, ready = data.get("message"), data.get("ready_animations")
            else:
                text, ready = data, None
            if not isinstance(text, str) or not text.strip():
                warn(f"user_message without a message: {data!r}")
                return
            await self.start_message(self.rooms_of.get(sid, ""), text, ready)

        @sio.on("set_session_id")
        async def set_session_id(sid, data=None, *rest):
            value = data.get("session_id") if isinstance(data, dict) else data
            say(f"SESSION {value}")

        @sio.on("user_full_audio")
        async def user_full_audio(sid, data=None, *rest):
            audio = data.get("audio_data") if isinstance(data, dict) else None
            if isinstance(audio, str):
                try:
                    audio = base64.b64decode(audio.split(",", 1)[-1])
                except ValueError:
                    audio = audio.encode()
            say(f"VOICE {len(audio) if isinstance(audio, (bytes, bytearray)) else 0}")

        @sio.on("*")
        async def other(event, sid, *args):
            warn(f"event ignored: {event}")

    async def http_message(self, request):
        """POST /messages, read as the first iOS app sent it (docs/Protocol.md: header X-User-ID,
        body {AgentID, message, instance_id, userResolution, readyAnimations}). Prints
        `HTTP_REQUEST <json>`: what it read from the request, field by field as this route
        reads them (content type, X-User-ID, each body field, the room it speaks to), so a
        client's request is checked against this route rather than against its own types."""
        try:
            body = await request.json()
        except (ValueError, UnicodeDecodeError):
            return aiohttp.web.json_response({"error": "body is not JSON"}, status=400)
        if not isinstance(body, dict) or not isinstance(body.get("message"), str):
            return aiohttp.web.json_response({"error": "no message"}, status=400)
        user = request.headers.get("X-User-ID", "")
        instance = body.get("instance_id") or "default"
        room = f"{user}-{body.get('AgentID', '')}-instance-{instance}"
        say("HTTP_REQUEST " + json.dumps({
            "content_type": request.content_type,
            "X-User-ID": user,
            "AgentID": body.get("AgentID"),
            "message": body.get("message"),
            "instance_id": body.get("instance_id"),
            "userResolution": body.get("userResolution"),
            "readyAnimations": body.get("readyAnimations"),
            "other_fields": sorted(set(body) - {"AgentID", "message", "instance_id",
                                                "userResolution", "readyAnimations"}),
            "room": room,
        }, sort_keys=True))
        say(f"HTTP_MESSAGE {body['message']}")
        await self.start_message(room, body["message"], body.get("readyAnimations"))
        return aiohttp.web.json_response({"status": "accepted"}, status=202)

    # -- speech

    async def start_message(self, room, text, ready):
        async with self.room_locks.setdefault(room, asyncio.Lock()):
            previous = self.streams.get(room)
            if previous and not previous[1].done():
                previous[1].cancel()
                # Let it finish its current emit and print CANCELLED before the new one starts.
                await asyncio.gather(previous[1], return_exceptions=True)
            self.messages += 1
            number = self.messages
            ready_set = ({n for n in ready if isinstance(n, str)}
                         if isinstance(ready, list) else None)
            task = asyncio.ensure_future(self.stream(room, number, text, ready_set))
            self.streams[room] = (number, task)

    async def send(self, event, payload, room, chunk_index):
        """Emits one speech event. A cancellation waits for the emit to finish, so that no
        event (and no binary attachment) is ever cut in half."""
        callback = None
        if self.args.acks:
            # As a backend that paces or retries on acknowledgements asks: python-socketio
            # numbers the packet and calls back when the client's ACK arrives.
            def callback(*_, event=event, chunk_index=chunk_index):
                say(f"ACKED {event} {chunk_index}")
        emit = asyncio.ensure_future(
            self.sio.emit(event, payload, to=room, callback=callback))
        try:
            await asyncio.shield(emit)
        except asyncio.CancelledError:
            await emit
            raise
        say(f"SENT {event} {chunk_index}")
        await asyncio.sleep(0)

    async def stream(self, room, number, text, ready):
        scenario = self.args.scenario
        if self.args.scenario_limit is not None and number > self.args.scenario_limit:
            scenario = "normal"
        try:
            utterance = pick_utterance(self.utterances, text, self.default_utterance)
            chunks = plan_message(self.pack, utterance, ready, self.args.sections)
            say(f"MESSAGE {number} {text}")
            if self.args.fault == "flood":
                await self.flood(room, number)
            say(f"PLAN {number} {utterance.id} {','.join(str(len(c[2])) for c in chunks)}")
            total_frames = 0
            began = time.monotonic()
            first_batch = None  # late-chunk0: chunk 0's first image batch, sent again later
            for chunk_index, chunk in enumerate(chunks):
                if chunk_index > 0 and self.args.chunk_gap > 0:
                    await asyncio.sleep(self.args.chunk_gap)
                if scenario == "stall" and chunk_index == self.args.stall_before:
                    played = sum(len(c[2]) for c in chunks[:chunk_index]) / FPS
                    say(f"STALL {number} {chunk_index} {self.args.stall}")
                    await asyncio.sleep(
                        max(0.0, began + played + self.args.stall - time.monotonic()))
                master = self.master_chunk
                self.master_chunk += 1
                events = self.chunk_events(scenario, chunk_index, master, chunk)
                if scenario == "late-chunk0":
                    if chunk_index == 0:
                        first_batch = next(
                            e for e in events if e[0] == "receive_frame_images_batch")
                    elif chunk_index == 1 and first_batch is not None:
                        events = events[:1] + [("RESEND", first_batch)] + events[1:]
                for event, payload in events:
                    if event == "RESEND":
                        await self.send(payload[0], payload[1], room, payload[1]["chunk_index"])
                        say(f"RESENT {payload[0]} {payload[1]['chunk_index']}")
                        continue
                    if event == "CUT":
                        sids = [sid for sid, _ in self.sio.manager.get_participants("/", room)]
                        for sid in sids:
                            if self.args.cut_how == "transport":
                                await self.drop_transport(sid)
                            else:
                                await self.sio.disconnect(sid)
                        say(f"CUT {number} sockets={len(sids)}")
                        return
                    await self.send(event, payload, room, chunk_index)
                total_frames += len(chunk[2])
            await self.send("audio_end", {}, room, len(chunks) - 1)
            say(f"STREAMED {number} chunks={len(chunks)} frames={total_frames}")
        except asyncio.CancelledError:
            say(f"CANCELLED {number}")
            raise
        except Exception as error:  # a message must never take the server down
            say(f"ERROR message {number}: {type(error).__name__}: {error}")

    async def push_unrequested(self, sid):
        """--fault unrequested: an animation the client never asked for, 100 frames."""
        name, source = "pushed_1_s_pushed_1_e", "idle_1_s_idle_1_e"
        count = self.pack.animations[source]["frames"]
        await self.sio.emit("animation_total_frames",
                            {"animation_type": name, "total_frames": 100}, to=sid)
        for index in range(100):
            data_url = ("data:image/png;base64," + base64.b64encode(
                self.pack.base_frame(source, index % count)).decode("ascii"))
            await self.sio.emit("receive_base_frame", {
                "animation_type": name, "frame_index": index,
                "frame_data": {"data": data_url}}, to=sid)
            await asyncio.sleep(0)
        await self.sio.emit("animation_frames_complete", {"animation_type": name}, to=sid)
        say(f"PUSHED {name} 100")

    async def flood(self, room, number):
        """--fault flood: garbage before a message's speech; the speech after must play."""
        for index in range(200):
            await self.sio.emit("receive_audio", {
                "chunk_index": "zero", "audio_data": 7, "animationFramesChunk": "no",
                "message_id": index}, to=room)
        filler = "x" * (64 << 10)
        for index in range(200):
            await self.sio.emit(f"unknown_event_{index}", {"text": filler}, to=room)
            await asyncio.sleep(0)
        await self.sio.emit("receive_frame_images_batch", {
            "chunk_index": 0, "frames": list(range(1_000_000))}, to=room)
        await self.sio.emit("receive_frame_images_batch", {
            "chunk_index": 0, "frames": [{} for _ in range(200_000)]}, to=room)
        say(f"FLOOD {number}")

    async def drop_transport(self, sid):
        """Closes the socket's WebSocket without an Engine.IO CLOSE or Socket.IO DISCONNECT
        packet, as a network cut would (python-engineio internals: abort, then unblock the
        writer, which closes the WebSocket)."""
        try:
            socket = self.sio.eio._get_socket(self.sio.manager.eio_sid_from_sid(sid, "/"))
        except KeyError:
            return
        await socket.close(wait=False, abort=True)
        socket.queue.put_nowait(None)
        self.sio.eio.sockets.pop(socket.sid, None)

    def chunk_events(self, scenario, chunk_index, master, chunk):
        audio, start_frame, frames, sections = chunk
        pack = self.pack
        bad = scenario == "bad-frames" and chunk_index == 0
        floats = scenario == "floats"

        def plan_frame(frame, with_image):
            obj = frame_object(frame)
            if scenario == "ahead":
                obj["sheet_filename"] = obj["sheet_filename"].replace(".webp", f"_m{master}.webp")
            if bad and frame.position == BAD_FRAMES[0][0]:
                obj["matched_sprite_frame_number"] = BAD_NEGATIVE_FRAME
            if bad and frame.position == BAD_FRAMES[1][0]:
                del obj["matched_sprite_frame_number"]
            if with_image:
                if bad and frame.position == BAD_FRAMES[2][0]:
                    data = corrupt_bytes(frame.position)
                else:
                    data = pack.sprite(frame.animation, frame.base, frame.viseme)
                obj["image_data"] = self.encode(data)
                obj["image_mime"] = "image/webp"
            if floats:
                obj = absent_values(floatify(obj), frame.position, with_image)
            return obj

        def shaped(payload):
            return floatify(payload) if floats else payload

        events = []
        if scenario == "legacy":
            events.append(("animation_chunk_metadata", {
                "chunk_index": chunk_index, "total_frame_images": len(frames),
                "sections": [{"animation_name": section[0].animation,
                              "frames": [plan_frame(f, False) for f in section]}
                             for section in sections]}))
            for frame in frames:
                image = plan_frame(frame, True)
                image["chunk_index"] = chunk_index
                events.append(("receive_frame_image", image))
            events.append(("receive_audio", {
                "audio_data": self.encode(audio), "chunk_index": chunk_index,
                "master_chunk_index": master, "total_frame_images": len(frames),
                "timestamp": timestamp_now()}))
            return events

        first = frames[0]
        receive_audio = shaped({
            "audio_data": self.encode(audio), "chunk_index": chunk_index,
            "master_chunk_index": master, "total_frame_images": len(frames),
            "timestamp": timestamp_now(),
            "animationFramesChunk": [{
                "animation_name": first.animation,
                "sections": [],
                "zone_top_left": [first.rect[0], first.rect[1]],
                "master_frame_play_at": start_frame,
                "mode": "talking",
            }],
        })
        receive_audio["animationFramesChunk"][0]["sections"] = [
            [plan_frame(f, False) for f in section] for section in sections]
        if chunk_index == 0:
            receive_audio["first_frame_image"] = {
                "image_data": self.encode(pack.sprite(first.animation, first.base, first.viseme)),
                "sheet_filename": Pack.sheet_filename(first.viseme).replace(
                    ".webp", f"_m{master}.webp" if scenario == "ahead" else ".webp")}

        size = self.args.batch_size
        total_batches = (len(frames) + size - 1) // size
        batches = []
        for batch_index in range(total_batches):
            part = frames[batch_index * size:(batch_index + 1) * size]
            batch = shaped({
                "frames": [], "chunk_index": chunk_index, "batch_index": batch_index,
                "batch_start_index": batch_index * size, "batch_size": len(part),
                "total_batches": total_batches,
                "emission_timestamp": int(time.time() * 1000)})
            batch["frames"] = [plan_frame(f, True) for f in part]
            batches.append(("receive_frame_images_batch", batch))
        ready = ("chunk_images_ready", shaped({"chunk_index": chunk_index,
                                               "total_images_sent": len(frames)}))
        if scenario == "reorder":
            return batches + [ready, ("receive_audio", receive_audio)]
        if scenario == "retry":
            # Every batch and chunk_images_ready twice in a row: a re-send after a slow ack.
            batches = [item for batch in batches for item in (batch, ("RESEND", batch))]
            ready = [ready, ("RESEND", ready)]
            return [("receive_audio", receive_audio)] + batches + ready
        events = [("receive_audio", receive_audio)] + batches + [ready]
        if scenario == "cut" and chunk_index == 0:
            events = events[:2] + [("CUT", None)]
        return events


async def run(args):
    pack = Pack(args.pack)
    utterances = load_utterances(args.utterances)
    backend = Backend(args, pack, utterances)
    if args.scenario == "bad-frames":
        shortest = min(u.chunks[0][1] for u in utterances.values())
        if shortest <= max(p for p, _ in BAD_FRAMES):
            raise SystemExit(f"a chunk 0 has only {shortest} frames, too few for bad-frames")
        for position, kind in BAD_FRAMES:
            say(f"BAD 0 {position} {kind}")
    runner = aiohttp.web.AppRunner(backend.app, access_log=None)
    await runner.setup()
    site = aiohttp.web.TCPSite(runner, args.host, args.port)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]
    say(f"PORT {port}")
    await asyncio.Event().wait()


def main():
    # A parent may have blocked these signals (the mask is inherited); stop when told to.
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM, signal.SIGINT})
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    here = os.path.dirname(os.path.abspath(__file__))
    parser = argparse.ArgumentParser(description="A production-shaped LIVA backend.")
    parser.add_argument("--pack", required=True)
    parser.add_argument("--utterances", default=os.path.join(
        here, "..", "..", "Tools", "Sources", "LIVAServer", "Resources", "utterances"))
    parser.add_argument("--mode", choices=("base64", "binary"), default="base64")
    parser.add_argument("--scenario", default="normal", choices=(
        "normal", "reorder", "bad-frames", "legacy", "cut", "floats", "retry", "late-chunk0",
        "ahead", "stall"))
    parser.add_argument("--scenario-limit", type=int, default=None)
    parser.add_argument("--chunk-gap", type=float, default=0.0)
    parser.add_argument("--acks", action="store_true",
                        help="emit speech events asking for an acknowledgement (ACKED lines)")
    parser.add_argument("--stall", type=float, default=1.5)
    parser.add_argument("--stall-before", type=int, default=1)
    parser.add_argument("--batch-size", type=int, default=MAX_BATCH)
    parser.add_argument("--sections", choices=("runs", "single"), default="runs")
    parser.add_argument("--default-utterance", default=None)
    parser.add_argument("--cut-how", choices=("socketio", "transport"), default="socketio")
    parser.add_argument("--fault", default=None,
                        choices=("flood", "unrequested", "damaged-frame"))
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--ping-interval", type=float, default=25)
    parser.add_argument("--ping-timeout", type=float, default=60)
    args = parser.parse_args()
    if not 1 <= args.batch_size <= MAX_BATCH:
        parser.error(f"--batch-size must be 1...{MAX_BATCH}")
    try:
        asyncio.run(run(args))
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
