// See include/pngine_wgpu.h.
#include "pngine_wgpu.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// Waiting loops are bounded: a callback that never fires (a lost device) ends the wait
// instead of hanging the caller.
#define PG_MAX_SPINS 100000

struct pg_gpu {
  WGPUInstance instance;
  WGPUSurface surface;
  WGPUAdapter adapter;
  WGPUDevice device;
  WGPUQueue queue;
  int lost;
  char lost_message[1024];
  int uncaptured_type;
  char uncaptured_message[4096];
};

static void copy_view(char *out, size_t cap, WGPUStringView view) {
  if (cap == 0) return;
  size_t n = view.data == NULL ? 0 : (view.length == WGPU_STRLEN ? strlen(view.data) : view.length);
  if (n >= cap) n = cap - 1;
  if (n > 0) memcpy(out, view.data, n);
  out[n] = 0;
}

typedef struct {
  int done;
  int ok;
  void *handle;
  char message[1024];
} pg_request;

static void on_adapter(WGPURequestAdapterStatus status, WGPUAdapter adapter, WGPUStringView message,
                       void *u1, void *u2) {
  (void)u2;
  pg_request *r = u1;
  r->done = 1;
  r->ok = status == WGPURequestAdapterStatus_Success;
  r->handle = adapter;
  copy_view(r->message, sizeof r->message, message);
}

static void on_device(WGPURequestDeviceStatus status, WGPUDevice device, WGPUStringView message,
                      void *u1, void *u2) {
  (void)u2;
  pg_request *r = u1;
  r->done = 1;
  r->ok = status == WGPURequestDeviceStatus_Success;
  r->handle = device;
  copy_view(r->message, sizeof r->message, message);
}

static void on_lost(WGPUDevice const *device, WGPUDeviceLostReason reason, WGPUStringView message,
                    void *u1, void *u2) {
  (void)device;
  (void)u2;
  pg_gpu *gpu = u1;
  // Released on purpose when the context is freed: not a loss anyone should hear of.
  if (reason == WGPUDeviceLostReason_CallbackCancelled) return;
  gpu->lost = 1;
  char text[900];
  copy_view(text, sizeof text, message);
  snprintf(gpu->lost_message, sizeof gpu->lost_message, "%s (reason %d)",
           text[0] ? text : "device lost", (int)reason);
}

static void on_uncaptured(WGPUDevice const *device, WGPUErrorType type, WGPUStringView message,
                          void *u1, void *u2) {
  (void)device;
  (void)u2;
  pg_gpu *gpu = u1;
  if (gpu->uncaptured_type != 0) return;  // keep the first
  gpu->uncaptured_type = (int)type;
  copy_view(gpu->uncaptured_message, sizeof gpu->uncaptured_message, message);
}

// Waits for a callback: a few non-blocking polls first (an error scope's answer needs no GPU
// work to finish), then polls that block until the queue's work is done (a mapping does).
static void spin(pg_gpu *gpu, int *done) {
  for (int i = 0; i < PG_MAX_SPINS && !*done; i++) {
    wgpuInstanceProcessEvents(gpu->instance);
    if (!*done && gpu->device) wgpuDevicePoll(gpu->device, i >= 4, NULL);
  }
}

// The adapter (compatible with `gpu->surface` when there is one) and the device, on an
// instance already made; 0 on success, else a message in `err` (the caller frees `gpu`).
static int open_device(pg_gpu *gpu, char *err, size_t cap) {
  pg_request r = {0};
  WGPURequestAdapterOptions options = WGPU_REQUEST_ADAPTER_OPTIONS_INIT;
  options.powerPreference = WGPUPowerPreference_LowPower;
  options.compatibleSurface = gpu->surface;
  WGPURequestAdapterCallbackInfo ainfo = WGPU_REQUEST_ADAPTER_CALLBACK_INFO_INIT;
  ainfo.mode = WGPUCallbackMode_AllowProcessEvents;
  ainfo.callback = on_adapter;
  ainfo.userdata1 = &r;
  wgpuInstanceRequestAdapter(gpu->instance, &options, ainfo);
  spin(gpu, &r.done);
  if (!r.ok || !r.handle) {
    snprintf(err, cap, "no WebGPU adapter: %s", r.message[0] ? r.message : "none found");
    return -1;
  }
  gpu->adapter = r.handle;
  pg_request d = {0};
  WGPUDeviceDescriptor desc = WGPU_DEVICE_DESCRIPTOR_INIT;
  desc.deviceLostCallbackInfo.mode = WGPUCallbackMode_AllowSpontaneous;
  desc.deviceLostCallbackInfo.callback = on_lost;
  desc.deviceLostCallbackInfo.userdata1 = gpu;
  desc.uncapturedErrorCallbackInfo.callback = on_uncaptured;
  desc.uncapturedErrorCallbackInfo.userdata1 = gpu;
  WGPURequestDeviceCallbackInfo dinfo = WGPU_REQUEST_DEVICE_CALLBACK_INFO_INIT;
  dinfo.mode = WGPUCallbackMode_AllowProcessEvents;
  dinfo.callback = on_device;
  dinfo.userdata1 = &d;
  wgpuAdapterRequestDevice(gpu->adapter, &desc, dinfo);
  spin(gpu, &d.done);
  if (!d.ok || !d.handle) {
    snprintf(err, cap, "no WebGPU device: %s", d.message[0] ? d.message : "request failed");
    return -1;
  }
  gpu->device = d.handle;
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

pg_gpu *pg_gpu_create_on_surface(pg_surface_kind kind, void *handle, uint64_t window, char *err,
                                 size_t cap) {
  if (!handle) {
    snprintf(err, cap, "no native surface handle (NULL)");
    return NULL;
  }
  pg_gpu *gpu = new_context(err, cap);
  if (!gpu) return NULL;
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
      pg_gpu_free(gpu);
      return NULL;
  }
  gpu->surface = wgpuInstanceCreateSurface(gpu->instance, &desc);
  if (!gpu->surface) {
    snprintf(err, cap, "wgpuInstanceCreateSurface failed (kind %d)", (int)kind);
    pg_gpu_free(gpu);
    return NULL;
  }
  if (open_device(gpu, err, cap) != 0) {
    pg_gpu_free(gpu);
    return NULL;
  }
  return gpu;
}

void pg_gpu_free(pg_gpu *gpu) {
  if (!gpu) return;
  if (gpu->surface) {
    if (gpu->device) wgpuSurfaceUnconfigure(gpu->surface);
    wgpuSurfaceRelease(gpu->surface);
  }
  if (gpu->queue) wgpuQueueRelease(gpu->queue);
  if (gpu->device) wgpuDeviceRelease(gpu->device);
  if (gpu->adapter) wgpuAdapterRelease(gpu->adapter);
  if (gpu->instance) wgpuInstanceRelease(gpu->instance);
  free(gpu);
}

WGPUInstance pg_gpu_instance(pg_gpu *gpu) { return gpu->instance; }
WGPUDevice pg_gpu_device(pg_gpu *gpu) { return gpu->device; }
WGPUQueue pg_gpu_queue(pg_gpu *gpu) { return gpu->queue; }
WGPUSurface pg_gpu_surface(pg_gpu *gpu) { return gpu->surface; }

int pg_surface_capabilities(pg_gpu *gpu, WGPUTextureFormat *formats, size_t *format_count,
                            WGPUCompositeAlphaMode *alphas, size_t *alpha_count,
                            WGPUTextureUsage *usages) {
  if (!gpu->surface) return -1;
  WGPUSurfaceCapabilities caps = WGPU_SURFACE_CAPABILITIES_INIT;
  if (wgpuSurfaceGetCapabilities(gpu->surface, gpu->adapter, &caps) != WGPUStatus_Success) {
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

void pg_surface_configure(pg_gpu *gpu, WGPUTextureFormat format, WGPUTextureUsage usage,
                          WGPUCompositeAlphaMode alpha, uint32_t width, uint32_t height) {
  WGPUSurfaceConfiguration config = WGPU_SURFACE_CONFIGURATION_INIT;
  config.device = gpu->device;
  config.format = format;
  config.usage = usage;
  config.alphaMode = alpha;
  config.width = width;
  config.height = height;
  config.presentMode = WGPUPresentMode_Fifo;
  wgpuSurfaceConfigure(gpu->surface, &config);
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

typedef struct {
  int done;
  int type;
  char message[4096];
} pg_scope;

static void on_pop(WGPUPopErrorScopeStatus status, WGPUErrorType type, WGPUStringView message,
                   void *u1, void *u2) {
  (void)u2;
  pg_scope *s = u1;
  s->done = 1;
  if (status != WGPUPopErrorScopeStatus_Success) {
    s->type = (int)WGPUErrorType_Unknown;
    copy_view(s->message, sizeof s->message, message);
    return;
  }
  s->type = type == WGPUErrorType_NoError ? 0 : (int)type;
  copy_view(s->message, sizeof s->message, message);
}

static int pop_one(pg_gpu *gpu, pg_scope *s) {
  WGPUPopErrorScopeCallbackInfo info = WGPU_POP_ERROR_SCOPE_CALLBACK_INFO_INIT;
  info.mode = WGPUCallbackMode_AllowProcessEvents;
  info.callback = on_pop;
  info.userdata1 = s;
  wgpuDevicePopErrorScope(gpu->device, info);
  spin(gpu, &s->done);
  return s->done ? s->type : (int)WGPUErrorType_Unknown;
}

int pg_gpu_pop_scope(pg_gpu *gpu, char *out, size_t cap) {
  pg_scope validation = {0}, memory = {0};
  int v = pop_one(gpu, &validation);
  int m = pop_one(gpu, &memory);
  if (v) {
    snprintf(out, cap, "%s", validation.message);
    return v;
  }
  if (m) {
    snprintf(out, cap, "%s", memory.message);
    return m;
  }
  if (cap) out[0] = 0;
  return 0;
}

int pg_gpu_is_lost(pg_gpu *gpu, char *out, size_t cap) {
  if (!gpu->lost) return 0;
  snprintf(out, cap, "%s", gpu->lost_message);
  return 1;
}

int pg_gpu_take_uncaptured(pg_gpu *gpu, char *out, size_t cap) {
  int type = gpu->uncaptured_type;
  if (type) snprintf(out, cap, "%s", gpu->uncaptured_message);
  gpu->uncaptured_type = 0;
  gpu->uncaptured_message[0] = 0;
  return type;
}

void pg_gpu_destroy_device(pg_gpu *gpu) {
  wgpuDeviceDestroy(gpu->device);
  wgpuInstanceProcessEvents(gpu->instance);
}

void pg_gpu_wait(pg_gpu *gpu) { wgpuDevicePoll(gpu->device, 1, NULL); }

typedef struct {
  int done;
  int ok;
  char message[512];
} pg_map;

static void on_map(WGPUMapAsyncStatus status, WGPUStringView message, void *u1, void *u2) {
  (void)u2;
  pg_map *m = u1;
  m->done = 1;
  m->ok = status == WGPUMapAsyncStatus_Success;
  copy_view(m->message, sizeof m->message, message);
}

int pg_gpu_read_buffer(pg_gpu *gpu, WGPUBuffer buffer, size_t size, void *out, char *err,
                       size_t cap) {
  pg_map m = {0};
  WGPUBufferMapCallbackInfo info = WGPU_BUFFER_MAP_CALLBACK_INFO_INIT;
  info.mode = WGPUCallbackMode_AllowProcessEvents;
  info.callback = on_map;
  info.userdata1 = &m;
  wgpuBufferMapAsync(buffer, WGPUMapMode_Read, 0, size, info);
  spin(gpu, &m.done);
  if (!m.done || !m.ok) {
    snprintf(err, cap, "mapping the read-back buffer failed: %s",
             m.message[0] ? m.message : (m.done ? "error" : "no answer"));
    return -1;
  }
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
  pg_map m = {0};
  WGPUBufferMapCallbackInfo info = WGPU_BUFFER_MAP_CALLBACK_INFO_INIT;
  info.mode = WGPUCallbackMode_AllowProcessEvents;
  info.callback = on_map;
  info.userdata1 = &m;
  wgpuBufferMapAsync(buffer, WGPUMapMode_Read, 0, size, info);
  spin(gpu, &m.done);
  if (!m.done || !m.ok) {
    snprintf(err, cap, "mapping the read-back buffer failed: %s",
             m.message[0] ? m.message : (m.done ? "error" : "no answer"));
    return -1;
  }
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

int pg_gpu_lost_flag(pg_gpu *gpu) { return gpu->lost; }
int pg_gpu_uncaptured_flag(pg_gpu *gpu) { return gpu->uncaptured_type != 0; }

WGPUShaderModule pg_gpu_create_wgsl(pg_gpu *gpu, const char *code, size_t length) {
  WGPUShaderSourceWGSL source = WGPU_SHADER_SOURCE_WGSL_INIT;
  source.code.data = code;
  source.code.length = length;
  WGPUShaderModuleDescriptor desc = WGPU_SHADER_MODULE_DESCRIPTOR_INIT;
  desc.nextInChain = &source.chain;
  return wgpuDeviceCreateShaderModule(gpu->device, &desc);
}

#define PG_INIT(type, name, macro) \
  type name(void) {                \
    type value = macro;            \
    return value;                  \
  }

PG_INIT(WGPURenderPipelineDescriptor, pg_render_pipeline_descriptor_init,
        WGPU_RENDER_PIPELINE_DESCRIPTOR_INIT)
PG_INIT(WGPUVertexState, pg_vertex_state_init, WGPU_VERTEX_STATE_INIT)
PG_INIT(WGPUFragmentState, pg_fragment_state_init, WGPU_FRAGMENT_STATE_INIT)
PG_INIT(WGPUColorTargetState, pg_color_target_state_init, WGPU_COLOR_TARGET_STATE_INIT)
PG_INIT(WGPUBlendState, pg_blend_state_init, WGPU_BLEND_STATE_INIT)
PG_INIT(WGPUDepthStencilState, pg_depth_stencil_state_init, WGPU_DEPTH_STENCIL_STATE_INIT)
PG_INIT(WGPUPrimitiveState, pg_primitive_state_init, WGPU_PRIMITIVE_STATE_INIT)
PG_INIT(WGPUMultisampleState, pg_multisample_state_init, WGPU_MULTISAMPLE_STATE_INIT)
PG_INIT(WGPUVertexBufferLayout, pg_vertex_buffer_layout_init, WGPU_VERTEX_BUFFER_LAYOUT_INIT)
PG_INIT(WGPUVertexAttribute, pg_vertex_attribute_init, WGPU_VERTEX_ATTRIBUTE_INIT)
PG_INIT(WGPUTextureDescriptor, pg_texture_descriptor_init, WGPU_TEXTURE_DESCRIPTOR_INIT)
PG_INIT(WGPUSamplerDescriptor, pg_sampler_descriptor_init, WGPU_SAMPLER_DESCRIPTOR_INIT)
PG_INIT(WGPUBindGroupEntry, pg_bind_group_entry_init, WGPU_BIND_GROUP_ENTRY_INIT)
PG_INIT(WGPUBindGroupDescriptor, pg_bind_group_descriptor_init, WGPU_BIND_GROUP_DESCRIPTOR_INIT)
PG_INIT(WGPUBindGroupLayoutEntry, pg_bind_group_layout_entry_init,
        WGPU_BIND_GROUP_LAYOUT_ENTRY_INIT)
PG_INIT(WGPUBindGroupLayoutDescriptor, pg_bind_group_layout_descriptor_init,
        WGPU_BIND_GROUP_LAYOUT_DESCRIPTOR_INIT)
PG_INIT(WGPUPipelineLayoutDescriptor, pg_pipeline_layout_descriptor_init,
        WGPU_PIPELINE_LAYOUT_DESCRIPTOR_INIT)
PG_INIT(WGPURenderPassColorAttachment, pg_render_pass_color_attachment_init,
        WGPU_RENDER_PASS_COLOR_ATTACHMENT_INIT)
PG_INIT(WGPURenderPassDepthStencilAttachment, pg_render_pass_depth_stencil_attachment_init,
        WGPU_RENDER_PASS_DEPTH_STENCIL_ATTACHMENT_INIT)
PG_INIT(WGPURenderPassDescriptor, pg_render_pass_descriptor_init, WGPU_RENDER_PASS_DESCRIPTOR_INIT)
PG_INIT(WGPUComputePipelineDescriptor, pg_compute_pipeline_descriptor_init,
        WGPU_COMPUTE_PIPELINE_DESCRIPTOR_INIT)
PG_INIT(WGPUBufferDescriptor, pg_buffer_descriptor_init, WGPU_BUFFER_DESCRIPTOR_INIT)
PG_INIT(WGPUTexelCopyTextureInfo, pg_texel_copy_texture_info_init,
        WGPU_TEXEL_COPY_TEXTURE_INFO_INIT)
PG_INIT(WGPUTexelCopyBufferInfo, pg_texel_copy_buffer_info_init, WGPU_TEXEL_COPY_BUFFER_INFO_INIT)
PG_INIT(WGPUStencilFaceState, pg_stencil_face_state_init, WGPU_STENCIL_FACE_STATE_INIT)
