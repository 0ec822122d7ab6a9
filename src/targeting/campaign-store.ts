import { Injectable } from '@nestjs/common';
import { ConfigError } from '../config/config';
import { CampaignSource, readCampaignFile } from './campaign-file';
import { CandidateIndex } from './candidate-index';
import { CampaignFileError, loadCampaigns } from './loader';

// The bid path imports everything targeting offers from here.
export { CandidateIndex } from './candidate-index';
export { CampaignFileError, loadCampaigns } from './loader';
export { Auction, FILTER_ORDER, type Explanation, type ImpExplanation } from './select';
export { bidAdrender, dsaRequired } from './dsa';
export { CandidateJson, isJsonSafe } from './candidate-json';
export type { CandidateGate, Match, NativeFill, NoBidReason, Rates } from './types';

/**
 * Reads, validates and indexes a campaign file. Throws CampaignFileError (every problem, each
 * naming campaign, creative and field) or an Error naming the file when it cannot be read/parsed.
 */
export function loadCampaignFile(file: string): CandidateIndex {
  return indexCampaigns(readCampaignFile(file), file);
}

/** Validates and indexes the text of campaign file `file` (named in the messages); throws CampaignFileError. */
export function indexCampaigns(text: string, file: string): CandidateIndex {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (e) {
    throw new CampaignFileError([`not valid JSON: ${e instanceof Error ? e.message : String(e)}`], `campaigns file ${file}`);
  }
  return new CandidateIndex(loadCampaigns(json, `campaigns file ${file}`));
}

/** Reads, validates and indexes the campaigns of `source`; throws as loadCampaignFile does. */
export function loadCampaignSource(source: CampaignSource): CandidateIndex {
  return indexCampaigns(source.read(), source.name);
}

/**
 * The campaigns a worker starts with: a file that cannot be read or is invalid is a configuration
 * error (src/main.ts stops with EXIT_CONFIG_ERROR, which PM2 does not restart), each problem on a
 * line that names CAMPAIGNS_FILE.
 */
function loadStartupCampaigns(source: CampaignSource): CandidateIndex {
  const file = source.name;
  try {
    return loadCampaignSource(source);
  } catch (e) {
    const problems = e instanceof CampaignFileError ? e.problems : [(e instanceof Error ? e.message : String(e)).replace(`campaigns file ${file}: `, '')];
    throw new ConfigError(problems.map((p) => `CAMPAIGNS_FILE=${file}: ${p}`));
  }
}

/**
 * Holds the current candidate index. Loaded at construction, so a bad CAMPAIGNS_FILE stops the
 * start-up with the loader's message. `swap` replaces the index as one reference (hot reload:
 * build the new index off the bid path, then swap; requests in flight keep the one they read).
 */
@Injectable()
export class CampaignStore {
  private idx: CandidateIndex;

  constructor(source: CampaignSource) {
    this.idx = loadStartupCampaigns(source);
  }

  current(): CandidateIndex {
    return this.idx;
  }

  get count(): number {
    return this.idx.count;
  }

  swap(index: CandidateIndex): void {
    this.idx = index;
  }
}
