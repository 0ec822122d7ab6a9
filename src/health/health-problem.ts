/** What a health check reports (health.service.ts): the level and a line for the operator. */
export interface HealthProblem {
  /** `not_ready`: stop sending traffic here (503); `degraded`: serving, but an operator should look (200). */
  readonly level: 'not_ready' | 'degraded';
  readonly text: string;
}
