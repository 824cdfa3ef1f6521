import { type ChildProcess, fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/** A child process of the lab, talking over IPC. */
export interface Child {
  child: ChildProcess;
  /** The first message the child sent (its port, or that it is ready). */
  hello: Record<string, unknown>;
  /** Resolves on the next message for which `match` returns true. */
  waitFor(match: (message: Record<string, unknown>) => boolean): Promise<Record<string, unknown>>;
  /** Sends a message and resolves on the next message that `match` accepts. */
  ask(
    message: unknown,
    match: (reply: Record<string, unknown>) => boolean,
  ): Promise<Record<string, unknown>>;
  stop(): Promise<void>;
}

const running = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of running) child.kill();
});

/** Starts `script` (a compiled module next to this one) and waits for its first message. */
export async function startChild(script: string, args: string[] = []): Promise<Child> {
  const path = fileURLToPath(new URL(script, import.meta.url));
  const child = fork(path, args, { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  running.add(child);
  child.once('exit', () => running.delete(child));
  const waitFor = (match: (m: Record<string, unknown>) => boolean) =>
    new Promise<Record<string, unknown>>((resolve, reject) => {
      const onMessage = (m: unknown) => {
        if (typeof m === 'object' && m !== null && match(m as Record<string, unknown>)) {
          child.off('message', onMessage);
          child.off('exit', onExit);
          resolve(m as Record<string, unknown>);
        }
      };
      const onExit = (code: number | null) => reject(new Error(`${script} exited with ${code}`));
      child.on('message', onMessage);
      child.once('exit', onExit);
    });
  const hello = await waitFor(() => true);
  return {
    child,
    hello,
    waitFor,
    ask(message, match) {
      const reply = waitFor(match);
      child.send(message as never);
      return reply;
    },
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill();
      }),
  };
}
