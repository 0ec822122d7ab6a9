/**
 * The bid response built independently of src/bidding/response-json.ts's byte writer, as the tests'
 * reference: each bid an object, its markup from src/bidding/markup.ts's text functions and the
 * native markup an object too, the whole serialized by JSON.stringify (which escapes whatever the
 * tracking base URL, the campaigns or the request hold).
 */
import { bannerAdm, EVENT_IMPRESSION, METHOD_IMG, nativeVersion, trackingUrls, vastAdm, type TrackingUrls } from '../../src/bidding/markup';
import { wellFormedJson } from '../../src/bidlog/well-formed';
import { MType, NativeAssetKind, type BidRequest, type Imp, type NativeImp } from '../../src/openrtb/types';
import { bidAdrender } from '../../src/targeting/dsa';
import type { Match, NativeFill } from '../../src/targeting/types';
import type { PayloadCodec } from '../../src/tracking/payload';

/** The native markup (Native 1.2 §5) as an object serialized by JSON.stringify. */
export function referenceNativeAdm(n: NativeImp, fills: readonly NativeFill[], urls: TrackingUrls): string {
  const assets: object[] = [];
  for (const f of fills) {
    if (f.kind === NativeAssetKind.Title) assets.push({ id: f.assetId, title: { text: f.text } });
    else if (f.kind === NativeAssetKind.Img && f.img !== null) assets.push({ id: f.assetId, img: { url: f.img.url, w: f.img.w, h: f.img.h } });
    else if (f.kind === NativeAssetKind.Data) assets.push({ id: f.assetId, data: { value: f.text } });
  }
  const v = nativeVersion(n);
  const body: Record<string, unknown> = { ver: v.ver, assets, link: { url: urls.click } };
  if (v.tracker === 'eventtracker') body.eventtrackers = [{ event: EVENT_IMPRESSION, method: METHOD_IMG, url: urls.imp }];
  else if (v.tracker === 'imptrackers') body.imptrackers = [urls.imp];
  return JSON.stringify(v.legacy ? { native: body } : body);
}

/** One bid as the reference has it, with its compact log record. */
export interface ReferenceBid {
  readonly bid: Record<string, unknown>;
  readonly record: Record<string, unknown>;
}

/** The bids of a BidWriter over the same base URL, DSA domain and codec, as objects. */
export class ReferenceBids {
  constructor(
    private readonly base: string,
    private readonly dsaDomain: string,
    private readonly codec: PayloadCodec,
  ) {}

  /** The bid `BidWriter.bid` writes for these arguments, given the bid id it drew. */
  bid(req: BidRequest, imp: Imp, m: Match, cur: string, now: number, price: number, noticeParam: string, bidId: string): ReferenceBid {
    const c = m.candidate;
    const base = imp.secure ? this.base.replace(/^http:/, 'https:') : this.base;
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
    const urls = trackingUrls(`${base}/t/click?${q.browser}`, `${base}/t/imp?${q.browser}`);
    let adm: string;
    if (m.mtype === MType.Native) adm = referenceNativeAdm(imp.native!, m.native ?? [], urls);
    else if (m.mtype === MType.Video) adm = vastAdm(c, urls, bidId, videoMime(c.video?.mimes ?? [], imp.video?.mimes ?? []));
    else adm = bannerAdm(c, urls);
    const macros = '&price=${AUCTION_PRICE}&cur=${AUCTION_CURRENCY}';
    const bid: Record<string, unknown> = {
      id: bidId,
      impid: imp.id,
      price,
      adm,
      adomain: c.adomain,
      crid: c.id,
      cid: c.campaignId,
      cat: c.cat,
      attr: c.attr,
      mtype: m.mtype,
      nurl: `${base}/t/win?${q.s2s}${noticeParam}${macros}&mtw=\${AUCTION_MIN_TO_WIN}`,
      burl: `${base}/t/bill?${q.s2s}${noticeParam}${macros}&mtw=\${AUCTION_MIN_TO_WIN}`,
      lurl: `${base}/t/loss?${q.s2s}${noticeParam}${macros}&loss=\${AUCTION_LOSS}&mtw=\${AUCTION_MIN_TO_WIN}`,
    };
    if (m.size !== null) {
      bid.w = m.size.w;
      bid.h = m.size.h;
    } else if (m.mtype === MType.Video && c.video !== null) {
      bid.w = c.video.w;
      bid.h = c.video.h;
    }
    if (m.dealId !== null) bid.dealid = m.dealId;
    const dsa = req.dsa;
    const ours = c.dsa ?? null;
    if (dsa !== null && dsa.required >= 1 && ours !== null) {
      const adrender = bidAdrender(ours.adrender, dsa.pubrender);
      if (adrender >= 0) {
        // dsaparams: 2 (basic targeting) always, 1 (profiling) too for a personalized campaign.
        const transparency = dsa.datatopub !== 0 && this.dsaDomain !== '' ? { transparency: [{ domain: this.dsaDomain, dsaparams: c.personalized === true ? [1, 2] : [2] }] } : {};
        bid.ext = { dsa: { behalf: ours.behalf, paid: ours.paid, ...transparency, adrender } };
      }
    }
    const record = { id: bidId, impid: imp.id, price, cid: c.campaignId, crid: c.id, dealid: m.dealId, mtype: m.mtype, value: m.price };
    return { bid, record };
  }

  /** The response around `bids`, as JSON text. */
  response(id: string, cur: string, bids: readonly ReferenceBid[]): string {
    return JSON.stringify({ id, cur, seatbid: [{ bid: bids.map((b) => b.bid) }] });
  }

  /** The compact records of `bids` as the response record's `bids` holds them, well-formed, without the brackets. */
  records(bids: readonly ReferenceBid[]): string {
    return wellFormedJson(JSON.stringify(bids.map((b) => b.record))).slice(1, -1);
  }
}

/** The first of the candidate's mimes the imp accepts (any, when the imp lists none). */
function videoMime(candidate: readonly string[], allowed: readonly string[]): string {
  for (const m of candidate) if (allowed.length === 0 || allowed.includes(m)) return m;
  return candidate[0] ?? 'video/mp4';
}
