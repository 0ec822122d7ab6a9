import { Controller, HttpCode, Post } from '@nestjs/common';
@Controller('openrtb2')
export class BiddingController {
  @Post('bid')
  @HttpCode(204)
  bid(): void {}
}
