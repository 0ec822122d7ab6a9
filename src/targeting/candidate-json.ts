/**
 * The parts of a bid's JSON text that depend only on the candidate, written once when the
 * candidate index is built (src/targeting/candidate-index.ts), so that the bid writer
 * (src/bidding/bidding.service.ts) concatenates them instead of serializing per bid.
 */
import { BannerTemplate, VastTemplate } from './markup-template';
import type { Candidate, CandidateJsonParts } from './types';

// Quote, backslash, control characters, surrogates (JSON.stringify escapes lone ones).
// eslint-disable-next-line no-control-regex
const NEEDS_ESCAPE = /["\\\u0000-\u001f\ud800-\udfff]/;

/** True when `JSON.stringify(s)` is `"` + s + `"`. */
export function isJsonSafe(s: string): boolean {
  return !NEEDS_ESCAPE.test(s);
}

export class CandidateJson implements CandidateJsonParts {
  /** `,"adomain":[…],"crid":…,"cid":…,"cat":[…],"attr":[…]`. */
  readonly fields: string;
  /**
   * The banner markup's campaign parts need no JSON escaping. The markup holds the image URL
   * HTML-escaped; the entities that adds are JSON-safe, so the URL itself being safe is enough.
   */
  readonly bannerSafe: boolean;
  /** The VAST markup's campaign parts need no JSON escaping. */
  readonly vastSafe: boolean;
  /** `,"ext":{"dsa":{"behalf":…,"paid":…,` (the writer adds the rest), or '' when the campaign has no DSA information. */
  readonly dsaHead: string;
  /** `"cid":…,"crid":…` of the response record's compact bid. */
  readonly recordIds: string;
  /** The banner and VAST markup with their campaign parts escaped once (markup-template.ts). */
  readonly banner: BannerTemplate | null;
  readonly vast: VastTemplate | null;

  constructor(c: Candidate) {
    this.fields =
      ',"adomain":' +
      JSON.stringify(c.adomain) +
      ',"crid":' +
      JSON.stringify(c.id) +
      ',"cid":' +
      JSON.stringify(c.campaignId) +
      ',"cat":' +
      JSON.stringify(c.cat) +
      ',"attr":' +
      JSON.stringify(c.attr);
    this.recordIds = `"cid":${JSON.stringify(c.campaignId)},"crid":${JSON.stringify(c.id)}`;
    this.bannerSafe = c.banner !== null && isJsonSafe(c.banner.imageUrl);
    this.vastSafe =
      c.video !== null && [c.id, c.campaignId, c.native?.title ?? '', c.adomain[0] ?? '', c.video.mediaUrl, ...c.video.mimes].every(isJsonSafe);
    const dsa = c.dsa ?? null;
    this.banner = c.banner === null ? null : new BannerTemplate(c.banner);
    this.vast = c.video === null ? null : new VastTemplate(c);
    this.dsaHead = dsa === null ? '' : `,"ext":{"dsa":{"behalf":${JSON.stringify(dsa.behalf)},"paid":${JSON.stringify(dsa.paid)},`;
  }
}
