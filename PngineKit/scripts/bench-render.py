#!/usr/bin/env python3
"""The same scene as `pngine render-bench`, drawn by the `wgpu` Python package (wgpu-native
underneath) on the same adapter: the decoded command stream `pngine render-bench
--dump-stream` wrote (the same WGSL, buffers, pipelines, bind groups and draws) replayed
through wgpu-py, each frame submitted and the canvas read back. Prints one line like the Swift
side's. Usage: bench-render.py STREAM.json [frames] [warmup]"""
import base64, json, re, statistics, sys, time

import wgpu

stream = json.load(open(sys.argv[1]))
frames = int(sys.argv[2]) if len(sys.argv) > 2 else 200
warmup = int(sys.argv[3]) if len(sys.argv) > 3 else 20
W, H = stream["width"], stream["height"]
adapter = wgpu.gpu.request_adapter_sync(power_preference="low-power")
device = adapter.request_device_sync()
canvas = device.create_texture(
    size=(W, H, 1), format="rgba8unorm",
    usage=wgpu.TextureUsage.RENDER_ATTACHMENT | wgpu.TextureUsage.COPY_SRC)
canvas_view = canvas.create_view()
FORMATS = {0x00: "rgba8unorm", 0x04: "bgra8unorm", 0x10: "depth24plus", 0x11: "depth24plus-stencil8", 0x12: "depth32float"}


def snake(o):
    if isinstance(o, dict):
        return {re.sub(r"(?<!^)(?=[A-Z])", "_", k).lower(): snake(v) for k, v in o.items()}
    if isinstance(o, list):
        return [snake(v) for v in o]
    return o


buf, tex, shd, pip, bg = {}, {}, {}, {}, {}
state = {"enc": None, "pass": None}


def blob(c):
    return base64.b64decode(c.get("blob", ""))


def run(commands, t):
    for c in commands:
        op = c["op"]
        if op == "createShader" and c["id"] not in shd:
            shd[c["id"]] = device.create_shader_module(code=blob(c).decode())
        elif op == "createBuffer" and c["id"] not in buf:
            buf[c["id"]] = device.create_buffer(size=(c["size"] + 3) // 4 * 4, usage=c["usage"])
        elif op == "writeBuffer":
            data = blob(c)
            data += b"\0" * (-len(data) % 4)
            device.queue.write_buffer(buf[c["id"]], c["offset"], data)
        elif op == "writeTimeUniform":
            import struct
            data = struct.pack("<4f", t, W, H, W / (H or 1))[: min(c["size"], 16)]
            device.queue.write_buffer(buf[c["id"]], c["offset"], data)
        elif op == "createTexture" and c["id"] not in tex:
            b = blob(c); fmt = "rgba8unorm"; usage = 0x10; w, h = W, H; off = 2
            for _ in range(b[1]):
                fid, vt = b[off], b[off + 1]; off += 2
                if vt == 0:
                    v = int.from_bytes(b[off:off + 4], "little"); off += 4
                    if fid == 1: w = v
                    elif fid == 2: h = v
                elif vt == 7:
                    v = b[off]; off += 1
                    if fid == 7: fmt = FORMATS[v]
                    elif fid == 8: usage = v or 0x10
                elif vt == 6: off += 2
            t_ = device.create_texture(size=(w, h, 1), format=fmt, usage=usage)
            tex[c["id"]] = (t_, t_.create_view())
        elif op == "createRenderPipeline" and c["id"] not in pip:
            d = json.loads(blob(c))
            v, f = d["vertex"], d.get("fragment")
            desc = dict(layout="auto", vertex=dict(module=shd[v.get("shader", 0)], entry_point=v["entryPoint"], buffers=snake(v.get("buffers", []))),
                        primitive=snake(d.get("primitive", {"topology": "triangle-list"})))
            if f:
                desc["fragment"] = dict(module=shd[f.get("shader", v.get("shader", 0))], entry_point=f["entryPoint"],
                                        targets=[dict(format=x.get("format", "rgba8unorm"), **({"blend": snake(x["blend"])} if "blend" in x else {})) for x in f.get("targets", [{}])])
            if "depthStencil" in d:
                desc["depth_stencil"] = snake(d["depthStencil"])
            pip[c["id"]] = device.create_render_pipeline(**desc)
        elif op == "createComputePipeline" and c["id"] not in pip:
            b = blob(c); n = b[3]
            pip[c["id"]] = device.create_compute_pipeline(layout="auto", compute=dict(module=shd[int.from_bytes(b[1:3], "little")], entry_point=b[4:4 + n].decode()))
        elif op == "createBindGroup" and c["id"] not in bg:
            b = blob(c); off = 2; group = 0; entries = []
            for _ in range(b[1]):
                fid, vt = b[off], b[off + 1]; off += 2
                if fid == 1 and vt == 7:
                    group = b[off]; off += 1
                elif fid == 2 and vt == 3:
                    count = b[off]; off += 1
                    for _ in range(count):
                        binding, rt, rid = b[off], b[off + 1], int.from_bytes(b[off + 2:off + 4], "little"); off += 4
                        if rt == 0:
                            o = int.from_bytes(b[off:off + 4], "little"); s = int.from_bytes(b[off + 4:off + 8], "little"); off += 8
                            res = {"buffer": buf[rid], "offset": o, "size": s or buf[rid].size - o}
                        else:
                            raise SystemExit(f"bind-group resource type {rt} not replayed")
                        entries.append({"binding": binding, "resource": res})
            bg[c["id"]] = device.create_bind_group(layout=pip[c["layout"]].get_bind_group_layout(group), entries=entries)
        elif op == "beginRenderPass":
            state["enc"] = state["enc"] or device.create_command_encoder()
            r, g, b_, a = c["clear"]
            att = dict(view=canvas_view, load_op="clear" if c["load"] == 1 else "load", store_op="store", clear_value=(r, g, b_, a))
            kw = {}
            if c["depth"] != 0xFFFF:
                kw["depth_stencil_attachment"] = dict(view=tex[c["depth"]][1], depth_load_op="clear", depth_store_op="store", depth_clear_value=1.0)
            state["pass"] = state["enc"].begin_render_pass(color_attachments=[att], **kw)
        elif op == "beginComputePass":
            state["enc"] = state["enc"] or device.create_command_encoder()
            state["pass"] = state["enc"].begin_compute_pass()
        elif op == "setPipeline":
            state["pass"].set_pipeline(pip[c["id"]])
        elif op == "setBindGroup":
            state["pass"].set_bind_group(c["slot"], bg[c["id"]])
        elif op == "setVertexBuffer":
            state["pass"].set_vertex_buffer(c["slot"], buf[c["id"]])
        elif op == "draw":
            state["pass"].draw(*c["args"])
        elif op == "dispatch":
            state["pass"].dispatch_workgroups(*c["args"])
        elif op == "endPass":
            state["pass"].end(); state["pass"] = None
        elif op == "submit":
            device.queue.submit([state["enc"].finish()]); state["enc"] = None
        elif op == "unsupported":
            raise SystemExit(f"not replayed: {c['text']}")


def read_back():
    return device.queue.read_texture(dict(texture=canvas), dict(bytes_per_row=(W * 4 + 255) // 256 * 256, rows_per_image=H), (W, H, 1))


run(stream["init"], 0.0)
times = []
for i in range(warmup + frames):
    # Frame 0 of boids carries the once-only init pass; later frames alternate 1 and 2's phases.
    commands = stream["frames"][0] if i == 0 else stream["frames"][1 + (i - 1) % 2]
    t = i / 60
    a = time.perf_counter()
    run(commands, t)
    read_back()
    b = time.perf_counter()
    if i >= warmup:
        times.append((b - a) * 1000)
times.sort()
p95 = times[min(len(times) - 1, round((len(times) - 1) * 0.95))]
print(f"wgpu-py {wgpu.__version__}: frame+readback median {statistics.median(times):.3f} ms p95 {p95:.3f} ms")
