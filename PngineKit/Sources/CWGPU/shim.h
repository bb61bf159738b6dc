// wgpu-native's WebGPU C API (webgpu.h) and its extensions (wgpu.h), found through
// pkg-config (`wgpu-native.pc`, installed by scripts/setup-wgpu.sh).
#include <webgpu.h>
#include <wgpu.h>
