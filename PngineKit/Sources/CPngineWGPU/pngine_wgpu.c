// See include/pngine_wgpu.h.
#include "pngine_wgpu.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// Waiting loops are bounded: a callback that never fires (a lost device) ends the wait
// instead of hanging the caller. What a callback writes therefore never lives on the
// waiter's stack: each wait's state is on the heap with two references, the waiter's and
// the callback's, and the last to let go frees it. A callback that comes after its waiter
// gave up writes into memory still alive, and releases what it was handed.
#define PG_MAX_SPINS 100000

struct pg_gpu {
  WGPUInstance instance;
  WGPUAdapter adapter;
  WGPUDevice device;
  WGPUQueue queue;
  // Set by callbacks (on any thread for a spontaneous loss), read by the owner: the message
  // is written before the flag is set (release), read after the flag is seen (acquire).
  atomic_int lost;
  char lost_message[1024];
  atomic_int uncaptured_type;
  char uncaptured_message[4096];
};

static void copy_view(char *out, size_t cap, WGPUStringView view) {
  if (cap == 0) return;
  size_t n = view.data == NULL ? 0 : (view.length == WGPU_STRLEN ? strlen(view.data) : view.length);
  if (n >= cap) n = cap - 1;
  if (n > 0) memcpy(out, view.data, n);
  out[n] = 0;
}

// The state one wait shares with its callback. `refs` starts at 2; `pg_wait_release` frees
// it at 0. `done` is set (release) after the results are written.
typedef struct {
  atomic_int refs;
  atomic_int done;
  int ok;
  int type;
  void *handle;
  char message[4096];
} pg_wait;

static pg_wait *pg_wait_new(void) {
  pg_wait *w = calloc(1, sizeof *w);
  if (w) atomic_init(&w->refs, 2);
  return w;
}

// Lets go of one reference; returns 1 when it was the last (the state is freed).
static int pg_wait_release(pg_wait *w) {
  if (atomic_fetch_sub_explicit(&w->refs, 1, memory_order_acq_rel) == 1) {
    free(w);
    return 1;
  }
  return 0;
}

// Publishes the results and lets go of the callback's reference; returns 1 when the waiter
// had given up already (nobody will read them).
static int pg_wait_finish(pg_wait *w) {
  atomic_store_explicit(&w->done, 1, memory_order_release);
  return pg_wait_release(w);
}

static void on_adapter(WGPURequestAdapterStatus status, WGPUAdapter adapter, WGPUStringView message,
                       void *u1, void *u2) {
  (void)u2;
  pg_wait *w = u1;
  w->ok = status == WGPURequestAdapterStatus_Success;
  w->handle = adapter;
  copy_view(w->message, sizeof w->message, message);
  // A waiter that gave up takes nothing: the adapter is let go here.
  if (pg_wait_finish(w) && adapter) wgpuAdapterRelease(adapter);
}

static void on_device(WGPURequestDeviceStatus status, WGPUDevice device, WGPUStringView message,
                      void *u1, void *u2) {
  (void)u2;
  pg_wait *w = u1;
  w->ok = status == WGPURequestDeviceStatus_Success;
  w->handle = device;
  copy_view(w->message, sizeof w->message, message);
  if (pg_wait_finish(w) && device) wgpuDeviceRelease(device);
}

static void on_lost(WGPUDevice const *device, WGPUDeviceLostReason reason, WGPUStringView message,
                    void *u1, void *u2) {
  (void)device;
  (void)u2;
  pg_gpu *gpu = u1;
  // Released on purpose when the context is freed: not a loss anyone should hear of.
  if (reason == WGPUDeviceLostReason_CallbackCancelled) return;
  if (atomic_load_explicit(&gpu->lost, memory_order_acquire)) return;  // keep the first
  char text[900];
  copy_view(text, sizeof text, message);
  snprintf(gpu->lost_message, sizeof gpu->lost_message, "%s (reason %d)",
           text[0] ? text : "device lost", (int)reason);
  atomic_store_explicit(&gpu->lost, 1, memory_order_release);
}

static void on_uncaptured(WGPUDevice const *device, WGPUErrorType type, WGPUStringView message,
                          void *u1, void *u2) {
  (void)device;
  (void)u2;
  pg_gpu *gpu = u1;
  if (atomic_load_explicit(&gpu->uncaptured_type, memory_order_acquire) != 0) return;  // the first
  copy_view(gpu->uncaptured_message, sizeof gpu->uncaptured_message, message);
  atomic_store_explicit(&gpu->uncaptured_type, type == 0 ? (int)WGPUErrorType_Unknown : (int)type,
                        memory_order_release);
}

// Waits for a callback: a few non-blocking polls first (an error scope's answer needs no GPU
// work to finish), then polls that block until the queue's work is done (a mapping does).
static int is_done(pg_wait *w) { return atomic_load_explicit(&w->done, memory_order_acquire); }

static void spin_until(pg_gpu *gpu, pg_wait *w, int may_block) {
  for (int i = 0; i < PG_MAX_SPINS && !is_done(w); i++) {
    wgpuInstanceProcessEvents(gpu->instance);
    if (!is_done(w) && gpu->device) wgpuDevicePoll(gpu->device, may_block && i >= 4, NULL);
  }
}

// A mapping waits for the GPU (blocking polls after a few tries). An error scope's answer is
// known on the CPU when it is popped, so its wait never blocks: a blocking poll there waited
// for the whole queue (the previous frames' GPU work), the 2-3 ms tail of the frame's submit.
static void spin(pg_gpu *gpu, pg_wait *w) { spin_until(gpu, w, 1); }

// The adapter and the device, on an instance already made; 0 on success, else a message in
// `err` (the caller frees `gpu`). No surface is named: the device serves every surface later
// made on the instance (a Metal adapter presents to any CAMetalLayer, a Vulkan one to any
// window on its display), so one device can be shared by every animation.
static int open_device(pg_gpu *gpu, char *err, size_t cap) {
  pg_wait *r = pg_wait_new();
  if (!r) {
    snprintf(err, cap, "out of memory");
    return -1;
  }
  WGPURequestAdapterOptions options = WGPU_REQUEST_ADAPTER_OPTIONS_INIT;
  options.powerPreference = WGPUPowerPreference_LowPower;
  WGPURequestAdapterCallbackInfo ainfo = WGPU_REQUEST_ADAPTER_CALLBACK_INFO_INIT;
  ainfo.mode = WGPUCallbackMode_AllowProcessEvents;
  ainfo.callback = on_adapter;
  ainfo.userdata1 = r;
  wgpuInstanceRequestAdapter(gpu->instance, &options, ainfo);
  spin(gpu, r);
  int adapter_ok = is_done(r) && r->ok && r->handle;
  if (!adapter_ok) {
    snprintf(err, cap, "no WebGPU adapter: %s",
             is_done(r) && r->message[0] ? r->message : "none found");
    if (is_done(r) && r->handle) wgpuAdapterRelease(r->handle);
    pg_wait_release(r);
    return -1;
  }
  gpu->adapter = r->handle;
  pg_wait_release(r);
  pg_wait *d = pg_wait_new();
  if (!d) {
    snprintf(err, cap, "out of memory");
    return -1;
  }
  WGPUDeviceDescriptor desc = WGPU_DEVICE_DESCRIPTOR_INIT;
  desc.deviceLostCallbackInfo.mode = WGPUCallbackMode_AllowSpontaneous;
  desc.deviceLostCallbackInfo.callback = on_lost;
  desc.deviceLostCallbackInfo.userdata1 = gpu;
  desc.uncapturedErrorCallbackInfo.callback = on_uncaptured;
  desc.uncapturedErrorCallbackInfo.userdata1 = gpu;
  WGPURequestDeviceCallbackInfo dinfo = WGPU_REQUEST_DEVICE_CALLBACK_INFO_INIT;
  dinfo.mode = WGPUCallbackMode_AllowProcessEvents;
  dinfo.callback = on_device;
  dinfo.userdata1 = d;
  wgpuAdapterRequestDevice(gpu->adapter, &desc, dinfo);
  spin(gpu, d);
  if (!(is_done(d) && d->ok && d->handle)) {
    snprintf(err, cap, "no WebGPU device: %s",
             is_done(d) && d->message[0] ? d->message : "request failed");
    if (is_done(d) && d->handle) wgpuDeviceRelease(d->handle);
    pg_wait_release(d);
    return -1;
  }
  gpu->device = d->handle;
  pg_wait_release(d);
  gpu->queue = wgpuDeviceGetQueue(gpu->device);
  return 0;
}

static pg_gpu *new_context(char *err, size_t cap) {
  pg_gpu *gpu = calloc(1, sizeof *gpu);
  if (!gpu) {
    snprintf(err, cap, "out of memory");
    return NULL;
  }
  gpu->instance = wgpuCreateInstance(NULL);
  if (!gpu->instance) {
    snprintf(err, cap, "wgpuCreateInstance failed");
    free(gpu);
    return NULL;
  }
  return gpu;
}

pg_gpu *pg_gpu_create(char *err, size_t cap) {
  pg_gpu *gpu = new_context(err, cap);
  if (!gpu) return NULL;
  if (open_device(gpu, err, cap) != 0) {
    pg_gpu_free(gpu);
    return NULL;
  }
  return gpu;
}

WGPUSurface pg_surface_create(pg_gpu *gpu, pg_surface_kind kind, void *handle, uint64_t window,
                              char *err, size_t cap) {
  if (!handle) {
    snprintf(err, cap, "no native surface handle (NULL)");
    return NULL;
  }
  WGPUSurfaceSourceMetalLayer metal = WGPU_SURFACE_SOURCE_METAL_LAYER_INIT;
  WGPUSurfaceSourceXlibWindow xlib = WGPU_SURFACE_SOURCE_XLIB_WINDOW_INIT;
  WGPUSurfaceDescriptor desc = WGPU_SURFACE_DESCRIPTOR_INIT;
  switch (kind) {
    case PG_SURFACE_METAL_LAYER:
      metal.layer = handle;
      desc.nextInChain = &metal.chain;
      break;
    case PG_SURFACE_XLIB_WINDOW:
      xlib.display = handle;
      xlib.window = window;
      desc.nextInChain = &xlib.chain;
      break;
    default:
      snprintf(err, cap, "unknown surface source kind %d", (int)kind);
      return NULL;
  }
  WGPUSurface surface = wgpuInstanceCreateSurface(gpu->instance, &desc);
  if (!surface) snprintf(err, cap, "wgpuInstanceCreateSurface failed (kind %d)", (int)kind);
  return surface;
}

void pg_surface_release(pg_gpu *gpu, WGPUSurface surface) {
  if (!surface) return;
  if (gpu->device) wgpuSurfaceUnconfigure(surface);
  wgpuSurfaceRelease(surface);
  // What the surface held (its swapchain, presented textures) is freed now, while its window
  // still exists, not at some later poll of a device that outlives it.
  if (gpu->device) wgpuDevicePoll(gpu->device, 1, NULL);
}

void pg_gpu_free(pg_gpu *gpu) {
  if (!gpu) return;
  if (gpu->queue) wgpuQueueRelease(gpu->queue);
  if (gpu->device) wgpuDeviceRelease(gpu->device);
  if (gpu->adapter) wgpuAdapterRelease(gpu->adapter);
  if (gpu->instance) wgpuInstanceRelease(gpu->instance);
  free(gpu);
}

WGPUInstance pg_gpu_instance(pg_gpu *gpu) { return gpu->instance; }
WGPUDevice pg_gpu_device(pg_gpu *gpu) { return gpu->device; }
WGPUQueue pg_gpu_queue(pg_gpu *gpu) { return gpu->queue; }

int pg_surface_capabilities(pg_gpu *gpu, WGPUSurface surface, WGPUTextureFormat *formats,
                            size_t *format_count, WGPUCompositeAlphaMode *alphas,
                            size_t *alpha_count, WGPUTextureUsage *usages) {
  if (!surface) return -1;
  WGPUSurfaceCapabilities caps = WGPU_SURFACE_CAPABILITIES_INIT;
  if (wgpuSurfaceGetCapabilities(surface, gpu->adapter, &caps) != WGPUStatus_Success) {
    return -1;
  }
  size_t nf = caps.formatCount < *format_count ? caps.formatCount : *format_count;
  for (size_t i = 0; i < nf; i++) formats[i] = caps.formats[i];
  *format_count = nf;
  size_t na = caps.alphaModeCount < *alpha_count ? caps.alphaModeCount : *alpha_count;
  for (size_t i = 0; i < na; i++) alphas[i] = caps.alphaModes[i];
  *alpha_count = na;
  *usages = caps.usages;
  wgpuSurfaceCapabilitiesFreeMembers(caps);
  return 0;
}

void pg_surface_configure(pg_gpu *gpu, WGPUSurface surface, WGPUTextureFormat format,
                          WGPUTextureUsage usage, WGPUCompositeAlphaMode alpha, uint32_t width,
                          uint32_t height) {
  WGPUSurfaceConfiguration config = WGPU_SURFACE_CONFIGURATION_INIT;
  config.device = gpu->device;
  config.format = format;
  config.usage = usage;
  config.alphaMode = alpha;
  config.width = width;
  config.height = height;
  config.presentMode = WGPUPresentMode_Fifo;
  wgpuSurfaceConfigure(surface, &config);
}

void pg_gpu_adapter_name(pg_gpu *gpu, char *out, size_t cap) {
  WGPUAdapterInfo info = WGPU_ADAPTER_INFO_INIT;
  if (wgpuAdapterGetInfo(gpu->adapter, &info) != WGPUStatus_Success) {
    snprintf(out, cap, "unknown adapter");
    return;
  }
  char name[256], description[256];
  copy_view(name, sizeof name, info.device);
  copy_view(description, sizeof description, info.description);
  const char *backend = info.backendType == WGPUBackendType_Vulkan  ? "Vulkan"
                        : info.backendType == WGPUBackendType_Metal ? "Metal"
                        : info.backendType == WGPUBackendType_D3D12 ? "D3D12"
                        : info.backendType == WGPUBackendType_OpenGL ? "OpenGL"
                                                                     : "other";
  snprintf(out, cap, "%s%s%s (%s)", name, description[0] ? ", " : "", description, backend);
  wgpuAdapterInfoFreeMembers(info);
}

void pg_gpu_push_scope(pg_gpu *gpu) {
  wgpuDevicePushErrorScope(gpu->device, WGPUErrorFilter_OutOfMemory);
  wgpuDevicePushErrorScope(gpu->device, WGPUErrorFilter_Validation);
}

static void on_pop(WGPUPopErrorScopeStatus status, WGPUErrorType type, WGPUStringView message,
                   void *u1, void *u2) {
  (void)u2;
  pg_wait *w = u1;
  if (status != WGPUPopErrorScopeStatus_Success) {
    w->type = (int)WGPUErrorType_Unknown;
  } else {
    w->type = type == WGPUErrorType_NoError ? 0 : (int)type;
  }
  copy_view(w->message, sizeof w->message, message);
  (void)pg_wait_finish(w);
}

// Pops one scope: its error type (0 none), its message in `out`. No answer counts as an
// error of unknown type.
static int pop_one(pg_gpu *gpu, char *out, size_t cap) {
  pg_wait *w = pg_wait_new();
  if (!w) {
    snprintf(out, cap, "out of memory");
    return (int)WGPUErrorType_Unknown;
  }
  WGPUPopErrorScopeCallbackInfo info = WGPU_POP_ERROR_SCOPE_CALLBACK_INFO_INIT;
  info.mode = WGPUCallbackMode_AllowProcessEvents;
  info.callback = on_pop;
  info.userdata1 = w;
  wgpuDevicePopErrorScope(gpu->device, info);
  spin_until(gpu, w, 0);
  int type;
  if (is_done(w)) {
    type = w->type;
    snprintf(out, cap, "%s", w->message);
  } else {
    type = (int)WGPUErrorType_Unknown;
    snprintf(out, cap, "the error scope gave no answer");
  }
  pg_wait_release(w);
  return type;
}

int pg_gpu_pop_scope(pg_gpu *gpu, char *out, size_t cap) {
  char validation[4096], memory[4096];
  int v = pop_one(gpu, validation, sizeof validation);
  int m = pop_one(gpu, memory, sizeof memory);
  if (v) {
    snprintf(out, cap, "%s", validation);
    return v;
  }
  if (m) {
    snprintf(out, cap, "%s", memory);
    return m;
  }
  if (cap) out[0] = 0;
  return 0;
}

int pg_gpu_is_lost(pg_gpu *gpu, char *out, size_t cap) {
  if (!atomic_load_explicit(&gpu->lost, memory_order_acquire)) return 0;
  snprintf(out, cap, "%s", gpu->lost_message);
  return 1;
}

int pg_gpu_take_uncaptured(pg_gpu *gpu, char *out, size_t cap) {
  int type = atomic_load_explicit(&gpu->uncaptured_type, memory_order_acquire);
  if (!type) return 0;
  snprintf(out, cap, "%s", gpu->uncaptured_message);
  gpu->uncaptured_message[0] = 0;
  atomic_store_explicit(&gpu->uncaptured_type, 0, memory_order_release);
  return type;
}

void pg_gpu_destroy_device(pg_gpu *gpu) {
  wgpuDeviceDestroy(gpu->device);
  wgpuInstanceProcessEvents(gpu->instance);
  // wgpu-native calls the lost callback only at the device's next use; a destroyed device is
  // lost from now on, so say so now (the callback, when it comes, keeps this first message).
  if (!atomic_load_explicit(&gpu->lost, memory_order_acquire)) {
    snprintf(gpu->lost_message, sizeof gpu->lost_message, "Device destroyed (reason %d)",
             (int)WGPUDeviceLostReason_Destroyed);
    atomic_store_explicit(&gpu->lost, 1, memory_order_release);
  }
}

void pg_gpu_wait(pg_gpu *gpu) { wgpuDevicePoll(gpu->device, 1, NULL); }

static void on_map(WGPUMapAsyncStatus status, WGPUStringView message, void *u1, void *u2) {
  (void)u2;
  pg_wait *w = u1;
  w->ok = status == WGPUMapAsyncStatus_Success;
  copy_view(w->message, sizeof w->message, message);
  (void)pg_wait_finish(w);
}

// Maps `size` bytes of `buffer` for reading and waits; 0 when mapped, else a message in
// `err` (nothing is mapped then).
static int map_read(pg_gpu *gpu, WGPUBuffer buffer, size_t size, char *err, size_t cap) {
  pg_wait *w = pg_wait_new();
  if (!w) {
    snprintf(err, cap, "out of memory");
    return -1;
  }
  WGPUBufferMapCallbackInfo info = WGPU_BUFFER_MAP_CALLBACK_INFO_INIT;
  info.mode = WGPUCallbackMode_AllowProcessEvents;
  info.callback = on_map;
  info.userdata1 = w;
  wgpuBufferMapAsync(buffer, WGPUMapMode_Read, 0, size, info);
  spin(gpu, w);
  int done = is_done(w);
  int ok = done && w->ok;
  if (!ok) {
    snprintf(err, cap, "mapping the read-back buffer failed: %s",
             done && w->message[0] ? w->message : (done ? "error" : "no answer"));
  }
  pg_wait_release(w);
  return ok ? 0 : -1;
}

int pg_gpu_read_buffer(pg_gpu *gpu, WGPUBuffer buffer, size_t size, void *out, char *err,
                       size_t cap) {
  if (map_read(gpu, buffer, size, err, cap) != 0) return -1;
  const void *data = wgpuBufferGetConstMappedRange(buffer, 0, size);
  if (!data) {
    wgpuBufferUnmap(buffer);
    snprintf(err, cap, "the read-back buffer has no mapped range");
    return -1;
  }
  memcpy(out, data, size);
  wgpuBufferUnmap(buffer);
  return 0;
}

int pg_gpu_read_rows(pg_gpu *gpu, WGPUBuffer buffer, size_t padded_row, size_t row,
                     size_t height, void *out, char *err, size_t cap) {
  size_t size = padded_row * height;
  if (map_read(gpu, buffer, size, err, cap) != 0) return -1;
  const unsigned char *data = wgpuBufferGetConstMappedRange(buffer, 0, size);
  if (!data) {
    wgpuBufferUnmap(buffer);
    snprintf(err, cap, "the read-back buffer has no mapped range");
    return -1;
  }
  unsigned char *dst = out;
  for (size_t y = 0; y < height; y++) memcpy(dst + y * row, data + y * padded_row, row);
  wgpuBufferUnmap(buffer);
  return 0;
}

int pg_gpu_lost_flag(pg_gpu *gpu) {
  return atomic_load_explicit(&gpu->lost, memory_order_acquire);
}
int pg_gpu_uncaptured_flag(pg_gpu *gpu) {
  return atomic_load_explicit(&gpu->uncaptured_type, memory_order_acquire) != 0;
}

int pg_gpu_refresh_lost(pg_gpu *gpu) {
  wgpuInstanceProcessEvents(gpu->instance);
  return pg_gpu_lost_flag(gpu);
}

WGPUShaderModule pg_gpu_create_wgsl(pg_gpu *gpu, const char *code, size_t length) {
  WGPUShaderSourceWGSL source = WGPU_SHADER_SOURCE_WGSL_INIT;
  source.code.data = code;
  source.code.length = length;
  WGPUShaderModuleDescriptor desc = WGPU_SHADER_MODULE_DESCRIPTOR_INIT;
  desc.nextInChain = &source.chain;
  return wgpuDeviceCreateShaderModule(gpu->device, &desc);
}
