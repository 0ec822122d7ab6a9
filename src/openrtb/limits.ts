/**
 * Limits on what a bid request may hold. Past any of them the request is answered 400 with a reason
 * naming the field and the limit, so the work and the output of one request stay bounded and linear
 * in its size: nothing a client sends is scanned as a product of two lists, and nothing copied into
 * the answer (ids, names) can make it grow past a fixed multiple of these figures. Real exchanges stay
 * far below them (README, "Request limits").
 */
export const REQUEST_LIMITS = Object.freeze({
  /** Nesting of objects and arrays in the JSON body. */
  depth: 64,
  /** `imp` entries. */
  imps: 100,
  /** Characters of every string the bidder reads: ids (request, imp, deal, user), names, domains, bundles. */
  idChars: 256,
  /** `banner.format` entries. */
  formats: 64,
  /** Entries of `bcat`, `badv`, `bapp`, `cur`. */
  listEntries: 512,
  /** `battr` entries of one banner, video or native object. */
  battr: 64,
  /** `pmp.deals` entries. */
  deals: 64,
  /** Entries of the other lists read (video `mimes`, `protocols`, native `assets`, `eventtrackers`, DSA `transparency`). */
  smallList: 64,
  /** Characters of `native.request` when sent as a JSON string. */
  nativeRequestChars: 16 * 1024,
  /** Width and height in pixels (banner formats, native images): size keys are w × 65536 + h. */
  pixels: 65535,
});
