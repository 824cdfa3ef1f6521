import type { Dispatcher } from 'undici';
import type { RaceHandle } from '../engine/race.js';

type Controller = Dispatcher.DispatchController;

/**
 * The controller the caller's handler gets. Before the race is decided, abort ends the race
 * (cancelling every attempt); after, pause, resume and abort go to the winning attempt.
 */
export class CallController implements Controller {
  private raceHandle: RaceHandle | undefined;
  private winner: Controller | undefined;
  private pausedByCaller = false;
  private abortReason: Error | null = null;
  /** Runs when the caller resumes: flushes what the winner held before it was attached. */
  onResume: (() => void) | undefined;
  /**
   * Runs when the caller aborts before the race starts (while a stream body is buffered): the
   * caller is told at once, as undici's own dispatchers would.
   */
  onEarlyAbort: (() => void) | undefined;
  private early: AbortController | undefined;

  /** Aborted when the caller aborts: stops the buffering of a stream body. */
  get signal(): AbortSignal {
    this.early ??= new AbortController();
    if (this.abortReason !== null) this.early.abort(this.abortReason);
    return this.early.signal;
  }

  get aborted(): boolean {
    return this.abortReason !== null;
  }
  get paused(): boolean {
    return this.pausedByCaller;
  }
  get reason(): Error | null {
    return this.abortReason;
  }
  get rawHeaders() {
    return this.winner?.rawHeaders ?? null;
  }
  get rawTrailers() {
    return this.winner?.rawTrailers ?? null;
  }

  bind(race: RaceHandle): void {
    this.raceHandle = race;
  }

  attach(winner: Controller): void {
    this.winner = winner;
  }

  /**
   * The call is over and the caller was told: lets go of the race and the winner. The caller's
   * handler (and whatever holds it, such as undici's response data) keeps this controller a
   * while longer; nothing of the call stays reachable through it.
   */
  release(): void {
    this.raceHandle = undefined;
    this.winner = undefined;
    this.onResume = undefined;
    this.onEarlyAbort = undefined;
  }

  abort(reason: Error): void {
    if (this.abortReason !== null) return;
    this.abortReason = reason ?? new DOMException('This operation was aborted', 'AbortError');
    this.early?.abort(this.abortReason);
    this.raceHandle?.abort(this.abortReason);
    this.winner?.abort(this.abortReason);
    const early = this.onEarlyAbort;
    this.onEarlyAbort = undefined;
    early?.();
  }

  pause(): void {
    this.pausedByCaller = true;
    this.winner?.pause();
  }

  resume(): void {
    if (!this.pausedByCaller) return;
    this.pausedByCaller = false;
    // First what the winner held before it was attached; then, unless the caller paused again
    // on those, the winner itself (the caller's pause paused it too).
    this.onResume?.();
    if (!this.pausedByCaller) this.winner?.resume();
  }
}
