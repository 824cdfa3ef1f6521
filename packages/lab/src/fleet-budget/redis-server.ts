/**
 * A real `redis-server` (Debian's package) for the lab and the tests: on a free loopback port,
 * no persistence, started and killed by its owner. `restart()` brings it back on the same port
 * with its state lost, as a crashed Redis without persistence comes back.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { createServer, Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';

/** A running Redis of the lab's. */
export interface TestRedis {
  port: number;
  url: string;
  /** Kills the server (SIGKILL) and waits for it to exit. */
  kill(): Promise<void>;
  /** Stops the process (SIGSTOP): connections stay open, nothing answers (a Redis that hangs). */
  pause(): void;
  /** Lets a paused process go on (SIGCONT). */
  resume(): void;
  /** Starts it again on the same port, empty. */
  restart(): Promise<void>;
  /** Sends one inline command and returns the raw reply (for INFO and the like). */
  command(line: string): Promise<string>;
}

/** True when Debian's `redis-server` is on the PATH. */
export function redisServerInstalled(): boolean {
  try {
    return (
      execFileSync('sh', ['-c', 'command -v redis-server'], { encoding: 'utf8' }).trim() !== ''
    );
  } catch {
    return false;
  }
}

/**
 * Whether the tests that need a real Redis run: when `redis-server` is installed, and always in
 * CI (`.ci/run` installs it; a missing server must fail there, not skip). Elsewhere they skip and
 * say why, so the README's test command works with only Node.js and npm.
 */
export const REDIS_TESTS = redisServerInstalled() || process.env.CI !== undefined;

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (typeof address !== 'object' || address === null) throw new Error('no port');
  return address.port;
}

function send(port: number, line: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = new Socket();
    let data = '';
    socket.setTimeout(2_000, () => socket.destroy(new Error('redis: no answer')));
    socket.on('data', (chunk) => {
      data += chunk.toString();
      const m = /^\$(\d+)\r\n/.exec(data);
      if (m ? data.length >= m[0].length + Number(m[1]) + 2 : data.endsWith('\r\n')) {
        socket.end();
        resolve(data);
      }
    });
    socket.on('error', reject);
    socket.connect(port, '127.0.0.1', () => socket.write(`${line}\r\n`));
  });
}

/** Starts `redis-server` on a free loopback port and waits until it answers PING. */
export async function startRedis(): Promise<TestRedis> {
  const port = await freePort();
  let child: ChildProcess | undefined;
  const launch = async () => {
    const c = spawn(
      'redis-server',
      ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
      { stdio: 'ignore' },
    );
    let failed: Error | undefined;
    c.on('error', (error) => {
      failed = error;
    });
    child = c;
    const deadline = performance.now() + 10_000;
    for (;;) {
      const pong = await send(port, 'PING').catch(() => '');
      if (pong.startsWith('+PONG')) return;
      if (failed || c.exitCode !== null || performance.now() > deadline) {
        throw new Error(
          `redis-server on port ${port} did not answer PING (is Debian's redis-server installed?)`,
          { cause: failed },
        );
      }
      await sleep(10);
    }
  };
  await launch();
  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    async kill() {
      const c = child;
      if (c === undefined || c.exitCode !== null) return;
      const exited = new Promise((resolve) => c.once('exit', resolve));
      c.kill('SIGKILL');
      await exited;
    },
    pause: () => child?.kill('SIGSTOP'),
    resume: () => child?.kill('SIGCONT'),
    restart: launch,
    command: (line) => send(port, line),
  };
}
