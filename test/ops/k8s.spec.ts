// deploy/k8s/, checked offline: every object valid against the Kubernetes schema of its kind and
// apiVersion (no unknown field either), and the rules that tie the manifests to each other and to
// the app: graceful-stop timings, probes, selectors, workers per CPU, memory, secrets.
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { loadConfig } from '../../src/config/config';
import { DRAIN_MAX_MS } from '../../src/health/lifecycle';
import { request, startTestApp, type TestApp } from '../support/app';
import { type Manifest, type Obj, pm2Bytes, quantity, readYamlFile, validateManifest } from './support/k8s';

const ROOT = path.resolve(__dirname, '..', '..', '..');
const DIR = path.join(ROOT, 'deploy', 'k8s');
/** Not applied: a template for the operator's real Secret. */
const EXAMPLE_SECRET = 'secret.example.yaml';
const MiB = 2 ** 20;

const files = fs.readdirSync(DIR).filter((f) => /\.ya?ml$/.test(f));
const all: Manifest[] = files.filter((f) => f !== 'kustomization.yaml').flatMap((file) => readYamlFile(path.join(DIR, file)).map((obj) => ({ file, obj })));
const kustomization = readYamlFile(path.join(DIR, 'kustomization.yaml'))[0];

function one(kind: string, name: string): Obj {
  const found = all.filter((d) => d.obj.kind === kind && d.obj.metadata?.name === name);
  assert.equal(found.length, 1, `one ${kind} ${name}`);
  return found[0].obj;
}

const bidder = one('Deployment', 'bidder');
const shipper = one('Deployment', 'shipper');
const config = one('ConfigMap', 'bidder-config').data as Record<string, string>;
const pod = bidder.spec.template.spec;
const container = (pod.containers as Obj[]).find((c) => c.name === 'bidder')!;

/** The ecosystem file as pm2-runtime evaluates it in the container, with the ConfigMap's environment. */
function ecosystemApp(env: Record<string, string>): { kill_timeout: number } {
  const file = path.join(ROOT, 'ecosystem.config.js');
  const saved = { ...process.env };
  Object.assign(process.env, env);
  try {
    delete require.cache[require.resolve(file)];
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    return (require(file) as { apps: { name: string; kill_timeout: number }[] }).apps.find((a) => a.name === 'bidder')!;
  } finally {
    for (const k of Object.keys(process.env)) if (!(k in saved)) delete process.env[k];
    Object.assign(process.env, saved);
  }
}

function envVar(c: Obj, name: string): Obj | undefined {
  return (c.env as Obj[] | undefined)?.find((e) => e.name === name);
}

function matches(selector: Record<string, string>, labels: Record<string, string>): boolean {
  return Object.entries(selector).every(([k, v]) => labels[k] === v);
}

describe('deploy/k8s', () => {
  it('parses, and every object is valid against the Kubernetes schema of its kind and apiVersion, with no unknown field', () => {
    assert.ok(all.length >= 9, `${all.length} objects`);
    const kinds = new Set(all.map((d) => `${d.obj.apiVersion} ${d.obj.kind}`));
    for (const k of ['apps/v1 Deployment', 'v1 Service', 'autoscaling/v2 HorizontalPodAutoscaler', 'policy/v1 PodDisruptionBudget', 'v1 ConfigMap', 'v1 Secret', 'v1 PersistentVolumeClaim']) {
      assert.ok(kinds.has(k), `has a ${k}`);
    }
    for (const { file, obj } of all) {
      assert.deepEqual(validateManifest(obj), [], `${file}: ${obj.kind} ${obj.metadata?.name}`);
      assert.equal(obj.metadata?.namespace, undefined, `${file}: the namespace comes from kustomization.yaml`);
    }
  });

  it('the validation refuses what the API server would: wrong types, bad quantities, missing and unknown fields', () => {
    const copy = (): Obj => structuredClone(bidder);
    const typo = copy();
    typo.spec.template.spec.terminationGracePeriod = 30;
    assert.deepEqual(validateManifest(typo), ['/spec/template/spec/terminationGracePeriod: unknown field']);
    const deep = copy();
    deep.spec.template.spec.containers[0].readinessProbe.httpGet.paht = '/x';
    assert.deepEqual(validateManifest(deep), ['/spec/template/spec/containers/0/readinessProbe/httpGet/paht: unknown field']);
    const type = copy();
    type.spec.template.spec.terminationGracePeriodSeconds = '30';
    assert.match(validateManifest(type).join(), /terminationGracePeriodSeconds must be integer/);
    const qty = copy();
    qty.spec.template.spec.containers[0].resources.requests.cpu = '2 cores';
    assert.match(validateManifest(qty).join(), /requests\/cpu/);
    const missing = copy();
    delete missing.spec.selector;
    assert.match(validateManifest(missing).join(), /must have required property selector/);
    assert.match(validateManifest({ ...bidder, apiVersion: 'apps/v1beta9' }).join(), /no schema/);
    // Maps take any key: labels, annotations, ConfigMap data.
    const labels = copy();
    labels.metadata.labels['example.com/anything'] = 'x';
    assert.deepEqual(validateManifest(labels), []);
  });

  it('kustomization.yaml applies every manifest but the example Secret, and points the one image they use at a registry', () => {
    assert.equal(kustomization.apiVersion, 'kustomize.config.k8s.io/v1beta1');
    assert.equal(kustomization.kind, 'Kustomization');
    const listed = kustomization.resources as string[];
    assert.deepEqual([...listed].sort(), files.filter((f) => f !== 'kustomization.yaml' && f !== EXAMPLE_SECRET).sort());
    assert.ok(!listed.includes(EXAMPLE_SECRET), 'a placeholder Secret is never applied');
    assert.ok(typeof kustomization.namespace === 'string' && kustomization.namespace.length > 0);
    assert.equal(one('Namespace', kustomization.namespace).kind, 'Namespace');
    const images = new Set(all.flatMap((d) => (d.obj.spec?.template?.spec?.containers ?? []) as Obj[]).map((c) => c.image as string));
    assert.deepEqual([...images], ['openrtb-bidder']);
    assert.deepEqual(
      (kustomization.images as Obj[]).map((i) => i.name),
      ['openrtb-bidder'],
    );
  });

  it('runs one bidder worker per requested CPU, with Guaranteed resources sized from PM2\'s memory limit and the log\'s bound', () => {
    const { requests, limits } = container.resources;
    const cpus = quantity(requests.cpu);
    assert.ok(Number.isInteger(cpus) && cpus >= 1, `whole CPUs: ${requests.cpu}`);
    assert.equal(quantity(limits.cpu), cpus, 'limits.cpu = requests.cpu');
    assert.equal(quantity(limits.memory), quantity(requests.memory), 'limits.memory = requests.memory');
    // WORKERS = requests.cpu in whole CPUs: the downward API rounds up with divisor 1.
    assert.deepEqual(envVar(container, 'WORKERS')?.valueFrom, { resourceFieldRef: { containerName: 'bidder', resource: 'requests.cpu', divisor: '1' } });
    const perWorker = pm2Bytes(config.MAX_MEMORY_RESTART);
    // A worker ends at ~200-255 MB (measured with `npm run memory`; ~375 MB before V8's young
    // generation was bounded), plus what the log may hold.
    assert.ok(perWorker >= Number(config.LOG_MAX_MEMORY_BYTES) + 256 * MiB, `MAX_MEMORY_RESTART ${config.MAX_MEMORY_RESTART}`);
    assert.ok(quantity(limits.memory) >= cpus * perWorker + 128 * MiB, `memory ${limits.memory} for ${cpus} workers of ${config.MAX_MEMORY_RESTART} and PM2`);
  });

  it('gives a stopping pod longer than preStop + HTTP drain + final log flush, and than PM2 waits for its workers', () => {
    const command = container.lifecycle.preStop.exec.command as string[];
    assert.equal(command[0], 'sleep');
    const preStopS = Number(command[1]);
    assert.ok(preStopS >= 2 && preStopS <= 15, `preStop sleep ${preStopS}`);
    const flushMs = Number(config.SHUTDOWN_TIMEOUT_MS ?? loadConfig({}).shutdownTimeoutMs);
    const grace = pod.terminationGracePeriodSeconds as number;
    // The worker itself: drain, flush, then its watchdog exits it 1 s later.
    assert.ok(grace * 1000 > preStopS * 1000 + DRAIN_MAX_MS + flushMs + 1_000, `grace ${grace}s`);
    // PM2 SIGKILLs a worker only kill_timeout after the SIGTERM; it must still be before the kubelet's SIGKILL.
    const killTimeoutMs = ecosystemApp({ SHUTDOWN_TIMEOUT_MS: String(flushMs) }).kill_timeout;
    assert.ok(grace * 1000 >= preStopS * 1000 + killTimeoutMs + 5_000, `grace ${grace}s, kill_timeout ${killTimeoutMs} ms`);
    // PM2 stops at most 10 workers at once; more would stop in several rounds.
    assert.ok(quantity(container.resources.requests.cpu) <= 10);
  });

  it('spills the bid log to an emptyDir mounted where the bidder spills, larger than the spill bound', () => {
    const mount = (container.volumeMounts as Obj[]).find((m) => m.mountPath === config.LOG_SPILL_DIR);
    assert.ok(mount, `a volume at LOG_SPILL_DIR ${config.LOG_SPILL_DIR}`);
    const volume = (pod.volumes as Obj[]).find((v) => v.name === mount.name)!;
    assert.ok(volume.emptyDir, 'an emptyDir');
    assert.ok(quantity(volume.emptyDir.sizeLimit) >= 1.5 * Number(config.LOG_SPILL_MAX_BYTES), `sizeLimit ${volume.emptyDir.sizeLimit}`);
    assert.ok(quantity(container.resources.requests['ephemeral-storage']) >= quantity(volume.emptyDir.sizeLimit));
    // The root filesystem is read-only: PM2's home (PM2_HOME=/app/.run/pm2 in the Dockerfile) and /tmp are volumes.
    assert.equal(container.securityContext.readOnlyRootFilesystem, true);
    const dockerfile = fs.readFileSync(path.join(ROOT, 'Dockerfile'), 'utf8');
    const pm2Home = /PM2_HOME=(\S+)/.exec(dockerfile)![1];
    for (const dir of [pm2Home, '/tmp']) {
      assert.ok((container.volumeMounts as Obj[]).some((m) => dir === m.mountPath || dir.startsWith(`${m.mountPath}/`)), `${dir} is writable`);
    }
  });

  it('selects its own pods: each Deployment its template, the Service, HPA and PDB the bidder only', () => {
    for (const d of [bidder, shipper]) {
      assert.ok(matches(d.spec.selector.matchLabels, d.spec.template.metadata.labels), `${d.metadata.name}: selector matches its pods`);
    }
    const bidderLabels = bidder.spec.template.metadata.labels;
    const shipperLabels = shipper.spec.template.metadata.labels;
    assert.ok(!matches(bidder.spec.selector.matchLabels, shipperLabels), 'the bidder selector leaves the shipper out');
    assert.ok(!matches(shipper.spec.selector.matchLabels, bidderLabels), 'the shipper selector leaves the bidder out');

    const service = one('Service', 'bidder');
    assert.ok(matches(service.spec.selector, bidderLabels) && !matches(service.spec.selector, shipperLabels));
    const pdb = one('PodDisruptionBudget', 'bidder');
    assert.ok(matches(pdb.spec.selector.matchLabels, bidderLabels) && !matches(pdb.spec.selector.matchLabels, shipperLabels));
    assert.equal(pdb.spec.maxUnavailable, 1);

    const hpa = one('HorizontalPodAutoscaler', 'bidder');
    assert.deepEqual(hpa.spec.scaleTargetRef, { apiVersion: bidder.apiVersion, kind: bidder.kind, name: bidder.metadata.name });
    assert.equal(bidder.spec.replicas, undefined, 'the HPA owns the replica count');
    assert.ok(hpa.spec.minReplicas >= 2, 'the PDB can let one pod go');
    assert.ok(hpa.spec.maxReplicas > hpa.spec.minReplicas);
    const cpu = (hpa.spec.metrics as Obj[]).find((m) => m.type === 'Resource' && m.resource.name === 'cpu');
    assert.ok(cpu && cpu.resource.target.type === 'Utilization' && cpu.resource.target.averageUtilization > 0 && cpu.resource.target.averageUtilization < 100);
  });

  it('takes settings from the ConfigMap and secrets only from a Secret; no secret value in git but obvious placeholders', () => {
    const secretName = /SECRET|PASSWORD|TOKEN|CREDENTIAL|PRIVATE/i;
    for (const key of Object.keys(config)) assert.doesNotMatch(key, secretName, `${key} belongs in the Secret`);
    for (const d of [bidder, shipper]) {
      for (const c of d.spec.template.spec.containers as Obj[]) {
        for (const e of (c.env ?? []) as Obj[]) {
          if (secretName.test(e.name)) assert.ok(e.valueFrom?.secretKeyRef, `${d.metadata.name}: ${e.name} from a Secret`);
        }
      }
    }
    const refs = (container.envFrom as Obj[]).map((e) => e.configMapRef?.name ?? `secret:${e.secretRef?.name}`);
    assert.deepEqual(refs, ['bidder-config', 'secret:bidder-secrets']);
    const example = all.filter((d) => d.obj.kind === 'Secret');
    assert.deepEqual(example.map((d) => d.file), [EXAMPLE_SECRET, EXAMPLE_SECRET], 'the only Secrets are the examples');
    const secret = example[0].obj;
    assert.equal(secret.metadata.name, 'bidder-secrets');
    assert.deepEqual(Object.keys(secret.stringData).sort(), ['PII_HASH_SECRET', 'TRACKING_SECRET']);
    for (const v of Object.values(secret.stringData as Record<string, string>)) assert.equal(v, 'REPLACE-ME');
    assert.equal(secret.data, undefined);
    // The exchanges file (EXCHANGES_FILE): placeholders, mounted read-only where the ConfigMap points.
    const exchanges = example[1].obj;
    assert.equal(exchanges.metadata.name, 'bidder-exchanges');
    assert.deepEqual(Object.keys(exchanges.stringData), ['exchanges.json']);
    assert.deepEqual(JSON.parse(exchanges.stringData['exchanges.json']), { exchanges: [{ name: 'REPLACE-ME', token: 'REPLACE-ME' }] });
    const mount = (container.volumeMounts as Obj[]).find((m) => m.name === 'exchanges')!;
    assert.equal(mount.readOnly, true);
    assert.equal(config.EXCHANGES_FILE, `${mount.mountPath}/exchanges.json`);
    assert.equal((pod.volumes as Obj[]).find((v) => v.name === 'exchanges')?.secret?.secretName, 'bidder-exchanges');
    // No other document carries anything that looks like a key.
    for (const { file, obj } of all) {
      if (file === EXAMPLE_SECRET) continue;
      assert.doesNotMatch(JSON.stringify(obj), /-----BEGIN|[A-Za-z0-9+/]{40,}={0,2}/, `${file} holds no key material`);
    }
  });

  it('names each pod as a host, uses the Redis Cluster, and has its metrics scraped on the admin port, which the Service does not expose', () => {
    assert.deepEqual(envVar(container, 'HOST_ID')?.valueFrom, { fieldRef: { fieldPath: 'metadata.name' } });
    assert.equal(config.REDIS_MODE, 'cluster');
    for (const node of config.REDIS_CLUSTER_NODES.split(',')) assert.match(node, /^[a-z0-9.-]+:\d+$/, node);
    assert.equal(config.ADMIN_PORT, '8081');
    const ports = Object.fromEntries((container.ports as Obj[]).map((p) => [p.name, p.containerPort]));
    assert.deepEqual(ports, { http: Number(config.PORT), admin: Number(config.ADMIN_PORT) });
    const annotations = bidder.spec.template.metadata.annotations;
    assert.equal(annotations['prometheus.io/scrape'], 'true');
    assert.equal(annotations['prometheus.io/port'], config.ADMIN_PORT);
    assert.match(annotations['prometheus.io/path'], /^\/metrics/);
    const service = one('Service', 'bidder');
    assert.deepEqual((service.spec.ports as Obj[]).map((p) => [p.port, p.targetPort]), [[Number(config.PORT), 'http']]);
  });

  it('runs the shipper as its own Deployment, node dist/shipper/main.js with SHIP_DIR on its PVC', () => {
    const c = shipper.spec.template.spec.containers[0];
    assert.deepEqual(c.command, ['node', 'dist/shipper/main.js']);
    assert.equal(c.image, container.image);
    assert.ok(shipper.spec.replicas >= 1);
    assert.equal(c.envFrom[0].configMapRef.name, 'bidder-config', 'the same Redis and list key as the bidder');
    const shipDir = envVar(c, 'SHIP_DIR')?.value as string;
    const mount = (c.volumeMounts as Obj[]).find((m) => shipDir.startsWith(`${m.mountPath}/`));
    assert.ok(mount, `SHIP_DIR ${shipDir} is on a volume`);
    const claim = (shipper.spec.template.spec.volumes as Obj[]).find((v) => v.name === mount.name)?.persistentVolumeClaim?.claimName as string;
    const pvc = one('PersistentVolumeClaim', claim);
    // A ReadWriteOnce volume cannot be attached to a second pod on another node: no rolling update.
    if (!(pvc.spec.accessModes as string[]).includes('ReadWriteMany')) {
      assert.equal(shipper.spec.strategy.type, 'Recreate');
      assert.equal(shipper.spec.replicas, 1);
    }
    assert.equal(shipper.spec.template.spec.securityContext.fsGroup, 1000, 'the non-root shipper can write the volume');
    const port = c.ports.find((p: Obj) => p.name === 'admin').containerPort;
    assert.equal(envVar(c, 'SHIP_ADMIN_PORT')?.value, String(port));
    assert.equal(c.readinessProbe.httpGet.port, 'admin');
  });

  describe('the probes against the app', () => {
    let app: TestApp;
    let spill: string;
    const exchangesFile = path.join(os.tmpdir(), `k8s-exchanges-${process.pid}.json`);
    before(async () => {
      spill = fs.mkdtempSync(path.join(os.tmpdir(), 'k8s-spill-'));
      // The Secret's file, as the pod has it mounted at EXCHANGES_FILE.
      fs.writeFileSync(exchangesFile, JSON.stringify({ exchanges: [{ name: 'local', addresses: ['127.0.0.1'] }] }));
      // The ConfigMap's settings, except where this test must differ: its own ports, Redis and directories.
      const env = { ...config, TRACKING_SECRET: 'a-test-secret-of-more-than-32-bytes!', PII_HASH_SECRET: 'another-test-secret-of-32-bytes-or-more', EXCHANGES_FILE: exchangesFile };
      for (const k of ['REDIS_MODE', 'REDIS_CLUSTER_NODES', 'ADMIN_PORT', 'ADMIN_HOST', 'PORT', 'HOST', 'LOG_SPILL_DIR']) delete (env as Record<string, string | undefined>)[k];
      // The test Redis keeps no append-only file: production refuses it unless told.
      app = await startTestApp({ ...env, LOG_SPILL_DIR: spill, LOG_LEVEL: 'warn', REDIS_ALLOW_VOLATILE: '1' });
    });
    after(async () => {
      await app?.close();
      fs.rmSync(spill, { recursive: true, force: true });
      fs.rmSync(exchangesFile, { force: true });
    });

    it('the bidder accepts the ConfigMap\'s values', () => {
      const env = { ...config, TRACKING_SECRET: 'a-test-secret-of-more-than-32-bytes!', PII_HASH_SECRET: 'another-test-secret-of-32-bytes-or-more', EXCHANGES_FILE: exchangesFile };
      const c = loadConfig(env);
      assert.equal(c.port, Number(config.PORT));
      assert.equal(c.shutdownTimeoutMs, Number(config.SHUTDOWN_TIMEOUT_MS));
      assert.equal(c.logMaxMemoryBytes, Number(config.LOG_MAX_MEMORY_BYTES));
      assert.equal(c.logSpillDir, config.LOG_SPILL_DIR);
    });

    it('uses the app\'s health routes on its public port, and the app answers them there', async () => {
      const probes = [container.startupProbe, container.readinessProbe, container.livenessProbe];
      for (const p of probes) assert.equal(p.httpGet.port, 'http');
      assert.equal(container.readinessProbe.httpGet.path, '/health/ready');
      assert.equal(container.livenessProbe.httpGet.path, '/health/live');
      assert.equal((container.ports as Obj[]).find((p) => p.name === 'http')?.containerPort, Number(config.PORT));
      assert.match(fs.readFileSync(path.join(ROOT, 'Dockerfile'), 'utf8'), new RegExp(`^EXPOSE ${config.PORT}$`, 'm'));
      for (const p of probes) {
        const answer = await request(`${app.url}${p.httpGet.path}`, { method: 'GET' });
        assert.equal(answer.status, 200, `${p.httpGet.path}: ${answer.body.toString()}`);
      }
    });
  });
});
