"""Checks shared by scripts/check-demo and scripts/record-python-backend: what a recording's
report says was shown and heard, and what its video file holds (with ffprobe and ffmpeg).
Plain Python 3 (no numpy): CI runs these with the machine's own python3.

The picture-based lip-sync (`mouths_in_pictures`) reads which mouth each video frame shows from
the pictures themselves, by comparing the frame's mouth region with the sprites the backend
sent (a recording's `mouths/`: `plan.json` and the sprites, written by `liva demo`), and times
each mouth against where its chunk's audio was found in the video's audio track.
"""
import json
import os
import subprocess
from operator import itemgetter, mul

# Speech plays at 30 fps (docs/Protocol.md): mouth k of a chunk belongs at k / 30 s of its audio.
SPEAKING_FPS = 30


# ---- the report: what was presented and played ----------------------------------------------

def shown_mouths(report):
    """Each (chunk, overlay frame) with a mouth among the presented frames, once."""
    return {(e["chunk"], e["frame"]) for e in report["timeline"] if e["overlays"]}


def heard_chunks(report):
    """The audio played, per message in order of first sound: (message ids, {message: [(chunk
    index, segment)]}, whether every segment played whole from its start)."""
    heard, order = {}, []
    for seg in report["audioSegments"]:
        message, chunk = seg["chunk"].split("/")
        if message not in heard:
            heard[message] = []
            order.append(message)
        heard[message].append((int(chunk[1:]), seg))
    whole = all(seg["offset"] == 0 and seg.get("stoppedAt") is None
                for m in order for _, seg in heard[m])
    return order, heard, whole


def report_lip_sync_checks(report, mouths):
    """The recorder's own account of lip-sync (the report's `lipSync`, from its list of which
    mouth it wrote into which video frame): measured over >= 95 % of `mouths`, p95 <= 10 ms."""
    lip = report["lipSync"]
    p95 = lip["p95Milliseconds"]
    return {
        f"lip-sync, the recorder's account, over >= 95 % of the mouths ({lip['samples']} of "
        f"{mouths})": mouths > 0 and lip["samples"] >= 0.95 * mouths,
        f"lip-sync, the recorder's account, p95 <= 10 ms ({p95})": p95 is not None and p95 <= 10,
    }


# ---- the video file ---------------------------------------------------------------------------

def probe(path):
    """ffprobe's streams (frames counted) and format of `path`."""
    out = subprocess.run(
        ["ffprobe", "-v", "error", "-count_frames", "-show_streams", "-show_format",
         "-of", "json", path], check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def luma_means(path, width=32, height=20):
    """Mean luma of each frame, decoded by ffmpeg at a small size; and the small frames."""
    raw = subprocess.run(
        ["ffmpeg", "-v", "error", "-i", path, "-vf", f"scale={width}:{height},format=gray",
         "-f", "rawvideo", "-"], check=True, capture_output=True).stdout
    size = width * height
    frames = [raw[i:i + size] for i in range(0, len(raw) - size + 1, size)]
    return [sum(f) / size for f in frames], frames


def pcm(path, rate=4000, start=None, duration=None):
    """Mono signed 16-bit samples of `path`'s audio at `rate` Hz, decoded by ffmpeg."""
    cut = (["-ss", f"{start:.4f}"] if start is not None else []) + \
        (["-t", f"{duration:.4f}"] if duration is not None else [])
    raw = subprocess.run(
        ["ffmpeg", "-v", "error"] + cut + ["-i", path, "-ac", "1", "-ar", str(rate),
         "-f", "s16le", "-"], check=True, capture_output=True).stdout
    return [int.from_bytes(raw[i:i + 2], "little", signed=True) for i in range(0, len(raw) - 1, 2)]


def placement_errors(video, out, segments, rate=4000, window=0.4, search=0.15):
    """Where each chunk's own audio sits in the video's audio track, against where the report
    says it was played: {chunk: lag in s} of the best cross-correlation of the chunk's first
    `window` s, decoded from its MP3 (`out`/audio/chunk_M_C.mp3), with the track around its
    expected start (the report's start rounded to the millisecond, as the track is laid). The
    chunk's audio is found at its expected start plus the lag. Chunks played from an offset are
    left out."""
    track = pcm(video, rate)
    errors = {}
    for seg in segments:
        message, chunk = seg["chunk"].split("/")
        mp3 = os.path.join(out, "audio", f"chunk_{message[1:]}_{chunk[1:]}.mp3")
        if not os.path.exists(mp3) or seg["offset"] != 0:
            continue
        own = pcm(mp3, rate)[: int(window * rate)]
        expected = expected_start(seg)
        lo = int((expected - search) * rate)
        best, best_lag = None, None
        for shift in range(int(2 * search * rate) + 1):
            at = lo + shift
            if at < 0 or at + len(own) > len(track):
                continue
            score = sum(map(mul, own, track[at:at + len(own)]))
            if best is None or score > best:
                best, best_lag = score, at / rate - expected
        errors[seg["chunk"]] = best_lag
    return errors


def expected_start(segment):
    """Where the report says a segment's audio starts in the track (s, to the millisecond)."""
    return round(segment["start"] * 1000) / 1000


# ---- which mouth each video frame shows, from the pictures -----------------------------------

def load_planned_mouths(out):
    """The backend's plan as `liva demo` writes it (`out`/mouths/plan.json): per message, per
    chunk, each mouth's {"overlay", "rect", "viseme"}; None when absent."""
    path = os.path.join(out, "mouths", "plan.json")
    if not os.path.exists(path):
        return None
    return json.load(open(path))["messages"]


def sprite_luma(out, plan):
    """{overlay: (width, height, luma bytes, alpha bytes)} of each sprite of `plan`
    (`out`/mouths/<overlay>, the bytes the backend sent; its size is its rectangle's), all
    decoded by one ffmpeg run (each padded to the largest size, then concatenated) into gray
    and alpha: the same luma ffmpeg gives the video's frames."""
    sizes = {m["overlay"]: (m["rect"][2], m["rect"][3]) for msg in plan for ch in msg for m in ch}
    return _decode_sprites(out, sorted(sizes), sizes)


def _decode_sprites(out, overlays, sizes):
    width = max(w for w, _ in sizes.values())
    height = max(h for _, h in sizes.values())
    args = ["ffmpeg", "-v", "error"]
    for overlay in overlays:
        args += ["-i", os.path.join(out, "mouths", overlay)]
    chains = [f"[{k}:v]format=rgba,pad={width}:{height}:0:0:color=0x00000000,setsar=1,"
              f"setpts=N[v{k}]" for k in range(len(overlays))]
    joined = "".join(f"[v{k}]" for k in range(len(overlays)))
    chains.append(f"{joined}concat=n={len(overlays)}:v=1:a=0,format=ya8[out]")
    args += ["-filter_complex", ";".join(chains), "-map", "[out]", "-fps_mode", "passthrough",
             "-f", "rawvideo", "-pix_fmt", "ya8", "-"]
    raw = subprocess.run(args, check=True, capture_output=True).stdout
    frame = width * height * 2
    if len(raw) != frame * len(overlays):
        raise RuntimeError(f"ffmpeg decoded {len(raw)} bytes of sprites, not {frame * len(overlays)}")
    sprites = {}
    for k, overlay in enumerate(overlays):
        w, h = sizes[overlay]
        data = raw[k * frame:(k + 1) * frame]
        rows = [data[(y * width) * 2:(y * width + w) * 2] for y in range(h)]
        sprites[overlay] = (w, h, b"".join(r[0::2] for r in rows), b"".join(r[1::2] for r in rows))
    return sprites


class MouthMatcher:
    """Tells which planned mouth a video frame shows, from its pixels.

    Each distinct mouth picture (sprite bytes and placement; two overlay ids with the same
    picture at the same place are one) is compared with the frame over the sprite's opaque
    pixels (alpha 255: there the composite is the sprite alone, whatever the base frame), as the
    mean squared luma difference. The frame shows the best match when that is <= `accept` (a
    mouth through H.264 at the demo's quality: 6-45 measured; other pictures: 130 and up) and
    the next best different picture is at least `margin` times further (else it is ambiguous:
    two mouths of one shape on poses a sub-pixel apart come within 1.1-1.3 of each other after
    compression). A first pass over every 8th opaque pixel keeps the `keep` nearest pictures
    for the full comparison (on the demo: the same two nearest as a full pass over all)."""

    def __init__(self, plan, sprites, accept=80.0, margin=1.15, keep=6):
        self.accept, self.margin, self.keep = accept, margin, keep
        rects = {m["overlay"]: tuple(m["rect"]) for msg in plan for ch in msg for m in ch}
        self.x0 = min(r[0] for r in rects.values())
        self.y0 = min(r[1] for r in rects.values())
        self.width = max(r[0] + r[2] for r in rects.values()) - self.x0
        self.height = max(r[1] + r[3] for r in rects.values()) - self.y0
        self.pictures, self.picture_of = [], {}
        seen = {}
        for overlay in sorted(rects):
            x, y, w, h = rects[overlay]
            sw, sh, luma, alpha = sprites[overlay]
            w, h = min(w, sw), min(h, sh)
            core = [(yy, xx) for yy in range(h) for xx in range(w) if alpha[yy * sw + xx] == 255]
            values = [luma[yy * sw + xx] for yy, xx in core]
            key = (x, y, tuple(core), bytes(values))
            if key not in seen:
                index = [(y - self.y0 + yy) * self.width + (x - self.x0 + xx) for yy, xx in core]
                seen[key] = len(self.pictures)
                self.pictures.append(_Picture(overlay, index, values))
            self.picture_of[overlay] = seen[key]

    def crop(self):
        """ffmpeg's filter for the frames' region holding every mouth, in gray."""
        return f"format=gray,crop={self.width}:{self.height}:{self.x0}:{self.y0}"

    def identify(self, frame):
        """(picture index or None, best distance, second distance) for one cropped frame."""
        coarse = sorted((p.coarse(frame), i) for i, p in enumerate(self.pictures))
        fine = sorted((self.pictures[i].distance(frame), i) for _, i in coarse[:self.keep])
        best, picture = fine[0]
        second = fine[1][0] if len(fine) > 1 else float("inf")
        shown = picture if best <= self.accept and second >= self.margin * best else None
        return shown, best, second


class _Picture:
    def __init__(self, overlay, index, values):
        self.overlay = overlay
        self.get, self.values = itemgetter(*index), values
        self.energy = sum(v * v for v in values)
        self.sparse_get, self.sparse = itemgetter(*index[::8]), values[::8]
        self.sparse_energy = sum(v * v for v in self.sparse)

    def distance(self, frame):
        v = self.get(frame)
        return (sum(map(mul, v, v)) - 2 * sum(map(mul, v, self.values)) + self.energy) / len(v)

    def coarse(self, frame):
        v = self.sparse_get(frame)
        return sum(map(mul, v, v)) - 2 * sum(map(mul, v, self.sparse)) + self.sparse_energy


def mouths_in_pictures(video, out, report, plan, located, fps):
    """Lip-sync read from the video file alone, against the backend's plan.

    Each video frame's mouth is identified from its pixels (``MouthMatcher``). The planned
    mouths of every message (the plan's messages in the order the report's audio first heard
    them) are aligned with the identified frames in order (the longest common subsequence,
    each mouth at its earliest frame): a planned mouth is found at the frame that first shows
    it after the mouth before it. Its lip-sync is that frame's time (frame / `fps`) minus where
    its audio is: its chunk's audio as found in the track (`located`: {chunk: start s}) plus
    its index / 30 s.

    Mouths the pictures cannot time are left out and counted: one that looks the same as the
    mouth planned before it (the same sprite at the same place: nothing changes on screen),
    and a message's first mouth when it is the mouth at rest (viseme X): the closed mouth of the
    silence before it looks the same. Frames identified inside a message's span that show
    neither the mouth due then (the last one found, held) nor one planned before the next one
    found are out of order.

    Returns a dict: planned, seen (planned mouths found in the frames, in order), timeable, timed, errors (s, per timed mouth), out_of_order
    (frame numbers), ambiguous (identified frames that were close to two pictures), frames.
    """
    matcher = MouthMatcher(plan, sprite_luma(out, plan))
    raw = subprocess.run(
        ["ffmpeg", "-v", "error", "-i", video, "-vf", matcher.crop(), "-f", "rawvideo",
         "-pix_fmt", "gray", "-"], check=True, capture_output=True).stdout
    size = matcher.width * matcher.height
    frames = [raw[i:i + size] for i in range(0, len(raw) - size + 1, size)]
    shown, ambiguous = [], 0
    for frame in frames:
        picture, best, second = matcher.identify(frame)
        shown.append(picture)
        ambiguous += picture is None and best <= matcher.accept

    order, _, _ = heard_chunks(report)
    planned = []  # (message number, chunk id, index in chunk, picture, timeable)
    for number, message in enumerate(plan):
        previous = None
        for c, chunk in enumerate(message):
            chunk_id = f"{order[number]}/c{c}" if number < len(order) else None
            for k, mouth in enumerate(chunk):
                picture = matcher.picture_of[mouth["overlay"]]
                timeable = picture != previous and not (previous is None and mouth["viseme"] == "X")
                planned.append((number, chunk_id, k, picture, timeable))
                previous = picture

    found = _align([p[3] for p in planned], shown)
    errors, timed, timeable = [], 0, 0
    seen = sum(n is not None for n in found)
    for (number, chunk_id, k, _, can), n in zip(planned, found):
        timeable += can
        if not can or n is None or chunk_id not in located:
            continue
        timed += 1
        errors.append(n / fps - (located[chunk_id] + k / SPEAKING_FPS))

    out_of_order = []
    for number in range(len(plan)):
        spots = [(n, j) for j, (p, n) in enumerate(zip(planned, found))
                 if p[0] == number and n is not None]
        if not spots:
            continue
        for n in range(spots[0][0], spots[-1][0] + 1):
            if shown[n] is None:
                continue
            due = max(j for m, j in spots if m <= n)
            later = [j for m, j in spots if m > n]
            upto = later[0] if later else len(planned)
            allowed = {planned[j][3] for j in range(due, upto)}
            if shown[n] not in allowed:
                out_of_order.append(n)
    return {"planned": len(planned), "seen": seen, "timeable": timeable, "timed": timed, "errors": errors,
            "out_of_order": out_of_order, "ambiguous": ambiguous, "frames": len(frames)}


def _align(planned, shown):
    """For each planned picture, the frame it is matched to (or None): the longest common
    subsequence of `planned` and the frames' identified pictures, each mouth in turn matched at
    the earliest frame an optimal alignment allows."""
    frames = [(n, p) for n, p in enumerate(shown) if p is not None]
    rows, cols = len(planned), len(frames)
    # best[j][i]: the longest common subsequence of planned[j:] and frames[i:].
    best = [[0] * (cols + 1) for _ in range(rows + 1)]
    for j in range(rows - 1, -1, -1):
        here, below, want = best[j], best[j + 1], planned[j]
        for i in range(cols - 1, -1, -1):
            if frames[i][1] == want:
                here[i] = below[i + 1] + 1
            else:
                here[i] = max(below[i], here[i + 1])
    found = [None] * rows
    i = 0
    for j in range(rows):
        # The earliest frame from i on that mouth j can take in an optimal alignment; none
        # when leaving the mouth out is optimal.
        for at in range(i, cols):
            if frames[at][1] == planned[j] and best[j + 1][at + 1] + 1 == best[j][i]:
                found[j] = frames[at][0]
                i = at + 1
                break
    return found


def percentile(values, q):
    """The `q` percentile (0-100) of `values`, nearest rank."""
    ordered = sorted(values)
    if not ordered:
        return None
    rank = max(0, min(len(ordered) - 1, int(-(-q * len(ordered) // 100)) - 1))
    return ordered[rank]
