export { createFleetBudget, type FleetBudget, type FleetBudgetStats } from './fleet-budget.js';
export type { FleetBudgetOptions, FleetMode, RedisClientLike } from './options.js';
