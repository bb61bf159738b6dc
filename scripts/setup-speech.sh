#!/usr/bin/env bash
# Run-time speech for LIVAServer's SpeechSynthesizer (and scripts/make-utterances.sh):
# espeak-ng (libespeak-ng with phoneme events), lame (MP3) and python3 (the helper).
# Optional: without them the reference backend falls back to its pre-made utterances and
# the synthesis test is skipped. Idempotent; quick when everything is installed.
set -euo pipefail
missing=()
command -v espeak-ng >/dev/null || missing+=(espeak-ng)
command -v lame >/dev/null || missing+=(lame)
command -v python3 >/dev/null || missing+=(python3)
((${#missing[@]})) || exit 0
if [ "$(id -u)" != 0 ]; then
  echo "setup-speech: not root; skipping ${missing[*]} (speech falls back to pre-made utterances)" >&2
  exit 0
fi
echo "setup-speech: installing ${missing[*]}" >&2
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
