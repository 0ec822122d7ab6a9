/**
 * Redis keys of budgets and frequency caps. Keys a script touches together share one hash tag
 * (`{…}`), so that they live on one node of a Redis Cluster: a campaign's spend and its bids' billing
 * markers share the campaign's tag, a user's day counts and impression markers share the user's.
 */
export const spendKeys = {
  total: (cid: string): string => `bidder:spend:{${cid}}:total`,
  daily: (cid: string, day: string): string => `bidder:spend:{${cid}}:${day}`,
  /** The workers' windows of unbilled bids while the campaign's day is at its tail (a hash). */
  tail: (cid: string, day: string): string => `bidder:spend:{${cid}}:tail:${day}`,
  billMarker: (cid: string, bidId: string): string => `bidder:spend:{${cid}}:bill:${bidId}`,
};

export const capKeys = {
  /** Impressions of one user on one day, per campaign (a hash). */
  counts: (userKey: string, day: string): string => `bidder:fcap:{${userKey}}:${day}`,
  /** Marks a bid whose impression was counted. */
  impMarker: (userKey: string, bidId: string): string => `bidder:fcap:{${userKey}}:imp:${bidId}`,
  /** Marks a bid whose impression was seen, when there is no user to count it for. */
  anonImpMarker: (bidId: string): string => `bidder:imp:{${bidId}}`,
  /** The day's (campaign, user) pairs that reached their cap (a set). */
  capped: (day: string): string => `bidder:fcap:capped:${day}`,
};

/** Eligible requests of a campaign per hour of its local day, every worker's (a hash: hour index → count), for traffic-shaped pacing curves. */
export const trafficKey = (cid: string, day: string): string => `bidder:traffic:{${cid}}:${day}`;

/** A worker's pacing share of each even campaign (a hash: campaign → share), read by the other workers. */
export const paceKey = (member: string): string => `bidder:pace:${member}`;

/** Live workers of every host (a sorted set scored by Redis's clock). */
export const WORKERS_KEY = 'bidder:workers';
