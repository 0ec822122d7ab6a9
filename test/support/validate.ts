/**
 * The bid-response validator: checks a bidder answer against the request it answers, independently
 * of the bidder's own parsing (it reads the raw request JSON). Returns a list of problems; empty
 * means valid. Rules: OpenRTB 2.6 §4.2 (bid response) and Native 1.2 §5 (native markup).
 */
import { validate as isUuid } from 'uuid';
import { PayloadCodec } from '../../src/tracking/payload';
import { STATIC_RATES } from '../../src/currency/rates';

const convert = (amount: number, from: string, to: string): number | null => STATIC_RATES.convert(amount, from, to);

type Obj = Record<string, any>;  

function num(v: unknown, def = 0): number {
  if (v === undefined || v === null || v === '') return def;
  const n = Number(v);
  return Number.isFinite(n) ? n : def;
}

function list(v: unknown): unknown[] {
  if (v === undefined || v === null) return [];
  return Array.isArray(v) ? v : [v];
}

/** The request's native payload: string or object, with or without the `native` wrapper. */
export function nativePayload(native: Obj | undefined): Obj | null {
  if (!native) return null;
  let p: unknown = native.request;
  if (typeof p === 'string') {
    try {
      p = JSON.parse(p);
    } catch {
      return null;
    }
  }
  if (typeof p !== 'object' || p === null) return null;
  const o = p as Obj;
  return o.native && !o.assets ? (o.native as Obj) : o;
}

function blockedCat(cat: string, bcat: string[]): boolean {
  for (const b of bcat) if (cat === b || cat.startsWith(`${b}-`)) return true;
  return false;
}

function urlsIn(s: string): string[] {
  return s.match(/https?:\/\/[^\s"'<>\]]+/g) ?? [];
}

function queryOf(url: string): URLSearchParams {
  return new URL(url.replace(/\$\{[A-Z_]+\}/g, 'X')).searchParams;
}

export interface ValidateOptions {
  codec: PayloadCodec;
}

export function validateBidResponse(reqIn: Obj, res: Obj, opts: ValidateOptions): string[] {
  const p: string[] = [];
  const req = reqIn;
  if (res.id !== String(req.id)) p.push(`id ${JSON.stringify(res.id)} does not echo ${JSON.stringify(req.id)}`);
  // Empty and null entries say nothing (the bidder ignores them; none left means USD).
  const allowedCur = list(req.cur)
    .filter((c) => c !== null && c !== '')
    .map((c) => String(c).toUpperCase());
  const cur = typeof res.cur === 'string' ? res.cur : 'USD';
  if (allowedCur.length > 0 && !allowedCur.includes(cur)) p.push(`cur ${cur} not in request cur ${allowedCur.join(',')}`);
  const imps = new Map<string, Obj>();
  for (const imp of list(req.imp) as Obj[]) imps.set(String(imp.id), imp);
  const badv = list(req.badv).map((d) => String(d).toLowerCase());
  const bcat = list(req.bcat).map(String);
  const seen = new Set<string>();
  const seatbids = list(res.seatbid) as Obj[];
  if (seatbids.length === 0) p.push('no seatbid');
  let bidCount = 0;
  for (const sb of seatbids) {
    for (const bid of list(sb.bid) as Obj[]) {
      bidCount++;
      const where = `bid ${bid.id}`;
      if (typeof bid.id !== 'string' || !isUuid(bid.id)) p.push(`${where}: id is not a UUID`);
      const imp = imps.get(String(bid.impid));
      if (!imp) {
        p.push(`${where}: impid ${bid.impid} matches no imp`);
        continue;
      }
      if (seen.has(String(bid.impid))) p.push(`${where}: second bid for imp ${bid.impid}`);
      seen.add(String(bid.impid));
      if (!(typeof bid.price === 'number' && bid.price > 0)) p.push(`${where}: price ${bid.price} is not > 0`);
      // A deal bid answers to the deal's floor, which replaces the imp floor (checked below).
      const floor = bid.dealid === undefined ? num(imp.bidfloor) : 0;
      const floorCur = String(imp.bidfloorcur || 'USD').toUpperCase();
      const floorIn = floor > 0 ? convert(floor, floorCur, cur) : 0;
      if (floorIn === null) p.push(`${where}: bid on an imp whose floor currency ${floorCur} is unknown`);
      else if (bid.price < floorIn - 1e-9) p.push(`${where}: price ${bid.price} ${cur} below floor ${floorIn}`);
      for (const k of ['crid', 'cid']) if (typeof bid[k] !== 'string' || bid[k] === '') p.push(`${where}: no ${k}`);
      if (![1, 2, 4].includes(bid.mtype)) p.push(`${where}: mtype ${bid.mtype} invalid`);
      if (!Array.isArray(bid.adomain) || bid.adomain.length === 0) p.push(`${where}: no adomain`);
      else for (const d of bid.adomain) if (badv.includes(String(d).toLowerCase())) p.push(`${where}: adomain ${d} is in badv`);
      for (const c of list(bid.cat)) if (blockedCat(String(c), bcat)) p.push(`${where}: cat ${c} blocked by bcat`);
      for (const k of ['nurl', 'burl', 'lurl']) {
        if (typeof bid[k] !== 'string' || !bid[k].includes('${AUCTION_PRICE}')) p.push(`${where}: ${k} lacks \${AUCTION_PRICE}`);
      }
      if (typeof bid.adm !== 'string' || bid.adm === '') p.push(`${where}: no adm`);
      const adm = String(bid.adm ?? '');
      if (num(imp.secure) === 1) {
        for (const u of [bid.nurl, bid.burl, bid.lurl, ...urlsIn(adm)]) {
          if (typeof u === 'string' && !u.startsWith('https://')) p.push(`${where}: insecure URL ${u.slice(0, 60)} on a secure imp`);
        }
      }
      if (num(imp.pmp?.private_auction) === 1) {
        const ids = (list(imp.pmp?.deals) as Obj[]).map((d) => String(d.id));
        if (!ids.includes(String(bid.dealid))) p.push(`${where}: private auction bid without one of its deals`);
      }
      if (bid.dealid !== undefined) {
        const deal = (list(imp.pmp?.deals) as Obj[]).find((d) => String(d.id) === String(bid.dealid));
        if (!deal) p.push(`${where}: dealid ${bid.dealid} not offered`);
        else {
          const dfRaw = num(deal.bidfloor);
          const df = dfRaw > 0 ? convert(dfRaw, String(deal.bidfloorcur || 'USD').toUpperCase(), cur) : 0;
          if (df === null || bid.price < df - 1e-9) p.push(`${where}: price below deal floor`);
        }
      }
      // Tracking payload decodes and names this bid.
      try {
        const q = queryOf(bid.nurl);
        const t = opts.codec.decode(q.get('p') ?? undefined, q.get('s') ?? undefined, 's2s');
        if (t.requestId !== String(req.id) || t.bidId !== bid.id || t.impId !== String(bid.impid) || t.crid !== bid.crid) {
          p.push(`${where}: tracking payload does not match the bid`);
        }
      } catch (e) {
        p.push(`${where}: tracking payload not decodable: ${(e as Error).message}`);
      }
      switch (bid.mtype) {
        case 1: {
          if (!imp.banner) p.push(`${where}: banner bid on an imp without banner`);
          if (!(num(bid.w) > 0 && num(bid.h) > 0)) p.push(`${where}: banner without w/h`);
          const sizes = (list(imp.banner?.format) as Obj[]).map((f) => `${num(f.w)}x${num(f.h)}`);
          if (sizes.length === 0 && imp.banner?.w) sizes.push(`${num(imp.banner.w)}x${num(imp.banner.h)}`);
          if (sizes.length > 0 && !sizes.includes(`${bid.w}x${bid.h}`)) p.push(`${where}: size ${bid.w}x${bid.h} not requested`);
          break;
        }
        case 2:
          if (!imp.video) p.push(`${where}: video bid on an imp without video`);
          if (!adm.startsWith('<VAST')) p.push(`${where}: video adm is not VAST`);
          break;
        case 4:
          p.push(...validateNative(where, imp, adm));
          break;
      }
    }
  }
  if (bidCount === 0) p.push('200 without any bid');
  return p;
}

function validateNative(where: string, imp: Obj, adm: string): string[] {
  const p: string[] = [];
  const np = nativePayload(imp.native);
  if (!np) return [`${where}: native bid on an imp without a readable native request`];
  let r: Obj;
  try {
    r = JSON.parse(adm) as Obj;
  } catch {
    return [`${where}: native adm is not JSON`];
  }
  if (r.native && !r.assets) r = r.native as Obj;
  if (typeof r.link?.url !== 'string' || r.link.url === '') p.push(`${where}: native without link.url`);
  const reqAssets = new Map<number, Obj>();
  // An asset without an id (Native 1.2 requires one) is known by its position, as the bidder does.
  (list(np.assets) as Obj[]).forEach((a, i) => reqAssets.set(num(a.id, i), a));
  const got = new Set<number>();
  for (const a of list(r.assets) as Obj[]) {
    const ra = reqAssets.get(num(a.id, -1));
    if (!ra) {
      p.push(`${where}: native asset id ${a.id} not requested`);
      continue;
    }
    got.add(num(a.id));
    if (a.title) {
      if (!ra.title) p.push(`${where}: asset ${a.id} answered as title`);
      else if (num(ra.title.len) > 0 && String(a.title.text).length > num(ra.title.len)) p.push(`${where}: title over len`);
    }
    if (a.data) {
      if (!ra.data) p.push(`${where}: asset ${a.id} answered as data`);
      else if (num(ra.data.len) > 0 && String(a.data.value).length > num(ra.data.len)) p.push(`${where}: data over len`);
    }
    if (a.img) {
      if (!ra.img) p.push(`${where}: asset ${a.id} answered as img`);
      else {
        const w = num(a.img.w);
        const h = num(a.img.h);
        if (num(ra.img.w) > 0 && num(ra.img.h) > 0 && (w !== num(ra.img.w) || h !== num(ra.img.h)) && !(num(ra.img.wmin) > 0)) {
          p.push(`${where}: img ${w}x${h} is not the requested ${ra.img.w}x${ra.img.h}`);
        }
        if (w < num(ra.img.wmin) || h < num(ra.img.hmin)) p.push(`${where}: img ${w}x${h} under the minimum`);
      }
    }
  }
  for (const [id, a] of reqAssets) if (num(a.required) === 1 && !got.has(id)) p.push(`${where}: required native asset ${id} missing`);
  if (Array.isArray(r.eventtrackers)) {
    const offered = Array.isArray(np.eventtrackers) ? (np.eventtrackers as Obj[]) : null;
    for (const et of r.eventtrackers as Obj[]) {
      if (offered === null) {
        if (num(et.method) !== 1) p.push(`${where}: eventtracker method ${et.method} not offered`);
        continue;
      }
      const ok = offered.some((o) => num(o.event) === num(et.event) && list(o.methods).map(Number).includes(num(et.method)));
      if (!ok) p.push(`${where}: eventtracker event ${et.event} method ${et.method} not offered`);
    }
  }
  return p;
}
