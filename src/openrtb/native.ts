/**
 * The Native 1.x request of an imp (`imp.native.request`): a JSON string or an object, with or
 * without the Native 1.0 `{"native": …}` wrapper. A request that cannot be understood removes native
 * from that imp (null) rather than failing the bid request; a field it has past a limit is a 400.
 */
import { NativeAssetKind, type NativeAssetReq, type NativeEventTrackerReq, type NativeImp } from './types';
import { REQUEST_LIMITS as L } from './limits';
import { flag, intList, isObj, nonNeg, num, overLimit, px, type Obj } from './fields';

/**
 * The Native request payload: a JSON string or an object, maybe wrapped in `{"native": …}`.
 * Returns null when it cannot be understood: the imp then simply cannot take a native bid.
 */
function parseNativePayload(request: unknown, ver: string): { ver: string; payload: Obj } | null {
  let payload: unknown = request;
  if (typeof payload === 'string') {
    try {
      payload = JSON.parse(payload);
    } catch {
      return null;
    }
  }
  if (!isObj(payload)) return null;
  if (isObj(payload.native) && payload.assets === undefined) payload = payload.native;
  if (!isObj(payload)) return null;
  const pv = payload.ver;
  const v = typeof pv === 'string' && pv !== '' ? pv : typeof pv === 'number' ? String(pv) : ver;
  return { ver: v, payload };
}

type NativeCore = Omit<NativeImp, 'battr'>;

/**
 * The cache's bounds: entries, and characters of text in all (2 Mi: 2 MiB of one-byte text, 4 MiB at
 * most), besides the readings themselves (~1 KB each, measured on the load test's texts). Real
 * native requests are a few hundred characters; a publisher network sends one per placement
 * template, and the load test's generated pool holds 680 distinct ones. At 512 entries, oldest out,
 * a rotation over more texts than that never hit (every imp read and frozen afresh: 19 µs per bid
 * request of `npm run profile -- --mix loadtest`, bench/README.md).
 */
const NATIVE_CACHE_MAX = 4096;
const NATIVE_CACHE_MAX_CHARS = 2 * 1024 * 1024;
/** Characters; a text longer than this is read every time and never kept. */
const NATIVE_CACHE_MAX_TEXT = 8 * 1024;

/**
 * Native requests sent as JSON strings, already read, by their text: an exchange sends the same few
 * per placement, and reading one (JSON.parse of the string, then the assets) is most of what a
 * native imp costs the reader. Only requests read without error are kept; bounded in entries and
 * in characters (NATIVE_CACHE_MAX, NATIVE_CACHE_MAX_CHARS), oldest out. The bid path owns one
 * (BiddingService) and passes it to parseBidRequest; without one every native request is read afresh.
 */
export class NativeRequestCache {
  private readonly m = new Map<string, { outerVer: string; core: NativeCore | null }>();
  private textChars = 0;

  get size(): number {
    return this.m.size;
  }

  /** Characters of the texts kept. */
  get chars(): number {
    return this.textChars;
  }

  /** The reading of `request` under `outerVer`, read and kept on first sight. */
  read(request: string, outerVer: string, path: string): NativeCore | null {
    let hit = this.m.get(request);
    if (hit === undefined || hit.outerVer !== outerVer) {
      // Frozen: one cached reading is shared by every request that sends this text.
      const core = deepFreeze(parseNativeCore(request, outerVer, path));
      if (hit === undefined) {
        this.textChars += request.length;
        while (this.m.size >= NATIVE_CACHE_MAX || (this.textChars > NATIVE_CACHE_MAX_CHARS && this.m.size > 0)) {
          const oldest = this.m.keys().next().value!;
          this.m.delete(oldest);
          this.textChars -= oldest.length;
        }
      }
      hit = { outerVer, core };
      this.m.set(request, hit);
    }
    return hit.core;
  }
}

export function parseNative(n: Obj, path: string, natives: NativeRequestCache | null): NativeImp | null {
  const battr = intList(n, 'battr', path, L.battr);
  if (typeof n.request === 'string' && n.request.length > L.nativeRequestChars) overLimit(`${path}.request`, L.nativeRequestChars, 'characters');
  const outerVer = typeof n.ver === 'string' && n.ver !== '' ? n.ver : '1.2';
  const request = n.request;
  // Long texts are read every time: the cache must stay small whatever clients send.
  if (natives === null || typeof request !== 'string' || request.length > NATIVE_CACHE_MAX_TEXT) {
    const core = parseNativeCore(request, outerVer, path);
    return core === null ? null : { ...core, battr };
  }
  const core = natives.read(request, outerVer, path);
  return core === null ? null : { ver: core.ver, assets: core.assets, eventtrackers: core.eventtrackers, battr };
}

function deepFreeze<T>(v: T): T {
  if (v !== null && typeof v === 'object' && !Object.isFrozen(v)) {
    for (const k of Object.keys(v)) deepFreeze((v as Record<string, unknown>)[k]);
    Object.freeze(v);
  }
  return v;
}

function parseNativeCore(request: unknown, outerVer: string, path: string): NativeCore | null {
  const parsed = parseNativePayload(request, outerVer);
  if (parsed === null) return null;
  const p = parsed.payload;
  const pPath = `${path}.request`;
  const rawAssets = p.assets;
  if (!Array.isArray(rawAssets) || rawAssets.length === 0) return null;
  if (rawAssets.length > L.smallList) overLimit(`${pPath}.assets`, L.smallList, 'entries');
  const assets: NativeAssetReq[] = [];
  for (let i = 0; i < rawAssets.length; i++) {
    const a: unknown = rawAssets[i];
    const ap = `${pPath}.assets[${i}]`;
    if (!isObj(a)) return null;
    // Native 1.2 requires an id; some senders omit it: the asset's position stands in for it.
    const id = num(a, 'id', ap, i);
    const required = flag(a, 'required', ap);
    let kind: NativeAssetKind;
    let body: Obj;
    if (isObj(a.title)) {
      kind = NativeAssetKind.Title;
      body = a.title;
    } else if (isObj(a.img)) {
      kind = NativeAssetKind.Img;
      body = a.img;
    } else if (isObj(a.data)) {
      kind = NativeAssetKind.Data;
      body = a.data;
    } else if (isObj(a.video)) {
      kind = NativeAssetKind.Video;
      body = a.video;
    } else {
      // An asset of a kind we don't know: harmless unless required.
      if (required) return null;
      continue;
    }
    assets.push({
      id,
      required,
      kind,
      len: nonNeg(body, 'len', ap, 0),
      type: nonNeg(body, 'type', ap, 0),
      w: px(body, 'w', ap),
      h: px(body, 'h', ap),
      wmin: px(body, 'wmin', ap),
      hmin: px(body, 'hmin', ap),
    });
  }
  let eventtrackers: NativeEventTrackerReq[] | null = null;
  if (Array.isArray(p.eventtrackers)) {
    if (p.eventtrackers.length > L.smallList) overLimit(`${pPath}.eventtrackers`, L.smallList, 'entries');
    eventtrackers = [];
    for (let i = 0; i < p.eventtrackers.length; i++) {
      const e: unknown = p.eventtrackers[i];
      if (!isObj(e)) continue;
      const ep = `${pPath}.eventtrackers[${i}]`;
      eventtrackers.push({ event: num(e, 'event', ep, 0), methods: intList(e, 'methods', ep) });
    }
  }
  return { ver: parsed.ver, assets, eventtrackers };
}
