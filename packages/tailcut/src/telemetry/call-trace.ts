import {
  type Context,
  context,
  type Span,
  SpanKind,
  SpanStatusCode,
  trace,
} from '@opentelemetry/api';
import type { BodyCounts, CallListener, Ending } from '../engine/listener.js';
import type { AttemptContext, AttemptOutcome, HedgeOutcome } from '../engine/race.js';
import type { RouteState } from '../engine/route-state.js';
import { ATTR, errorType } from './attributes.js';
import type { Recorder } from './recorder.js';

/**
 * The telemetry of one call: an INTERNAL span (child of the context active when the call
 * started), a CLIENT span per attempt whose context the attempt is sent in, and the call's
 * metrics. Durations come from the engine, on its clock.
 */
export class CallTrace implements CallListener {
  /** Per attempt index: its span (the call span when not recording) and origin. */
  private readonly attempts: { span: Span; origin: string }[] = [];
  private readonly span: Span;
  /** The context with the call span active: parent of the attempt spans. */
  private readonly context: Context;

  constructor(
    private readonly telemetry: Recorder,
    private readonly route: RouteState,
    private readonly method: string,
  ) {
    const parent = context.active();
    this.span = telemetry.tracer.startSpan(
      `tailcut ${route.settings.name}`,
      {
        kind: SpanKind.INTERNAL,
        attributes: { [ATTR.route]: route.settings.name, [ATTR.method]: method },
      },
      parent,
    );
    this.context = this.span.isRecording() ? trace.setSpan(parent, this.span) : parent;
  }

  attemptStarted(ctx: AttemptContext, origin: string): Context | undefined {
    if (!this.span.isRecording()) {
      this.attempts[ctx.index] = { span: this.span, origin };
      return undefined;
    }
    const server = this.telemetry.server(origin);
    const span = this.telemetry.tracer.startSpan(
      this.method,
      {
        kind: SpanKind.CLIENT,
        attributes: {
          [ATTR.method]: this.method,
          [ATTR.serverAddress]: server.address,
          [ATTR.serverPort]: server.port,
          [ATTR.resendCount]: ctx.index,
          [ATTR.attemptKind]: ctx.kind,
          [ATTR.route]: this.route.settings.name,
        },
      },
      this.context,
    );
    const replica = this.route.picker.name(ctx.replica);
    if (replica !== undefined) span.setAttribute(ATTR.replica, replica);
    this.attempts[ctx.index] = { span, origin };
    if (ctx.kind === 'hedge') {
      this.span.addEvent('tailcut.hedge.sent', {
        [ATTR.resendCount]: ctx.index,
        [ATTR.serverAddress]: server.address,
        [ATTR.serverPort]: server.port,
      });
    }
    return trace.setSpan(this.context, span);
  }

  /** Records an attempt's end (metric) and ends its span, unless it won (ended with the call). */
  attemptEnded(
    ctx: AttemptContext,
    outcome: AttemptOutcome,
    seconds: number,
    ending: Ending,
  ): void {
    const a = this.attempts[ctx.index];
    if (a === undefined) return;
    this.telemetry.recordAttempt(this.route, this.method, ctx, a.origin, outcome, seconds, ending);
    if (a.span === this.span) return;
    a.span.setAttribute(ATTR.attemptOutcome, outcome);
    if (ending.status !== undefined) a.span.setAttribute(ATTR.status, ending.status);
    const type = errorType(ending);
    if (type !== undefined && outcome === 'failed') {
      a.span.setAttribute(ATTR.errorType, type);
      a.span.setStatus({ code: SpanStatusCode.ERROR });
    }
    if (outcome !== 'won') a.span.end();
  }

  hedge(outcome: HedgeOutcome): void {
    this.telemetry.recordHedge(this.route, outcome);
    if (outcome !== 'sent' && outcome !== 'won' && this.span.isRecording()) {
      this.span.addEvent('tailcut.hedge.denied', { [ATTR.hedgeOutcome]: outcome });
    }
  }

  firstByte(seconds: number): void {
    this.telemetry.recordFirstByte(this.route, seconds);
  }

  chunkGap(seconds: number): void {
    this.telemetry.recordChunkGap(this.route, seconds);
  }

  firstToken(seconds: number): void {
    this.telemetry.recordFirstToken(this.route, seconds);
  }

  tokenGap(seconds: number): void {
    this.telemetry.recordTokenGap(this.route, seconds);
  }

  /** Ends the call: its metrics, the winner's span and the call span. */
  ended(
    winner: AttemptContext | undefined,
    seconds: number,
    ending: Ending,
    slow: boolean,
    counts: BodyCounts,
  ): void {
    this.telemetry.recordCall(this.route, this.method, seconds, ending, slow, counts);
    const type = errorType(ending);
    if (winner !== undefined) {
      const a = this.attempts[winner.index];
      if (a !== undefined && a.span !== this.span) {
        if (type !== undefined) a.span.setStatus({ code: SpanStatusCode.ERROR });
        a.span.end();
      }
    }
    if (ending.status !== undefined) this.span.setAttribute(ATTR.status, ending.status);
    if (type !== undefined) {
      this.span.setAttribute(ATTR.errorType, type);
      this.span.setStatus({ code: SpanStatusCode.ERROR });
    }
    this.span.end();
  }
}
