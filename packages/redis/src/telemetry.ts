import { type MeterProvider, metrics } from '@opentelemetry/api';
import type { FleetBudgetStats } from './fleet-budget.js';
import type { FleetMode } from './options.js';

/** The fleet budget's instruments: the fleet's window and this instance's mode. */
export interface FleetTelemetry {
  modeChanged(mode: FleetMode): void;
  close(): void;
}

/**
 * Observable gauges read from `stats()` at each collection (nothing on the hot path), and a
 * counter of mode switches: `tailcut.fleet.calls`, `tailcut.fleet.hedges` (over the window),
 * `tailcut.fleet.instances`, `tailcut.fleet.mode` (1 shared, 0 local) and
 * `tailcut.fleet.mode_changes` (attribute `tailcut.fleet.mode`), all with `tailcut.fleet.name`.
 */
export function fleetTelemetry(
  name: string,
  stats: () => FleetBudgetStats,
  provider: MeterProvider | undefined,
): FleetTelemetry {
  const meter = (provider ?? metrics).getMeter('@tailcut/redis');
  const attrs = { 'tailcut.fleet.name': name };
  const calls = meter.createObservableGauge('tailcut.fleet.calls', {
    description: "The fleet's calls over the budget's window (as of the last sync)",
    unit: '{call}',
  });
  const hedges = meter.createObservableGauge('tailcut.fleet.hedges', {
    description: "The fleet's hedges sent over the budget's window (as of the last sync)",
    unit: '{hedge}',
  });
  const instances = meter.createObservableGauge('tailcut.fleet.instances', {
    description: 'Instances seen in Redis over the last window',
    unit: '{instance}',
  });
  const mode = meter.createObservableGauge('tailcut.fleet.mode', {
    description: '1 while the instance shares the fleet budget, 0 while it runs on its local share',
  });
  const changes = meter.createCounter('tailcut.fleet.mode_changes', {
    description: 'Switches between shared and local mode',
  });
  const observe = (result: import('@opentelemetry/api').BatchObservableResult) => {
    const s = stats();
    result.observe(calls, s.fleetCalls, attrs);
    result.observe(hedges, s.fleetHedges, attrs);
    result.observe(instances, s.instances, attrs);
    result.observe(mode, s.mode === 'shared' ? 1 : 0, attrs);
  };
  meter.addBatchObservableCallback(observe, [calls, hedges, instances, mode]);
  return {
    modeChanged(m) {
      changes.add(1, { ...attrs, 'tailcut.fleet.mode': m });
    },
    close() {
      meter.removeBatchObservableCallback(observe, [calls, hedges, instances, mode]);
    },
  };
}
