/**
 * Ad markup: banner HTML and the VAST 4.1 InLine document, pure functions of the winning candidate
 * and its tracking URLs; the native version and tracker choice (Native 1.2 §5). The native markup
 * itself is JSON, written by response-json.ts. No I/O.
 */
import type { NativeImp } from '../openrtb/types';
import type { Candidate } from '../targeting/types';

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

const HTML_ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };
const HTML_SPECIAL = /[&<>"']/g;

export function escapeHtml(s: string): string {
  return HTML_SPECIAL.test(s) ? s.replace(HTML_SPECIAL, (c) => HTML_ESCAPES[c] ?? c) : s;
}

/**
 * Banner: a linked image plus an impression pixel. Attribute values are single-quoted (escapeHtml
 * escapes both quotes), so the markup holds no `"` and needs no escaping inside the JSON response.
 */
export function bannerAdm(c: Candidate, urls: TrackingUrls): string {
  const b = c.banner;
  if (b === null) throw new Error(`candidate ${c.id} has no banner`);
  return (
    `<a href='${urls.clickHtml}' target='_blank' rel='noopener'>` +
    `<img src='${escapeHtml(b.imageUrl)}' width='${b.w}' height='${b.h}' alt='' style='border:0'></a>` +
    `<img src='${urls.impHtml}' width='1' height='1' alt='' style='display:none'>`
  );
}

function cdata(s: string): string {
  return `<![CDATA[${s.replace(/]]>/g, ']]]]><![CDATA[>')}]]>`;
}

function vastDuration(seconds: number): string {
  const s = Math.max(0, Math.round(seconds));
  const hh = String(Math.floor(s / 3600)).padStart(2, '0');
  const mm = String(Math.floor((s % 3600) / 60)).padStart(2, '0');
  const ss = String(s % 60).padStart(2, '0');
  return `${hh}:${mm}:${ss}.000`;
}

/** Video: VAST 4.1 InLine with impression and click tracking. `bidId` is the AdServingId. Attributes single-quoted, as for banners. */
export function vastAdm(c: Candidate, urls: TrackingUrls, bidId: string, mime: string): string {
  const v = c.video;
  if (v === null) throw new Error(`candidate ${c.id} has no video`);
  const id = escapeHtml(c.id);
  return (
    `<VAST version='4.1'><Ad id='${id}'><InLine>` +
    `<AdSystem version='1'>openrtb-bidder</AdSystem>` +
    `<AdServingId>${escapeHtml(bidId)}</AdServingId>` +
    `<AdTitle>${escapeHtml(c.native?.title ?? c.id)}</AdTitle>` +
    `<Advertiser>${escapeHtml(c.adomain[0] ?? '')}</Advertiser>` +
    `<Impression id='imp'>${cdata(urls.imp)}</Impression>` +
    `<Creatives><Creative id='${id}' adId='${escapeHtml(c.campaignId)}'>` +
    `<UniversalAdId idRegistry='unknown'>${id}</UniversalAdId>` +
    `<Linear><Duration>${vastDuration(v.duration)}</Duration>` +
    `<MediaFiles><MediaFile delivery='progressive' type='${escapeHtml(mime)}' width='${v.w}' height='${v.h}' bitrate='${v.bitrate}'>` +
    `${cdata(v.mediaUrl)}</MediaFile></MediaFiles>` +
    `<VideoClicks><ClickThrough id='click'>${cdata(urls.click)}</ClickThrough></VideoClicks>` +
    `</Linear></Creative></Creatives></InLine></Ad></VAST>`
  );
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
