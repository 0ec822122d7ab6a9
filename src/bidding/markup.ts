/**
 * Ad markup: banner HTML and the VAST 4.1 InLine document, pure functions of the winning candidate
 * and its tracking URLs; the native version and tracker choice (Native 1.2 §5). The native markup
 * itself is JSON, written by response-json.ts. No I/O.
 */
import type { NativeImp } from '../openrtb/types';
import { BannerTemplate, cdataBody, escapeHtml, VastTemplate } from '../targeting/markup-template';
import type { Candidate } from '../targeting/types';

export { escapeHtml };

/** The click and impression URLs of a bid, plain and HTML-escaped (attribute values). */
export interface TrackingUrls {
  readonly click: string;
  readonly imp: string;
  readonly clickHtml: string;
  readonly impHtml: string;
}

/** TrackingUrls from plain URLs (the bid path builds the escaped forms without scanning). */
export function trackingUrls(click: string, imp: string): TrackingUrls {
  return { click, imp, clickHtml: escapeHtml(click), impHtml: escapeHtml(imp) };
}

/**
 * Banner: a linked image plus an impression pixel. Attribute values are single-quoted (escapeHtml
 * escapes both quotes), so the markup holds no `"` and needs no escaping inside the JSON response.
 */
export function bannerAdm(c: Candidate, urls: TrackingUrls): string {
  const b = c.banner;
  if (b === null) throw new Error(`candidate ${c.id} has no banner`);
  return renderBanner(new BannerTemplate(b), urls);
}

/** The banner markup from the candidate's compiled template (CandidateJson.banner). */
export function renderBanner(t: BannerTemplate, urls: TrackingUrls): string {
  return t.head + urls.clickHtml + t.mid + urls.impHtml + t.tail;
}

/** Video: VAST 4.1 InLine with impression and click tracking. `bidId` is the AdServingId. Attributes single-quoted, as for banners. */
export function vastAdm(c: Candidate, urls: TrackingUrls, bidId: string, mime: string): string {
  return renderVast(new VastTemplate(c), urls, bidId, mime);
}

/** The VAST markup from the candidate's compiled template (CandidateJson.vast). */
export function renderVast(t: VastTemplate, urls: TrackingUrls, bidId: string, mime: string): string {
  return t.head + escapeHtml(bidId) + t.afterId + cdataBody(urls.imp) + t.afterImp + t.mimeHtml(mime) + t.afterMime + cdataBody(urls.click) + t.tail;
}

/** Native event: impression (Native 1.2 §7.6), method 1 = image pixel. */
export const EVENT_IMPRESSION = 1;
export const METHOD_IMG = 1;

/** True when the request allows an image-pixel impression tracker (or lists no eventtrackers at all). */
function allowsImgImpression(n: NativeImp): boolean {
  const ets = n.eventtrackers;
  if (ets === null) return true;
  for (let i = 0; i < ets.length; i++) {
    const e = ets[i];
    if (e.event === EVENT_IMPRESSION && e.methods.includes(METHOD_IMG)) return true;
  }
  return false;
}

/** The response's version, root wrapper and impression tracker for a native request (see nativeAdm in response-json.ts). */
export function nativeVersion(n: NativeImp): { ver: '1.0' | '1.1' | '1.2'; legacy: boolean; tracker: 'eventtracker' | 'imptrackers' | null } {
  const legacy = n.ver.startsWith('1.0');
  const ver = legacy ? '1.0' : n.ver.startsWith('1.1') ? '1.1' : '1.2';
  const tracker = n.eventtrackers !== null && !legacy ? (allowsImgImpression(n) ? 'eventtracker' : null) : 'imptrackers';
  return { ver, legacy, tracker };
}
