/** Campaigns for the campaign file (format: data/README.md), as tests write them. */

/**
 * A campaign with one banner creative of `size` at 1.00 CPM (its image and landing page on the
 * campaign's own domain); `extra` (budget, pacing, caps, ...) is laid over the defaults.
 */
export function bannerCampaign(id: string, size: { w: number; h: number }, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    id,
    adomain: [`${id}.example`],
    cat: ['IAB3'],
    landingUrl: `https://${id}.example/landing`,
    ...extra,
    creatives: [{ id: `${id}-cr`, type: 'banner', price: 1, banner: { ...size, imageUrl: `https://cdn.${id}.example/a.png` } }],
  };
}
