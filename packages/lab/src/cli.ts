#!/usr/bin/env node
import { measureOverhead } from './bench/overhead.js';

const rows = await measureOverhead({ log: (l) => console.error(l) });
for (const r of rows) {
  console.log(
    `${r.name.padEnd(34)} ${r.cpuUsPerCall.toFixed(1).padStart(7)} µs/call (${r.cpuUsRange.map((x) => x.toFixed(1)).join('..')}) ${Math.round(r.callsPerSecond).toString().padStart(7)} calls/s ${r.cpuOverhead === undefined ? '' : `${(r.cpuOverhead * 100).toFixed(1)}% CPU (IQR ${(r.cpuOverheadIqr ?? []).map((x) => (x * 100).toFixed(1)).join('..')})`} heap/in-flight ${Math.round(r.heapBytesPerInFlightCall)} B`,
  );
}
