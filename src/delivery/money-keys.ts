/**
 * Money keys that vanish. A campaign's spend total only grows, and the billing markers of its bids
 * (SET NX with a TTL, src/delivery/scripts.ts) are what makes a bill count once: a total that goes
 * backwards, or markers gone, mean Redis lost data (a restart without persistence, a FLUSHALL, a
 * failover to an empty replica, an evicting maxmemory-policy) and budgets may be spent again, bills
 * already counted counted again.
 *
 * Markers cannot be counted cheaply, so each budgeted campaign has a witness key beside them (same
 * hash tag, same node, no TTL), set once (SET NX) by the first worker that finds it missing and read
 * with the spend at every refresh: a witness this worker saw that is gone, or replaced, is the
 * markers of that node gone. Both are counted (`lost`), logged, and shown in readiness (degraded,
 * for LOSS_SHOWN_MS after the last): every worker sees the same loss, so taking them out of the
 * load balancer would help nothing, and an operator must look (docs/operations.md).
 */
import { randomBytes } from 'node:crypto';

/** How long a loss stays in readiness after it was seen. */
export const LOSS_SHOWN_MS = 3_600_000;
/** Campaigns named in one message at most. */
const NAMED = 5;

/** The witness of a campaign's billing markers: in its hash tag, so on the node of its markers. */
export const witnessKey = (cid: string): string => `bidder:spend:{${cid}}:witness`;

export class MoneyKeysWatch {
  /** Losses seen by this worker: campaigns whose spend total went backwards, whose witness vanished. */
  readonly lost = { spend: 0, markers: 0 };
  /** The value this worker sets a missing witness to. */
  readonly token = randomBytes(12).toString('base64url');
  private readonly totals = new Map<string, number>();
  private readonly witnesses = new Map<string, string | null>();
  private spendLines: string[] = [];
  private vanished: string[] = [];
  private lastText: string | null = null;
  private lastAt = -Infinity;

  constructor(private readonly log: (text: string) => void = () => undefined) {}

  /** A campaign's spend total (µUSD) as read at a refresh. */
  total(cid: string, micros: number): void {
    const prev = this.totals.get(cid);
    this.totals.set(cid, micros);
    if (prev === undefined || micros >= prev) return;
    this.lost.spend++;
    this.spendLines.push(`spend of campaign ${cid} went back from ${prev} to ${micros} µUSD`);
  }

  /** A campaign's witness as read at a refresh (null: missing). True when it must be set (SET NX). */
  witness(cid: string, value: string | null): boolean {
    const seen = this.witnesses.has(cid);
    const prev = this.witnesses.get(cid);
    this.witnesses.set(cid, value);
    if (seen && prev !== null && value !== prev) {
      this.lost.markers++;
      this.vanished.push(cid);
    }
    return value === null;
  }

  /** Ends a refresh: what it found is logged and becomes the readiness text. */
  endRefresh(now: number): void {
    if (this.spendLines.length === 0 && this.vanished.length === 0) return;
    const parts: string[] = [];
    if (this.spendLines.length > 0) parts.push(...this.spendLines.slice(0, NAMED), ...(this.spendLines.length > NAMED ? [`and ${this.spendLines.length - NAMED} more campaign(s)`] : []));
    if (this.vanished.length > 0) {
      const names = this.vanished.slice(0, NAMED).join(', ') + (this.vanished.length > NAMED ? ', …' : '');
      parts.push(`the billing markers of ${this.vanished.length} campaign(s) vanished (${names}): bills already counted may count again`);
    }
    this.lastText = `Redis lost money keys at ${new Date(now).toISOString()}: ${parts.join('; ')}; budgets may be overspent. Check Redis persistence and eviction (docs/operations.md, Redis)`;
    this.lastAt = now;
    this.spendLines = [];
    this.vanished = [];
    this.log(this.lastText);
  }

  /** Forgets campaigns no longer budgeted. */
  retain(ids: ReadonlySet<string>): void {
    for (const id of this.totals.keys()) if (!ids.has(id)) this.totals.delete(id);
    for (const id of this.witnesses.keys()) if (!ids.has(id)) this.witnesses.delete(id);
  }

  /** The readiness text of the last loss, within LOSS_SHOWN_MS of it; else null. */
  problem(now: number): string | null {
    return this.lastText !== null && now - this.lastAt < LOSS_SHOWN_MS ? this.lastText : null;
  }
}
