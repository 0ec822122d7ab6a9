/**
 * The bid response written as UTF-8 bytes, so that a bid is serialized by copying ready-made parts
 * instead of JSON.stringify of an object. JSON.stringify has to scan every character of every
 * string for what needs escaping, about 1.5 ns a character here: 3–4 µs for the ~2 KB of a bid,
 * most of it the markup and the tracking URLs, which are known to need no escaping. What comes from
 * the campaigns is written and checked once per candidate when the index is built
 * (src/targeting/candidate-json.ts); the tracking base URL is escaped once for each place it goes
 * (TrackingRoutes); what comes from the request is short and escaped as it is written; the
 * tracking payload is base64url. No string is made per bid: the bids and their log records are
 * bytes in reused buffers until the response is copied out in one Buffer of its exact size.
 */
import { randomFillSync } from 'node:crypto';
import { FieldWriter } from '../bidlog/compact';
import { ByteWriter, type FieldBytes } from '../bidlog/json-bytes';
import { wellFormedJson } from '../bidlog/well-formed';
import { MType, NativeAssetKind, type BidRequest, type DsaRequest, type Imp, type NativeImp } from '../openrtb/types';
import { isJsonSafe } from '../targeting/candidate-json';
import { bidAdrender } from '../targeting/dsa';
import { cdataBody } from '../targeting/markup-template';
import type { Match, NativeFill } from '../targeting/types';
import { type PayloadCodec, SIG_CHARS, type TrackingPayload } from '../tracking/payload';
import { bannerAdm, escapeHtml, EVENT_IMPRESSION, METHOD_IMG, nativeVersion, vastAdm, type TrackingUrls } from './markup';

export { isJsonSafe };

// Exchange macros (OpenRTB 2.6 §4.4), substituted by the exchange before it calls the URL. The
// price to win (where the exchange tells it) is what bid shading learns best from.
const WIN_QS = '&price=${AUCTION_PRICE}&cur=${AUCTION_CURRENCY}&mtw=${AUCTION_MIN_TO_WIN}';
const LOSS_QS = '&price=${AUCTION_PRICE}&cur=${AUCTION_CURRENCY}&loss=${AUCTION_LOSS}&mtw=${AUCTION_MIN_TO_WIN}';

/** What closes the response after its bids. */
const TAIL = ']}]}';

/**
 * The bid response of one request as UTF-8 bytes: `begin` writes its start, each `bid` one bid
 * (OpenRTB 2.6 §4.3.3: id, impid, price, adm, adomain, crid, cid, cat, attr, mtype, nurl, burl,
 * lurl, w, h, dealid, ext.dsa) with its tracking payload and its compact log record (`records`),
 * `drop` takes the last bid back, and `response` copies the whole out.
 */
export class BidWriter {
  /** The tracking routes for plain and secure imps, in every form a bid writes them (`bid` appends the payload). */
  private readonly routes: TrackingRoutes;
  private readonly secureRoutes: TrackingRoutes;
  private readonly dsa: DsaWriter;
  /** `{"id":…,"cur":…,"seatbid":[{"bid":[` and the bids joined by commas: reused from one request to the next. */
  private readonly out = new ByteWriter(8192);
  /** The bids' compact records (CompactBid, src/bidlog/records.ts) joined by commas: a JSON array's inside. */
  private readonly compact = new FieldWriter(4096);
  /** Bids written since `begin`, and where `out` and `compact` ended before the last one. */
  private count = 0;
  private outMark = 0;
  private compactMark = 0;
  private readonly ids = new BidIds();
  /** The tracking payload of the bid being written, reused (`pack` reads it and keeps nothing; the bid id goes as bytes). */
  private readonly payload: { -readonly [K in keyof TrackingPayload]-?: TrackingPayload[K] } = {
    requestId: '',
    bidId: '',
    impId: '',
    crid: '',
    cid: '',
    price: 0,
    cur: '',
    ts: 0,
    dealId: '',
    publisher: '',
    userKey: '',
    test: false,
    source: 0,
  };

  constructor(
    trackingBaseUrl: string,
    dsaDomain: string,
    private readonly codec: PayloadCodec,
  ) {
    // imp.secure = 1 needs https everywhere; TLS is expected to be terminated in front of the bidder.
    this.routes = trackingRoutes(trackingBaseUrl);
    this.secureRoutes = trackingRoutes(trackingBaseUrl.replace(/^http:/, 'https:'));
    this.dsa = new DsaWriter(dsaDomain);
  }

  /**
   * Starts the response to the request `id` in `cur` (`id` as sent: lone surrogates stay escaped as
   * JSON.stringify writes them). Returns the bytes the response takes besides its bids.
   */
  begin(id: string, cur: string): number {
    const w = this.out;
    w.reset();
    w.raw('{"id":');
    w.literal(id);
    w.bytes(this.middle(cur));
    this.compact.reset();
    this.count = 0;
    return w.pos + TAIL.length;
  }

  /** Bids in the response since `begin`. */
  get bids(): number {
    return this.count;
  }

  /**
   * The response since `begin`, closed: a fresh Buffer of its exact size (it outlives the request:
   * the answer may wait for the journal's commit, and the socket holds it until written).
   */
  response(): Buffer {
    const w = this.out;
    const bytes = Buffer.allocUnsafe(w.pos + TAIL.length);
    w.buf.copy(bytes, 0, 0, w.pos);
    bytes.write(TAIL, w.pos, 'latin1');
    return bytes;
  }

  /** The bids' compact records since `begin`, joined by commas (valid until the next `begin`). */
  records(): FieldBytes {
    return this.compact;
  }

  /** Takes back the last bid `bid` wrote (one that does not fit in the answer). */
  drop(): void {
    this.out.pos = this.outMark;
    this.compact.pos = this.compactMark;
    this.count--;
  }

  /** `,"cur":<cur>,"seatbid":[{"bid":[` as bytes, made once per currency (a few: the rate table's). */
  private readonly middles = new Map<string, Buffer>();

  private middle(cur: string): Buffer {
    let m = this.middles.get(cur);
    if (m === undefined) {
      m = Buffer.from(`,"cur":${JSON.stringify(cur)},"seatbid":[{"bid":[`, 'utf8');
      if (this.middles.size < 64) this.middles.set(cur, m);
    }
    return m;
  }

  /**
   * Writes one bid at `price` after those since `begin`, and its compact record; `noticeParam` goes
   * into the notice URLs (shading's, '' for none). Returns the bytes it added to the response (its
   * comma included).
   */
  bid(req: BidRequest, imp: Imp, m: Match, cur: string, now: number, price: number, noticeParam: string): number {
    const c = m.candidate;
    const ids = this.ids;
    const at = ids.next();
    const pool = ids.pool;
    const r = imp.secure ? this.secureRoutes : this.routes;
    const codec = this.codec;
    const p = this.payload;
    p.requestId = req.id;
    p.impId = imp.id;
    p.crid = c.id;
    p.cid = c.campaignId;
    p.price = price;
    p.cur = cur;
    p.ts = now;
    p.dealId = m.dealId ?? '';
    p.publisher = req.publisher;
    p.userKey = req.userKey;
    p.test = req.test;
    p.source = req.source;
    codec.pack(p, pool, at);
    const w = this.out;
    const start = w.pos;
    this.outMark = start;
    this.compactMark = this.compact.pos;
    if (this.count > 0) w.byte(0x2c);
    this.count++;
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
        // The parts a bid adds (tracking URLs, the bid id) are escaped already; the campaign's may need it.
        const safe = cj.vastSafe;
        w.byte(0x22);
        piece(w, t.head, safe);
        writeUuidText(w, pool, at);
        piece(w, t.afterId, safe);
        url(w, r.impVast, codec, true, false);
        piece(w, t.afterImp, safe);
        piece(w, t.mimeHtml(mime), safe);
        piece(w, t.afterMime, safe);
        url(w, r.clickVast, codec, true, false);
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
        url(w, r.clickBanner, codec, true, true);
        piece(w, t.mid, safe);
        url(w, r.impBanner, codec, true, true);
        piece(w, t.tail, safe);
        w.byte(0x22);
      }
    }
    w.raw(cj.fields);
    w.raw(',"mtype":');
    w.num(m.mtype);
    w.raw(',"nurl":"');
    url(w, r.winJson, codec, false, false);
    w.raw(noticeParam);
    w.raw(WIN_QS);
    w.raw('","burl":"');
    url(w, r.billJson, codec, false, false);
    w.raw(noticeParam);
    w.raw(WIN_QS);
    w.raw('","lurl":"');
    url(w, r.lossJson, codec, false, false);
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
    this.record(imp, m, price, pool, at);
    return w.pos - start;
  }

  /**
   * The bid's compact record (CompactBid): its id, imp id, price, campaign and creative, deal,
   * mtype and value (the shading input), well-formed as every log line is.
   */
  private record(imp: Imp, m: Match, price: number, pool: Buffer, at: number): void {
    const w = this.compact;
    if (this.count > 1) w.byte(0x2c);
    w.raw('{"id":"');
    writeUuidText(w, pool, at);
    w.raw('","impid":');
    w.str(imp.id);
    w.raw(',"price":');
    w.num(price);
    w.byte(0x2c);
    w.raw(wellFormedJson(m.json.recordIds));
    w.raw(',"dealid":');
    if (m.dealId === null) w.raw('null');
    else w.str(m.dealId);
    w.raw(',"mtype":');
    w.num(m.mtype);
    w.raw(',"value":');
    w.num(m.price);
    w.byte(0x7d);
  }

  /** The browser tracking URLs of the codec's last payload as strings (the markups' rare paths that are written as text). */
  private urls(r: TrackingRoutes): TrackingUrls {
    const c = this.codec;
    const p = c.text.toString('latin1', 0, c.packedChars);
    const s = c.text.toString('latin1', c.packedChars + SIG_CHARS, c.packedChars + 2 * SIG_CHARS);
    return { click: `${r.click}p=${p}&s=${s}`, imp: `${r.imp}p=${p}&s=${s}`, clickHtml: `${r.clickHtml}p=${p}&amp;s=${s}`, impHtml: `${r.impHtml}p=${p}&amp;s=${s}` };
  }
}

/** A piece of a string literal written in pieces: as it is when known `safe`, else escaped. */
function piece(w: ByteWriter, s: string, safe: boolean): void {
  if (safe) w.raw(s);
  else w.inner(s);
}

/**
 * A tracking URL of the codec's last payload, `<route>p=<payload>&s=<signature>` (`&amp;` in HTML),
 * with the browser signature or the server-to-server one; `route` is in the form of where it goes
 * (TrackingRoutes), the payload and signature are base64url: nothing here needs escaping.
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

/**
 * The tracking routes of one base URL, up to their query (`<base>/t/<event>?`), in each form a bid
 * writes them: as text (the markups' rare text paths), and escaped for where they go in the
 * response's JSON, made once here (a base URL needs none of it in practice, but may).
 */
interface TrackingRoutes {
  readonly click: string;
  readonly imp: string;
  /** HTML-escaped (attribute values). */
  readonly clickHtml: string;
  readonly impHtml: string;
  /** Inside a JSON string: the notice URLs. */
  readonly winJson: string;
  readonly billJson: string;
  readonly lossJson: string;
  /** HTML-escaped inside a JSON string: the banner markup's. */
  readonly clickBanner: string;
  readonly impBanner: string;
  /** In a CDATA section inside a JSON string: the VAST markup's. */
  readonly clickVast: string;
  readonly impVast: string;
  /** A JSON string's inside, itself inside a JSON string: the native markup's (a JSON text in `adm`). */
  readonly clickNative: string;
  readonly impNative: string;
}

function trackingRoutes(base: string): TrackingRoutes {
  const route = (event: string): string => `${base}/t/${event}?`;
  const click = route('click');
  const imp = route('imp');
  return {
    click,
    imp,
    clickHtml: escapeHtml(click),
    impHtml: escapeHtml(imp),
    winJson: jsonInner(route('win')),
    billJson: jsonInner(route('bill')),
    lossJson: jsonInner(route('loss')),
    clickBanner: jsonInner(escapeHtml(click)),
    impBanner: jsonInner(escapeHtml(imp)),
    clickVast: jsonInner(cdataBody(click)),
    impVast: jsonInner(cdataBody(imp)),
    clickNative: jsonInner(jsonInner(click)),
    impNative: jsonInner(jsonInner(imp)),
  };
}

/** `s` as the inside of a JSON string literal (JSON.stringify's escapes, without the quotes). */
function jsonInner(s: string): string {
  return JSON.stringify(s).slice(1, -1);
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

  /** `,"ext":{"dsa":{…}}` for this bid, written into `w`; nothing when it carries no DSA information. */
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
 * (fillsSafe), the tracking URLs are the routes' escaped form (TrackingRoutes) and the payload.
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
  url(w, r.clickNative, codec, true, false);
  w.raw(k.q);
  w.byte(0x7d);
  if (v.tracker !== null) {
    w.raw(v.tracker === 'eventtracker' ? k.eventtracker : k.imptrackers);
    w.raw(k.q);
    url(w, r.impNative, codec, true, false);
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
