// HTTP helpers for the operations tests: single requests and a steady stream of bid requests.
import * as http from 'node:http';

export interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

/** One request on a fresh connection unless an agent is given. */
export function request(
  url: string,
  opts: { method?: string; body?: string | Buffer; headers?: http.OutgoingHttpHeaders; agent?: http.Agent; timeoutMs?: number } = {},
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      url,
      { method: opts.method ?? 'GET', agent: opts.agent ?? false, headers: opts.headers, timeout: opts.timeoutMs ?? 10_000 },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }));
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', reject);
    req.end(opts.body);
  });
}

/** A small valid OpenRTB 2.6 request (one banner imp); the bidder answers 200 or 204. */
export function bidRequestBody(id: string): string {
  return JSON.stringify({
    id,
    imp: [{ id: '1', banner: { w: 300, h: 250, format: [{ w: 300, h: 250 }] }, bidfloor: 0.01, bidfloorcur: 'USD' }],
    site: { id: 'ops-site', domain: 'example.com', page: 'https://example.com/a', publisher: { id: 'p1', name: 'ops' } },
    device: { ua: 'Mozilla/5.0', ip: '192.0.2.1', devicetype: 2, os: 'linux', geo: { country: 'USA' } },
    user: { id: 'u1' },
    at: 2,
    tmax: 200,
    cur: ['USD'],
  });
}

export function postBid(url: string, id: string, agent?: http.Agent): Promise<Answer> {
  const body = bidRequestBody(id);
  return request(`${url}/openrtb2/bid`, {
    method: 'POST',
    body,
    agent,
    headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), 'x-openrtb-version': '2.6' },
  });
}

export interface LoadResult {
  /** Requests answered 200 or 204, by id. */
  okIds: string[];
  /** Everything else: status codes and network errors, with counts. */
  failures: Record<string, number>;
  failed: number;
  statuses: Record<string, number>;
  elapsedMs: number;
}

/**
 * A steady stream of bid requests: `connections` loops, each sending one request at a time over a
 * shared keep-alive agent (as an exchange does), pausing `pauseMs` between requests. Ids are unique.
 */
export class SteadyLoad {
  private readonly agent: http.Agent;
  private running = false;
  private loops: Promise<void>[] = [];
  private seq = 0;
  private startedAt = 0;
  private readonly result: LoadResult = { okIds: [], failures: {}, failed: 0, statuses: {}, elapsedMs: 0 };

  constructor(
    private readonly url: string,
    private readonly opts: { connections: number; pauseMs: number; prefix: string },
  ) {
    this.agent = new http.Agent({ keepAlive: true, maxSockets: opts.connections });
  }

  start(): void {
    this.running = true;
    this.startedAt = Date.now();
    for (let i = 0; i < this.opts.connections; i++) this.loops.push(this.loop());
  }

  /** Requests answered so far. */
  get count(): number {
    return this.result.okIds.length + this.result.failed;
  }

  async stop(): Promise<LoadResult> {
    this.running = false;
    await Promise.all(this.loops);
    this.agent.destroy();
    this.result.elapsedMs = Date.now() - this.startedAt;
    return this.result;
  }

  private async loop(): Promise<void> {
    while (this.running) {
      const id = `${this.opts.prefix}-${this.seq++}`;
      try {
        const a = await postBid(this.url, id, this.agent);
        this.result.statuses[a.status] = (this.result.statuses[a.status] ?? 0) + 1;
        if (a.status === 200 || a.status === 204) this.result.okIds.push(id);
        else this.fail(`status ${a.status}`);
      } catch (e) {
        this.fail((e as NodeJS.ErrnoException).code ?? (e as Error).message);
      }
      if (this.opts.pauseMs > 0) await new Promise((r) => setTimeout(r, this.opts.pauseMs));
    }
  }

  private fail(what: string): void {
    this.result.failed++;
    this.result.failures[what] = (this.result.failures[what] ?? 0) + 1;
  }
}
