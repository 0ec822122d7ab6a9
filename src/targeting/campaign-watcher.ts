/**
 * Campaign reload without restart: every worker polls CAMPAIGNS_FILE (fs.watchFile, so editors that
 * replace the file and network filesystems are covered) and, when it changed, loads, validates and
 * indexes it off the bid path, then swaps it in as one reference. A file that fails validation is
 * rejected with the loader's message and the old set keeps serving. Every worker watches the same
 * file, so all of them switch within one poll period.
 */
import * as fs from 'node:fs';
import { Inject, Injectable, Logger, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import { CONFIG, type Config } from '../config/config';
import { CampaignStore, loadCampaignFile } from './campaign-store';

@Injectable()
export class CampaignWatcher implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger('Campaigns');
  private watching = false;
  readonly stats = { reloads: 0, rejected: 0 };

  constructor(
    @Inject(CONFIG) private readonly config: Config,
    private readonly store: CampaignStore,
  ) {}

  onModuleInit(): void {
    if (this.config.campaignsWatchMs <= 0) return;
    fs.watchFile(this.config.campaignsFile, { interval: this.config.campaignsWatchMs, persistent: false }, (cur, prev) => {
      if (cur.mtimeMs !== prev.mtimeMs || cur.size !== prev.size || cur.ino !== prev.ino) this.reload();
    });
    this.watching = true;
  }

  onApplicationShutdown(): void {
    if (this.watching) fs.unwatchFile(this.config.campaignsFile);
    this.watching = false;
  }

  /** Loads the file again; returns true when the new set was swapped in. */
  reload(): boolean {
    try {
      const index = loadCampaignFile(this.config.campaignsFile);
      this.store.swap(index);
      this.stats.reloads++;
      this.logger.log(`reloaded ${this.config.campaignsFile}: ${index.count} candidates`);
      return true;
    } catch (e) {
      this.stats.rejected++;
      this.logger.error(`rejected ${this.config.campaignsFile}, keeping the ${this.store.count} candidates in use: ${(e as Error).message}`);
      return false;
    }
  }
}
