/**
 * The rules of the OpenRTB DSA transparency extension (`regs.ext.dsa` in the request, `bid.ext.dsa`
 * in the bid) that decide whether a candidate may bid and what its bid says. The auction
 * (select.ts) and the bid writer (src/bidding/response-json.ts) both decide with these functions.
 *
 * - `dsarequired` 2 or 3 (or above): only a campaign with DSA information may bid, and its bid carries
 *   `ext.dsa`. 1: the bid carries `ext.dsa` when the campaign has it. 0 or absent: never.
 * - `pubrender` 0 (the publisher cannot render the notice): the bid must say `adrender` 1, so a
 *   campaign that cannot render the notice (its `adrender` 0) cannot bid where DSA information is
 *   required, and bids without `ext.dsa` where it is only supported. 2 (the publisher will render):
 *   the bid says `adrender` 0. 1, or any other value: the campaign's own `adrender`.
 */
import type { DsaRequest } from '../openrtb/types';

/** `dsarequired` from which a bid without `ext.dsa` is dropped by the exchange. */
export const DSA_REQUIRED = 2;

/** True when only bids carrying `ext.dsa` are accepted. */
export function dsaRequired(dsa: DsaRequest | null): boolean {
  return dsa !== null && dsa.required >= DSA_REQUIRED;
}

/**
 * The `adrender` a bid states, from the campaign's own (`render`: -1 when the campaign has no DSA
 * information, else 0 or 1) and the request's `pubrender`; -1 when the bid cannot carry `ext.dsa`.
 */
export function bidAdrender(render: number, pubrender: number): number {
  if (render < 0) return -1;
  if (pubrender === 0) return render === 1 ? 1 : -1;
  if (pubrender === 2) return 0;
  return render;
}

/**
 * The least campaign `render` value (see bidAdrender) a candidate needs to bid on this request:
 * -1 when DSA information is not required (anyone may bid), 1 when the publisher cannot render
 * the notice, else 0. Equivalent to `!dsaRequired(dsa) || bidAdrender(render, dsa.pubrender) >= 0`.
 */
export function dsaMinRender(dsa: DsaRequest | null): number {
  if (dsa === null || dsa.required < DSA_REQUIRED) return -1;
  return dsa.pubrender === 0 ? 1 : 0;
}
