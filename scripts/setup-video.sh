#!/usr/bin/env bash
# Builds and installs the small FFmpeg that LIVAMedia's H.264 playback form of base frames uses on
# Linux: libavcodec with only the H.264 decoder and the x264 encoder wrapper, libswscale and
# libavutil, as static libraries under /usr/local/liva-video, with
# /usr/local/lib/pkgconfig/liva-video.pc (Package.swift offers CLIVAVideo when pkg-config finds
# it). A distribution's libavcodec would do too, but Debian's loads ~130 shared libraries (every
# codec it was built with): ~18 MiB resident before a frame is decoded, over the SDK's memory
# budget; this one adds ~1 MiB. Idempotent (quick when installed); root, or sudo.
#
#   source   FFmpeg 5.1.9, Debian 12's upstream tarball (ffmpeg_5.1.9.orig.tar.xz from
#            deb.debian.org, checked against its sha256)
#   needs    nasm (FFmpeg's x86 assembly), libx264-dev (the encoder, made once per download),
#            pkg-config, a C compiler
set -euo pipefail

version=5.1.9
tarball="ffmpeg_${version}.orig.tar.xz"
sha256=d9b593bb2ba93d4b50f74177e0cdcd41747e708596367deed0c30348a71dd176
url="http://deb.debian.org/debian/pool/main/f/ffmpeg/${tarball}"
prefix=/usr/local/liva-video
pc=/usr/local/lib/pkgconfig/liva-video.pc

if [ -f "$pc" ] && grep -q "^Version: ${version}\$" "$pc" && [ -f "$prefix/lib/libavcodec.a" ]; then
  exit 0
fi
SUDO=""
[ "$(id -u)" = 0 ] || SUDO="sudo"
echo "setup-video: building FFmpeg ${version} (H.264 only) into ${prefix}…"
if command -v apt-get >/dev/null 2>&1; then
  $SUDO apt-get update -qq >/dev/null 2>&1 || true
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends \
    nasm libx264-dev pkg-config make gcc curl xz-utils ca-certificates >/dev/null
fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
curl -sSfL --retry 3 -o "$work/$tarball" "$url"
echo "$sha256  $work/$tarball" | sha256sum -c --quiet -
tar -xJf "$work/$tarball" -C "$work"
cd "$work/ffmpeg-${version}"
./configure --prefix="$prefix" --enable-static --disable-shared --enable-pic \
  --enable-gpl --enable-libx264 --disable-autodetect --disable-everything \
  --disable-programs --disable-doc --disable-network --disable-avdevice --disable-avformat \
  --disable-avfilter --disable-swresample --disable-postproc \
  --enable-decoder=h264 --enable-encoder=libx264 --enable-swscale >"$work/configure.log" 2>&1 \
  || { tail -20 "$work/configure.log" >&2; exit 1; }
make -j"$(nproc)" >"$work/make.log" 2>&1 || { tail -30 "$work/make.log" >&2; exit 1; }
$SUDO make install >/dev/null
$SUDO mkdir -p "$(dirname "$pc")"
$SUDO tee "$pc" >/dev/null <<PC
prefix=${prefix}
Name: liva-video
Description: FFmpeg ${version} with only H.264 (decoder, x264 encoder) and swscale, static
Version: ${version}
Cflags: -I\${prefix}/include
Libs: -L\${prefix}/lib -lavcodec -lswscale -lavutil -lx264 -lm -lpthread
PC
echo "setup-video: installed ${pc}"
