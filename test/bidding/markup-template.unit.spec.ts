import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { renderBanner, renderVast, trackingUrls } from '../../src/bidding/markup';
import { CandidateJson } from '../../src/targeting/candidate-json';
import type { Candidate } from '../../src/targeting/types';

// The markup as it was written per bid before the templates: the reference the compiled templates must match byte for byte.
const ESC: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };
const esc = (s: string): string => s.replace(/[&<>"']/g, (ch) => ESC[ch]);
const cdata = (s: string): string => `<![CDATA[${s.replace(/]]>/g, ']]]]><![CDATA[>')}]]>`;
function refBanner(c: Candidate, clickHtml: string, impHtml: string): string {
  const b = c.banner!;
  return (
    `<a href='${clickHtml}' target='_blank' rel='noopener'>` +
    `<img src='${esc(b.imageUrl)}' width='${b.w}' height='${b.h}' alt='' style='border:0'></a>` +
    `<img src='${impHtml}' width='1' height='1' alt='' style='display:none'>`
  );
}
function refVast(c: Candidate, click: string, imp: string, bidId: string, mime: string): string {
  const v = c.video!;
  const id = esc(c.id);
  return (
    `<VAST version='4.1'><Ad id='${id}'><InLine>` +
    `<AdSystem version='1'>openrtb-bidder</AdSystem>` +
    `<AdServingId>${esc(bidId)}</AdServingId>` +
    `<AdTitle>${esc(c.native?.title ?? c.id)}</AdTitle>` +
    `<Advertiser>${esc(c.adomain[0] ?? '')}</Advertiser>` +
    `<Impression id='imp'>${cdata(imp)}</Impression>` +
    `<Creatives><Creative id='${id}' adId='${esc(c.campaignId)}'>` +
    `<UniversalAdId idRegistry='unknown'>${id}</UniversalAdId>` +
    `<Linear><Duration>01:02:05.000</Duration>` +
    `<MediaFiles><MediaFile delivery='progressive' type='${esc(mime)}' width='${v.w}' height='${v.h}' bitrate='${v.bitrate}'>` +
    `${cdata(v.mediaUrl)}</MediaFile></MediaFiles>` +
    `<VideoClicks><ClickThrough id='click'>${cdata(click)}</ClickThrough></VideoClicks>` +
    `</Linear></Creative></Creatives></InLine></Ad></VAST>`
  );
}

const tricky = `q"u'o<t>e&amp; Ünïcödé 日本語 🎬 \u2028 ]]> end`;
const candidate: Candidate = {
  id: `cr-${tricky}`, campaignId: `c<"&'>${tricky}`, kind: 'video', adomain: [`brand&<"'>.example`], cat: ['IAB1'], attr: [], price: 1,
  landingUrl: 'https://brand.example/', secure: true,
  banner: { w: 300, h: 250, imageUrl: `https://cdn.example/a.png?x=1&y=2&t='"<>${tricky}` },
  native: { title: `Title ${tricky}`, description: '', sponsoredBy: '', cta: '', image: null, icon: null },
  video: { mimes: ['video/mp4', `video/x-"odd'&<>`], duration: 3725, protocols: [2, 3], w: 640, h: 360, mediaUrl: `https://cdn.example/v.mp4?a=]]>&b=${tricky}`, bitrate: 800 },
  targeting: { inventory: null, deviceTypes: [], os: [], countries: [] }, deals: [],
};

describe('compiled markup templates', () => {
  const cj = new CandidateJson(candidate);
  const click = `https://t.example/t/click?p=a+b$c&s=x']]>"<`;
  const imp = `https://t.example/t/imp?p=日本&s=x]]>`;
  const urls = trackingUrls(click, imp);

  it('banner: byte-identical to the per-bid markup for quotes, <, & and non-Latin-1 text', () => {
    const adm = renderBanner(cj.banner!, urls);
    assert.equal(adm, refBanner(candidate, urls.clickHtml, urls.impHtml));
    assert.ok(adm.includes('&#39;&quot;&lt;&gt;'));
    assert.ok(adm.includes('日本語 🎬'));
  });

  it('VAST: byte-identical for each of the candidate\'s mimes and for a mime it does not list', () => {
    for (const mime of [...candidate.video!.mimes, `video/<webm>&"'`]) {
      const adm = renderVast(cj.vast!, urls, `bid-'"<&>`, mime);
      assert.equal(adm, refVast(candidate, click, imp, `bid-'"<&>`, mime));
    }
    assert.ok(renderVast(cj.vast!, urls, 'b', 'video/mp4').includes(']]]]><![CDATA[>'));
  });

  it('a candidate without banner or video has no template', () => {
    const bare = new CandidateJson({ ...candidate, banner: null, video: null });
    assert.equal(bare.banner, null);
    assert.equal(bare.vast, null);
  });
});
