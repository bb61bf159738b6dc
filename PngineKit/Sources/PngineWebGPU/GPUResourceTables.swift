import CWGPU
import PngineKit

/// The WebGPU objects a ``WebGPUBackend``'s stream made, each table by the id the stream gave
/// it: what the commands name, and what the backend releases when it goes.
struct GPUResourceTables {
  var buffers: [UInt16: WGPUBuffer] = [:]
  var textures: [UInt16: (texture: WGPUTexture, view: WGPUTextureView, format: WGPUTextureFormat)] =
    [:]
  var textureViews: [UInt16: WGPUTextureView] = [:]
  var samplers: [UInt16: WGPUSampler] = [:]
  var shaders: [UInt16: WGPUShaderModule] = [:]
  var renderPipelines: [UInt16: WGPURenderPipeline] = [:]
  var computePipelines: [UInt16: WGPUComputePipeline] = [:]
  var bindGroupLayouts: [UInt16: WGPUBindGroupLayout] = [:]
  var pipelineLayouts: [UInt16: WGPUPipelineLayout] = [:]
  var bindGroups: [UInt16: WGPUBindGroup] = [:]
  /// How each bind group was made, to make it again (a canvas-sized texture remade, an
  /// auto-layout group bound to another pipeline).
  var bindGroupRecipes: [UInt16: (layout: UInt16, descriptor: BindGroupDescriptor)] = [:]
  /// Auto-layout bind groups rebuilt for another pipeline, by (group id, pipeline id).
  var reboundGroups: [UInt32: WGPUBindGroup] = [:]

  /// Releases every object, users before what they use (groups, pipelines, layouts, shaders,
  /// samplers, views, textures, buffers), and empties the tables.
  mutating func releaseAll() {
    for g in reboundGroups.values { wgpuBindGroupRelease(g) }
    for g in bindGroups.values { wgpuBindGroupRelease(g) }
    for p in renderPipelines.values { wgpuRenderPipelineRelease(p) }
    for p in computePipelines.values { wgpuComputePipelineRelease(p) }
    for l in pipelineLayouts.values { wgpuPipelineLayoutRelease(l) }
    for l in bindGroupLayouts.values { wgpuBindGroupLayoutRelease(l) }
    for s in shaders.values { wgpuShaderModuleRelease(s) }
    for s in samplers.values { wgpuSamplerRelease(s) }
    for v in textureViews.values { wgpuTextureViewRelease(v) }
    for t in textures.values {
      wgpuTextureViewRelease(t.view)
      wgpuTextureRelease(t.texture)
    }
    for b in buffers.values { wgpuBufferRelease(b) }
    self = GPUResourceTables()
  }
}
