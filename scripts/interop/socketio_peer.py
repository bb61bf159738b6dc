"""python-socketio peer for the SocketIO interoperability tests and the receive benchmark.

    socketio_peer.py server [--ping-interval S] [--ping-timeout S]
        Runs an AsyncServer (aiohttp) on 127.0.0.1 on a free port and prints "PORT <n>".
    socketio_peer.py client URL
        Runs the client scenarios against a server (the Swift SocketIOServer) and prints one
        "PASS <name>" or "FAIL <name>: <detail>" line per scenario; exits 1 if any failed.
    socketio_peer.py client-ping-timeout URL
        Connects to a server that never pings and checks that the client gives up on it.
    socketio_peer.py bench URL --events N --mode base64|binary
        Receives N receive_frame_images_batch events and prints "BENCH <events> <bytes> <seconds>".

The scenarios mirror Tools/Tests/SocketIOIntegrationTests/LoopbackTests.swift, plus LIVA event shapes.
"""

import asyncio
import base64
import signal
import sys
import time

import aiohttp.web
import socketio

FRAMES_PER_BATCH = 3


def image_bytes(index, size=64):
    """Deterministic fake WebP bytes, the same formula as the Swift tests use."""
    header = b"RIFF\x00\x00\x00\x00WEBP"
    return header + bytes((index * 7 + i) % 256 for i in range(size - len(header)))


def liva_events(mode):
    """A receive_audio chunk and a receive_frame_images_batch, images as base64 or bytes."""
    def encode(data):
        return data if mode == "binary" else base64.b64encode(data).decode()

    frames = []
    for i in range(FRAMES_PER_BATCH):
        frames.append({
            "animation_name": "talking_1_s_talking_1_e",
            "matched_sprite_frame_number": i,
            "sheet_filename": f"J1_X2_M{i}.webp",
            "sequence_index": i, "section_index": 0, "frame_index": i,
            "image_data": encode(image_bytes(i)), "image_mime": "image/webp",
        })
    audio = {
        "audio_data": encode(b"\xff\xfb\x90\x64" + bytes(60)),
        "chunk_index": 0, "master_chunk_index": 0, "total_frame_images": FRAMES_PER_BATCH,
        "timestamp": "2025-01-01 00:00:00.000",
        "animationFramesChunk": [{
            "animation_name": "talking_1_s_talking_1_e", "zone_top_left": [10, 20],
            "master_frame_play_at": 0, "mode": "talking",
            "sections": [[{k: v for k, v in f.items() if k not in ("image_data", "image_mime")}
                          for f in frames]],
        }],
    }
    batch = {
        "frames": frames, "chunk_index": 0, "batch_index": 0, "batch_start_index": 0,
        "batch_size": FRAMES_PER_BATCH, "total_batches": 1,
        "emission_timestamp": 1738000000000,
    }
    return [("receive_audio", audio), ("receive_frame_images_batch", batch),
            ("chunk_images_ready", {"chunk_index": 0, "total_images_sent": FRAMES_PER_BATCH}),
            ("audio_end", {})]


def bench_batch(index, mode, frames=50, size=6000):
    def encode(data):
        return data if mode == "binary" else base64.b64encode(data).decode()
    return {
        "frames": [{
            "overlay_id": f"talking_1_s_talking_1_e/{i}/J1_X2_M{i % 8}.webp",
            "animation_name": "talking_1_s_talking_1_e", "matched_sprite_frame_number": i,
            "sheet_filename": f"J1_X2_M{i % 8}.webp", "sequence_index": i,
            "section_index": 0, "frame_index": i,
            "image_data": encode(image_bytes(index * frames + i, size)),
            "image_mime": "image/webp"} for i in range(frames)],
        "chunk_index": index, "batch_index": 0, "batch_start_index": 0,
        "batch_size": frames, "total_batches": 1, "emission_timestamp": 1738000000000,
    }


# ---------------------------------------------------------------------------------------
# Server


async def run_server(ping_interval, ping_timeout):
    # cors_allowed_origins="*": WSClient (like Starscream, which the first iOS app used against
    # production) sends an Origin of the form "ws://host", which python-engineio's default
    # same-origin check refuses. The production backend evidently accepts it.
    sio = socketio.AsyncServer(async_mode="aiohttp", ping_interval=ping_interval,
                               ping_timeout=ping_timeout, max_http_buffer_size=64 << 20,
                               cors_allowed_origins="*")
    app = aiohttp.web.Application()
    sio.attach(app)
    sessions = {}

    @sio.event
    async def connect(sid, environ, auth):
        if isinstance(auth, dict) and auth.get("token") == "bad":
            raise socketio.exceptions.ConnectionRefusedError("not authorized")
        query = dict(p.split("=", 1) for p in environ.get("QUERY_STRING", "").split("&") if "=" in p)
        from urllib.parse import unquote
        sessions[sid] = {"query": {k: unquote(v) for k, v in query.items()
                                   if k not in ("EIO", "transport", "t")}, "auth": auth}
        await sio.enter_room(sid, f"{query.get('user_id')}-{query.get('agent_id')}-instance-"
                                  f"{query.get('instance_id', 'default')}")
        # Emitted before the CONNECT ack reaches the client.
        await sio.emit("welcome", "first", to=sid)
        await sio.emit("welcome", ("second", b"\x09\x09"), to=sid)

    @sio.on("whoami")
    async def whoami(sid, *args):
        return sessions.get(sid, {})

    @sio.on("echo")
    async def echo(sid, *args):
        return args

    @sio.on("ping-me")
    async def ping_me(sid, *args):
        await sio.emit("pong-you", args, to=sid)

    @sio.on("ask-me")
    async def ask_me(sid, *args):
        answer = await sio.call("question", 7, to=sid, timeout=10)
        await sio.emit("answer-was", answer if isinstance(answer, tuple) else (answer,), to=sid)

    @sio.on("send-liva")
    async def send_liva(sid, mode):
        for name, payload in liva_events(mode):
            await sio.emit(name, payload, to=sid)

    @sio.on("user_full_audio")
    async def user_full_audio(sid, payload):
        data = payload.get("audio_data")
        if isinstance(data, str):
            data = base64.b64decode(data)
        return {"bytes": len(data), "user_id": payload.get("user_id")}

    @sio.on("kick-me")
    async def kick_me(sid, *args):
        await sio.disconnect(sid)

    @sio.on("drop-transport")
    async def drop_transport(sid, *args):
        await sio.eio.disconnect(sio.manager.eio_sid_from_sid(sid, "/"))

    @sio.on("bench")
    async def bench(sid, count, mode):
        for index in range(count):
            await sio.emit("receive_frame_images_batch", bench_batch(index, mode), to=sid)
        await sio.emit("bench_done", count, to=sid)

    runner = aiohttp.web.AppRunner(app)
    await runner.setup()
    site = aiohttp.web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]
    print(f"PORT {port}", flush=True)
    await asyncio.Event().wait()


# ---------------------------------------------------------------------------------------
# Client


async def run_client(url):
    failures = []

    def check(name, condition, detail=""):
        if not condition:
            failures.append(name)
        print(f"PASS {name}" if condition else f"FAIL {name}: {detail}", flush=True)
        return condition

    sio = socketio.AsyncClient(reconnection=False)
    received = asyncio.Queue()
    disconnect_reasons = []

    @sio.on("*")
    async def any_event(event, *args):
        await received.put((event, args))

    @sio.on("question")
    async def question(*args):
        return ("answer", b"\x2a") + args

    @sio.event
    async def disconnect(reason=None):
        disconnect_reasons.append(str(reason))

    async def next_event(name, timeout=10):
        while True:
            event, args = await asyncio.wait_for(received.get(), timeout)
            if event == name:
                return args

    query = "user_id=u%201&agent_id=a2&instance_id=default&userResolution=512"
    await sio.connect(f"{url}?{query}", transports=["websocket"], auth={"token": "secret"},
                      wait_timeout=10)
    check("connect", sio.connected)

    welcome = [await next_event("welcome"), await next_event("welcome")]
    check("events before the CONNECT ack", welcome == [("first",), ("second", b"\x09\x09")],
          repr(welcome))

    who = await sio.call("whoami", timeout=10)
    check("query and auth", who == {"query": {"user_id": "u 1", "agent_id": "a2",
                                             "instance_id": "default", "userResolution": "512"},
                                    "auth": {"token": "secret"}}, repr(who))

    arguments = (1, b"\x01\x02\x03", {"nested": [b"", b"\x04\x05"], "text": "a-b"})
    answer = await sio.call("echo", arguments, timeout=10)
    check("ack with binary at depth", tuple(answer) == arguments, repr(answer))

    await sio.emit("ping-me", bytes(range(256)))
    pong = await next_event("pong-you")
    check("server event with binary", pong == (bytes(range(256)),), repr(pong))

    await sio.emit("ask-me")
    answer_was = await next_event("answer-was")
    check("server asks, client acknowledges", answer_was == ("answer", b"\x2a", 7),
          repr(answer_was))

    for mode in ("base64", "binary"):
        await sio.emit("send-liva", mode)
        audio = (await next_event("receive_audio"))[0]
        batch = (await next_event("receive_frame_images_batch"))[0]
        ready = (await next_event("chunk_images_ready"))[0]
        await next_event("audio_end")

        def data(value):
            return value if isinstance(value, bytes) else base64.b64decode(value)
        images_ok = [data(f["image_data"]) for f in batch["frames"]] == \
            [image_bytes(i) for i in range(FRAMES_PER_BATCH)]
        check(f"LIVA events ({mode})",
              images_ok and data(audio["audio_data"])[:2] == b"\xff\xfb"
              and ready == {"chunk_index": 0, "total_images_sent": FRAMES_PER_BATCH},
              repr(batch)[:200])

    audio_answer = await sio.call("user_full_audio", {
        "user_id": "u 1", "agent_id": "a2", "app_name": "interop", "instance_id": "default",
        "audio_data": b"\xff\xfb" + bytes(100), "userResolution": "512",
        "messageHistory": [], "timestamp": "2025-01-01 00:00:00.000"}, timeout=10)
    check("user_full_audio with binary audio", audio_answer == {"bytes": 102, "user_id": "u 1"},
          repr(audio_answer))

    await sio.emit("wait-for-pongs")
    pongs = await next_event("pongs-ok", timeout=20)
    check("answers pings", pongs == (True,), repr(pongs))

    await sio.emit("kick-me")
    for _ in range(200):
        if not sio.connected:
            break
        await asyncio.sleep(0.05)
    check("server-initiated disconnect", not sio.connected and
          any("server" in r.lower() for r in disconnect_reasons), repr(disconnect_reasons))

    again = socketio.AsyncClient(reconnection=True, reconnection_delay=0.1,
                                 reconnection_delay_max=0.2, randomization_factor=0)
    connects = []

    @again.event
    async def connect():
        connects.append(again.get_sid())

    await again.connect(url, transports=["websocket"], auth={"token": "secret"}, wait_timeout=10)
    await again.emit("drop-me")
    for _ in range(400):
        if len(connects) >= 2 and again.connected:
            break
        await asyncio.sleep(0.05)
    check("reconnects after a dropped transport", len(connects) >= 2 and again.connected,
          repr(connects))
    await again.disconnect()

    refused = socketio.AsyncClient(reconnection=False)
    refusals = []

    @refused.event
    async def connect_error(data):
        refusals.append(data)

    try:
        await refused.connect(url, transports=["websocket"], auth={"token": "bad"}, wait_timeout=10)
        check("refused connection", False, "connected")
    except socketio.exceptions.ConnectionError as error:
        check("refused connection", refusals == [{"message": "not authorized"}],
              f"{error} {refusals}")

    return 1 if failures else 0


async def run_client_ping_timeout(url):
    """Against a server that never pings: the client must declare it dead by itself."""
    sio = socketio.AsyncClient(reconnection=False)
    reasons = []

    @sio.event
    async def disconnect(reason=None):
        reasons.append(str(reason))

    await sio.connect(url, transports=["websocket"], wait_timeout=10)
    started = time.perf_counter()
    for _ in range(400):
        if not sio.connected:
            break
        await asyncio.sleep(0.025)
    elapsed = time.perf_counter() - started
    ok = not sio.connected
    print(f"PASS ping timeout after {elapsed:.2f}s {reasons}" if ok else
          f"FAIL ping timeout: still connected after {elapsed:.2f}s", flush=True)
    return 0 if ok else 1


async def run_bench(url, count, mode):
    sio = socketio.AsyncClient(reconnection=False)
    done = asyncio.Event()
    state = {"events": 0, "bytes": 0, "start": None}

    @sio.on("receive_frame_images_batch")
    async def batch(payload):
        if state["start"] is None:
            state["start"] = time.perf_counter()
        # The same work as the Swift side: the payload as typed data, images as bytes.
        for frame in payload["frames"]:
            data = frame["image_data"]
            if isinstance(data, str):
                data = base64.b64decode(data)
            state["bytes"] += len(data)
        state["events"] += 1

    @sio.on("bench_done")
    async def bench_done(count):
        state["end"] = time.perf_counter()
        done.set()

    await sio.connect(url, transports=["websocket"], wait_timeout=10)
    started = time.perf_counter()
    await sio.emit("bench", (count, mode))
    await asyncio.wait_for(done.wait(), 600)
    seconds = state["end"] - started
    print(f"BENCH {state['events']} {state['bytes']} {seconds:.6f}", flush=True)
    await sio.disconnect()


def main():
    # A parent may have blocked these signals (the mask is inherited); the peer must stop
    # when told to.
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM, signal.SIGINT})
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    mode = sys.argv[1]
    if mode == "server":
        args = dict(zip(sys.argv[2::2], sys.argv[3::2]))
        asyncio.run(run_server(float(args.get("--ping-interval", 25)),
                               float(args.get("--ping-timeout", 20))))
    elif mode == "client":
        sys.exit(asyncio.run(run_client(sys.argv[2])) or 0)
    elif mode == "client-ping-timeout":
        sys.exit(asyncio.run(run_client_ping_timeout(sys.argv[2])))
    elif mode == "bench":
        args = dict(zip(sys.argv[3::2], sys.argv[4::2]))
        asyncio.run(run_bench(sys.argv[2], int(args.get("--events", 100)),
                              args.get("--mode", "base64")))
    else:
        raise SystemExit(f"unknown mode {mode}")


if __name__ == "__main__":
    main()
