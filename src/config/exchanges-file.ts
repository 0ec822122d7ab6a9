/**
 * EXCHANGES_FILE, read and validated with the rest of the configuration (src/config/config.ts), so
 * that a bad file stops the process naming the variable. Who may call, from this list, is decided
 * by src/exchanges/exchanges.ts.
 */
import * as fs from 'node:fs';
import { isIP } from 'node:net';

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
  /**
   * Whether the exchange sends loss notices (`lossNotices`): true, false, or 'learned' (the default:
   * taken to send none after 10 minutes without one). Bid shading counts a bid that no notice
   * answered as a loss for an exchange that sends none (src/delivery/shading.service.ts).
   */
  readonly lossNotices: boolean | 'learned';
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

/**
 * Reads and validates EXCHANGES_FILE: `{"exchanges": [{"name", "addresses"?, "token"?, "header"?, "lossNotices"?}]}`.
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
    let lossNotices: boolean | 'learned' = 'learned';
    if (o.lossNotices !== undefined) {
      if (o.lossNotices !== true && o.lossNotices !== false && o.lossNotices !== 'learned') problems.push(`${at} (${name}).lossNotices: expected true (it sends loss notices), false (it sends none) or "learned" (the default), not ${JSON.stringify(o.lossNotices)}`);
      else lossNotices = o.lossNotices;
    }
    if (addresses.length === 0 && token === null) problems.push(`${at} (${name}): give "addresses", "token" or both`);
    out.push({ name, addresses, token, header, lossNotices });
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
