'use strict';
// The secrets `npm start` keeps for a single machine, in $BIDDER_RUN_DIR/secrets.json (mode 0600):
// TRACKING_SECRET and PII_HASH_SECRET for the workers (unless the environment sets them), and the
// password of the private redis-server it may start (REDIS_PASSWORD).
const crypto = require('node:crypto');
const fs = require('node:fs');
const path = require('node:path');

const NAMES = ['TRACKING_SECRET', 'PII_HASH_SECRET', 'REDIS_PASSWORD'];
const WORKER_SECRETS = ['TRACKING_SECRET', 'PII_HASH_SECRET'];

class DamagedSecretsError extends Error {}

/**
 * Reads secrets.json: {} when there is none. A file that is there but cannot be read as secrets
 * (truncated, empty, not an object, a secret not a string of at least 32 characters) is refused:
 * replacing it would silently change the secrets, and every tracking URL already sent would fail.
 * A file readable by others is made 0600 (and `say` says so).
 */
function readSecrets(file, say) {
  const damaged = (why) =>
    new DamagedSecretsError(
      `${file} is damaged (${why}): restore it from a backup, or delete it to make new secrets ` +
        '(tracking URLs signed with the old ones then fail, and hashed user keys change); not starting',
    );
  let text;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (e) {
    if (e.code === 'ENOENT') return {};
    // A directory, or a file this user may not read: a message, not a stack trace.
    throw damaged(e.code === 'EISDIR' ? 'a directory, not a file' : `cannot be read: ${e.code || e.message}`);
  }
  let saved;
  try {
    saved = JSON.parse(text);
  } catch (e) {
    throw damaged(text.trim() === '' ? 'empty' : `not JSON: ${e.message}`);
  }
  if (typeof saved !== 'object' || saved === null || Array.isArray(saved)) throw damaged('not a JSON object');
  for (const name of NAMES) {
    if (saved[name] !== undefined && (typeof saved[name] !== 'string' || saved[name].length < 32)) throw damaged(`${name} is not a string of at least 32 characters`);
  }
  const mode = fs.statSync(file).mode & 0o777;
  if (mode !== 0o600) {
    fs.chmodSync(file, 0o600);
    say(`bidder: ${file} was mode ${mode.toString(8).padStart(4, '0')}; made it 0600 (only its owner may read the secrets)`);
  }
  return saved;
}

/** Writes secrets.json atomically, created 0600 (and the run directory 0700 when made here). */
function writeSecrets(file, saved) {
  fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  const tmp = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(tmp, `${JSON.stringify(saved, null, 2)}\n`, { mode: 0o600 });
  fs.chmodSync(tmp, 0o600);
  fs.renameSync(tmp, file);
}

/**
 * The secrets of `names` the environment does not set, made once and kept in secrets.json, the same
 * at every start. Throws a DamagedSecretsError (with what to do) for a damaged file it would need.
 */
function kept(runDir, names, env, say) {
  const wanted = names.filter((n) => !(env[n] && env[n].trim() !== ''));
  if (wanted.length === 0) return {};
  const file = path.join(runDir, 'secrets.json');
  const saved = readSecrets(file, say);
  // The two worker secrets are made together: one kept without the other means the file lost it
  // (a new PII_HASH_SECRET would change every hashed user key, a new TRACKING_SECRET fail every URL
  // sent), unless the environment gives it.
  const kept = wanted.filter((n) => WORKER_SECRETS.includes(n) && saved[n] !== undefined);
  const lost = wanted.filter((n) => WORKER_SECRETS.includes(n) && saved[n] === undefined);
  if (kept.length > 0 && lost.length > 0) {
    throw new DamagedSecretsError(
      `${file} holds ${kept.join(', ')} but not ${lost.join(', ')}: restore it from a backup, or set ${lost.join(', ')} in the environment ` +
        `to the value in use, or delete the file to make new secrets (tracking URLs signed with the old ones then fail, and hashed user keys change); not starting`,
    );
  }
  const out = {};
  const generated = [];
  for (const name of wanted) {
    if (saved[name] === undefined) {
      saved[name] = crypto.randomBytes(48).toString('base64url');
      generated.push(name);
    }
    out[name] = saved[name];
  }
  if (generated.length > 0) {
    writeSecrets(file, saved);
    say(`bidder: generated local secrets (${generated.join(', ')}) in ${file}, mode 0600 (set TRACKING_SECRET and PII_HASH_SECRET to share them across hosts)`);
  }
  return out;
}

/** TRACKING_SECRET and PII_HASH_SECRET for the workers, unless the environment sets them. */
function localSecrets(runDir, env = process.env, say = () => undefined) {
  return kept(runDir, ['TRACKING_SECRET', 'PII_HASH_SECRET'], env, say);
}

/** The password of the private redis-server `npm start` runs. */
function redisPassword(runDir, say = () => undefined) {
  return kept(runDir, ['REDIS_PASSWORD'], {}, say).REDIS_PASSWORD;
}

/** The private redis-server's password when secrets.json holds one (never makes one); null otherwise. */
function savedRedisPassword(runDir) {
  try {
    const saved = readSecrets(path.join(runDir, 'secrets.json'), () => undefined);
    return typeof saved.REDIS_PASSWORD === 'string' ? saved.REDIS_PASSWORD : null;
  } catch {
    return null;
  }
}

module.exports = { localSecrets, redisPassword, savedRedisPassword, DamagedSecretsError };
