import { Injectable } from '@nestjs/common';

/**
 * The random draws of the bid path (pacing's share, shading's exploration), behind one injectable
 * so that the simulator can replay a run exactly from a seed. Math.random everywhere else.
 */
@Injectable()
export class Random {
  next: () => number = Math.random;
}
