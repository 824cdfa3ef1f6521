import { Worker } from 'node:worker_threads';

/**
 * The ticker thread: it sleeps (Atomics.wait, no CPU) until each due time and posts the indices
 * that are due. Node's timers fire a millisecond late or more; this keeps the send lag well under
 * a millisecond without spinning the main thread or blocking its I/O.
 */
const TICKER = `
const { parentPort, workerData } = require('node:worker_threads');
const dues = workerData.dues;
const cell = new Int32Array(new SharedArrayBuffer(4));
const now = () => performance.timeOrigin + performance.now();
let i = 0;
while (i < dues.length) {
  const wait = dues[i] - now();
  if (wait > 0.02) { Atomics.wait(cell, 0, 0, wait); continue; }
  const batch = [];
  while (i < dues.length && dues[i] <= now() + 0.02) batch.push(i++);
  parentPort.postMessage(batch);
}
parentPort.postMessage('done');
`;

/**
 * Calls `onDue(index, dueMs)` at each due time (absolute, in `performance.timeOrigin` + now()
 * milliseconds), from a ticker thread; resolves when every index was posted.
 */
export function tick(dues: Float64Array, onDue: (index: number) => void): Promise<void> {
  return new Promise((resolve, reject) => {
    const worker = new Worker(TICKER, { eval: true, workerData: { dues } });
    worker.on('message', (m: number[] | 'done') => {
      if (m === 'done') {
        void worker.terminate();
        resolve();
      } else for (const i of m) onDue(i);
    });
    worker.on('error', reject);
  });
}
