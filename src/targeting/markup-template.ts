/**
 * Banner and VAST markup as templates compiled once per candidate when the candidate index is
 * built: what depends only on the campaign is HTML-escaped (and CDATA-wrapped) here, so writing a
 * bid's markup concatenates these parts with the few that vary per bid (the tracking URLs, the bid
 * id, the chosen mime). src/bidding/markup.ts renders them. No I/O.
 */
/** What the VAST template reads of a candidate (a Candidate, types.ts). */
interface VastSource {
  readonly id: string;
  readonly campaignId: string;
  readonly adomain: readonly string[];
  readonly native: { readonly title: string } | null;
  readonly video: {
    readonly mimes: readonly string[];
    readonly duration: number;
    readonly w: number;
    readonly h: number;
    readonly bitrate: number;
    readonly mediaUrl: string;
  } | null;
}

const HTML_ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };
const HTML_SPECIAL = /[&<>"']/g;

export function escapeHtml(s: string): string {
  return HTML_SPECIAL.test(s) ? s.replace(HTML_SPECIAL, (c) => HTML_ESCAPES[c] ?? c) : s;
}

/** The inside of a CDATA section holding `s` (`]]>` split across two sections). */
export function cdataBody(s: string): string {
  return s.includes(']]>') ? s.replace(/]]>/g, ']]]]><![CDATA[>') : s;
}

function cdata(s: string): string {
  return `<![CDATA[${cdataBody(s)}]]>`;
}

function vastDuration(seconds: number): string {
  const s = Math.max(0, Math.round(seconds));
  const hh = String(Math.floor(s / 3600)).padStart(2, '0');
  const mm = String(Math.floor((s % 3600) / 60)).padStart(2, '0');
  const ss = String(s % 60).padStart(2, '0');
  return `${hh}:${mm}:${ss}.000`;
}

/**
 * Banner: a linked image plus an impression pixel, `head + clickHtml + mid + impHtml + tail`.
 * Attribute values are single-quoted (escapeHtml escapes both quotes), so the markup holds no `"`.
 */
export class BannerTemplate {
  readonly head = `<a href='`;
  readonly mid: string;
  readonly tail = `' width='1' height='1' alt='' style='display:none'>`;

  constructor(b: { readonly w: number; readonly h: number; readonly imageUrl: string }) {
    this.mid = `' target='_blank' rel='noopener'><img src='${escapeHtml(b.imageUrl)}' width='${b.w}' height='${b.h}' alt='' style='border:0'></a><img src='`;
  }
}

/**
 * VAST 4.1 InLine: `head + bidIdHtml + afterId + cdataBody(impUrl) + afterImp + mimeHtml +
 * afterMime + cdataBody(clickUrl) + tail`. The ad and creative ids are the candidate's.
 */
export class VastTemplate {
  readonly head: string;
  readonly afterId: string;
  readonly afterImp: string;
  readonly afterMime: string;
  readonly tail = `]]></ClickThrough></VideoClicks></Linear></Creative></Creatives></InLine></Ad></VAST>`;
  /** The candidate's mimes as given, and HTML-escaped (the same order). */
  readonly mimes: readonly string[];
  readonly mimesHtml: readonly string[];

  constructor(c: VastSource) {
    const v = c.video;
    if (v === null) throw new Error(`candidate ${c.id} has no video`);
    const id = escapeHtml(c.id);
    this.head = `<VAST version='4.1'><Ad id='${id}'><InLine><AdSystem version='1'>openrtb-bidder</AdSystem><AdServingId>`;
    this.afterId =
      `</AdServingId>` +
      `<AdTitle>${escapeHtml(c.native?.title ?? c.id)}</AdTitle>` +
      `<Advertiser>${escapeHtml(c.adomain[0] ?? '')}</Advertiser>` +
      `<Impression id='imp'><![CDATA[`;
    this.afterImp =
      `]]></Impression>` +
      `<Creatives><Creative id='${id}' adId='${escapeHtml(c.campaignId)}'>` +
      `<UniversalAdId idRegistry='unknown'>${id}</UniversalAdId>` +
      `<Linear><Duration>${vastDuration(v.duration)}</Duration>` +
      `<MediaFiles><MediaFile delivery='progressive' type='`;
    this.afterMime =
      `' width='${v.w}' height='${v.h}' bitrate='${v.bitrate}'>` +
      `${cdata(v.mediaUrl)}</MediaFile></MediaFiles>` +
      `<VideoClicks><ClickThrough id='click'><![CDATA[`;
    this.mimes = v.mimes;
    this.mimesHtml = v.mimes.map(escapeHtml);
  }

  /** The HTML-escaped form of `mime` (one of the candidate's, escaped once; any other now). */
  mimeHtml(mime: string): string {
    const i = this.mimes.indexOf(mime);
    return i >= 0 ? this.mimesHtml[i] : escapeHtml(mime);
  }
}
