// Response validation for the load test: pure functions, shared by k6 and Node tests.
//
// A response passes when it is a 204 (no bid), or a 200 whose body is an OpenRTB 2.6 bid response
// (§4.2) an exchange would accept: `id` echoes the request, at least one bid, each bid's `impid`
// names an imp of the request, `price` > 0 and not under that imp's floor when the floor is in the
// response currency, `crid` set, `mtype` one of the media types the imp offered, markup (`adm`) or
// a win notice (`nurl`), and `cur` one of the request's currencies.
//
// `strict` adds what only the real bidder can be held to: requests built to be unfillable
// (absurd floor, audio only, private auction with an unknown deal) must get 204.

/** Returns '' when the response is acceptable, else a short reason. */
export function validate(status, body, id, meta, strict) {
  if (status === 204) return '';
  if (status !== 200) return `status ${status}`;
  if (strict && meta.nofill) return `bid on unfillable request (${meta.nofill})`;
  let res;
  try {
    res = JSON.parse(body);
  } catch {
    return 'body is not JSON';
  }
  if (res === null || typeof res !== 'object') return 'body is not an object';
  if (res.id !== id) return 'id does not echo the request';
  const cur = res.cur === undefined ? 'USD' : res.cur;
  if (meta.cur.indexOf(cur) < 0) return `cur ${cur} not allowed`;
  if (!Array.isArray(res.seatbid) || res.seatbid.length === 0) return 'no seatbid';
  let bids = 0;
  for (const sb of res.seatbid) {
    if (!sb || !Array.isArray(sb.bid)) return 'seatbid without bid[]';
    for (const b of sb.bid) {
      bids++;
      const reason = validateBid(b, meta, cur, strict);
      if (reason) return reason;
    }
  }
  if (bids === 0) return 'no bid';
  return '';
}

function validateBid(b, meta, cur, strict) {
  if (!b || typeof b !== 'object') return 'bid is not an object';
  if (typeof b.id !== 'string' || b.id === '') return 'bid.id missing';
  let imp = null;
  for (const i of meta.imps) {
    if (i.id === b.impid) {
      imp = i;
      break;
    }
  }
  if (!imp) return `impid ${b.impid} not in request`;
  if (typeof b.price !== 'number' || !(b.price > 0)) return 'price not > 0';
  if (typeof b.crid !== 'string' || b.crid === '') return 'crid missing';
  if (typeof b.adm !== 'string' && typeof b.nurl !== 'string') return 'neither adm nor nurl';
  if (strict) {
    if (imp.mt.indexOf(b.mtype) < 0) return `mtype ${b.mtype} not offered by imp ${imp.id}`;
    if (imp.fcur === cur && b.price + 1e-9 < imp.floor) return `price ${b.price} under floor ${imp.floor}`;
  } else if (typeof b.mtype !== 'number') {
    return 'mtype missing';
  }
  return '';
}
