#!/usr/bin/env bash
# Installs FFmpeg's libavcodec, libswscale and libavutil headers (Debian), which LIVAMedia's
# H.264 playback form of base frames uses on Linux (Package.swift offers CLIVAVideo when
# pkg-config finds them). Idempotent. Without them base frames decode from their images.
set -u
if pkg-config --exists libavcodec libswscale libavutil 2>/dev/null; then exit 0; fi
SUDO=""
[ "$(id -u)" = 0 ] || SUDO="sudo"
if command -v apt-get >/dev/null 2>&1; then
  echo "installing libavcodec-dev, libswscale-dev (apt-get)…"
  $SUDO apt-get update -qq >/dev/null 2>&1 || true
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends \
    pkg-config libavcodec-dev libswscale-dev libavutil-dev >/dev/null 2>&1 \
    || { echo "could not install libavcodec-dev; base frames will decode from their images" >&2; exit 1; }
fi
pkg-config --exists libavcodec libswscale libavutil
