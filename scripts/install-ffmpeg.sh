#!/usr/bin/env bash
# Installs ffmpeg (Debian) so `liva demo` can write demo.mp4. Idempotent; never fatal: without
# ffmpeg the demo writes the frames, the audio and the command that makes the MP4.
set -u
command -v ffmpeg >/dev/null 2>&1 && exit 0
SUDO=""
[ "$(id -u)" = 0 ] || SUDO="sudo"
if command -v apt-get >/dev/null 2>&1; then
  echo "installing ffmpeg (apt-get)…"
  $SUDO apt-get update -qq >/dev/null 2>&1 || true
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends ffmpeg >/dev/null 2>&1 \
    || echo "could not install ffmpeg; the demo will write frames and audio instead"
fi
exit 0
