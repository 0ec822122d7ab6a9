/**
 * Campaign reload without restart: every worker polls CAMPAIGNS_FILE (fs.watchFile, so editors that
 * replace the file and network filesystems are covered) and, when it changed, loads, validates and
 * indexes it off the bid path, then swaps it in as one reference. A file that fails validation is
 * rejected with the loader's message and the old set keeps serving. Every worker watches the same
 * file, so all of them switch within one poll period.
 */
import { Injectable, Logger, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import { CampaignSource } from './campaign-file';
import { CampaignStore, loadCampaignSource } from './campaign-store';

@Injectable()
export class CampaignWatcher implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger('Campaigns');
  readonly stats = { reloads: 0, rejected: 0 };

  constructor(
    private readonly source: CampaignSource,
    private readonly store: CampaignStore,
  ) {}

  onModuleInit(): void {
    this.source.watch(() => this.reload());
  }

  onApplicationShutdown(): void {
    this.source.unwatch();
  }

  /** Loads the file again; returns true when the new set was swapped in. */
  reload(): boolean {
    try {
      const index = loadCampaignSource(this.source);
      this.store.swap(index);
      this.stats.reloads++;
      this.logger.log(`reloaded ${this.source.name}: ${index.count} candidates`);
      return true;
    } catch (e) {
      this.stats.rejected++;
      this.logger.error(`rejected ${this.source.name}, keeping the ${this.store.count} candidates in use: ${(e as Error).message}`);
      return false;
    }
  }
}
