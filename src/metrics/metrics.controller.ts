import { Controller, Get, Query, Res } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import { Registry } from 'prom-client';
import { ClusterMetrics } from './cluster-metrics';
import { MetricsService } from './metrics.service';

@Controller('metrics')
export class MetricsController {
  constructor(
    private readonly metrics: MetricsService,
    private readonly cluster: ClusterMetrics,
  ) {}

  /** This worker's figures, every series labelled `worker`. */
  @Get()
  async worker(@Res() reply: FastifyReply): Promise<void> {
    const text = await this.metrics.render();
    void reply.code(200).header('content-type', Registry.PROMETHEUS_CONTENT_TYPE).send(text);
  }

  /**
   * The whole machine (see ClusterMetrics): every live worker's figures added up, or with
   * `?by=worker` each worker's series with its `worker` label (what Prometheus should scrape:
   * a worker's restart then resets only its own series).
   */
  @Get('cluster')
  async machine(@Query('by') by: string | undefined, @Res() reply: FastifyReply): Promise<void> {
    let text: string;
    try {
      text = await this.cluster.machine(by === 'worker');
    } catch (e) {
      void reply
        .code(503)
        .header('content-type', 'text/plain; charset=utf-8')
        .send(`# machine view unavailable: ${e instanceof Error ? e.message : String(e)}\n`);
      return;
    }
    void reply.code(200).header('content-type', Registry.PROMETHEUS_CONTENT_TYPE).send(text);
  }
}
