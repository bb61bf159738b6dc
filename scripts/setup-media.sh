#!/usr/bin/env bash
# Installs the C libraries LIVAMedia builds and runs with on Debian/Ubuntu. Idempotent and
# quick when everything is present; run as root (CI) or with sudo.
#
#   libpng-dev    libpng headers + pkg-config file (the CLibPNG system-library target)
#   libjpeg-dev   libjpeg(-turbo) headers for the CLIVAJPEG shim
#   libwebp7      the WebP *runtime* only: LIVAMedia dlopens libwebp.so.7 at run time, so no
#                 libwebp-dev is needed (see Sources/LIVAMedia/WebPLibrary.swift)
#   pkg-config    lets SwiftPM find libpng's flags
set -euo pipefail

packages=(libpng-dev libjpeg-dev libwebp7 pkg-config)
missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" \
    || missing+=("$package")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "setup-media: all present (${packages[*]})"
  exit 0
fi
echo "setup-media: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get install -y --no-install-recommends "${missing[@]}" \
  || { apt-get update && apt-get install -y --no-install-recommends "${missing[@]}"; }
