/**
 * Every line of the bid log is well-formed UTF-8 JSON, whatever a request carried
 * (docs/log-pipeline.md, "Records"). A JavaScript string may hold a lone surrogate (a request's
 * `"id":"x\ud800"` parses to one); JSON.stringify writes it as the escape `\ud800`, which is valid
 * JSON to JavaScript but names no character, and a strict reader (DuckDB, the shipper's store)
 * refuses the whole file for it. Raw lone surrogates need nothing: encoding a string to UTF-8 turns
 * them into U+FFFD. So the only repair is of the escaped form: a `\uD800`–`\uDFFF` escape that is
 * not half of a high-low pair becomes U+FFFD, as `String.prototype.toWellFormed` would have made it
 * before serializing.
 */

const BACKSLASH = 0x5c;
const U = 0x75;
const REPLACEMENT = '\ufffd';

function hex4(s: string, at: number): number {
  if (at + 4 > s.length) return -1;
  let v = 0;
  for (let i = at; i < at + 4; i++) {
    const c = s.charCodeAt(i);
    const d = c >= 0x30 && c <= 0x39 ? c - 0x30 : (c | 0x20) >= 0x61 && (c | 0x20) <= 0x66 ? (c | 0x20) - 0x57 : -1;
    if (d < 0) return -1;
    v = v * 16 + d;
  }
  return v;
}

/**
 * `text` (a JSON text) with every escaped lone surrogate replaced by U+FFFD; `text` itself when it
 * has none (one native scan for `\u` in the usual case).
 */
export function wellFormedJson(text: string): string {
  if (text.indexOf('\\u') === -1) return text;
  let out = '';
  let last = 0;
  let i = text.indexOf('\\');
  while (i !== -1) {
    let j = i;
    while (text.charCodeAt(j) === BACKSLASH) j++;
    // An odd run of backslashes: the last one starts an escape (the others are `\\` pairs).
    if ((j - i) % 2 === 1 && text.charCodeAt(j) === U) {
      const code = hex4(text, j + 1);
      let next = j + 5;
      if (code >= 0xd800 && code <= 0xdfff) {
        const pairLow = code <= 0xdbff && text.charCodeAt(next) === BACKSLASH && text.charCodeAt(next + 1) === U ? hex4(text, next + 2) : -1;
        if (pairLow >= 0xdc00 && pairLow <= 0xdfff) {
          next += 6;
        } else {
          out += text.slice(last, j - 1) + REPLACEMENT;
          last = next;
        }
      }
      i = text.indexOf('\\', next);
    } else {
      i = text.indexOf('\\', j);
    }
  }
  return last === 0 ? text : out + text.slice(last);
}

const ESCAPE_U = Buffer.from('\\u');

/** As wellFormedJson, for a JSON text already encoded (UTF-8): the same bytes when there is nothing to repair. */
export function wellFormedJsonBytes(bytes: Uint8Array): Uint8Array {
  if (Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).indexOf(ESCAPE_U) === -1) return bytes;
  const text = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8');
  const fixed = wellFormedJson(text);
  return fixed === text ? bytes : Buffer.from(fixed, 'utf8');
}
