'use strict';
// The sample bid requests the HTTP benchmarks send (tools/bench/ab-http.js, tools/profile.js): eight of
// test/fixtures/samples, each as JSON text with the id `"__ID__"` for the sender to replace.
const fs = require('node:fs');
const path = require('node:path');

const SAMPLES = [
  'bsm-openrtb/breq.banner.json',
  'bsm-openrtb/breq.video.json',
  'iab-openrtb2.x/bid-request_6.2.1_simple-banner.json',
  'iab-openrtb2.x/bid-request_6.2.3_mobile.json',
  'derived/iab-native-ad_with-native1.2-request.json',
  'prebid-server/ezoic-exemplary-simple-banner.to-bidder.request.json',
  'prebid-server/ezoic-exemplary-simple-native.to-bidder.request.json',
  'iab-openrtb2.x/bid-request_6.2.4_video.json',
];

function sampleBodies() {
  const dir = path.join(__dirname, '..', '..', 'test', 'fixtures', 'samples');
  return SAMPLES.map((f) => {
    const req = JSON.parse(fs.readFileSync(path.join(dir, f), 'utf8'));
    req.id = '__ID__';
    return JSON.stringify(req);
  });
}

module.exports = { sampleBodies };
