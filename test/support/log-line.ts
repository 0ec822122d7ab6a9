import type { LineParts } from '../../src/log/log-line';

/** The whole line of `lineParts` as text: what the log buffer writes (src/log/log-buffer.ts), decoded. */
export function lineText(p: LineParts): string {
  const tail = p.tail === null ? '' : typeof p.tail === 'string' ? (p.tail.length === 0 ? 'null' : p.tail) : Buffer.from(p.tail).toString('utf8');
  return `${p.head}${tail}${p.after}}\n`;
}
