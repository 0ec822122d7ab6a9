import { BeforeApplicationShutdown, Injectable } from '@nestjs/common';

/** Tracks whether this worker has started listening and whether it is shutting down. */
@Injectable()
export class Lifecycle implements BeforeApplicationShutdown {
  started = false;
  stopping = false;

  beforeApplicationShutdown(): void {
    this.stopping = true;
  }
}
