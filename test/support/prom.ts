// A strict reader of the Prometheus text exposition format (version 0.0.4), enough to check that
// what /metrics serves parses as Prometheus would parse it, and to read values out of it.
import * as assert from 'node:assert/strict';

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

export interface Family {
  name: string;
  type: string;
  help: string;
  samples: Sample[];
}

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL = /^[a-zA-Z_][a-zA-Z0-9_]*$/;
const TYPES = new Set(['counter', 'gauge', 'histogram', 'summary', 'untyped']);

/** As Prometheus reads a value (Go's strconv.ParseFloat: NaN and Inf in any case; prom-client writes "Nan"). */
function parseValue(s: string, line: string): number {
  const l = s.toLowerCase();
  if (l === '+inf' || l === 'inf' || l === '+infinity' || l === 'infinity') return Infinity;
  if (l === '-inf' || l === '-infinity') return -Infinity;
  if (l === 'nan') return NaN;
  assert.match(s, /^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/, `bad value in: ${line}`);
  return Number(s);
}

function parseLabels(body: string, line: string): Record<string, string> {
  const labels: Record<string, string> = {};
  let i = 0;
  while (i < body.length) {
    const eq = body.indexOf('=', i);
    assert.ok(eq > i, `bad labels in: ${line}`);
    const name = body.slice(i, eq).trim();
    assert.match(name, LABEL, `bad label name "${name}" in: ${line}`);
    assert.equal(body[eq + 1], '"', `label value not quoted in: ${line}`);
    let j = eq + 2;
    let value = '';
    for (; j < body.length && body[j] !== '"'; j++) {
      if (body[j] === '\\') {
        const n = body[++j];
        value += n === 'n' ? '\n' : n;
      } else value += body[j];
    }
    assert.equal(body[j], '"', `unterminated label value in: ${line}`);
    assert.ok(!(name in labels), `duplicate label ${name} in: ${line}`);
    labels[name] = value;
    j++;
    if (body[j] === ',') j++;
    i = j;
  }
  return labels;
}

function familyOf(sample: string, families: Map<string, Family>): Family | undefined {
  if (families.has(sample)) return families.get(sample);
  for (const suffix of ['_bucket', '_sum', '_count', '_created']) {
    if (sample.endsWith(suffix)) {
      const f = families.get(sample.slice(0, -suffix.length));
      if (f && (f.type === 'histogram' || f.type === 'summary')) return f;
    }
  }
  return undefined;
}

/** Parses the text; throws (assert) on anything Prometheus would reject. */
export function parseProm(text: string): Map<string, Family> {
  const families = new Map<string, Family>();
  const seen = new Set<string>();
  assert.ok(text.endsWith('\n'), 'exposition must end with a newline');
  for (const line of text.split('\n')) {
    if (line === '') continue;
    if (line.startsWith('#')) {
      const m = /^# (HELP|TYPE) (\S+) ?(.*)$/.exec(line);
      if (!m) continue; // a comment
      const [, kind, name, rest] = m;
      assert.match(name, NAME, `bad metric name in: ${line}`);
      const f = families.get(name) ?? { name, type: 'untyped', help: '', samples: [] };
      if (kind === 'TYPE') {
        assert.ok(TYPES.has(rest), `bad type in: ${line}`);
        assert.equal(f.samples.length, 0, `TYPE after samples for ${name}`);
        f.type = rest;
      } else f.help = rest;
      families.set(name, f);
      continue;
    }
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)( -?\d+)?$/.exec(line);
    assert.ok(m, `bad sample line: ${line}`);
    const [, name, , labelBody, value] = m;
    const labels = labelBody ? parseLabels(labelBody, line) : {};
    const key = `${name}{${Object.entries(labels)
      .sort()
      .map(([k, v]) => `${k}=${v}`)
      .join(',')}}`;
    assert.ok(!seen.has(key), `duplicate series ${key}`);
    seen.add(key);
    const f = familyOf(name, families);
    assert.ok(f, `sample ${name} has no # TYPE`);
    f.samples.push({ name, labels, value: parseValue(value, line) });
  }
  for (const f of families.values()) if (f.type === 'histogram') checkHistogram(f);
  return families;
}

/** Buckets cumulative and non-decreasing, +Inf bucket equal to _count. */
function checkHistogram(f: Family): void {
  const groups = new Map<string, Sample[]>();
  for (const s of f.samples) {
    const { le: _le, ...rest } = s.labels;
    const k = JSON.stringify(Object.entries(rest).sort());
    if (!groups.has(k)) groups.set(k, []);
    groups.get(k)!.push(s);
  }
  for (const samples of groups.values()) {
    const buckets = samples.filter((s) => s.name === `${f.name}_bucket`);
    const count = samples.find((s) => s.name === `${f.name}_count`);
    assert.ok(buckets.length > 0 && count, `histogram ${f.name} lacks buckets or _count`);
    buckets.sort((a, b) => parseValue(a.labels.le, a.name) - parseValue(b.labels.le, b.name));
    for (let i = 1; i < buckets.length; i++) assert.ok(buckets[i].value >= buckets[i - 1].value, `${f.name} buckets not cumulative`);
    const inf = buckets[buckets.length - 1];
    assert.equal(inf.labels.le, '+Inf', `${f.name} lacks the +Inf bucket`);
    assert.equal(inf.value, count.value, `${f.name} +Inf bucket != _count`);
  }
}

/** Sum of a family's samples named `name` whose labels include `match`. */
export function sum(families: Map<string, Family>, name: string, match: Record<string, string> = {}): number {
  let total = 0;
  for (const f of families.values()) {
    for (const s of f.samples) {
      if (s.name !== name) continue;
      if (Object.entries(match).every(([k, v]) => s.labels[k] === v)) total += s.value;
    }
  }
  return total;
}
