'use strict';
// How the load test's report writes numbers: '–' for a figure it does not have.

function f(x, d = 2) {
  return x === null || x === undefined || !Number.isFinite(x) ? '–' : x.toFixed(d);
}

function int(x) {
  return x === null || x === undefined ? '–' : String(Math.round(x)).replace(/\B(?=(\d{3})+(?!\d))/g, ',');
}

function pct(x, d = 2) {
  return x === null || x === undefined || !Number.isFinite(x) ? '–' : `${(x * 100).toFixed(d)} %`;
}

module.exports = { f, int, pct };
