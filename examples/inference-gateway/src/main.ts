/**
 * Runs the inference gateway against three local fake replicas (one with a slow tail) and a
 * steady load, and prints where to look: the gateway, its /metrics, and tailcut's stats.
 *
 *   node examples/inference-gateway/dist/main.js [seconds]   (default: until Ctrl-C)
 */
import { startFakeReplica } from './fleet.js';
import { startGateway, startLoad } from './gateway.js';

const seconds = Number(process.argv[2] ?? 0);
const profile = { medianMs: 20, sigma: 0.4, stallProbability: 0.01, stallFactor: 10 };
const replicas = await Promise.all([
  startFakeReplica('r1', profile, 1),
  startFakeReplica('r2', profile, 2),
  startFakeReplica('r3', { ...profile, stallProbability: 0.08 }, 3),
]);
const gateway = await startGateway({
  replicas: replicas.map((r) => r.origin),
  metricsPort: Number(process.env.METRICS_PORT ?? 9464),
});
const load = startLoad(gateway.url, Number(process.env.RATE ?? 50));
console.log(`gateway  ${gateway.url} (POST /chat, POST /embed)`);
console.log(
  `metrics  ${gateway.metricsUrl}  (scrape it with Prometheus; dashboard in examples/dashboards)`,
);

const report = setInterval(() => {
  for (const [name, s] of Object.entries(gateway.stats().routes)) {
    console.log(
      `${name.padEnd(11)} calls ${s.calls}  hedged ${s.hedgesSent} (won ${s.hedgesWon})  delay ${s.delayMs.toFixed(1)} ms  p50 ${s.latency.p50.toFixed(1)} ms  p99 ${s.latency.p99.toFixed(1)} ms`,
    );
  }
}, 5000);

const stop = async () => {
  clearInterval(report);
  load.stop();
  await gateway.close();
  await Promise.all(replicas.map((r) => r.close()));
  process.exit(0);
};
process.once('SIGINT', stop);
if (seconds > 0) setTimeout(stop, seconds * 1000);
