import { createHash } from 'node:crypto';

/** One claimed list element: its bytes (a zstd frame of NDJSON) and its identity in storage. */
export interface Frame {
  /** First 16 bytes of the SHA-256 of the compressed bytes, hex: the `frame` column. */
  readonly hash: string;
  readonly bytes: Buffer;
}

/** A processing list's frames: they are stored together, as one batch group. */
export interface Batch {
  /** Derived from the set of frame hashes only: the same frames always make the same file names. */
  readonly group: string;
  /** Distinct frames in list order (a byte-identical repeat is stored once). */
  readonly frames: readonly Frame[];
  /** List elements, repeats included. */
  readonly elements: number;
  readonly compressedBytes: number;
}

export function frameHash(bytes: Buffer): string {
  return createHash('sha256').update(bytes).digest().subarray(0, 16).toString('hex');
}

/**
 * The frame id the bidder gives a frame is not in the frame (the list element is only the zstd
 * frame), so a frame is known by its content: two different frames are never byte-identical (each
 * carries its own records, whose `ts` and ids differ).
 */
export function toBatch(elements: readonly Buffer[]): Batch {
  const seen = new Set<string>();
  const frames: Frame[] = [];
  let compressedBytes = 0;
  for (const bytes of elements) {
    const hash = frameHash(bytes);
    if (seen.has(hash)) continue;
    seen.add(hash);
    frames.push({ hash, bytes });
    compressedBytes += bytes.length;
  }
  return { group: groupName(frames.map((f) => f.hash)), frames, elements: elements.length, compressedBytes };
}

/** The group's name: a hash of the sorted frame hashes, so list order does not matter. */
export function groupName(hashes: readonly string[]): string {
  const h = createHash('sha256');
  for (const x of [...hashes].sort()) h.update(x).update('\n');
  return h.digest().subarray(0, 16).toString('hex');
}
