// The small C part of PngineWebGPU: the blocking steps of wgpu-native's callback API
// (adapter, device, error scopes, buffer mapping), the device-lost and uncaptured-error
// callbacks captured into a context, a surface made from a native source (the chained
// WGPUSurfaceSource… structs) with its capabilities and configuration, and the INIT defaults
// of webgpu.h (macros Swift cannot import). A context (one device) may serve several
// animations and surfaces; its callers serialize their calls on it (one lock per context).
#ifndef PNGINE_WGPU_H
#define PNGINE_WGPU_H

#include <stddef.h>
#include <stdint.h>
#include <webgpu.h>
#include <wgpu.h>

typedef struct pg_gpu pg_gpu;

/// Makes an instance, a low-power adapter and a device; NULL with a message in `err`.
pg_gpu *pg_gpu_create(char *err, size_t cap);

/// Where a surface comes from: the chained `WGPUSurfaceSource…` struct pg_surface_create
/// passes to wgpuInstanceCreateSurface.
typedef enum pg_surface_kind {
  /// `handle` is a CAMetalLayer (WGPUSurfaceSourceMetalLayer); `window` is unused.
  PG_SURFACE_METAL_LAYER = 1,
  /// `handle` is an Xlib `Display *`, `window` an X11 `Window` (WGPUSurfaceSourceXlibWindow).
  PG_SURFACE_XLIB_WINDOW = 2,
} pg_surface_kind;

/// A surface on the given native source, made on the context's instance (so its device can
/// present to it); NULL with a message in `err`. Not configured. Several surfaces may share
/// one context.
WGPUSurface pg_surface_create(pg_gpu *gpu, pg_surface_kind kind, void *handle, uint64_t window,
                              char *err, size_t cap);
/// Unconfigures and releases a surface made by pg_surface_create (before its context goes).
void pg_surface_release(pg_gpu *gpu, WGPUSurface surface);
/// The surface's capabilities with this context's adapter: up to `*format_count` formats (in
/// the surface's order of preference) and `*alpha_count` alpha modes are copied out and the
/// counts set to what was copied; `*usages` gets the supported texture usages. 0 on success.
int pg_surface_capabilities(pg_gpu *gpu, WGPUSurface surface, WGPUTextureFormat *formats,
                            size_t *format_count, WGPUCompositeAlphaMode *alphas,
                            size_t *alpha_count, WGPUTextureUsage *usages);
/// Configures the surface for this context's device: `format`, `usage`, `alpha`,
/// `width × height`, present mode Fifo.
void pg_surface_configure(pg_gpu *gpu, WGPUSurface surface, WGPUTextureFormat format,
                          WGPUTextureUsage usage, WGPUCompositeAlphaMode alpha, uint32_t width,
                          uint32_t height);
/// Releases everything.
void pg_gpu_free(pg_gpu *gpu);
WGPUInstance pg_gpu_instance(pg_gpu *gpu);
WGPUDevice pg_gpu_device(pg_gpu *gpu);
WGPUQueue pg_gpu_queue(pg_gpu *gpu);
/// "llvmpipe (LLVM 15.0.7, 256 bits) · Vulkan" and the like.
void pg_gpu_adapter_name(pg_gpu *gpu, char *out, size_t cap);
/// Pushes a validation and an out-of-memory error scope.
void pg_gpu_push_scope(pg_gpu *gpu);
/// Pops both scopes pushed by pg_gpu_push_scope, blocking until the answer; returns the
/// WGPUErrorType of the first error (0 none) and its message in `out`.
int pg_gpu_pop_scope(pg_gpu *gpu, char *out, size_t cap);
/// 1 when the device was lost (its reason and message in `out`), else 0.
int pg_gpu_is_lost(pg_gpu *gpu, char *out, size_t cap);
/// Takes the first uncaptured error since the last call: its type (0 none), message in `out`.
int pg_gpu_take_uncaptured(pg_gpu *gpu, char *out, size_t cap);
/// Destroys the device (tests of device loss).
void pg_gpu_destroy_device(pg_gpu *gpu);
/// Waits for the queue's work to finish.
void pg_gpu_wait(pg_gpu *gpu);
/// Maps `buffer` for reading, copies `size` bytes into `out`, unmaps. 0 on success.
int pg_gpu_read_buffer(pg_gpu *gpu, WGPUBuffer buffer, size_t size, void *out, char *err,
                       size_t cap);
/// Maps `buffer` (rows of `padded_row` bytes) for reading and copies `height` rows of `row`
/// bytes each into `out`, unpadded. 0 on success.
int pg_gpu_read_rows(pg_gpu *gpu, WGPUBuffer buffer, size_t padded_row, size_t row,
                     size_t height, void *out, char *err, size_t cap);
/// Whether the device was lost, or an uncaptured error is waiting (cheap checks).
int pg_gpu_lost_flag(pg_gpu *gpu);
int pg_gpu_uncaptured_flag(pg_gpu *gpu);
// Delivers pending callbacks (a device loss among them), then answers the lost flag: asked
// right before a call wgpu-native treats as fatal on a lost device (a submit).
int pg_gpu_refresh_lost(pg_gpu *gpu);
/// A shader module from WGSL text of `length` bytes.
WGPUShaderModule pg_gpu_create_wgsl(pg_gpu *gpu, const char *code, size_t length);

// webgpu.h's INIT defaults, as functions.
WGPURenderPipelineDescriptor pg_render_pipeline_descriptor_init(void);
WGPUVertexState pg_vertex_state_init(void);
WGPUFragmentState pg_fragment_state_init(void);
WGPUColorTargetState pg_color_target_state_init(void);
WGPUBlendState pg_blend_state_init(void);
WGPUDepthStencilState pg_depth_stencil_state_init(void);
WGPUPrimitiveState pg_primitive_state_init(void);
WGPUMultisampleState pg_multisample_state_init(void);
WGPUVertexBufferLayout pg_vertex_buffer_layout_init(void);
WGPUVertexAttribute pg_vertex_attribute_init(void);
WGPUTextureDescriptor pg_texture_descriptor_init(void);
WGPUSamplerDescriptor pg_sampler_descriptor_init(void);
WGPUBindGroupEntry pg_bind_group_entry_init(void);
WGPUBindGroupDescriptor pg_bind_group_descriptor_init(void);
WGPUBindGroupLayoutEntry pg_bind_group_layout_entry_init(void);
WGPUBindGroupLayoutDescriptor pg_bind_group_layout_descriptor_init(void);
WGPUPipelineLayoutDescriptor pg_pipeline_layout_descriptor_init(void);
WGPURenderPassColorAttachment pg_render_pass_color_attachment_init(void);
WGPURenderPassDepthStencilAttachment pg_render_pass_depth_stencil_attachment_init(void);
WGPURenderPassDescriptor pg_render_pass_descriptor_init(void);
WGPUComputePipelineDescriptor pg_compute_pipeline_descriptor_init(void);
WGPUBufferDescriptor pg_buffer_descriptor_init(void);
WGPUTexelCopyTextureInfo pg_texel_copy_texture_info_init(void);
WGPUTexelCopyBufferInfo pg_texel_copy_buffer_info_init(void);
WGPUStencilFaceState pg_stencil_face_state_init(void);

#endif
