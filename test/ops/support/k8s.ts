// Offline checks of Kubernetes manifests: YAML parsed with `yaml`, every object validated against the
// JSON schema of its apiVersion and kind as kubernetes-models compiles them from Kubernetes' OpenAPI
// spec, plus the unknown-field check the API server applies (kubectl's default strict validation).
import * as fs from 'node:fs';
import * as path from 'node:path';
import { parseAllDocuments } from 'yaml';

const ROOT = path.resolve(__dirname, '..', '..', '..', '..');

/** A parsed manifest: JSON-shaped, read field by field by the tests. */
export type Obj = Record<string, any>;

export interface Manifest {
  file: string;
  obj: Obj;
}

/** Every YAML document of a file (comments and empty documents dropped); a YAML error throws. */
export function readYamlFile(file: string): Obj[] {
  const docs = parseAllDocuments(fs.readFileSync(file, 'utf8'), { prettyErrors: true });
  const out: Obj[] = [];
  for (const d of docs) {
    if (d.errors.length > 0) throw new Error(`${file}: ${d.errors.map((e) => e.message).join('; ')}`);
    const v: unknown = d.toJS();
    if (v === null || v === undefined) continue;
    if (typeof v !== 'object' || Array.isArray(v)) throw new Error(`${file}: a document is not a mapping`);
    out.push(v);
  }
  return out;
}

interface ModelClass {
  apiVersion: string;
  kind: string;
  prototype: { validate(): void };
}

/**
 * The kubernetes-models class of an apiVersion and kind, or null when the package has none.
 * It ships ES modules whose exports map offers no `require` condition, so they are required by
 * file path (Node 24 requires ES modules without top-level await).
 */
export function modelClass(apiVersion: string, kind: string): ModelClass | null {
  if (!/^[a-z0-9.-]*\/?v\w+$/.test(apiVersion) || !/^[A-Za-z]+$/.test(kind)) return null;
  const parts = apiVersion.split('/');
  const file = path.join(ROOT, 'node_modules', 'kubernetes-models', ...parts, `${kind}.js`);
  if (!fs.existsSync(file)) return null;
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const cls = (require(file) as Record<string, ModelClass | undefined>)[kind];
  if (!cls || cls.apiVersion !== apiVersion || cls.kind !== kind) return null;
  return cls;
}

/**
 * Validates `obj` against the schema of its apiVersion and kind; returns the problems (empty: valid).
 * The OpenAPI schemas accept fields they do not define, as the generated validators do; the API
 * server refuses them (strict field validation, kubectl's default). A validator reads every field
 * its schema defines, and enumerates the keys of maps (labels, resources, ...): so the object is
 * wrapped in proxies that record those reads, and a field nobody read is unknown.
 */
export function validateManifest(obj: Obj): string[] {
  const cls = modelClass(String(obj.apiVersion), String(obj.kind));
  if (!cls) return [`no schema for apiVersion ${obj.apiVersion}, kind ${obj.kind}`];
  const read = new WeakMap<object, Set<string>>();
  const enumerated = new WeakSet<object>();
  const proxies = new WeakMap<object, object>();
  const wrap = (value: unknown): unknown => {
    if (value === null || typeof value !== 'object') return value;
    let p = proxies.get(value);
    if (!p) {
      const keys = new Set<string>();
      read.set(value, keys);
      p = new Proxy(value, {
        get(target, key, receiver) {
          const v: unknown = Reflect.get(target, key, receiver);
          if (typeof key !== 'string' || !Object.hasOwn(target, key)) return v;
          keys.add(key);
          return wrap(v);
        },
        ownKeys(target) {
          enumerated.add(target);
          return Reflect.ownKeys(target);
        },
      });
      proxies.set(value, p);
    }
    return p;
  };
  try {
    cls.prototype.validate.call(wrap(obj));
  } catch (e) {
    return [(e as Error).message];
  }
  const unknown: string[] = [];
  const walk = (value: unknown, at: string): void => {
    if (value === null || typeof value !== 'object') return;
    const isArray = Array.isArray(value);
    for (const [k, v] of Object.entries(value)) {
      if (!isArray && !enumerated.has(value) && !read.get(value)?.has(k)) unknown.push(`${at}/${k}: unknown field`);
      else walk(v, `${at}/${k}`);
    }
  };
  walk(obj, '');
  return unknown;
}

const UNITS: Record<string, number> = {
  '': 1,
  m: 1e-3,
  k: 1e3,
  M: 1e6,
  G: 1e9,
  T: 1e12,
  Ki: 2 ** 10,
  Mi: 2 ** 20,
  Gi: 2 ** 30,
  Ti: 2 ** 40,
};

/** A Kubernetes quantity ("2", "500m", "1792Mi", "4Gi") as a number (CPUs, bytes). */
export function quantity(q: unknown): number {
  const m = /^(\d+(?:\.\d+)?)(m|k|M|G|T|Ki|Mi|Gi|Ti)?$/.exec(String(q));
  if (!m) throw new Error(`not a quantity: ${String(q)}`);
  return Number(m[1]) * UNITS[m[2] ?? ''];
}

/** PM2's max_memory_restart ("768M": PM2 counts K, M, G in powers of 1024) in bytes. */
export function pm2Bytes(v: string): number {
  const m = /^(\d+)([KMG])?$/.exec(v);
  if (!m) throw new Error(`not a PM2 memory size: ${v}`);
  const unit: Record<string, number> = { K: 2 ** 10, M: 2 ** 20, G: 2 ** 30, '': 1 };
  return Number(m[1]) * unit[m[2] ?? ''];
}
