// The Dockerfile by its shape (test/ops/image.spec.ts builds and runs it with podman): two stages (build, then a
// slim runtime on the project's Node major), production dependencies only, a non-root user,
// pm2-runtime on ecosystem.config.js, HEALTHCHECK on /health/live, EXPOSE of the default port; and
// buildable by construction: every file it COPYs from the context exists and is not .dockerignored,
// every COPY --from names an earlier stage and a path that stage produces.
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, it } from 'node:test';

const ROOT = path.resolve(__dirname, '..', '..', '..');

interface Instruction {
  op: string;
  args: string;
}

interface Stage {
  image: string;
  name: string;
  instructions: Instruction[];
}

/** Splits a Dockerfile into stages of instructions (comments dropped, continuations joined). */
function parseDockerfile(text: string): Stage[] {
  const logical: string[] = [];
  let current = '';
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (current === '' && (line === '' || line.startsWith('#'))) continue;
    if (line.startsWith('#')) continue; // a comment inside a continued instruction
    if (line.endsWith('\\')) {
      current += `${line.slice(0, -1)} `;
      continue;
    }
    logical.push(current + line);
    current = '';
  }
  assert.equal(current, '', 'the Dockerfile ends inside a continued line');
  const stages: Stage[] = [];
  for (const l of logical) {
    const m = /^(\w+)\s+(.*)$/.exec(l);
    assert.ok(m, `bad instruction: ${l}`);
    const op = m[1].toUpperCase();
    const args = m[2].trim();
    if (op === 'FROM') {
      const f = /^(?:--platform=\S+\s+)?(\S+)(?:\s+AS\s+(\S+))?$/i.exec(args);
      assert.ok(f, `bad FROM: ${args}`);
      stages.push({ image: f[1], name: f[2] ?? String(stages.length), instructions: [] });
      continue;
    }
    assert.ok(stages.length > 0, `${op} before the first FROM`);
    stages[stages.length - 1].instructions.push({ op, args });
  }
  return stages;
}

/** Docker's .dockerignore rules (Go filepath.Match plus `**`, `!` exceptions, last match wins). */
function dockerIgnore(text: string): (p: string) => boolean {
  const rules = text
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#'))
    .map((l) => {
      const negate = l.startsWith('!');
      const pattern = path.posix.normalize((negate ? l.slice(1) : l).replace(/^\/+/, ''));
      let re = '';
      for (let i = 0; i < pattern.length; i++) {
        const c = pattern[i];
        if (c === '*' && pattern[i + 1] === '*') {
          re += '.*';
          i++;
          if (pattern[i + 1] === '/') i++;
        } else if (c === '*') re += '[^/]*';
        else if (c === '?') re += '[^/]';
        else re += c.replace(/[.+^${}()|[\]\\]/g, '\\$&');
      }
      return { negate, re: new RegExp(`^${re}$`) };
    });
  return (p: string) => {
    const parts = path.posix.normalize(p).split('/');
    let excluded = false;
    for (const r of rules) {
      // A pattern that matches a directory excludes everything under it.
      for (let n = 1; n <= parts.length; n++) {
        if (r.re.test(parts.slice(0, n).join('/'))) {
          excluded = !r.negate;
          break;
        }
      }
    }
    return excluded;
  };
}

/** The sources and destination of a COPY (shell or JSON form), flags apart. */
function copyArgs(args: string): { from: string | null; sources: string[]; dest: string } {
  const words = args.startsWith('[') ? (JSON.parse(args.replace(/^(--\S+\s+)*/, '')) as string[]) : args.split(/\s+/);
  const from = /--from=(\S+)/.exec(args)?.[1] ?? null;
  const plain = words.filter((w) => !w.startsWith('--'));
  assert.ok(plain.length >= 2, `COPY needs a source and a destination: ${args}`);
  return { from, sources: plain.slice(0, -1), dest: plain[plain.length - 1] };
}

function execArray(args: string, what: string): string[] {
  assert.ok(args.startsWith('['), `${what} should use the exec (JSON) form: ${args}`);
  return JSON.parse(args) as string[];
}

describe('Dockerfile', () => {
  const text = fs.readFileSync(path.join(ROOT, 'Dockerfile'), 'utf8');
  const stages = parseDockerfile(text);
  const ignored = dockerIgnore(fs.readFileSync(path.join(ROOT, '.dockerignore'), 'utf8'));
  const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as {
    engines: { node: string };
    dependencies: Record<string, string>;
  };
  const projectNodeMajor = Number(/^\D*(\d+)/.exec(pkg.dependencies.node)?.[1]);
  const runtime = stages[stages.length - 1];
  const ops = (s: Stage, op: string) => s.instructions.filter((i) => i.op === op);

  it('has a build stage and a runtime stage, both on the project\'s Node major, the runtime slim', () => {
    assert.ok(stages.length >= 2, 'multi-stage');
    assert.equal(projectNodeMajor, 24);
    assert.match(pkg.engines.node, new RegExp(`>=\\s*${projectNodeMajor}\\b`));
    for (const s of stages) {
      const m = /^(?:docker\.io\/)?(?:library\/)?node:(\d+)[.\w-]*$/.exec(s.image);
      assert.ok(m, `stage ${s.name} is not on an official node image: ${s.image}`);
      assert.equal(Number(m[1]), projectNodeMajor, `stage ${s.name} runs Node ${m[1]}`);
    }
    assert.match(runtime.image, /slim|alpine/, 'the runtime image is a slim one');
    assert.notEqual(runtime.name, stages[0].name);
  });

  it('builds in the build stage and ships production dependencies only', () => {
    const build = stages[0];
    const runs = ops(build, 'RUN')
      .map((i) => i.args)
      .join('\n');
    assert.match(runs, /npm ci\b/);
    assert.match(runs, /npm run build\b/);
    assert.match(runs, /npm prune --omit=dev\b/);
    const runtimeRuns = ops(runtime, 'RUN')
      .map((i) => i.args)
      .join('\n');
    assert.doesNotMatch(runtimeRuns, /npm (ci|install)\b/, 'the runtime installs nothing');
    for (const c of ops(runtime, 'COPY')) {
      const { from } = copyArgs(c.args);
      assert.ok(from !== null, `the runtime copies only from the build stage: COPY ${c.args}`);
    }
  });

  it('never runs the `node` package\'s install script, which downloads a Node binary the base image has', () => {
    const runs = ops(stages[0], 'RUN').map((i) => i.args);
    for (const r of runs.filter((x) => /npm (ci|prune|install)\b/.test(x))) assert.match(r, /--ignore-scripts\b/, r);
    // Skipping scripts skips nothing else: no other dependency has one.
    const lock = JSON.parse(fs.readFileSync(path.join(ROOT, 'package-lock.json'), 'utf8')) as { packages: Record<string, { hasInstallScript?: boolean }> };
    const withScripts = Object.entries(lock.packages)
      .filter(([, p]) => p.hasInstallScript)
      .map(([k]) => k);
    assert.deepEqual(withScripts, ['node_modules/node']);
    assert.match(runs.join('\n'), /rm -rf node_modules\/node node_modules\/\.bin\/node/);
  });

  it('runs as a non-root user, pm2-runtime on ecosystem.config.js, with a liveness HEALTHCHECK and the default port exposed', () => {
    const users = ops(runtime, 'USER');
    assert.ok(users.length > 0, 'USER is set');
    const user = users[users.length - 1].args.split(':')[0];
    assert.ok(user !== 'root' && user !== '0', `runs as ${user}`);
    const cmd = execArray(ops(runtime, 'CMD').pop()?.args ?? '', 'CMD');
    assert.ok(/(^|\/)pm2-runtime$/.test(cmd[0]), `CMD runs ${cmd[0]}`);
    assert.ok(cmd.includes('ecosystem.config.js'));
    // Only the bidder: other apps of the ecosystem file run in containers of their own.
    assert.deepEqual(cmd.slice(cmd.indexOf('--only'), cmd.indexOf('--only') + 2), ['--only', 'bidder']);
    assert.equal(ops(runtime, 'ENTRYPOINT').length, 0);
    const hc = ops(runtime, 'HEALTHCHECK').pop()?.args ?? '';
    assert.match(hc, /\/health\/live\b/);
    assert.match(hc, /--timeout=\d+s/);
    const exposed = ops(runtime, 'EXPOSE').flatMap((i) => i.args.split(/\s+/));
    assert.ok(exposed.includes('8080'), 'EXPOSE 8080 (PORT default)');
  });

  it('is buildable by construction: every COPY source exists and is sent to the daemon', () => {
    const names = new Set<string>();
    for (const s of stages) {
      for (const c of ops(s, 'COPY').concat(ops(s, 'ADD'))) {
        const { from, sources } = copyArgs(c.args);
        if (from !== null) {
          assert.ok(names.has(from), `COPY --from=${from} names no earlier stage`);
          continue;
        }
        for (const src of sources) {
          const p = path.posix.normalize(src);
          if (p === '.') continue;
          assert.ok(fs.existsSync(path.join(ROOT, p)), `COPY source ${src} does not exist`);
          assert.ok(!ignored(p), `COPY source ${src} is excluded by .dockerignore`);
        }
      }
      names.add(s.name);
    }
    // `COPY . .` sends the context minus .dockerignore; the build needs these.
    for (const needed of ['package.json', 'package-lock.json', 'tsconfig.json', 'tsconfig.build.json', 'src/main.ts', 'ecosystem.config.js', 'data/campaigns.demo.json']) {
      assert.ok(fs.existsSync(path.join(ROOT, needed)), `${needed} exists`);
      assert.ok(!ignored(needed), `${needed} is excluded by .dockerignore`);
    }
    for (const heavy of ['node_modules/x', 'dist/main.js', '.git/HEAD', '.run/state.json', '.test-build/x', 'deploy/k8s/kustomization.yaml']) {
      assert.ok(ignored(heavy), `${heavy} should not be sent to the build`);
    }
  });

  it('copies into the runtime what the build stage has: dist/ (tsconfig.build.json outDir), node_modules, data, the ecosystem file', () => {
    const build = stages[0];
    const workdir = ops(build, 'WORKDIR').pop()?.args ?? '/';
    const buildCfg = JSON.parse(fs.readFileSync(path.join(ROOT, 'tsconfig.build.json'), 'utf8')) as { compilerOptions: { outDir: string } };
    const produced = new Set([
      path.posix.join(workdir, buildCfg.compilerOptions.outDir),
      path.posix.join(workdir, 'node_modules'),
      ...['package.json', 'package-lock.json', 'ecosystem.config.js', 'data'].map((f) => path.posix.join(workdir, f)),
    ]);
    const copied: string[] = [];
    for (const c of ops(runtime, 'COPY')) {
      for (const src of copyArgs(c.args).sources) {
        assert.ok(produced.has(path.posix.normalize(src)), `the build stage does not produce ${src}`);
        copied.push(path.posix.basename(src));
      }
    }
    for (const f of ['dist', 'node_modules', 'data', 'ecosystem.config.js', 'package.json']) assert.ok(copied.includes(f), `runtime lacks ${f}`);
    // The ecosystem file runs dist/main.js.
    assert.match(fs.readFileSync(path.join(ROOT, 'ecosystem.config.js'), 'utf8'), /'dist', 'main\.js'/);
  });
});
