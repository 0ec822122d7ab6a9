import * as fs from 'node:fs';
import { Inject, Injectable } from '@nestjs/common';
import { CONFIG, type Config } from '../config/config';

/**
 * The store of campaigns: the campaign file's text, and news that it may have changed.
 * CampaignStore and CampaignWatcher are its only users and do no I/O besides; their unit tests give
 * them an in-memory one, the others read CAMPAIGNS_FILE (CampaignFile).
 */
export abstract class CampaignSource {
  /** What messages name it by (the file's path). */
  abstract readonly name: string;
  /** The campaigns' text; throws an Error naming the source and why when it cannot be read. */
  abstract read(): string;
  /** Calls `changed` each time the text may have changed, until `unwatch`; nothing when watching is off. */
  abstract watch(changed: () => void): void;
  abstract unwatch(): void;
}

/** The text of a campaign file; throws an Error naming it and why when it cannot be read. */
export function readCampaignFile(file: string): string {
  try {
    return fs.readFileSync(file, 'utf8');
  } catch (e) {
    throw new Error(`campaigns file ${file}: cannot read: ${e instanceof Error ? e.message : String(e)}`);
  }
}

/**
 * CAMPAIGNS_FILE, polled every CAMPAIGNS_WATCH_MS (fs.watchFile, so editors that replace the file
 * and network filesystems are covered; 0: not watched).
 */
@Injectable()
export class CampaignFile extends CampaignSource {
  readonly name: string;
  private readonly watchMs: number;
  private watching = false;

  constructor(@Inject(CONFIG) config: Config) {
    super();
    this.name = config.campaignsFile;
    this.watchMs = config.campaignsWatchMs;
  }

  read(): string {
    return readCampaignFile(this.name);
  }

  watch(changed: () => void): void {
    if (this.watchMs <= 0) return;
    fs.watchFile(this.name, { interval: this.watchMs, persistent: false }, (cur, prev) => {
      if (cur.mtimeMs !== prev.mtimeMs || cur.size !== prev.size || cur.ino !== prev.ino) changed();
    });
    this.watching = true;
  }

  unwatch(): void {
    if (this.watching) fs.unwatchFile(this.name);
    this.watching = false;
  }
}
