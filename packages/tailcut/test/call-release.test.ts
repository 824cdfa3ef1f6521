/**
 * A finished call lets go of itself. The caller's handler and the controller it was given stay
 * reachable after the end for as long as the caller (or undici's response data) keeps them; the
 * race, its attempts and the winner's handler must not stay reachable through them. When they
 * did, any dead object V8 had allocated straight into the old generation kept a whole call's
 * graph alive through young-generation collections: the interceptor's GC cost doubled.
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import * as undici from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { hedge } from '../src/index.js';
import { startReplica } from './support/replica.js';
import { waitFor } from './support/wait.js';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

const open: { close(): Promise<void> }[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((o) => o.close()));
});

type Controller = undici.Dispatcher.DispatchController;

describe('a finished call', () => {
  it('keeps nothing of its race reachable from the controller its caller holds', async () => {
    const replica = await startReplica('a');
    open.push(replica);
    const agent = new undici.Agent().compose(
      hedge({ routes: [{ name: 'r', replicas: [replica.origin] }] }),
    );
    open.push(agent);
    let controller: Controller | undefined;
    let race: WeakRef<object> | undefined;
    let body = '';
    await new Promise<void>((resolve, reject) => {
      agent.dispatch(
        { origin: replica.origin, path: '/x', method: 'GET' },
        {
          onRequestStart(c) {
            controller = c;
          },
          onResponseStart(c) {
            // While the call runs, the controller leads to its race (to abort it).
            const held = (c as unknown as { raceHandle?: object }).raceHandle;
            if (held !== undefined) race = new WeakRef(held);
          },
          onResponseData(_c, chunk) {
            body += chunk.toString();
          },
          onResponseEnd: () => resolve(),
          onResponseError: (_c, err) => reject(err),
        },
      );
    });
    expect(body.length).toBeGreaterThan(0);
    expect(controller).toBeDefined();
    expect(race?.deref()).toBeDefined();
    await waitFor(
      async () => {
        gc();
        await new Promise((r) => setImmediate(r));
        return race?.deref() === undefined;
      },
      { message: 'the race is collected while the caller still holds its controller' },
    );
    // The controller is still the caller's, and inert: pause, resume and abort do nothing.
    controller?.pause();
    controller?.resume();
    controller?.abort(new Error('late'));
  });
});
