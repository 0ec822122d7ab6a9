/**
 * Pieces of the bid response's JSON text, so that a bid is serialized by concatenation instead of
 * JSON.stringify of an object. JSON.stringify has to scan every character of every string for
 * what needs escaping, about 1.5 ns a character here: 3–4 µs for the ~2 KB of a bid, most of it
 * the markup and the tracking URLs, which are known to need no escaping. What comes from the
 * campaigns is written and checked once per candidate when the index is built
 * (src/targeting/candidate-json.ts); what comes from the request is short and goes through
 * JSON.stringify; the tracking payload is base64url.
 */
import { randomFillSync } from 'node:crypto';
import { v4 as uuidv4 } from 'uuid';
import { ByteWriter, writeText } from '../bidlog/json-bytes';
import { MType, NativeAssetKind, type BidRequest, type DsaRequest, type Imp, type NativeImp } from '../openrtb/types';
import { isJsonSafe } from '../targeting/candidate-json';
import { bidAdrender } from '../targeting/dsa';
import type { Match, NativeFill } from '../targeting/types';
import { type PayloadCodec, SIG_CHARS } from '../tracking/payload';
import { bannerAdm, escapeHtml, EVENT_IMPRESSION, METHOD_IMG, nativeVersion, renderBanner, renderVast, trackingUrls, vastAdm, type TrackingUrls } from './markup';

export { isJsonSafe };

/** `{"id":…,"cur":"…","seatbid":[{"bid":[…]}]}` around the bids, besides the id and the currency. */
export const ENVELOPE_BYTES = 40;
/** `{"id":` and `]}]}`: the envelope's bytes besides the id, the currency's part and the bids. */
const ENVELOPE_PARTS = 10;

// Exchange macros (OpenRTB 2.6 §4.4), substituted by the exchange before it calls the URL. The
// price to win (where the exchange tells it) is what bid shading learns best from.
const WIN_QS = '&price=${AUCTION_PRICE}&cur=${AUCTION_CURRENCY}&mtw=${AUCTION_MIN_TO_WIN}';
const LOSS_QS = '&price=${AUCTION_PRICE}&cur=${AUCTION_CURRENCY}&loss=${AUCTION_LOSS}&mtw=${AUCTION_MIN_TO_WIN}';

/**
 * The bid response's JSON text, every part of it: each bid (OpenRTB 2.6 §4.3.3: id, impid, price,
 * adm, adomain, crid, cid, cat, attr, mtype, nurl, burl, lurl, w, h, dealid, ext.dsa) with its
 * tracking payload, and the envelope around the bids.
 */
export class BidWriter {
  /** The tracking URLs' fixed parts for plain and secure imps, built once (`bid` appends the payload). */
  private readonly routes: TrackingRoutes;
  private readonly secureRoutes: TrackingRoutes;
  /** The tracking base URLs need neither HTML nor JSON escaping (checked once; true for any usual URL). */
  private readonly baseSafe: boolean;
  private readonly dsa: DsaWriter;
  /**
   * Where the bids of one request are written, joined by commas (`out`'s bytes stay there until the
   * next request's first bid), with the request and the characters of their texts so joined; -1
   * after a bid written as text.
   */
  private readonly out = new ByteWriter(8192);
  private readonly ids = new BidIds();
  private req: BidRequest | null = null;
  private chars = 0;

  constructor(
    trackingBaseUrl: string,
    dsaDomain: string,
    private readonly codec: PayloadCodec,
  ) {
    // imp.secure = 1 needs https everywhere; TLS is expected to be terminated in front of the bidder.
    const secureBase = trackingBaseUrl.replace(/^http:/, 'https:');
    this.baseSafe = [trackingBaseUrl, secureBase].every((b) => isJsonSafe(b) && escapeHtml(b) === b);
    this.routes = trackingRoutes(trackingBaseUrl);
    this.secureRoutes = trackingRoutes(secureBase);
    this.dsa = new DsaWriter(dsaDomain);
  }

  /**
   * The response around the bids (`bids`: their JSON texts joined by commas); `idJson` is the request
   * id as a JSON string. When `bids` joins every bid `bid` wrote for the request (none was dropped
   * for the answer's size: the auction keeps them in the order written, so a text as long as all of
   * them is all of them), the response's UTF-8 bytes are written too, from the bids' bytes, and
   * `responseBytes` hands them out: the text is then never made flat, nor encoded.
   */
  envelope(idJson: string, cur: string, bids: string): string {
    const mid = this.middle(cur);
    const body = '{"id":' + idJson + mid.text + bids + ']}]}';
    const all = this.req !== null && this.chars > 0 && bids.length === this.chars;
    this.req = null;
    if (all) {
      const w = this.out;
      const bytes = Buffer.allocUnsafe(Buffer.byteLength(idJson) + mid.bytes.length + w.pos + ENVELOPE_PARTS);
      let p = writeText('{"id":', bytes, 0);
      p = writeText(idJson, bytes, p);
      p += mid.bytes.copy(bytes, p);
      p += w.buf.copy(bytes, p, 0, w.pos);
      if (writeText(']}]}', bytes, p) !== bytes.length) throw new Error('the response envelope miscounted its bytes');
      lastBody = body;
      lastBodyBytes = bytes;
    }
    return body;
  }

  /** `,"cur":<cur>,"seatbid":[{"bid":[` as text and bytes, made once per currency (a few: the rate table's). */
  private readonly middles = new Map<string, { readonly text: string; readonly bytes: Buffer }>();

  private middle(cur: string): { readonly text: string; readonly bytes: Buffer } {
    let m = this.middles.get(cur);
    if (m === undefined) {
      const text = `,"cur":${JSON.stringify(cur)},"seatbid":[{"bid":[`;
      m = { text, bytes: Buffer.from(text, 'utf8') };
      if (this.middles.size < 64) this.middles.set(cur, m);
    }
    return m;
  }

  /**
   * One bid's JSON text at `price`; `noticeParam` goes into the notice URLs (shading's, '' for none).
   * Written as UTF-8 bytes into a reused buffer, read out once as the text.
   */
  bid(req: BidRequest, imp: Imp, m: Match, cur: string, now: number, price: number, noticeParam: string): string {
    if (!this.baseSafe) {
      this.req = null;
      return this.bidText(req, imp, m, cur, now, price, noticeParam, uuidv4());
    }
    const c = m.candidate;
    const ids = this.ids;
    const at = ids.next();
    const pool = ids.pool;
    const r = imp.secure ? this.secureRoutes : this.routes;
    const codec = this.codec;
    codec.pack(
      {
        requestId: req.id,
        bidId: '',
        impId: imp.id,
        crid: c.id,
        cid: c.campaignId,
        price,
        cur,
        ts: now,
        dealId: m.dealId ?? '',
        publisher: req.publisher,
        userKey: req.userKey,
        test: req.test,
        source: req.source,
      },
      pool,
      at,
    );
    const w = this.out;
    if (req === this.req) {
      w.byte(0x2c);
      this.chars++;
    } else {
      this.req = req;
      this.chars = 0;
      w.reset();
    }
    const start = w.pos;
    w.raw('{"id":"');
    writeUuidText(w, pool, at);
    w.raw('","impid":');
    w.literal(imp.id);
    w.raw(',"price":');
    w.num(price);
    w.raw(',"adm":');
    const cj = m.json;
    switch (m.mtype) {
      case MType.Native: {
        const fills = m.native ?? [];
        if (fillsSafe(fills)) {
          w.byte(0x22);
          writeNativeEscaped(w, imp.native!, fills, r, codec);
          w.byte(0x22);
        } else {
          w.raw(nativeAdmLiteral(imp.native!, fills, this.urls(r), false));
        }
        break;
      }
      case MType.Video: {
        const mime = videoMime(c.video?.mimes ?? [], imp.video?.mimes ?? []);
        const t = cj.vast;
        if (t === null) {
          w.literal(vastAdm(c, this.urls(r), uuidText(pool, at), mime));
          break;
        }
        // The parts a bid adds (tracking URLs, the bid id) need no escaping; the campaign's may.
        const safe = cj.vastSafe;
        w.byte(0x22);
        piece(w, t.head, safe);
        writeUuidText(w, pool, at);
        piece(w, t.afterId, safe);
        url(w, r.imp, codec, true, false);
        piece(w, t.afterImp, safe);
        piece(w, t.mimeHtml(mime), safe);
        piece(w, t.afterMime, safe);
        url(w, r.click, codec, true, false);
        piece(w, t.tail, safe);
        w.byte(0x22);
        break;
      }
      default: {
        const t = cj.banner;
        if (t === null) {
          w.literal(bannerAdm(c, this.urls(r)));
          break;
        }
        const safe = cj.bannerSafe;
        w.byte(0x22);
        piece(w, t.head, safe);
        url(w, r.click, codec, true, true);
        piece(w, t.mid, safe);
        url(w, r.imp, codec, true, true);
        piece(w, t.tail, safe);
        w.byte(0x22);
      }
    }
    w.raw(cj.fields);
    w.raw(',"mtype":');
    w.num(m.mtype);
    w.raw(',"nurl":"');
    url(w, r.win, codec, false, false);
    w.raw(noticeParam);
    w.raw(WIN_QS);
    w.raw('","burl":"');
    url(w, r.bill, codec, false, false);
    w.raw(noticeParam);
    w.raw(WIN_QS);
    w.raw('","lurl":"');
    url(w, r.loss, codec, false, false);
    w.raw(noticeParam);
    w.raw(LOSS_QS);
    w.byte(0x22);
    if (m.size !== null) {
      w.raw(',"w":');
      w.num(m.size.w);
      w.raw(',"h":');
      w.num(m.size.h);
    } else if (m.mtype === MType.Video && c.video !== null) {
      w.raw(',"w":');
      w.num(c.video.w);
      w.raw(',"h":');
      w.num(c.video.h);
    }
    if (m.dealId !== null) {
      w.raw(',"dealid":');
      w.literal(m.dealId);
    }
    this.dsa.write(w, m, req.dsa);
    w.byte(0x7d);
    const text = w.buf.toString('utf8', start, w.pos);
    this.chars += text.length;
    return text;
  }

  /** The browser tracking URLs of the codec's last payload as strings (the markups' rare paths that are written as text). */
  private urls(r: TrackingRoutes): TrackingUrls {
    const c = this.codec;
    const q = `p=${c.text.toString('latin1', 0, c.packedChars)}&s=${c.text.toString('latin1', c.packedChars + SIG_CHARS, c.packedChars + 2 * SIG_CHARS)}`;
    return { click: r.click + q, imp: r.imp + q, clickHtml: r.click + q.replace('&', '&amp;'), impHtml: r.imp + q.replace('&', '&amp;') };
  }

  /**
   * `bid`'s text built by concatenation, with the bid id given: what a tracking base URL that needs
   * escaping gets (test/bidding/response-json.spec.ts compares the two ways).
   */
  bidText(req: BidRequest, imp: Imp, m: Match, cur: string, now: number, price: number, noticeParam: string, bidId: string): string {
    const c = m.candidate;
    const r = imp.secure ? this.secureRoutes : this.routes;
    const q = this.codec.encode({
      requestId: req.id,
      bidId,
      impId: imp.id,
      crid: c.id,
      cid: c.campaignId,
      price,
      cur,
      ts: now,
      dealId: m.dealId ?? '',
      publisher: req.publisher,
      userKey: req.userKey,
      test: req.test,
      source: req.source,
    });
    // Browser URLs carry the browser signature, notices from the exchange's servers the other one.
    // The payload query is base64url plus `&s=`: only `&` needs HTML escaping, and nothing JSON.
    const qb = q.browser;
    const qHtml = qb.replace('&', '&amp;');
    const urls: TrackingUrls = this.baseSafe
      ? { click: r.click + qb, imp: r.imp + qb, clickHtml: r.click + qHtml, impHtml: r.imp + qHtml }
      : trackingUrls(r.click + qb, r.imp + qb);
    const cj = m.json;
    let adm: string;
    switch (m.mtype) {
      case MType.Native:
        adm = nativeAdmLiteral(imp.native!, m.native ?? [], urls, this.baseSafe);
        break;
      case MType.Video:
        {
          const mime = videoMime(c.video?.mimes ?? [], imp.video?.mimes ?? []);
          adm = quoted(cj.vast !== null ? renderVast(cj.vast, urls, bidId, mime) : vastAdm(c, urls, bidId, mime), cj.vastSafe && this.baseSafe);
        }
        break;
      default:
        adm = quoted(cj.banner !== null ? renderBanner(cj.banner, urls) : bannerAdm(c, urls), cj.bannerSafe && this.baseSafe);
    }
    let bid =
      `{"id":"${bidId}","impid":${JSON.stringify(imp.id)},"price":${JSON.stringify(price)},` +
      `"adm":${adm}${cj.fields},"mtype":${m.mtype},` +
      `"nurl":${quoted(r.win + q.s2s + noticeParam + WIN_QS, this.baseSafe)},` +
      `"burl":${quoted(r.bill + q.s2s + noticeParam + WIN_QS, this.baseSafe)},` +
      `"lurl":${quoted(r.loss + q.s2s + noticeParam + LOSS_QS, this.baseSafe)}`;
    if (m.size !== null) bid += `,"w":${m.size.w},"h":${m.size.h}`;
    else if (m.mtype === MType.Video && c.video !== null) bid += `,"w":${c.video.w},"h":${c.video.h}`;
    if (m.dealId !== null) bid += `,"dealid":${JSON.stringify(m.dealId)}`;
    return `${bid}${this.dsa.fragment(m, req.dsa)}}`;
  }
}

/** The body `envelope` wrote bytes for last, and those bytes. */
let lastBody: string | null = null;
let lastBodyBytes: Buffer | null = null;

/**
 * The UTF-8 bytes of a bid response's text (`BidAnswer.body`): those `envelope` wrote when `body` is
 * the text it returned last (the one-bid case), else the text encoded. A fresh Buffer either way
 * (it outlives the request: the answer may wait for the journal's commit).
 */
export function responseBytes(body: string): Buffer {
  const bytes = lastBodyBytes;
  const same = body === lastBody && bytes !== null;
  lastBody = null;
  lastBodyBytes = null;
  return same ? bytes : Buffer.from(body, 'utf8');
}

/** A piece of a string literal written in pieces: as it is when known `safe`, else escaped. */
function piece(w: ByteWriter, s: string, safe: boolean): void {
  if (safe) w.raw(s);
  else w.inner(s);
}

/**
 * A tracking URL of the codec's last payload, `<route>p=<payload>&s=<signature>` (`&amp;` in HTML),
 * with the browser signature or the server-to-server one; no part needs JSON escaping.
 */
function url(w: ByteWriter, route: string, codec: PayloadCodec, browser: boolean, html: boolean): void {
  const n = codec.packedChars;
  w.raw(route);
  w.raw('p=');
  w.bytes(codec.text, 0, n);
  w.raw(html ? '&amp;s=' : '&s=');
  const at = browser ? n + SIG_CHARS : n;
  w.bytes(codec.text, at, at + SIG_CHARS);
}

/**
 * Version 4 UUIDs (RFC 9562 §5.4) for bid ids, as 16 bytes: random bytes drawn from node:crypto 256
 * ids at a time (as crypto.randomUUID does), with the version and variant bits set. Written as text
 * straight into the response and as bytes into the tracking payload: no string is made for them.
 */
class BidIds {
  readonly pool = Buffer.allocUnsafe(16 * 256);
  private at = this.pool.length;

  /** The offset of a fresh id in `pool` (valid until the next 255 calls). */
  next(): number {
    if (this.at === this.pool.length) {
      randomFillSync(this.pool);
      this.at = 0;
    }
    const at = this.at;
    this.at += 16;
    const p = this.pool;
    p[at + 6] = (p[at + 6] & 0x0f) | 0x40;
    p[at + 8] = (p[at + 8] & 0x3f) | 0x80;
    return at;
  }
}

const HEX_DIGITS = Buffer.from('0123456789abcdef');

/** The 16 bytes at `at` as a UUID's lowercase text (8-4-4-4-12). */
function writeUuidText(w: ByteWriter, bytes: Uint8Array, at: number): void {
  w.room(36);
  const b = w.buf;
  let p = w.pos;
  for (let i = 0; i < 16; i++) {
    if (i === 4 || i === 6 || i === 8 || i === 10) b[p++] = 0x2d;
    const v = bytes[at + i];
    b[p++] = HEX_DIGITS[v >> 4];
    b[p++] = HEX_DIGITS[v & 15];
  }
  w.pos = p;
}

/** The same as a string (the VAST markup's rare text path). */
function uuidText(bytes: Uint8Array, at: number): string {
  const w = new ByteWriter(36);
  writeUuidText(w, bytes, at);
  return w.text();
}

/** The tracking routes of one base URL, up to their query: `<base>/t/<event>?`. */
interface TrackingRoutes {
  readonly click: string;
  readonly imp: string;
  readonly win: string;
  readonly bill: string;
  readonly loss: string;
}

function trackingRoutes(base: string): TrackingRoutes {
  return { click: `${base}/t/click?`, imp: `${base}/t/imp?`, win: `${base}/t/win?`, bill: `${base}/t/bill?`, loss: `${base}/t/loss?` };
}

/** A JSON string literal; `safe` says `s` is known to need no escaping. */
function quoted(s: string, safe: boolean): string {
  return safe ? `"${s}"` : JSON.stringify(s);
}

/** The first of the candidate's mimes the imp accepts (any, when the imp lists none). */
function videoMime(candidate: readonly string[], allowed: readonly string[]): string {
  for (let i = 0; i < candidate.length; i++) {
    if (allowed.length === 0 || allowed.includes(candidate[i])) return candidate[i];
  }
  return candidate[0] ?? 'video/mp4';
}

/** DSA transparency parameters (`dsaparams`): 1 profiling, 2 basic (contextual) targeting. */
const DSA_PROFILING = 1;
const DSA_BASIC = 2;

/**
 * Writes a bid's `ext.dsa` (OpenRTB DSA transparency extension) when the request asks for DSA
 * information: the candidate's `behalf` and `paid` (prebuilt with the index), the `adrender` the
 * rules of src/targeting/dsa.ts give, and our transparency entry.
 *
 * `dsaparams`: 2 (basic targeting) on every bid, since every bid is chosen on what the request
 * says about its context (site or app, device type, OS, country, sizes, categories); 1 (profiling)
 * too for a `personalized` campaign (it bids only where user-level data may be used); never 3
 * (precise geolocation): we target by country only.
 * `transparency` is left out when the request says `datatopub` 0 (send no transparency data to
 * the publisher), and when no transparency domain is configured; with 1 (optional) and 2 it is sent.
 */
export class DsaWriter {
  /** Tails after `dsaHead`, by adrender * 4 + (transparency ? 2 : 0) + (profiling ? 1 : 0). */
  private readonly tails: readonly string[];

  /** @param domain Our transparency domain (where users find the parameters used); '' for none. */
  constructor(domain: string) {
    const tails: string[] = [];
    for (let adrender = 0; adrender <= 1; adrender++) {
      for (const transparency of [false, true]) {
        for (const profiling of [false, true]) {
          const params = profiling ? [DSA_PROFILING, DSA_BASIC] : [DSA_BASIC];
          const t = transparency && domain !== '' ? `"transparency":[{"domain":${JSON.stringify(domain)},"dsaparams":${JSON.stringify(params)}}],` : '';
          tails.push(`${t}"adrender":${adrender}}}`);
        }
      }
    }
    this.tails = tails;
  }

  /** `fragment` written into `w`. */
  write(w: ByteWriter, m: Match, dsa: DsaRequest | null): void {
    const t = this.tail(m, dsa);
    if (t === null) return;
    w.raw(m.json.dsaHead);
    w.raw(t);
  }

  /** The tail after `dsaHead` for this bid, or null when it carries no DSA information. */
  private tail(m: Match, dsa: DsaRequest | null): string | null {
    if (dsa === null || dsa.required < 1 || m.json.dsaHead === '') return null;
    const c = m.candidate;
    const adrender = bidAdrender(c.dsa?.adrender ?? -1, dsa.pubrender);
    if (adrender < 0) return null;
    return this.tails[adrender * 4 + (dsa.datatopub === 0 ? 0 : 2) + (c.personalized === true ? 1 : 0)];
  }

  /** `,"ext":{"dsa":{…}}` for this bid, or '' when it carries no DSA information. */
  fragment(m: Match, dsa: DsaRequest | null): string {
    if (dsa === null || dsa.required < 1 || m.json.dsaHead === '') return '';
    const c = m.candidate;
    const adrender = bidAdrender(c.dsa?.adrender ?? -1, dsa.pubrender);
    if (adrender < 0) return '';
    return m.json.dsaHead + this.tails[adrender * 4 + (dsa.datatopub === 0 ? 0 : 2) + (c.personalized === true ? 1 : 0)];
  }
}

/**
 * The fixed pieces of the native markup in one of its two forms: `q` is the quote of its keys, `"`
 * for the plain JSON text or `\"` for the inside of a JSON string literal. Built once per form, so
 * writing a markup concatenates ready-made strings (as fast as literals in the code).
 */
function nativeKeys(q: string) {
  return {
    /** Plain form: string values go through JSON.stringify; escaped form: they are known safe and only quoted. */
    plain: q === '"',
    q,
    title: `{${q}id${q}:`,
    titleText: `,${q}title${q}:{${q}text${q}:`,
    imgUrl: `,${q}img${q}:{${q}url${q}:`,
    w: `,${q}w${q}:`,
    h: `,${q}h${q}:`,
    dataValue: `,${q}data${q}:{${q}value${q}:`,
    ver: `{${q}ver${q}:`,
    assets: `,${q}assets${q}:[`,
    link: `],${q}link${q}:{${q}url${q}:`,
    eventtracker: `,${q}eventtrackers${q}:[{${q}event${q}:${EVENT_IMPRESSION},${q}method${q}:${METHOD_IMG},${q}url${q}:`,
    imptrackers: `,${q}imptrackers${q}:[`,
    native: `{${q}native${q}:`,
  };
}

type NativeKeys = ReturnType<typeof nativeKeys>;
const PLAIN_KEYS = nativeKeys('"');
const ESCAPED_KEYS = nativeKeys('\\"');

/**
 * The native markup (Native 1.2 §5, a JSON document in `bid.adm`), written once for both forms it
 * takes: `k` holds the keys of the form and says how a string value is written, plain
 * (JSON.stringify) or, known to need no escaping, between the form's quotes (`\"`). Assets echo the request's asset ids;
 * the fills come from the auction and cover every required asset. Impression tracking:
 * `eventtrackers` with method 1 when the request offers it; when the request lists no
 * eventtrackers (Native ≤ 1.1 habit), the legacy `imptrackers`; a request offering impressions only
 * by JS gets none in the markup (nurl/burl still report the win and the billing). Native 1.0
 * requests get the `{"native": …}` root wrapper; 1.1 and later do not (§4.1).
 */
function writeNative(n: NativeImp, fills: readonly NativeFill[], urls: TrackingUrls, k: NativeKeys): string {
  let assets = '';
  for (let i = 0; i < fills.length; i++) {
    const f = fills[i];
    let a: string;
    switch (f.kind) {
      case NativeAssetKind.Title:
        a = k.title + f.assetId + k.titleText + str(k, f.text) + '}}';
        break;
      case NativeAssetKind.Img:
        if (f.img === null) continue;
        a = k.title + f.assetId + k.imgUrl + str(k, f.img.url) + k.w + f.img.w + k.h + f.img.h + '}}';
        break;
      case NativeAssetKind.Data:
        a = k.title + f.assetId + k.dataValue + str(k, f.text) + '}}';
        break;
      default:
        continue;
    }
    assets = assets === '' ? a : assets + ',' + a;
  }
  const v = nativeVersion(n);
  let body = k.ver + str(k, v.ver) + k.assets + assets + k.link + str(k, urls.click) + '}';
  if (v.tracker === 'eventtracker') body += k.eventtracker + str(k, urls.imp) + '}]';
  else if (v.tracker === 'imptrackers') body += k.imptrackers + str(k, urls.imp) + ']';
  return v.legacy ? k.native + body + '}}' : body + '}';
}

/**
 * `writeNative` in its escaped form (ESCAPED_KEYS), written into `w`: the fills are known safe
 * (fillsSafe), the tracking URLs (`route` + `p=<packed>&s=<sig>`) need no escaping.
 */
function writeNativeEscaped(w: ByteWriter, n: NativeImp, fills: readonly NativeFill[], r: TrackingRoutes, codec: PayloadCodec): void {
  const k = ESCAPED_KEYS;
  const v = nativeVersion(n);
  if (v.legacy) w.raw(k.native);
  w.raw(k.ver);
  w.raw(k.q);
  w.raw(v.ver);
  w.raw(k.q);
  w.raw(k.assets);
  let first = true;
  for (let i = 0; i < fills.length; i++) {
    const f = fills[i];
    if (f.kind !== NativeAssetKind.Title && f.kind !== NativeAssetKind.Data && (f.kind !== NativeAssetKind.Img || f.img === null)) continue;
    if (!first) w.byte(0x2c);
    first = false;
    w.raw(k.title);
    w.num(f.assetId);
    if (f.kind === NativeAssetKind.Img) {
      w.raw(k.imgUrl);
      w.raw(k.q);
      w.raw(f.img!.url);
      w.raw(k.q);
      w.raw(k.w);
      w.num(f.img!.w);
      w.raw(k.h);
      w.num(f.img!.h);
    } else {
      w.raw(f.kind === NativeAssetKind.Title ? k.titleText : k.dataValue);
      w.raw(k.q);
      w.raw(f.text);
      w.raw(k.q);
    }
    w.raw('}}');
  }
  w.raw(k.link);
  w.raw(k.q);
  url(w, r.click, codec, true, false);
  w.raw(k.q);
  w.byte(0x7d);
  if (v.tracker !== null) {
    w.raw(v.tracker === 'eventtracker' ? k.eventtracker : k.imptrackers);
    w.raw(k.q);
    url(w, r.imp, codec, true, false);
    w.raw(k.q);
    w.raw(v.tracker === 'eventtracker' ? '}]' : ']');
  }
  w.raw(v.legacy ? '}}' : '}');
}

/** A string value of the markup in form `k`. */
function str(k: NativeKeys, s: string): string {
  return k.plain ? JSON.stringify(s) : k.q + s + k.q;
}

/** The native markup as a JSON text (what `bid.adm` holds once the response is parsed). */
export function nativeAdm(n: NativeImp, fills: readonly NativeFill[], urls: TrackingUrls): string {
  return writeNative(n, fills, urls, PLAIN_KEYS);
}

/**
 * `JSON.stringify(nativeAdm(n, fills, urls))`: the native markup as the JSON string literal of
 * `bid.adm`. When the tracking URLs are known safe (`urlsSafe`) and every text and image URL of the
 * fills needs no JSON escaping, the markup's only characters to escape are its own quotes, so it is
 * written directly in that form (`\"`), instead of writing it, then scanning it again to quote it.
 * Anything else takes the plain form and JSON.stringify.
 */
export function nativeAdmLiteral(n: NativeImp, fills: readonly NativeFill[], urls: TrackingUrls, urlsSafe: boolean): string {
  if (urlsSafe && fillsSafe(fills)) return `"${writeNative(n, fills, urls, ESCAPED_KEYS)}"`;
  return JSON.stringify(nativeAdm(n, fills, urls));
}

function fillsSafe(fills: readonly NativeFill[]): boolean {
  for (let i = 0; i < fills.length; i++) {
    const f = fills[i];
    if (f.kind === NativeAssetKind.Img ? f.img !== null && !isJsonSafe(f.img.url) : !isJsonSafe(f.text)) return false;
  }
  return true;
}
