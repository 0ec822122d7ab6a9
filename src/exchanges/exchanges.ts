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
 * metrics name it. Pure: no Nest, no I/O besides reading the file at start-up.
 */
import * as fs from 'node:fs';
import type { IncomingHttpHeaders } from 'node:http';
import { BlockList, isIP } from 'node:net';

/** One exchange as EXCHANGES_FILE gives it. */
export interface ExchangeSpec {
  /** Lower-case letters, digits, `-` and `_`, at most 32: it is a metrics label and a log field. */
  readonly name: string;
  /** Addresses or CIDR ranges the exchange calls from; empty: any address (then a token is required). */
  readonly addresses: readonly string[];
  /** The value the exchange sends in `header`; null: none (then addresses are required). */
  readonly token: string | null;
  /** Lower-case header name of the token. */
  readonly header: string;
}

/** Header the token is read from when an exchange does not name one. */
export const DEFAULT_TOKEN_HEADER = 'x-bidder-token';
/** The source of every caller when no exchanges are configured. */
export const OPEN_SOURCE = 'open';
/** Most exchanges: their index travels in 6 bits of the tracking payload's flags. */
export const MAX_EXCHANGES = 63;
/** Shortest token accepted: a guessable token is no authentication. */
export const MIN_TOKEN_CHARS = 16;

const NAME = /^[a-z0-9_-]{1,32}$/;
const HEADER = /^[a-z0-9-]{1,64}$/;
/** Result of `identify` for a caller that is no configured exchange. */
export const UNKNOWN = -1;

/**
 * Reads and validates EXCHANGES_FILE: `{"exchanges": [{"name", "addresses"?, "token"?, "header"?}]}`.
 * Returns the exchanges, or the problems found (each naming the entry), never throws.
 */
export function readExchangesFile(file: string): { exchanges: ExchangeSpec[]; problems: string[] } {
  let doc: unknown;
  try {
    doc = JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch (e) {
    return { exchanges: [], problems: [`EXCHANGES_FILE=${file}: ${(e as Error).message}`] };
  }
  return parseExchanges(doc, `EXCHANGES_FILE=${file}`);
}

export function parseExchanges(doc: unknown, where: string): { exchanges: ExchangeSpec[]; problems: string[] } {
  const problems: string[] = [];
  const list = (doc as { exchanges?: unknown } | null)?.exchanges;
  if (!Array.isArray(list) || list.length === 0) return { exchanges: [], problems: [`${where}: expected {"exchanges": [{"name": …, "addresses": […], "token": …}, …]} with at least one entry`] };
  if (list.length > MAX_EXCHANGES) return { exchanges: [], problems: [`${where}: ${list.length} exchanges, at most ${MAX_EXCHANGES}`] };
  const out: ExchangeSpec[] = [];
  list.forEach((e: unknown, i) => {
    const o = (typeof e === 'object' && e !== null ? e : {}) as Record<string, unknown>;
    const at = `${where}: exchanges[${i}]`;
    const name = o.name;
    if (typeof name !== 'string' || !NAME.test(name) || name === OPEN_SOURCE) {
      problems.push(`${at}.name: expected 1 to 32 of a-z 0-9 _ - (not "${OPEN_SOURCE}")`);
      return;
    }
    if (out.some((x) => x.name === name)) problems.push(`${at}.name: "${name}" is listed twice`);
    const addresses: string[] = [];
    if (o.addresses !== undefined) {
      if (!Array.isArray(o.addresses) || o.addresses.some((a) => typeof a !== 'string' || !validRange(a))) {
        problems.push(`${at} (${name}).addresses: expected an array of IPv4/IPv6 addresses or CIDR ranges, e.g. ["203.0.113.0/24", "2001:db8::1"]`);
      } else addresses.push(...(o.addresses as string[]));
    }
    let token: string | null = null;
    if (o.token !== undefined) {
      if (typeof o.token !== 'string' || o.token.length < MIN_TOKEN_CHARS || o.token.length > 256 || !/^[\x21-\x7e]+$/.test(o.token)) {
        problems.push(`${at} (${name}).token: expected ${MIN_TOKEN_CHARS} to 256 printable ASCII characters without spaces`);
      } else token = o.token;
    }
    let header = DEFAULT_TOKEN_HEADER;
    if (o.header !== undefined) {
      if (typeof o.header !== 'string' || !HEADER.test(o.header.toLowerCase())) problems.push(`${at} (${name}).header: expected a header name`);
      else header = o.header.toLowerCase();
    }
    if (addresses.length === 0 && token === null) problems.push(`${at} (${name}): give "addresses", "token" or both`);
    out.push({ name, addresses, token, header });
  });
  return { exchanges: problems.length > 0 ? [] : out, problems };
}

/** An address (`203.0.113.7`, `2001:db8::1`) or a range (`203.0.113.0/24`, `2001:db8::/32`). */
function validRange(s: string): boolean {
  const slash = s.indexOf('/');
  const addr = slash < 0 ? s : s.slice(0, slash);
  const family = isIP(addr);
  if (family === 0) return false;
  if (slash < 0) return true;
  const bits = s.slice(slash + 1);
  return /^\d{1,3}$/.test(bits) && Number(bits) <= (family === 4 ? 32 : 128);
}

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
