// Headless Chromium (Debian's `chromium`, installed when missing and allowed) driven over the Chrome
// DevTools Protocol with Node's own WebSocket: opens a page, collects its script errors and console
// errors, evaluates an expression in it and takes a full-page screenshot. Just what the report tests
// need, so no browser-automation dependency.
import { spawn, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

const ROOT = path.resolve(__dirname, '..', '..', '..', '..');
// eslint-disable-next-line @typescript-eslint/no-require-imports
const apt = require(path.join(ROOT, 'scripts', 'lib', 'apt.js')) as {
  onPath(name: string): string | null;
  canInstall(): boolean;
  aptInstall(packages: string[], log?: (m: string) => void): void;
};

/** The Chromium binary, installing Debian's package when it is missing: {bin} or {bin: null, reason}. */
export function ensureChromium(log: (m: string) => void = console.log): { bin: string | null; reason: string } {
  const find = () => ['chromium', 'chromium-browser', 'google-chrome'].map((n) => apt.onPath(n)).find((p) => p !== null) ?? null;
  let bin = find();
  if (!bin && process.env.CHROMIUM_AUTO_INSTALL !== '0' && apt.canInstall()) {
    try {
      apt.aptInstall(['chromium', 'fonts-dejavu-core'], log);
    } catch (e) {
      return { bin: null, reason: `apt-get install chromium failed: ${e instanceof Error ? e.message : String(e)}` };
    }
    bin = find();
  }
  return bin ? { bin, reason: '' } : { bin: null, reason: 'chromium is not installed and cannot be installed here (needs apt-get as root; CHROMIUM_AUTO_INSTALL=0 forbids it)' };
}

interface CdpMessage {
  id?: number;
  method?: string;
  params?: any;
  result?: any;
  error?: { message: string };
}

export interface PageProblems {
  /** Uncaught exceptions (Runtime.exceptionThrown). */
  exceptions: string[];
  /** console.error calls and browser log entries of level error (failed loads included). */
  errors: string[];
}

export class Browser {
  private constructor(
    private readonly proc: ChildProcess,
    private readonly profile: string,
    private readonly ws: WebSocket,
  ) {
    ws.addEventListener('message', (ev: MessageEvent) => this.onMessage(String(ev.data)));
  }

  private nextId = 1;
  private readonly waiting = new Map<number, { resolve: (v: any) => void; reject: (e: Error) => void }>();
  private readonly listeners: Array<(m: CdpMessage) => void> = [];

  static async launch(bin: string, timeoutMs = 30_000): Promise<Browser> {
    const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'chromium-profile-'));
    const proc = spawn(
      bin,
      ['--headless', '--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--no-first-run', '--hide-scrollbars', '--remote-debugging-port=0', `--user-data-dir=${profile}`, 'about:blank'],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
    let err = '';
    const wsUrl = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`chromium did not start in ${timeoutMs} ms: ${err.slice(-2000)}`)), timeoutMs);
      proc.stderr?.on('data', (d: Buffer) => {
        err += d.toString();
        const m = /DevTools listening on (ws:\/\/\S+)/.exec(err);
        if (m) {
          clearTimeout(timer);
          resolve(m[1]);
        }
      });
      proc.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`chromium exited (${code}): ${err.slice(-2000)}`));
      });
    });
    // The page target that about:blank opened.
    const port = new URL(wsUrl).port;
    const targets = (await (await fetch(`http://127.0.0.1:${port}/json/list`)).json()) as Array<{ type: string; webSocketDebuggerUrl: string }>;
    const page = targets.find((t) => t.type === 'page');
    if (!page) throw new Error('chromium has no page target');
    const ws = new WebSocket(page.webSocketDebuggerUrl);
    await new Promise<void>((resolve, reject) => {
      ws.addEventListener('open', () => resolve(), { once: true });
      ws.addEventListener('error', () => reject(new Error('cannot connect to the page over the DevTools protocol')), { once: true });
    });
    return new Browser(proc, profile, ws);
  }

  private onMessage(text: string): void {
    const m = JSON.parse(text) as CdpMessage;
    if (m.id !== undefined) {
      const w = this.waiting.get(m.id);
      this.waiting.delete(m.id);
      if (m.error) w?.reject(new Error(m.error.message));
      else w?.resolve(m.result);
      return;
    }
    for (const l of this.listeners) l(m);
  }

  send(method: string, params: Record<string, unknown> = {}): Promise<any> {
    const id = this.nextId++;
    this.ws.send(JSON.stringify({ id, method, params }));
    return new Promise((resolve, reject) => this.waiting.set(id, { resolve, reject }));
  }

  /** Loads `url`, waits for its load event, and returns what went wrong in it meanwhile (and until `settleMs` after). */
  async open(url: string, timeoutMs = 30_000, settleMs = 300): Promise<PageProblems> {
    const problems: PageProblems = { exceptions: [], errors: [] };
    this.listeners.push((m) => {
      if (m.method === 'Runtime.exceptionThrown') {
        const d = m.params.exceptionDetails;
        problems.exceptions.push(String(d.exception?.description ?? d.text));
      } else if (m.method === 'Runtime.consoleAPICalled' && m.params.type === 'error') {
        problems.errors.push(`console.error: ${(m.params.args as Array<{ value?: unknown; description?: string }>).map((a) => (a.value === undefined ? String(a.description) : JSON.stringify(a.value))).join(' ')}`);
      } else if (m.method === 'Log.entryAdded' && m.params.entry.level === 'error') {
        problems.errors.push(`${m.params.entry.source}: ${m.params.entry.text} ${m.params.entry.url ?? ''}`.trim());
      }
    });
    await this.send('Runtime.enable');
    await this.send('Log.enable');
    await this.send('Page.enable');
    const loaded = new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`${url} did not load in ${timeoutMs} ms`)), timeoutMs);
      this.listeners.push((m) => {
        if (m.method === 'Page.loadEventFired') {
          clearTimeout(timer);
          resolve();
        }
      });
    });
    const nav = (await this.send('Page.navigate', { url })) as { errorText?: string };
    if (nav.errorText) throw new Error(`cannot open ${url}: ${nav.errorText}`);
    await loaded;
    await new Promise((r) => setTimeout(r, settleMs));
    return problems;
  }

  /** The value of a JavaScript expression evaluated in the page (JSON-serializable). */
  async evaluate<T>(expression: string): Promise<T> {
    const r = (await this.send('Runtime.evaluate', { expression, returnByValue: true })) as { result: { value: T }; exceptionDetails?: { text: string } };
    if (r.exceptionDetails) throw new Error(`evaluate failed: ${r.exceptionDetails.text}`);
    return r.result.value;
  }

  /** A PNG of the whole page at `width` CSS pixels, written to `file`; returns its size in pixels. */
  async screenshot(file: string, width = 1200): Promise<{ width: number; height: number }> {
    await this.send('Emulation.setDeviceMetricsOverride', { width, height: 800, deviceScaleFactor: 1, mobile: false });
    const height = Math.min(16_000, Math.ceil(await this.evaluate<number>('document.documentElement.scrollHeight')));
    await this.send('Emulation.setDeviceMetricsOverride', { width, height, deviceScaleFactor: 1, mobile: false });
    const shot = (await this.send('Page.captureScreenshot', { format: 'png', captureBeyondViewport: true })) as { data: string };
    fs.writeFileSync(file, Buffer.from(shot.data, 'base64'));
    return { width, height };
  }

  async close(): Promise<void> {
    try {
      this.ws.close();
    } catch {
      /* already closed */
    }
    if (this.proc.exitCode === null && this.proc.signalCode === null) {
      const exited = new Promise((r) => this.proc.once('exit', r));
      this.proc.kill('SIGTERM');
      const t = setTimeout(() => this.proc.kill('SIGKILL'), 5_000);
      await exited;
      clearTimeout(t);
    }
    fs.rmSync(this.profile, { recursive: true, force: true });
  }
}
