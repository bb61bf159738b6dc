#!/usr/bin/env python3
"""Synthesizes one utterance for the LIVA reference backend.

Text -> speech with timed phonemes (libespeak-ng through ctypes, phoneme events) ->
Rhubarb-style visemes (A-H, X) -> 44.1 kHz mono audio, padded to whole 1/30 s frames ->
chunk MP3s of whole frames (lame, 128 kbit/s CBR) -> timing.json.

Used by scripts/make-utterances.sh (the committed, pre-made utterances) and at run time by
LIVAServer's SpeechSynthesizer (arbitrary text, when espeak-ng, lame and python3 exist).
Standard library only. Exit codes: 0 done, 2 bad arguments, 3 a tool or library is
missing, 4 synthesis or encoding failed.
"""

import argparse
import ctypes
import ctypes.util
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import wave

SAMPLE_RATE = 44100
FORMAT_VERSION = 1

# espeak-ng phoneme mnemonics (English voices) -> Rhubarb visemes.
#   A: closed (P B M)          B: clenched teeth (most consonants, EE)
#   C: open (EH, AE, schwa)    D: wide open (AA, AI, OW as in now)
#   E: slightly rounded (AO, ER)   F: puckered (UW, OW as in go, W)
#   G: F and V (teeth on lip)  H: L (tongue raised)   X: rest (pauses)
PHONEME_VISEMES = {
    "p": "A", "b": "A", "m": "A",
    "f": "G", "v": "G",
    "l": "H", "@L": "H", "L": "H",
    "w": "F", "W": "F",
    "u:": "F", "U": "F", "U@": "F", "oU": "F", "o@": "F", "u": "F",
    "3": "E", "3:": "E", "O": "E", "O:": "E", "O@": "E", "OI": "E", "0": "E", "o": "E",
    "A:": "D", "A@": "D", "aI": "D", "aU": "D", "aa": "D", "A": "D",
    "a": "C", "a#": "C", "@": "C", "@2": "C", "@5": "C", "e": "C", "e@": "C", "E": "C",
    "eI": "C", "V": "C", "h": "C",
    "i": "B", "i:": "B", "I": "B", "I2": "B", "I#": "B", "I@": "B", "i@": "B", "j": "B",
    "t": "B", "d": "B", "k": "B", "g": "B", "n": "B", "N": "B", "s": "B", "z": "B",
    "S": "B", "Z": "B", "tS": "B", "dZ": "B", "T": "B", "D": "B", "r": "B", "r-": "B",
    "R": "B", "x": "B", "C": "B", "t#": "B", "d#": "B", "n-": "B", "?": "B",
}
VOWEL_STARTS = set("aeiouAEIOUV@03")


def viseme_for(phoneme):
    """The viseme of an espeak-ng phoneme mnemonic (pauses are X)."""
    if not phoneme or phoneme.startswith("_"):
        return "X"
    candidate = phoneme
    while candidate:
        if candidate in PHONEME_VISEMES:
            return PHONEME_VISEMES[candidate]
        candidate = candidate[:-1]
    return "C" if phoneme[0] in VOWEL_STARTS else "B"


class Event(ctypes.Structure):
    _fields_ = [
        ("type", ctypes.c_int), ("unique_identifier", ctypes.c_uint),
        ("text_position", ctypes.c_int), ("length", ctypes.c_int),
        ("audio_position", ctypes.c_int), ("sample", ctypes.c_int),
        ("user_data", ctypes.c_void_p), ("id", ctypes.c_char * 8),
    ]


EVENT_LIST_TERMINATED = 0
EVENT_PHONEME = 7
AUDIO_OUTPUT_SYNCHRONOUS = 2
INITIALIZE_PHONEME_EVENTS = 0x0001
INITIALIZE_DONT_EXIT = 0x8000
POS_CHARACTER = 1
CHARS_UTF8 = 1


def load_espeak():
    names = ["libespeak-ng.so.1", "libespeak-ng.so", "libespeak-ng.dylib",
             "/opt/homebrew/lib/libespeak-ng.dylib", "/usr/local/lib/libespeak-ng.dylib"]
    found = ctypes.util.find_library("espeak-ng")
    if found:
        names.insert(0, found)
    for name in names:
        try:
            return ctypes.CDLL(name)
        except OSError:
            continue
    return None


def synthesize(lib, text, voice):
    """Returns (samples at the engine's rate, rate, [(sample, phoneme)])."""
    samples = []
    phonemes = []
    callback_type = ctypes.CFUNCTYPE(
        ctypes.c_int, ctypes.POINTER(ctypes.c_short), ctypes.c_int, ctypes.POINTER(Event))

    def on_synth(wav, count, events):
        if wav and count > 0:
            samples.extend(wav[:count])
        index = 0
        while events[index].type != EVENT_LIST_TERMINATED:
            event = events[index]
            if event.type == EVENT_PHONEME:
                name = bytes(event.id).split(b"\0")[0].decode("ascii", "replace")
                phonemes.append((event.sample, name))
            index += 1
        return 0

    callback = callback_type(on_synth)
    rate = lib.espeak_Initialize(
        AUDIO_OUTPUT_SYNCHRONOUS, 0, None, INITIALIZE_PHONEME_EVENTS | INITIALIZE_DONT_EXIT)
    if rate <= 0:
        raise RuntimeError("espeak_Initialize failed")
    lib.espeak_SetSynthCallback(callback)
    if lib.espeak_SetVoiceByName(voice.encode()) != 0:
        raise RuntimeError("espeak-ng has no voice " + voice)
    data = text.encode("utf-8")
    if lib.espeak_Synth(data, len(data) + 1, 0, POS_CHARACTER, 0, CHARS_UTF8, None, None) != 0:
        raise RuntimeError("espeak_Synth failed")
    lib.espeak_Synchronize()
    return samples, rate, phonemes


def resample(samples, source_rate, target_rate):
    """Linear interpolation (espeak-ng's output holds nothing above 11 kHz anyway)."""
    if source_rate == target_rate or not samples:
        return list(samples)
    count = int(len(samples) * target_rate // source_rate)
    step = source_rate / target_rate
    last = len(samples) - 1
    out = []
    for index in range(count):
        position = index * step
        base = int(position)
        fraction = position - base
        a = samples[min(base, last)]
        b = samples[min(base + 1, last)]
        out.append(int(round(a + (b - a) * fraction)))
    return out


def write_wav(path, samples):
    with wave.open(path, "wb") as output:
        output.setnchannels(1)
        output.setsampwidth(2)
        output.setframerate(SAMPLE_RATE)
        output.writeframes(struct.pack("<%dh" % len(samples), *samples))


def chunk_frame_counts(total_frames, chunk_seconds, fps):
    """Splits whole frames into the fewest chunks of at most chunk_seconds, as even as possible."""
    per_chunk = max(1, int(round(chunk_seconds * fps)))
    count = max(1, -(-total_frames // per_chunk))
    base, extra = divmod(total_frames, count)
    return [base + (1 if index < extra else 0) for index in range(count)]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--text", required=True)
    parser.add_argument("--out", required=True, help="output directory (created)")
    parser.add_argument("--id", default="utterance")
    parser.add_argument("--voice", default="en-us")
    parser.add_argument("--fps", type=int, default=30)
    parser.add_argument("--chunk-seconds", type=float, default=1.6)
    parser.add_argument("--lame", default="lame")
    parser.add_argument("--bitrate", type=int, default=128)
    args = parser.parse_args()
    text = " ".join(args.text.split())
    if not text or len(text) > 2000 or args.fps <= 0 or SAMPLE_RATE % args.fps != 0:
        print("make_utterance: the text must be 1-2000 characters and fps divide 44100",
              file=sys.stderr)
        return 2
    lib = load_espeak()
    lame = shutil.which(args.lame)
    if lib is None or lame is None:
        print("make_utterance: needs libespeak-ng and lame", file=sys.stderr)
        return 3
    try:
        raw, rate, phonemes = synthesize(lib, text, args.voice)
    except RuntimeError as error:
        print("make_utterance: %s" % error, file=sys.stderr)
        return 4
    audio = resample(raw, rate, SAMPLE_RATE)
    samples_per_frame = SAMPLE_RATE // args.fps
    total_frames = max(1, -(-len(audio) // samples_per_frame))
    audio += [0] * (total_frames * samples_per_frame - len(audio))

    # Phonemes -> visemes, merged when consecutive ones agree; X before the first and after
    # the last phoneme.
    visemes = []
    phoneme_list = []
    for sample, name in phonemes:
        start = round(sample / rate, 4)
        phoneme_list.append({"start": start, "phoneme": name})
        viseme = viseme_for(name)
        if visemes and abs(visemes[-1]["start"] - start) < 1e-9:
            visemes[-1]["viseme"] = viseme
        elif not visemes or visemes[-1]["viseme"] != viseme:
            visemes.append({"start": start, "viseme": viseme})
    if not visemes or visemes[0]["start"] > 0:
        visemes.insert(0, {"start": 0.0, "viseme": "X"})
    speech_end = round(len(raw) / rate, 4)
    if visemes[-1]["viseme"] != "X":
        visemes.append({"start": speech_end, "viseme": "X"})

    os.makedirs(args.out, exist_ok=True)
    chunks = []
    first_frame = 0
    with tempfile.TemporaryDirectory() as scratch:
        for index, frames in enumerate(chunk_frame_counts(total_frames, args.chunk_seconds, args.fps)):
            begin = first_frame * samples_per_frame
            end = begin + frames * samples_per_frame
            wav_path = os.path.join(scratch, "chunk_%03d.wav" % index)
            write_wav(wav_path, audio[begin:end])
            name = "chunk_%03d.mp3" % index
            result = subprocess.run(
                [lame, "--silent", "--cbr", "-b", str(args.bitrate), "-m", "m",
                 "--noreplaygain", wav_path, os.path.join(args.out, name)],
                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            if result.returncode != 0:
                print("make_utterance: lame failed: %s" % result.stderr.decode(errors="replace"),
                      file=sys.stderr)
                return 4
            chunks.append({"file": name, "start_frame": first_frame, "frames": frames,
                           "samples": frames * samples_per_frame})
            first_frame += frames

    timing = {
        "format": FORMAT_VERSION,
        "id": args.id,
        "text": text,
        "voice": args.voice,
        "sample_rate": SAMPLE_RATE,
        "fps": args.fps,
        "total_samples": total_frames * samples_per_frame,
        "speech_seconds": speech_end,
        "visemes": visemes,
        "phonemes": phoneme_list,
        "chunks": chunks,
    }
    with open(os.path.join(args.out, "timing.json"), "w") as output:
        json.dump(timing, output, indent=1)
        output.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
