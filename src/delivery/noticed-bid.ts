/**
 * What delivery reads of a bid when one of its notices comes back (billing, a loss's release,
 * shading's learning). The tracking payload (src/tracking/payload.ts) carries these fields and is
 * passed as is; delivery names only what it needs, so that it does not depend on tracking.
 */
export interface NoticedBid {
  readonly bidId: string;
  readonly cid: string;
  readonly crid: string;
  /** The bid's price, CPM in `cur`. */
  readonly price: number;
  readonly cur: string;
  /** When the bid was made, epoch ms. */
  readonly ts: number;
  readonly publisher: string;
  readonly test?: boolean;
  /** The calling exchange's index (0: open). */
  readonly source?: number;
}
