// webgpu.h's INIT defaults as functions (Swift cannot import the macros): one table.
// See include/pngine_wgpu.h.
#include "pngine_wgpu.h"

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
