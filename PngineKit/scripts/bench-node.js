#!/usr/bin/env node
// The same executor in Node's built-in WebAssembly, the same protocol as PngineKit
// (docs/abi.md §4; single-buffer mode for the legacy executors, as PngineKit's automatic
// mode): prints one JSON line with load-to-first-command-buffer and steady frame() times.
// Usage: node bench-node.js FILE.png [frames] [loads] [cold]
// With "cold", times only the process's first load (V8 compiles the module; later loads of
// the same bytes come from V8's in-process module cache).
'use strict';
const fs = require('fs');
const zlib = require('zlib');
const path = require('path');

const file = process.argv[2];
const frames = Number(process.argv[3] || 20000);
const loads = Number(process.argv[4] || 30);
const png = fs.readFileSync(file);

function payloadOf(bytes) {
  let p = 8;
  while (p < bytes.length) {
    const len = bytes.readUInt32BE(p);
    const type = bytes.toString('latin1', p + 4, p + 8);
    if (type === 'pNGb') {
      const body = bytes.subarray(p + 10, p + 8 + len);
      return bytes[p + 9] & 1 ? zlib.inflateRawSync(body) : Buffer.from(body);
    }
    p += 12 + len;
  }
  throw new Error('no pNGb');
}

function load(bytes) {
  const payload = payloadOf(bytes);
  const u32 = (o) => payload.readUInt32LE(o);
  const exeOff = u32(12), exeLen = u32(16), dataOff = u32(24), wgslOff = u32(28);
  const module = new WebAssembly.Module(payload.subarray(exeOff, exeOff + exeLen));
  const importsLog = WebAssembly.Module.imports(module).some((i) => i.module === 'env' && i.name === 'log');
  const instance = new WebAssembly.Instance(module, { env: { log: () => {} } });
  const e = instance.exports;
  const legacy = importsLog && !e.getAbiVersion;
  const mem = () => new Uint8Array(e.memory.buffer);
  if (legacy) {
    mem().set(payload.subarray(0, wgslOff), e.getBytecodePtr());
    e.setBytecodeLen(wgslOff);
  } else {
    mem().set(payload.subarray(0, dataOff), e.getBytecodePtr());
    e.setBytecodeLen(dataOff);
    if (wgslOff > dataOff) {
      mem().set(payload.subarray(dataOff, wgslOff), e.getDataPtr());
      e.setDataLen(wgslOff - dataOff);
    }
  }
  const read = () => {
    const ptr = e.getCommandPtr(), len = e.getCommandLen();
    return mem().slice(ptr, ptr + len);
  };
  if (e.init() !== 0) throw new Error('init failed');
  const first = read();
  return { e, read, first };
}

const pct = (v, p) => { const s = [...v].sort((a, b) => a - b); return s[Math.min(s.length - 1, Math.floor(s.length * p))]; };
const now = () => process.hrtime.bigint();

if (process.argv[5] === 'cold') {
  const t0 = now();
  load(png);
  const ms = Number(now() - t0) / 1e6;
  console.log(JSON.stringify({ file: path.basename(file), runtime: `node-${process.version}`, coldLoadMs: ms }));
  process.exit(0);
}

const loadTimes = [];
for (let i = 0; i < loads + 3; i++) {
  const t0 = now();
  load(png);
  const t1 = now();
  if (i >= 3) loadTimes.push(Number(t1 - t0) / 1e6);
}
const { e, read } = load(png);
const frameTimes = [];
for (let i = 0; i < frames + 1000; i++) {
  const t0 = now();
  if (e.frame(i / 60, 512, 512) !== 0) throw new Error('frame failed');
  read();
  const t1 = now();
  if (i >= 1000) frameTimes.push(Number(t1 - t0) / 1e3);
}
console.log(JSON.stringify({
  file: path.basename(file), runtime: `node-${process.version}`,
  loadP50Ms: pct(loadTimes, 0.5), frameP50Us: pct(frameTimes, 0.5), frameP99Us: pct(frameTimes, 0.99),
}));
