// Builders for targeting tests: normalized requests/imps with defaults, candidates, and a small
// local normalizer that turns a raw OpenRTB sample file into the bidder's BidRequest shape
// (the real parser lives in the bid path; this one reads only what targeting needs).
import {
  NativeAssetKind,
  type BannerImp,
  type BidRequest,
  type Deal,
  type Imp,
  type NativeAssetReq,
  type NativeImp,
  type Pmp,
  type Size,
  type VideoImp,
} from '../../src/openrtb/types';
import { Auction, type CandidateIndex } from '../../src/targeting/campaign-store';
import { STATIC_RATES } from '../../src/currency/rates';
import type { Candidate, CandidateGate, Match, NoBidReason } from '../../src/targeting/types';

type Mutable<T> = { -readonly [K in keyof T]: T[K] };

/** One auction on a fresh Auction over the static rates; user-level data allowed unless said otherwise. */
export function select(index: CandidateIndex, i: Imp, req: BidRequest, cur = 'USD', gate: CandidateGate | null = null, userData = true): Match | NoBidReason {
  return new Auction(gate).select(index, i, req, cur, STATIC_RATES, userData);
}

/** Block lists as the parser leaves them: bcat lower-cased, badv lower-cased without "www.", bapp as given. */
export function blockLists(l: { bcat?: readonly string[]; badv?: readonly string[]; bapp?: readonly string[] }): Pick<BidRequest, 'bcat' | 'badv' | 'bapp'> {
  return {
    bcat: new Set((l.bcat ?? []).map((c) => c.toLowerCase())),
    badv: new Set((l.badv ?? []).map((d) => d.toLowerCase().replace(/^www\./, ''))),
    bapp: new Set(l.bapp ?? []),
  };
}

type RequestOver = Partial<Omit<Mutable<BidRequest>, 'bcat' | 'badv' | 'bapp'>> & { bcat?: string[]; badv?: string[]; bapp?: string[] };

export function bidRequest(over: RequestOver = {}): BidRequest {
  const { bcat, badv, bapp, ...rest } = over;
  return {
    id: 'req-1',
    imps: [],
    cur: [],
    at: 2,
    ...blockLists({ bcat, badv, bapp }),
    inventory: 'site',
    bundle: '',
    domain: 'news.example',
    publisher: 'pub',
    deviceType: 0,
    os: '',
    country: '',
    userId: '',
    userKey: '',
    source: 0,
    tmax: 0,
    test: false,
    coppa: false,
    dsa: null,
    ...rest,
  };
}

export function bannerImp(sizes: Size[] = [{ w: 300, h: 250 }], battr: number[] = []): BannerImp {
  return { sizes, battr };
}

export function videoImp(over: Partial<Mutable<VideoImp>> = {}): VideoImp {
  return { mimes: ['video/mp4'], minduration: 5, maxduration: 30, protocols: [2, 3, 5, 6], w: 640, h: 480, battr: [], ...over };
}

export function title(id: number, len: number, required = true): NativeAssetReq {
  return { id, required, kind: NativeAssetKind.Title, len, type: 0, w: 0, h: 0, wmin: 0, hmin: 0 };
}
export function img(id: number, type: number, size: { w?: number; h?: number; wmin?: number; hmin?: number }, required = true): NativeAssetReq {
  return { id, required, kind: NativeAssetKind.Img, len: 0, type, w: size.w ?? 0, h: size.h ?? 0, wmin: size.wmin ?? 0, hmin: size.hmin ?? 0 };
}
export function data(id: number, type: number, len: number, required = true): NativeAssetReq {
  return { id, required, kind: NativeAssetKind.Data, len, type, w: 0, h: 0, wmin: 0, hmin: 0 };
}
export function videoAsset(id: number, required = true): NativeAssetReq {
  return { id, required, kind: NativeAssetKind.Video, len: 0, type: 0, w: 0, h: 0, wmin: 0, hmin: 0 };
}
export function nativeImp(assets: NativeAssetReq[], battr: number[] = []): NativeImp {
  return { ver: '1.2', assets, eventtrackers: null, battr };
}

export function deal(id: string, bidfloor = 0, bidfloorcur = 'USD'): Deal {
  return { id, bidfloor, bidfloorcur };
}
export function pmp(deals: Deal[], privateAuction = false): Pmp {
  return { privateAuction, deals };
}

export function imp(over: Partial<Mutable<Imp>> = {}): Imp {
  return { id: '1', secure: false, bidfloor: 0, bidfloorcur: 'USD', banner: null, video: null, native: null, pmp: null, ...over };
}

let seq = 0;
type CandidateOver = Partial<Omit<Mutable<Candidate>, 'targeting'>> & { targeting?: Partial<Candidate['targeting']> };

/** A candidate with every field set; kind-specific parts default from `kind`. */
export function candidate(over: CandidateOver = {}): Candidate {
  seq += 1;
  const kind = over.kind ?? 'banner';
  const id = over.id ?? `cr-${seq}`;
  const base: Candidate = {
    id,
    campaignId: 'cmp-1',
    kind,
    adomain: ['brand.example'],
    cat: ['IAB3-1'],
    attr: [],
    price: 1,
    landingUrl: 'https://brand.example/landing',
    secure: true,
    banner: kind === 'banner' ? { w: 300, h: 250, imageUrl: `https://cdn.example/${id}.png` } : null,
    native:
      kind === 'native'
        ? {
            title: 'A title of 20 chars.',
            description: 'A description.',
            sponsoredBy: 'Brand',
            cta: 'Shop now',
            image: { url: `https://cdn.example/${id}-main.jpg`, w: 1200, h: 627 },
            icon: { url: `https://cdn.example/${id}-icon.png`, w: 80, h: 80 },
          }
        : null,
    video:
      kind === 'video'
        ? { mimes: ['video/mp4'], duration: 15, protocols: [2, 3, 5, 6], w: 1280, h: 720, mediaUrl: `https://cdn.example/${id}.mp4`, bitrate: 1200 }
        : null,
    targeting: { inventory: null, deviceTypes: [], os: [], countries: [] },
    deals: [],
    dealsOnly: false,
    bundle: null,
    budget: { total: 1000, daily: 100 },
    frequencyCap: null,
  };
  const { targeting, ...rest } = over;
  return { ...base, ...rest, targeting: { ...base.targeting, ...targeting } };
}

// ---- raw sample → normalized request -------------------------------------------------------------

type Raw = Record<string, unknown>;
const obj = (v: unknown): Raw | null => (typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Raw) : null);
const arr = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);
const num = (v: unknown): number => (typeof v === 'number' ? v : typeof v === 'string' && v.trim() !== '' && !isNaN(Number(v)) ? Number(v) : 0);
const str = (v: unknown): string => (typeof v === 'string' ? v : typeof v === 'number' ? String(v) : '');
const strs = (v: unknown): string[] => arr(v).filter((x): x is string => typeof x === 'string');
const nums = (v: unknown): number[] => arr(v).map(num);

function nativeFrom(n: Raw): NativeImp | null {
  let r: unknown = n.request;
  if (typeof r === 'string') {
    try {
      r = JSON.parse(r);
    } catch {
      return null; // a placeholder string: nothing to bid on
    }
  }
  let o = obj(r);
  if (o && obj(o.native)) o = obj(o.native);
  if (!o) return null;
  const assets: NativeAssetReq[] = [];
  arr(o.assets).forEach((a0, i) => {
    const a = obj(a0);
    if (!a) return;
    const id = a.id === undefined ? i : num(a.id);
    const required = num(a.required) === 1 || a.required === true;
    const t = obj(a.title);
    const im = obj(a.img);
    const d = obj(a.data);
    const base = { id, required, len: 0, type: 0, w: 0, h: 0, wmin: 0, hmin: 0 };
    if (t) assets.push({ ...base, kind: NativeAssetKind.Title, len: num(t.len) });
    else if (im) assets.push({ ...base, kind: NativeAssetKind.Img, type: num(im.type), w: num(im.w), h: num(im.h), wmin: num(im.wmin), hmin: num(im.hmin) });
    else if (d) assets.push({ ...base, kind: NativeAssetKind.Data, type: num(d.type), len: num(d.len) });
    else if (obj(a.video)) assets.push({ ...base, kind: NativeAssetKind.Video });
  });
  const et = o.eventtrackers === undefined ? null : arr(o.eventtrackers).map((e) => ({ event: num(obj(e)?.event), methods: nums(obj(e)?.methods) }));
  return { ver: str(o.ver) || '1.2', assets, eventtrackers: et, battr: nums(n.battr) };
}

/** Raw OpenRTB request (or a Prebid test file with `mockBidRequest`) → normalized BidRequest. */
export function normalizeSample(file: unknown): BidRequest {
  const root = obj(file) ?? {};
  const r = obj(root.mockBidRequest) ?? root;
  const imps: Imp[] = arr(r.imp).map((i0) => {
    const i = obj(i0) ?? {};
    const b = obj(i.banner);
    const v = obj(i.video);
    const n = obj(i.native);
    const p = obj(i.pmp);
    let banner: BannerImp | null = null;
    if (b) {
      const fmt = arr(b.format).map((f) => ({ w: num(obj(f)?.w), h: num(obj(f)?.h) }));
      const sizes = fmt.length > 0 ? fmt : b.w !== undefined && b.h !== undefined ? [{ w: num(b.w), h: num(b.h) }] : [];
      banner = { sizes, battr: nums(b.battr) };
    }
    const video: VideoImp | null = v
      ? {
          mimes: strs(v.mimes),
          minduration: num(v.minduration),
          maxduration: num(v.maxduration),
          protocols: [...nums(v.protocols), ...(v.protocol !== undefined ? [num(v.protocol)] : [])],
          w: num(v.w),
          h: num(v.h),
          battr: nums(v.battr),
        }
      : null;
    return {
      id: str(i.id),
      secure: num(i.secure) === 1,
      bidfloor: num(i.bidfloor),
      bidfloorcur: str(i.bidfloorcur) || 'USD',
      banner,
      video,
      native: n ? nativeFrom(n) : null,
      pmp: p
        ? {
            privateAuction: num(p.private_auction) === 1,
            deals: arr(p.deals).map((d0) => {
              const d = obj(d0) ?? {};
              return { id: str(d.id), bidfloor: num(d.bidfloor), bidfloorcur: str(d.bidfloorcur) || 'USD' };
            }),
          }
        : null,
    };
  });
  const app = obj(r.app);
  const site = obj(r.site);
  const device = obj(r.device) ?? {};
  const geo = obj(device.geo) ?? {};
  const user = obj(r.user) ?? {};
  return {
    id: str(r.id),
    imps,
    at: r.at === 1 ? 1 : 2,
    cur: strs(r.cur).map((c) => c.toUpperCase()),
    ...blockLists({ bcat: strs(r.bcat), badv: strs(r.badv), bapp: strs(r.bapp) }),
    inventory: app ? 'app' : obj(r.dooh) ? 'dooh' : 'site',
    bundle: app ? str(app.bundle) : '',
    domain: str((app ?? site ?? {}).domain),
    publisher: str(obj((app ?? site ?? {}).publisher)?.name),
    deviceType: num(device.devicetype),
    os: str(device.os).toLowerCase(),
    country: str(geo.country).toUpperCase(),
    userId: str(user.id) || str(device.ifa),
    userKey: str(user.id) || str(device.ifa),
    source: 0,
    tmax: num(r.tmax),
    test: num(r.test) === 1,
    coppa: num(obj(r.regs)?.coppa) === 1,
    dsa: null,
  };
}
