/** The OpenRTB sample requests (test/fixtures/samples, licenses in LICENSES.md). */
import * as fs from 'node:fs';
import * as path from 'node:path';

export const SAMPLES_DIR = path.resolve(__dirname, '..', '..', '..', 'test', 'fixtures', 'samples');

export interface Sample {
  name: string;
  request: Record<string, any>;  
}

/** Every bid request among the samples; Prebid test files carry theirs in `mockBidRequest`. */
export function sampleRequests(): Sample[] {
  const out: Sample[] = [];
  for (const dir of fs.readdirSync(SAMPLES_DIR).sort()) {
    const d = path.join(SAMPLES_DIR, dir);
    if (!fs.statSync(d).isDirectory()) continue;
    for (const f of fs.readdirSync(d).sort()) {
      if (!f.endsWith('.json')) continue;
      const j = JSON.parse(fs.readFileSync(path.join(d, f), 'utf8')) as Record<string, any>;  
      const req = j.mockBidRequest ?? j;
      if (typeof req === 'object' && req !== null && Array.isArray(req.imp) && req.id !== undefined) {
        out.push({ name: `${dir}/${f}`, request: req });
      }
    }
  }
  return out;
}
