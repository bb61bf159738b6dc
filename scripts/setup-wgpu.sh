#!/usr/bin/env bash
# Installs what PngineKit's WebGPU backend builds and runs with on Debian 12 (x86_64), system-wide
# and idempotently (quick when everything is there); run as root (CI) or with sudo.
#
#   mesa-vulkan-drivers  lavapipe: a Vulkan driver on the CPU, so wgpu renders without a GPU
#   libvulkan1           the Vulkan loader
#   pkg-config           lets SwiftPM find wgpu-native's flags
#   xvfb, libx11-dev     a virtual X server and Xlib, for the surface tests (PngineWebGPUTests'
#                        SurfaceTests start their own Xvfb and present into an X11 window)
#   wgpu-native          the WebGPU C API (webgpu.h, wgpu.h, libwgpu_native.so), taken from PyPI's
#                        `wgpu` wheel 0.32.0 (checked against its sha256), installed into
#                        /usr/local/{lib,include/wgpu-native} with /usr/local/lib/pkgconfig/wgpu-native.pc
#
# Other machines: any wgpu-native release with the same webgpu.h works; point pkg-config at it.
set -euo pipefail

wheel_version=0.32.0
wheel_name="wgpu-${wheel_version}-py3-none-manylinux_2_28_x86_64.whl"
wheel_sha256=6499a31b5a29a10b4f1089fea4a0806411f42605fa86b6c0b543a07ca0de8568
prefix=/usr/local
marker="$prefix/include/wgpu-native/.wgpu-${wheel_version}"

if [ "$(uname -m)" != "x86_64" ]; then
  echo "setup-wgpu: only x86_64 Linux is scripted (PyPI's manylinux wheel); skipped" >&2
  exit 0
fi

packages=(mesa-vulkan-drivers libvulkan1 pkg-config xvfb libx11-dev)
missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" \
    || missing+=("$package")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup-wgpu: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y --no-install-recommends "${missing[@]}" \
    || { apt-get update && apt-get install -y --no-install-recommends "${missing[@]}"; }
fi

if [ -e "$marker" ] && pkg-config --exists wgpu-native; then
  echo "setup-wgpu: all present (${packages[*]}, wgpu-native ${wheel_version})"
  exit 0
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
echo "setup-wgpu: fetching wgpu-native from PyPI's wgpu ${wheel_version} wheel"
python3 -m pip download --quiet --no-deps --only-binary=:all: \
  --platform manylinux_2_28_x86_64 --python-version 3.11 "wgpu==${wheel_version}" -d "$work"
echo "${wheel_sha256}  $work/${wheel_name}" | sha256sum --check --quiet
python3 - "$work/${wheel_name}" "$work" <<'PY'
import sys, zipfile
wheel, out = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(wheel) as archive:
    for name in ("libwgpu_native-release.so", "webgpu.h", "wgpu.h"):
        archive.extract(f"wgpu/resources/{name}", out)
PY
resources="$work/wgpu/resources"
install -d "$prefix/lib" "$prefix/include/wgpu-native" "$prefix/lib/pkgconfig"
install -m 0755 "$resources/libwgpu_native-release.so" "$prefix/lib/libwgpu_native.so"
install -m 0644 "$resources/webgpu.h" "$resources/wgpu.h" "$prefix/include/wgpu-native/"
cat >"$prefix/lib/pkgconfig/wgpu-native.pc" <<PC
prefix=$prefix
libdir=\${prefix}/lib
includedir=\${prefix}/include/wgpu-native

Name: wgpu-native
Description: WebGPU's C API on Vulkan, Metal and more (from PyPI's wgpu ${wheel_version} wheel)
Version: ${wheel_version}
Libs: -L\${libdir} -lwgpu_native
Cflags: -I\${includedir}
PC
ldconfig
touch "$marker"
echo "setup-wgpu: wgpu-native ${wheel_version} installed in $prefix"
