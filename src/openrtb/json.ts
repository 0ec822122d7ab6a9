import { InvalidRequestError } from './parse';
import { REQUEST_LIMITS } from './limits';

/** Byte classes for the nesting scan: 1 quote, 2 backslash, 3 opening bracket, 4 closing bracket. */
const CLASS = new Uint8Array(256);
CLASS[0x22] = 1;
CLASS[0x5c] = 2;
CLASS[0x7b] = 3;
CLASS[0x5b] = 3;
CLASS[0x7d] = 4;
CLASS[0x5d] = 4;

/**
 * True when the JSON text nests objects and arrays at most `max` deep (brackets inside strings do
 * not count). One pass over the bytes, ~1 ns a byte: V8 parses very deep JSON fine (400 000 levels in
 * ~60 ms) but JSON.stringify and most readers of the bid log overflow their stack on it.
 */
export function nestingWithin(bytes: Uint8Array, max: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0, n = bytes.length; i < n; i++) {
    const k = CLASS[bytes[i]];
    if (k === 0) continue;
    if (inString) {
      if (k === 1) inString = false;
      else if (k === 2) i++;
      continue;
    }
    if (k === 1) inString = true;
    else if (k === 3) {
      if (++depth > max) return false;
    } else if (k === 4) depth--;
  }
  return true;
}

/** Parses a request body: 400 (InvalidRequestError) when it nests too deep or is not JSON. */
export function readJson(bytes: Buffer): unknown {
  if (!nestingWithin(bytes, REQUEST_LIMITS.depth)) throw new InvalidRequestError(`JSON nested deeper than ${REQUEST_LIMITS.depth} levels`);
  try {
    return JSON.parse(bytes.toString('utf8'));
  } catch {
    throw new InvalidRequestError('malformed JSON');
  }
}
