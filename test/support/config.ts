import { ConfigError, loadConfig } from '../../src/config/config';

/** The problems loadConfig reports for `env` (none when it loads). */
export function configProblems(env: Record<string, string>): string[] {
  try {
    loadConfig(env);
  } catch (e) {
    if (e instanceof ConfigError) return e.problems;
    throw e;
  }
  return [];
}
