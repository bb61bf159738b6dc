#!/usr/bin/env bash
# Makes the pre-made utterances LIVAServer ships (Tools/Sources/LIVAServer/Resources/utterances):
# a few short sentences, each synthesized with espeak-ng (phoneme timing from its phoneme
# events), mapped to Rhubarb-style visemes (A-H, X), and split into chunk MP3s of whole
# 1/30 s frames (lame, 44.1 kHz mono, 128 kbit/s), plus a timing.json per utterance.
# The work is done by Tools/Sources/LIVAServer/Resources/make_utterance.py, the same helper
# SpeechSynthesizer runs for arbitrary text at run time.
#
# Usage: scripts/make-utterances.sh [output directory]
# Installs espeak-ng, lame and python3 with apt-get when they are missing (needs root).
# Run it once after changing the sentences or the helper, and commit the output.
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-Tools/Sources/LIVAServer/Resources/utterances}"
helper=Tools/Sources/LIVAServer/Resources/make_utterance.py

missing=()
command -v espeak-ng >/dev/null || missing+=(espeak-ng)
command -v lame >/dev/null || missing+=(lame)
command -v python3 >/dev/null || missing+=(python3)
if ((${#missing[@]})); then
  echo "installing ${missing[*]}" >&2
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# id|sentence (each 2-4 s of speech).
sentences=(
  "hello|Hello! I'm LIVA, your friendly digital assistant."
  "lovely-day|It's a lovely day to learn something new."
  "lip-sync|Watch my lips move while I speak to you."
  "goodbye|Thanks for watching. See you again soon!"
)

rm -rf "$out"
mkdir -p "$out"
for entry in "${sentences[@]}"; do
  id="${entry%%|*}"
  text="${entry#*|}"
  python3 "$helper" --id "$id" --text "$text" --out "$out/$id"
  seconds=$(python3 -c 'import json,sys; t=json.load(open(sys.argv[1])); print(round(t["total_samples"]/t["sample_rate"],2), len(t["chunks"]))' "$out/$id/timing.json")
  echo "$id: $seconds (seconds, chunks)"
done
du -sh "$out"
