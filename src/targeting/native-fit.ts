/**
 * Native 1.2 asset matching (request §4, response §5): whether a candidate can fill an imp's
 * native assets, and the fills of the winner. Pure functions of the index entry and the assets.
 */
import { NativeAssetKind, type NativeAssetReq } from '../openrtb/types';
import { NativeShape, type Entry } from './candidate-index';
import type { NativeFill } from './types';

/**
 * Native 1.2 image size: `wmin`/`hmin` are minimums; without them `w`/`h` ask for that exact size;
 * with neither any size fits. Each dimension is checked on its own.
 */
function imgFits(w: number, h: number, a: NativeAssetReq): boolean {
  if (w === 0) return false;
  if (a.wmin > 0 ? w < a.wmin : a.w > 0 && w !== a.w) return false;
  if (a.hmin > 0 ? h < a.hmin : a.h > 0 && h !== a.h) return false;
  return true;
}

const IMG_NONE = 0;
const IMG_MAIN = 1;
const IMG_ICON = 2;

/** Which image answers an img asset: type 3 main, type 1 icon (2, "logo" in Native 1.0/1.1, too), no type: main else icon. */
function imgChoice(e: Entry, a: NativeAssetReq): number {
  switch (a.type) {
    case 3:
      return imgFits(e.nImgW, e.nImgH, a) ? IMG_MAIN : IMG_NONE;
    case 1:
    case 2:
      return imgFits(e.nIconW, e.nIconH, a) ? IMG_ICON : IMG_NONE;
    case 0:
      if (imgFits(e.nImgW, e.nImgH, a)) return IMG_MAIN;
      return imgFits(e.nIconW, e.nIconH, a) ? IMG_ICON : IMG_NONE;
    default:
      return IMG_NONE;
  }
}

/** Length of the candidate's value for a Native data type (1 sponsored, 2 desc, 12 ctatext); 0 when it has none or we don't support the type. */
function dataLen(e: Entry, type: number): number {
  switch (type) {
    case 1:
      return e.nSponsoredLen;
    case 2:
      return e.nDescLen;
    case 12:
      return e.nCtaLen;
    default:
      return 0;
  }
}

/** Can this candidate fill this asset? A value longer than `len` cannot (it is not cut). */
function assetFits(e: Entry, a: NativeAssetReq): boolean {
  switch (a.kind) {
    case NativeAssetKind.Title:
      return e.nTitleLen > 0 && (a.len === 0 || e.nTitleLen <= a.len);
    case NativeAssetKind.Img:
      return imgChoice(e, a) !== IMG_NONE;
    case NativeAssetKind.Data: {
      const n = dataLen(e, a.type);
      return n > 0 && (a.len === 0 || n <= a.len);
    }
    default:
      // Native video assets (and anything unknown) are not supported.
      return false;
  }
}

/** Every required asset fillable, and at least one asset filled in all. */
export function nativeFits(e: Entry, assets: readonly NativeAssetReq[]): boolean {
  let filled = 0;
  for (let i = 0; i < assets.length; i++) {
    const a = assets[i];
    if (assetFits(e, a)) filled++;
    else if (a.required) return false;
  }
  return filled > 0;
}

/** The shape (NativeShape bits) a creative must have to fill the required image assets. */
export function nativeNeed(assets: readonly NativeAssetReq[]): number {
  let need = 0;
  for (let i = 0; i < assets.length; i++) {
    const a = assets[i];
    if (!a.required || a.kind !== NativeAssetKind.Img) continue;
    if (a.type === 3) need |= NativeShape.Image;
    else if (a.type === 1 || a.type === 2) need |= NativeShape.Icon;
  }
  return need;
}

/** The assets to return, in request order: every fillable asset (so every required one). */
export function nativeFills(e: Entry, assets: readonly NativeAssetReq[]): NativeFill[] {
  const n = e.c.native;
  const out: NativeFill[] = [];
  if (n === null) return out;
  for (let i = 0; i < assets.length; i++) {
    const a = assets[i];
    if (!assetFits(e, a)) continue;
    switch (a.kind) {
      case NativeAssetKind.Title:
        out.push({ assetId: a.id, kind: a.kind, text: n.title, img: null });
        break;
      case NativeAssetKind.Img:
        out.push({ assetId: a.id, kind: a.kind, text: '', img: imgChoice(e, a) === IMG_MAIN ? n.image : n.icon });
        break;
      case NativeAssetKind.Data:
        out.push({ assetId: a.id, kind: a.kind, text: a.type === 1 ? n.sponsoredBy : a.type === 2 ? n.description : n.cta, img: null });
        break;
      default:
        break;
    }
  }
  return out;
}
