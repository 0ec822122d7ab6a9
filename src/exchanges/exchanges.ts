/**
 * Who may call the bid endpoint: the exchanges of EXCHANGES_FILE, each known by the addresses it
 * calls from (IPv4/IPv6 addresses or CIDR ranges, checked against the TCP peer) and/or a token it
 * sends in a header. A caller that matches no exchange is refused (403) before its body is read as
 * a bid request: it reserves no budget and writes nothing to the bid log.
 *
 * Without EXCHANGES_FILE the endpoint is open (development, and today's behaviour): every caller is
 * the one source `open`. Production says so at start-up (src/exchanges/exchanges.module.ts).
 *
 * An exchange's index (1..n; 0 is `open`) travels with its bids: the budget leases count unbilled
 * bids per source (src/delivery/spend.service.ts), the tracking payload carries it, the log and the
 * metrics name it. Pure: no Nest, no I/O (the file is read with the configuration: src/config/exchanges-file.ts).
 */
import type { IncomingHttpHeaders } from 'node:http';
import { BlockList, isIP } from 'node:net';
import { type ExchangeSpec, OPEN_SOURCE } from '../config/exchanges-file';

export { DEFAULT_TOKEN_HEADER, type ExchangeSpec, MAX_EXCHANGES, MIN_TOKEN_CHARS, OPEN_SOURCE, parseExchanges, readExchangesFile } from '../config/exchanges-file';

/** Result of `identify` for a caller that is no configured exchange. */
export const UNKNOWN = -1;

interface Matcher {
  readonly index: number;
  /** null: any address. */
  readonly addresses: BlockList | null;
  /** Last answers per peer address (a few exchange servers call all day): a hit skips the range check. */
  readonly seen: Map<string, boolean>;
}

/** Caller → exchange index, in O(headers named by the file + exchanges without a token). */
export class ExchangeGate {
  /** Source names by index: `open` at 0, then the exchanges in file order. */
  readonly names: readonly string[];
  /** True when no exchanges are configured: every caller is source 0. */
  readonly open: boolean;
  /** Per token header: token → the exchange sending it. */
  private readonly byToken: Array<{ header: string; tokens: Map<string, Matcher> }> = [];
  /** Exchanges known by their addresses alone. */
  private readonly byAddress: Matcher[] = [];

  constructor(exchanges: readonly ExchangeSpec[] | null) {
    this.open = exchanges === null;
    this.names = [OPEN_SOURCE, ...(exchanges ?? []).map((e) => e.name)];
    (exchanges ?? []).forEach((e, i) => {
      let addresses: BlockList | null = null;
      if (e.addresses.length > 0) {
        addresses = new BlockList();
        for (const a of e.addresses) {
          const slash = a.indexOf('/');
          const ip = slash < 0 ? a : a.slice(0, slash);
          const type = isIP(ip) === 4 ? 'ipv4' : 'ipv6';
          if (slash < 0) addresses.addAddress(ip, type);
          else addresses.addSubnet(ip, Number(a.slice(slash + 1)), type);
        }
      }
      const m: Matcher = { index: i + 1, addresses, seen: new Map() };
      if (e.token === null) {
        this.byAddress.push(m);
        return;
      }
      let h = this.byToken.find((t) => t.header === e.header);
      if (h === undefined) this.byToken.push((h = { header: e.header, tokens: new Map() }));
      h.tokens.set(e.token, m);
    });
  }

  /**
   * The caller's source: 0 when the endpoint is open, an exchange's index, or UNKNOWN (-1). A token
   * is looked up in a Map (its time depends on what the caller sent, not on how much of a token
   * matched); an exchange with both a token and addresses needs both.
   */
  identify(headers: IncomingHttpHeaders, remoteAddress: string | undefined): number {
    if (this.open) return 0;
    for (let i = 0; i < this.byToken.length; i++) {
      const t = this.byToken[i];
      const v = headers[t.header];
      if (typeof v !== 'string') continue;
      const m = t.tokens.get(v);
      if (m !== undefined && (m.addresses === null || this.allowed(m, remoteAddress))) return m.index;
    }
    for (let i = 0; i < this.byAddress.length; i++) if (this.allowed(this.byAddress[i], remoteAddress)) return this.byAddress[i].index;
    return UNKNOWN;
  }

  private allowed(m: Matcher, address: string | undefined): boolean {
    if (address === undefined) return false;
    const hit = m.seen.get(address);
    if (hit !== undefined) return hit;
    const ok = m.addresses!.check(address, isIP(address) === 6 ? 'ipv6' : 'ipv4');
    // Bounded: a flood from many addresses only empties the cache now and then.
    if (m.seen.size >= 4096) m.seen.clear();
    m.seen.set(address, ok);
    return ok;
  }
}
